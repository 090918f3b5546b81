//! CheckVolumeBinding: bound PVs' node affinity; unbound WaitForFirstConsumer claims need an
//! available matching PV or dynamic provisioning reachable from the node.

use super::unit::{FastClass, PredicateUnit, ReasonDef, VictimsClass};
use super::Pred;
use super::{NodeView, Reason};
use crate::cache::ClusterCache;
use crate::compiled::{Labels, NodeTerm, Selector};
use crate::ctx::PodCtx;
pub(crate) use crate::ctx::{BindingState as State, Unbound};
use crate::intern::Sym;
use crate::pod_info::{CVolume, PodInfo};
use crate::quantity::ParsedQuantity;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PredicateUnit = PredicateUnit {
    name: "CheckVolumeBinding",
    aliases: &[],
    order: 16,
    argument: None,
    reasons: &[&NODE_AFFINITY_CONFLICT, &NO_MATCHING_VOLUMES],
    fast: FastClass::Volumes,
    victims: VictimsClass::NodeOnly,
};

/// `node(s) had volume node affinity conflict` (preemption cannot resolve it).
pub(crate) static NODE_AFFINITY_CONFLICT: ReasonDef = ReasonDef {
    text: "node(s) had volume node affinity conflict",
    resolvable: false,
};

/// `node(s) didn't find available persistent volumes to bind` (preemption cannot resolve it).
pub(crate) static NO_MATCHING_VOLUMES: ReasonDef = ReasonDef {
    text: "node(s) didn't find available persistent volumes to bind",
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
    Ok(check(c, n, out))
}

fn storage(map: &std::collections::BTreeMap<String, crate::model::Quantity>) -> i64 {
    map.get("storage")
        .and_then(|q| ParsedQuantity::parse(&q.text()).ok())
        .map_or(0, |q| q.value())
}

/// Resolves the pod's claims once per decision.
pub(crate) fn prepare<'a>(cache: &'a ClusterCache, pod: &PodInfo) -> State<'a> {
    let mut st = State::default();
    for v in &pod.volumes {
        let CVolume::Pvc { claim } = v else { continue };
        let Some(pvc) = cache.pvcs.get(&format!("{}/{}", pod.namespace, claim)) else {
            st.error = Some(format!("persistentvolumeclaim {claim:?} not found"));
            return st;
        };
        if !pvc.spec.volume_name.is_empty() {
            if let Some(terms) = cache
                .pvs
                .get(&pvc.spec.volume_name)
                .and_then(|pv| pv.terms.as_deref())
            {
                st.bound.push(terms);
            }
            continue;
        }
        let class_name = pvc.spec.storage_class_name.clone().unwrap_or_default();
        let class = cache.classes.get(&class_name);
        if class.and_then(|c| c.sc.volume_binding_mode.as_deref()) != Some("WaitForFirstConsumer") {
            st.error = Some("pod has unbound PersistentVolumeClaims".into());
            return st;
        }
        let want = storage(&pvc.spec.resources.requests);
        let selector = pvc.spec.selector.as_ref().map(|s| {
            let mut i = cache.interner.clone();
            (Selector::compile(Some(s), &mut i), i)
        });
        let mut candidates: Vec<(i64, &str, Option<&[NodeTerm]>)> = Vec::new();
        for (name, pv) in &cache.pvs {
            let spec = &pv.pv.spec;
            let free = spec
                .claim_ref
                .as_ref()
                .is_none_or(|r| r.name == pvc.metadata.name && r.namespace == pod.namespace);
            let size = storage(&spec.capacity);
            let modes = pvc
                .spec
                .access_modes
                .iter()
                .all(|m| spec.access_modes.contains(m));
            let sel_ok = selector
                .as_ref()
                .is_none_or(|(s, i)| s.matches(&relabel(&pv.pv.metadata.labels, i), i));
            if free && spec.storage_class_name == class_name && size >= want && modes && sel_ok {
                candidates.push((size, name, pv.terms.as_deref()));
            }
        }
        candidates.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        let dynamic = class
            .filter(|c| {
                c.sc.provisioner != "kubernetes.io/no-provisioner" && !c.sc.provisioner.is_empty()
            })
            .map(|c| c.topologies.as_slice());
        st.unbound.push(Unbound {
            candidates: candidates.into_iter().map(|c| c.2).collect(),
            dynamic,
        });
    }
    st
}

