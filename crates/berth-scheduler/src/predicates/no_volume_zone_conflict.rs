//! NoVolumeZoneConflict: bound PVs' zone/region labels against the node's.

use super::unit::{FastClass, PredicateUnit, ReasonDef, VictimsClass};
use super::Pred;
use super::{NodeView, Reason};
use crate::cache::ClusterCache;
use crate::ctx::PodCtx;
pub(crate) use crate::ctx::ZoneState as State;
use crate::pod_info::{CVolume, PodInfo};

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PredicateUnit = PredicateUnit {
    name: "NoVolumeZoneConflict",
    aliases: &[],
    order: 17,
    argument: None,
    reasons: &[&ZONE_CONFLICT],
    fast: FastClass::Volumes,
    victims: VictimsClass::NodeOnly,
};

/// `node(s) had no available volume zone` (preemption cannot resolve it).
pub(crate) static ZONE_CONFLICT: ReasonDef = ReasonDef {
    text: "node(s) had no available volume zone",
    resolvable: false,
};

/// The registry's entry point.
#[inline]
pub(crate) fn filter(
    c: &PodCtx,
    _p: &Pred,
    n: &NodeView,
    out: &mut Vec<Reason>,
) -> Result<bool, String> {
    check(c, n, out)
}

/// Resolves the pod's claims once per decision.
pub(crate) fn prepare(cache: &ClusterCache, pod: &PodInfo) -> State {
    let mut st = State {
        zone_keys: [
            cache.interner.get(crate::node_info::ZONE_LABEL),
            cache.interner.get(crate::node_info::REGION_LABEL),
        ],
        ..State::default()
    };
    for v in &pod.volumes {
        let CVolume::Pvc { claim } = v else { continue };
        if claim.is_empty() {
            st.error = Some("PersistentVolumeClaim had no name".into());
            return st;
        }
        let Some(pvc) = cache.pvcs.get(&format!("{}/{}", pod.namespace, claim)) else {
            st.error = Some(format!("PersistentVolumeClaim was not found: {claim:?}"));
            return st;
        };
        if pvc.spec.volume_name.is_empty() {
            let class = pvc.spec.storage_class_name.clone().unwrap_or_default();
            match cache
                .classes
                .get(&class)
                .map(|c| c.sc.volume_binding_mode.as_deref())
            {
                Some(Some("WaitForFirstConsumer")) => continue,
                Some(None) => {
                    st.error = Some(format!(
                        "VolumeBindingMode not set for StorageClass {class:?}"
                    ))
                }
                _ => st.error = Some(format!("PersistentVolumeClaim is not bound: {claim:?}")),
            }
            return st;
        }
        let Some(pv) = cache.pvs.get(&pvc.spec.volume_name) else {
            st.error = Some(format!(
                "PersistentVolume not found: {:?}",
                pvc.spec.volume_name
            ));
            return st;
        };
        st.constraints.extend(pv.zone.iter().cloned());
    }
    st
}

/// Checks the node's zone/region against the PVs'.
pub(crate) fn check(c: &PodCtx, n: &NodeView, out: &mut Vec<Reason>) -> Result<bool, String> {
    if c.pod.volumes.is_empty() {
        return Ok(true);
    }
    let labels = &n.info.labels;
    if !c.zones.zone_keys.iter().flatten().any(|k| labels.has(*k)) {
        return Ok(true);
    }
    if let Some(e) = &c.zones.error {
        return Err(e.clone());
    }
    for (k, vals) in &c.zones.constraints {
        if !labels.get(*k).is_some_and(|v| vals.contains(&v)) {
            out.push(ZONE_CONFLICT.reason());
            return Ok(false);
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    #[test]
    fn vectors() {
        let z = "failure-domain.beta.kubernetes.io/zone";
        let cases = vec![
            (json!({z: "us-east-1a"}), "us-east-1a", true),
            (json!({z: "us-east-1a"}), "us-east-1b", false),
            (json!({z: "us-east-1a"}), "us-east-1a__us-east-1b", true),
            (json!({}), "us-east-1b", true),
        ];
        for (node_labels, pv_zone, fit) in cases {
            let mut cache = crate::ClusterCache::new();
            cache.upsert_node(&node_json(
                json!({"metadata": {"name": "n1", "labels": node_labels}}),
            ));
            cache.upsert_persistent_volume(
                serde_json::from_value(
                    json!({"metadata": {"name": "pv1", "labels": {z: pv_zone}}}),
                )
                .unwrap(),
            );
            cache.upsert_persistent_volume_claim(serde_json::from_value(json!({"metadata": {"name": "c1", "namespace": "default"}, "spec": {"volumeName": "pv1"}})).unwrap());
            let p = pod(
                json!({"spec": {"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c1"}}]}}),
            );
            let got = reasons_in(builtin(P::NoVolumeZoneConflict), &mut cache, p);
            let w: Vec<String> = if fit {
                vec![]
            } else {
                vec!["node(s) had no available volume zone".into()]
            };
            assert_eq!(got, vec![w], "{pv_zone}");
        }
    }

    #[test]
    fn missing_claim_is_error() {
        let mut cache = crate::ClusterCache::new();
        cache.upsert_node(&node_json(json!({"metadata": {"name": "n1", "labels": {"failure-domain.beta.kubernetes.io/zone": "a"}}})));
        let p = pod(
            json!({"spec": {"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "nope"}}]}}),
        );
        let r = results_in(builtin(P::NoVolumeZoneConflict), &mut cache, p);
        assert_eq!(
            r[0],
            crate::PredicateResult::Error("PersistentVolumeClaim was not found: \"nope\"".into())
        );
    }
}
