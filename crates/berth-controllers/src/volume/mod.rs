//! The persistent-volume binder, as upstream's `pkg/controller/volume/persistentvolume` for
//! statically created volumes (berth provisions nothing).
//!
//! A claim with no `spec.volumeName` binds to the smallest `Available` volume that matches it:
//! the same storage class, every access mode the claim asks for, at least the storage it
//! requests, the same volume mode, and labels its `selector` accepts; a volume whose `claimRef`
//! names the claim (pre-bound by the user) wins over all others. Binding writes the volume's
//! `claimRef` and phase `Bound`, then the claim's `volumeName` (with upstream's
//! `pv.kubernetes.io/bind-completed` annotations) and phase `Bound`. A volume nobody claims is
//! `Available`; one whose claim is gone is `Released`, and then deleted if its
//! `persistentVolumeReclaimPolicy` is `Delete` (`Retain` keeps it for the administrator).
//!
//! Claims of a `WaitForFirstConsumer` class are bound only once a pod using them is scheduled
//! (upstream's scheduler binds them at that moment; here the binder does it when it sees the
//! pod's node). Pure: [`sync`]; the driver (`driver.rs`) carries the actions out.

pub(crate) mod driver;
mod matching;

pub use matching::{find_matching_volume, storage_bytes};

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use std::collections::{BTreeMap, BTreeSet};

/// Upstream's annotation: the binding of a claim is complete.
pub const BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// Upstream's annotation: the controller (not the user) made the binding.
pub const BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";

/// A claim as the binder names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimRef {
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

/// What one pass decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Bind the claim to the volume (volume first, then the claim, as upstream).
    Bind { claim: ClaimRef, volume: String },
    /// Set the volume's `status.phase`.
    VolumePhase { volume: String, phase: &'static str },
    /// Set the claim's `status.phase` (`Pending` or `Lost`); `Bound` comes with [`Action::Bind`].
    ClaimPhase {
        claim: ClaimRef,
        phase: &'static str,
    },
    /// Delete a released volume whose reclaim policy is `Delete`.
    DeleteVolume { volume: String },
}

fn claim_ref(c: &PersistentVolumeClaim) -> ClaimRef {
    ClaimRef {
        namespace: c.metadata.namespace.clone().unwrap_or_default(),
        name: c.metadata.name.clone().unwrap_or_default(),
        uid: c.metadata.uid.clone().unwrap_or_default(),
    }
}

