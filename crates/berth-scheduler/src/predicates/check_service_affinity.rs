//! CheckServiceAffinity (`serviceAffinity` argument): pods of a service stay on nodes that share
//! the listed labels' values with the first peer (oldest pod held by the cache; deterministic).

use super::unit::{Argument, FastClass, PredicateUnit, ReasonDef, VictimsClass};
use super::Pred;
use super::{NodeView, Reason};
use crate::cache::ClusterCache;
use crate::ctx::PodCtx;
use crate::intern::Sym;
use crate::pod_info::PodInfo;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PredicateUnit = PredicateUnit {
    name: "CheckServiceAffinity",
    aliases: &[],
    order: 11,
    argument: Some(Argument::ServiceAffinity),
    reasons: &[&SERVICE_AFFINITY_VIOLATED],
    fast: FastClass::ServiceAffinity,
    victims: VictimsClass::NodeOnly,
};

/// `node(s) didn't match service affinity`.
pub(crate) static SERVICE_AFFINITY_VIOLATED: ReasonDef = ReasonDef {
    text: "node(s) didn't match service affinity",
    resolvable: true,
};

/// The registry's entry point.
#[inline]
pub(crate) fn filter(
    c: &PodCtx,
    p: &Pred,
    n: &NodeView,
    out: &mut Vec<Reason>,
) -> Result<bool, String> {
    Ok(check(c, p.slot, n, out))
}

/// Computes the (key, value) pairs a node must carry; a None value can never be matched.
pub(crate) fn prepare(
    cache: &ClusterCache,
    pod: &PodInfo,
    labels: &[Option<Sym>],
) -> Vec<(Sym, Option<Sym>)> {
    let mut affinity: Vec<(Sym, Option<Sym>)> = Vec::new();
    let mut missing: Vec<Sym> = Vec::new();
    for l in labels {
        let Some(k) = *l else { continue };
        match pod.node_selector.iter().find(|(nk, _)| *nk == k) {
            Some((_, v)) => affinity.push((k, Some(*v))),
            None => missing.push(k),
        }
    }
    if missing.is_empty() || cache.matching_services(pod).next().is_none() {
        return affinity;
    }
    // first peer: oldest scheduled pod in the namespace whose labels include all of the pod's labels
    let superset = |ix: u32| {
        cache.pod_slot(ix).filter(|s| {
            s.info.ns == pod.ns
                && pod
                    .labels
                    .0
                    .iter()
                    .all(|(k, v)| s.info.labels.get(*k) == Some(*v))
        })
    };
    let candidates: Box<dyn Iterator<Item = u32>> = match pod.labels.0.first() {
        Some(&(k, v)) => Box::new(
            cache
                .postings
                .get(&(pod.ns, k, v))
                .into_iter()
                .flat_map(|p| p.pods.iter().copied()),
        ),
        None => Box::new(
            cache
                .ns_pods
                .get(&pod.ns)
                .into_iter()
                .flat_map(|s| s.iter().copied()),
        ),
    };
    let peer = candidates.filter_map(superset).min_by_key(|s| s.seq);
    if let Some(peer) = peer {
        let node = &cache.nodes[peer.node as usize];
        for k in missing {
            if let Some(v) = node.labels.get(k) {
                affinity.push((k, Some(v)));
            }
        }
    }
    affinity
}

/// Checks the node.
pub(crate) fn check(c: &PodCtx, slot: usize, n: &NodeView, out: &mut Vec<Reason>) -> bool {
    let Some(req) = c.service_affinity.get(slot) else {
        return true;
    };
    if req
        .iter()
        .all(|(k, v)| v.is_some() && n.info.labels.get(*k) == *v)
    {
        return true;
    }
    out.push(SERVICE_AFFINITY_VIOLATED.reason());
    false
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    fn nodes() -> Vec<crate::model::Node> {
        [
            ("m1", "r1", "z11"),
            ("m2", "r1", "z12"),
            ("m3", "r2", "z21"),
            ("m4", "r2", "z22"),
            ("m5", "r2", "z22"),
        ]
        .iter()
        .map(|(n, r, z)| {
            node_json(json!({"metadata": {"name": n, "labels": {"region": r, "zone": z}}}))
        })
        .collect()
    }

    fn run(
        labels: &[&str],
        p: serde_json::Value,
        svc_ns: Option<&str>,
        peer: Option<(&str, &str)>,
        candidate: usize,
    ) -> bool {
        let mut cache = crate::ClusterCache::new();
        for n in nodes() {
            cache.upsert_node(&n);
        }
        if let Some(ns) = svc_ns {
            cache.upsert_service(&serde_json::from_value(json!({"metadata": {"name": "s", "namespace": ns}, "spec": {"selector": {"foo": "bar"}}})).unwrap());
        }
        if let Some((node, ns)) = peer {
            cache.upsert_pod(&pod(json!({"metadata": {"name": "peer", "namespace": ns, "labels": {"foo": "bar"}}, "spec": {"nodeName": node}})));
        }
        let kind = crate::policy::PredicateKind::ServiceAffinity {
            labels: labels.iter().map(|s| s.to_string()).collect(),
        };
        reasons_in(kind, &mut cache, pod(p))[candidate].is_empty()
    }

    #[test]
    fn upstream_vectors() {
        let foo = json!({"metadata": {"labels": {"foo": "bar"}}});
        assert!(run(&["region"], json!({}), None, None, 0));
        assert!(run(
            &["region"],
            json!({"spec": {"nodeSelector": {"region": "r1"}}}),
            None,
            None,
            0
        ));
        assert!(!run(
            &["region"],
            json!({"spec": {"nodeSelector": {"region": "r2"}}}),
            None,
            None,
            0
        ));
        assert!(!run(
            &["region"],
            foo.clone(),
            Some("default"),
            Some(("m3", "default")),
            0
        ));
        assert!(run(
            &["region"],
            foo.clone(),
            Some("default"),
            Some(("m2", "default")),
            0
        ));
        assert!(run(
            &["region"],
            json!({"metadata": {"namespace": "ns2", "labels": {"foo": "bar"}}}),
            Some("ns1"),
            Some(("m3", "ns1")),
            0
        ));
        assert!(run(
            &["region", "zone"],
            foo.clone(),
            Some("default"),
            Some(("m5", "default")),
            3
        ));
        assert!(!run(
            &["region", "zone"],
            foo,
            Some("default"),
            Some(("m2", "default")),
            0
        ));
    }
}
