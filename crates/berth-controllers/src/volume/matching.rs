//! Which volume a claim binds to, as upstream's `FindMatchingVolume`. Pure.

use super::bound_to;
use berth_core::labels::Selector;
use berth_core::quantity::Quantity;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KQuantity;
use std::collections::BTreeMap;

/// The beta annotation older objects name their class with (upstream still reads it).
const BETA_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

/// The storage bytes in a resource list (0 when absent or unreadable).
pub fn storage_bytes(resources: Option<&BTreeMap<String, KQuantity>>) -> i64 {
    resources
        .and_then(|r| r.get("storage"))
        .and_then(|q| Quantity::parse(&q.0).ok())
        .map_or(0, |q| q.value())
}

/// A claim's storage class: the beta annotation, else `spec.storageClassName`, else "".
pub fn claim_class(claim: &PersistentVolumeClaim) -> String {
    claim
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(BETA_CLASS).cloned())
        .or_else(|| {
            claim
                .spec
                .as_ref()
                .and_then(|s| s.storage_class_name.clone())
        })
        .unwrap_or_default()
}

fn volume_class(volume: &PersistentVolume) -> String {
    volume
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(BETA_CLASS).cloned())
        .or_else(|| {
            volume
                .spec
                .as_ref()
                .and_then(|s| s.storage_class_name.clone())
        })
        .unwrap_or_default()
}

fn selector_accepts(claim: &PersistentVolumeClaim, volume: &PersistentVolume) -> bool {
    let Some(selector) = claim.spec.as_ref().and_then(|s| s.selector.as_ref()) else {
        return true;
    };
    let Ok(raw) = serde_json::to_value(selector) else {
        return false;
    };
    let Ok(selector) = Selector::from_label_selector(&raw) else {
        return false;
    };
    let labels = serde_json::to_value(&volume.metadata.labels).unwrap_or_default();
    let empty = serde_json::Map::new();
    selector.matches(labels.as_object().unwrap_or(&empty))
}

fn volume_mode(mode: Option<&String>) -> &str {
    mode.map_or("Filesystem", String::as_str)
}

/// The volume `claim` binds to among `volumes`: one pre-bound to it (its `claimRef` names the
/// claim), else the smallest `Available`, unclaimed volume of the claim's class and volume mode
/// with every access mode the claim asks for, at least the storage it requests and labels its
/// selector accepts (ties: fewer access modes, then name). Volumes being deleted never match.
pub fn find_matching_volume<'a>(
    claim: &PersistentVolumeClaim,
    volumes: &[&'a PersistentVolume],
) -> Option<&'a PersistentVolume> {
    let spec = claim.spec.as_ref()?;
    let wanted = storage_bytes(spec.resources.as_ref().and_then(|r| r.requests.as_ref()));
    let modes = spec.access_modes.clone().unwrap_or_default();
    let class = claim_class(claim);
    let mut best: Option<(i64, usize, &str, &'a PersistentVolume)> = None;
    for v in volumes {
        let Some(vspec) = v.spec.as_ref() else {
            continue;
        };
        if v.metadata.deletion_timestamp.is_some()
            || volume_mode(spec.volume_mode.as_ref()) != volume_mode(vspec.volume_mode.as_ref())
        {
            continue;
        }
        let vmodes = vspec.access_modes.clone().unwrap_or_default();
        if !modes.iter().all(|m| vmodes.contains(m)) {
            continue;
        }
        if bound_to(v, claim) {
            return Some(v);
        }
        let available = v.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Available");
        if !available
            || vspec.claim_ref.is_some()
            || !selector_accepts(claim, v)
            || volume_class(v) != class
        {
            continue;
        }
        let size = storage_bytes(vspec.capacity.as_ref());
        if size < wanted {
            continue;
        }
        let name = v.metadata.name.as_deref().unwrap_or("");
        let key = (size, vmodes.len(), name);
        if best.is_none_or(|(s, m, n, _)| key < (s, m, n)) {
            best = Some((size, vmodes.len(), name, v));
        }
    }
    best.map(|b| b.3)
}