fn volume_phase(v: &PersistentVolume) -> &str {
    v.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

fn claim_phase(c: &PersistentVolumeClaim) -> &str {
    c.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

/// Whether the volume's `claimRef` names `claim` (a ref without uid names any claim so called).
pub fn bound_to(volume: &PersistentVolume, claim: &PersistentVolumeClaim) -> bool {
    let Some(r) = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) else {
        return false;
    };
    r.namespace.as_deref() == claim.metadata.namespace.as_deref()
        && r.name.as_deref() == claim.metadata.name.as_deref()
        && r.uid
            .as_deref()
            .is_none_or(|u| u.is_empty() || Some(u) == claim.metadata.uid.as_deref())
}

/// One pass over every volume and claim. `delayed_classes` are the `WaitForFirstConsumer`
/// storage classes; `scheduled_claims` the `namespace/name` of claims used by a pod that has a
/// node.
pub fn sync(
    volumes: &[&PersistentVolume],
    claims: &[&PersistentVolumeClaim],
    delayed_classes: &BTreeSet<String>,
    scheduled_claims: &BTreeSet<String>,
) -> Vec<Action> {
    let mut out = Vec::new();
    let by_name: BTreeMap<&str, &PersistentVolume> = volumes
        .iter()
        .filter_map(|v| Some((v.metadata.name.as_deref()?, *v)))
        .collect();
    let mut taken: BTreeSet<String> = BTreeSet::new();
    let mut claims: Vec<&PersistentVolumeClaim> = claims
        .iter()
        .copied()
        .filter(|c| c.metadata.deletion_timestamp.is_none())
        .collect();
    // Oldest claims first, so the first to ask gets the volume.
    claims.sort_by(|a, b| {
        (&a.metadata.creation_timestamp, &a.metadata.name)
            .cmp(&(&b.metadata.creation_timestamp, &b.metadata.name))
    });
    for claim in &claims {
        let volume_name = claim
            .spec
            .as_ref()
            .and_then(|s| s.volume_name.as_deref())
            .unwrap_or("");
        if volume_name.is_empty() {
            let class = matching::claim_class(claim);
            let key = format!(
                "{}/{}",
                claim.metadata.namespace.as_deref().unwrap_or(""),
                claim.metadata.name.as_deref().unwrap_or("")
            );
            let free: Vec<&PersistentVolume> = volumes
                .iter()
                .copied()
                .filter(|v| !taken.contains(v.metadata.name.as_deref().unwrap_or("")))
                .collect();
            let found = find_matching_volume(claim, &free).filter(|v| {
                bound_to(v, claim)
                    || !delayed_classes.contains(&class)
                    || scheduled_claims.contains(&key)
            });
            match found {
                Some(v) => {
                    let name = v.metadata.name.clone().unwrap_or_default();
                    taken.insert(name.clone());
                    out.push(Action::Bind {
                        claim: claim_ref(claim),
                        volume: name,
                    });
                }
                None if claim_phase(claim) != "Pending" => out.push(Action::ClaimPhase {
                    claim: claim_ref(claim),
                    phase: "Pending",
                }),
                None => {}
            }
            continue;
        }
        taken.insert(volume_name.to_string());
        match by_name.get(volume_name) {
            // The user named a volume nobody holds: bind it (upstream's pre-bound claim).
            Some(v) if v.spec.as_ref().and_then(|s| s.claim_ref.as_ref()).is_none() => {
                out.push(Action::Bind {
                    claim: claim_ref(claim),
                    volume: volume_name.to_string(),
                })
            }
            // Half a binding (the claim's status or the volume's phase was not written yet).
            Some(v) if bound_to(v, claim) => {
                if claim_phase(claim) != "Bound" || volume_phase(v) != "Bound" {
                    out.push(Action::Bind {
                        claim: claim_ref(claim),
                        volume: volume_name.to_string(),
                    });
                }
            }
            // Missing, or held by another claim: the claim has lost its volume once bound.
            _ => {
                let completed = claim
                    .metadata
                    .annotations
                    .as_ref()
                    .is_some_and(|a| a.contains_key(BIND_COMPLETED));
                let phase = if completed { "Lost" } else { "Pending" };
                if claim_phase(claim) != phase {
                    out.push(Action::ClaimPhase {
                        claim: claim_ref(claim),
                        phase,
                    });
                }
            }
        }
    }
    for v in volumes {
        let name = v.metadata.name.clone().unwrap_or_default();
        if v.metadata.deletion_timestamp.is_some() || taken.contains(&name) {
            continue;
        }
        let Some(r) = v.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) else {
            if volume_phase(v) != "Available" {
                out.push(Action::VolumePhase {
                    volume: name,
                    phase: "Available",
                });
            }
            continue;
        };
        let claim = claims
            .iter()
            .find(|c| c.metadata.namespace == r.namespace && c.metadata.name == r.name);
        let gone = match claim {
            None => true,
            Some(c) => r
                .uid
                .as_deref()
                .is_some_and(|u| !u.is_empty() && Some(u) != c.metadata.uid.as_deref()),
        };
        // A ref to a claim that exists but is not bound yet is a pre-bound volume waiting.
        if !gone {
            continue;
        }
        let policy = v
            .spec
            .as_ref()
            .and_then(|s| s.persistent_volume_reclaim_policy.as_deref())
            .unwrap_or("Retain");
        if volume_phase(v) != "Released" && volume_phase(v) != "Failed" {
            out.push(Action::VolumePhase {
                volume: name.clone(),
                phase: "Released",
            });
        }
        if policy == "Delete" {
            out.push(Action::DeleteVolume { volume: name });
        }
    }
    out
}

#[cfg(test)]
mod tests;