fn relabel(
    map: &std::collections::BTreeMap<String, String>,
    i: &crate::intern::Interner,
) -> Labels {
    let mut v: Vec<(Sym, Sym)> = map
        .iter()
        .map(|(k, v)| (i.get(k).unwrap_or(u32::MAX), i.get(v).unwrap_or(u32::MAX)))
        .collect();
    v.sort_unstable();
    Labels(v)
}

/// Checks the node.
pub(crate) fn check(c: &PodCtx, n: &NodeView, out: &mut Vec<Reason>) -> bool {
    let st = &c.binding;
    if st.bound.is_empty() && st.unbound.is_empty() {
        return true;
    }
    let (labels, name) = (&n.info.labels, n.info.name_sym);
    let before = out.len();
    if !st
        .bound
        .iter()
        .all(|terms| terms.iter().any(|t| t.matches(labels, name, c.i)))
    {
        out.push(NODE_AFFINITY_CONFLICT.reason());
    }
    let ok = st.unbound.iter().all(|u| {
        u.candidates
            .iter()
            .any(|t| t.is_none_or(|terms| terms.iter().any(|t| t.matches(labels, name, c.i))))
            || u.dynamic.is_some_and(|topos| {
                topos.is_empty()
                    || topos.iter().any(|term| {
                        term.iter()
                            .all(|(k, vals)| labels.get(*k).is_some_and(|v| vals.contains(&v)))
                    })
            })
    });
    if !ok {
        out.push(NO_MATCHING_VOLUMES.reason());
    }
    out.len() == before
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    #[test]
    fn bound_and_delayed() {
        let mut cache = crate::ClusterCache::new();
        cache.upsert_node(&node_json(
            json!({"metadata": {"name": "n1", "labels": {"zone": "a"}}}),
        ));
        cache.upsert_node(&node_json(
            json!({"metadata": {"name": "n2", "labels": {"zone": "b"}}}),
        ));
        let aff = json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}});
        cache.upsert_persistent_volume(
            serde_json::from_value(
                json!({"metadata": {"name": "pv1"}, "spec": {"nodeAffinity": aff}}),
            )
            .unwrap(),
        );
        cache.upsert_persistent_volume_claim(
            serde_json::from_value(
                json!({"metadata": {"name": "c1"}, "spec": {"volumeName": "pv1"}}),
            )
            .unwrap(),
        );
        let p = pod(
            json!({"spec": {"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c1"}}]}}),
        );
        let got = reasons_in(builtin(P::CheckVolumeBinding), &mut cache, p);
        assert_eq!(
            got,
            vec![
                vec![],
                vec!["node(s) had volume node affinity conflict".to_string()]
            ]
        );

        cache.upsert_storage_class(serde_json::from_value(json!({"metadata": {"name": "local"}, "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"})).unwrap());
        let aff_b = json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]}});
        cache.upsert_persistent_volume(serde_json::from_value(json!({"metadata": {"name": "pv2"}, "spec": {"storageClassName": "local", "capacity": {"storage": "10Gi"}, "nodeAffinity": aff_b}})).unwrap());
        cache.upsert_persistent_volume_claim(serde_json::from_value(json!({"metadata": {"name": "c2"}, "spec": {"storageClassName": "local", "resources": {"requests": {"storage": "5Gi"}}}})).unwrap());
        let p = pod(
            json!({"spec": {"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c2"}}]}}),
        );
        let got = reasons_in(builtin(P::CheckVolumeBinding), &mut cache, p);
        assert_eq!(
            got,
            vec![
                vec!["node(s) didn't find available persistent volumes to bind".to_string()],
                vec![]
            ]
        );
    }
}
