//! [`fits`]: whether one pod fits one node next to the node's pods, by the scheduler's own
//! predicate units, for callers that place or keep pods outside the scheduling loop (the
//! DaemonSet controller; later the descheduler).

use crate::cache::ClusterCache;
use crate::engine::{filter, Scheduler};
use crate::model::{Node, Pod};
use crate::predicates::{NodeView, Pred, PredicateName, Reason, ResourceName};

/// The predicates [`fits`] runs: upstream's GeneralPredicates (resources, host ports, host name,
/// node selector with required node affinity) and the NoSchedule/NoExecute taints.
const FITS: [PredicateName; 2] = [
    PredicateName::GeneralPredicates,
    PredicateName::PodToleratesNodeTaints,
];

/// The answer of [`fits`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fit {
    /// The pod fits.
    Fits,
    /// The pod does not fit.
    Unfit {
        /// Every failure reason, with upstream's texts, in the order the predicates report them.
        reasons: Vec<String>,
        /// The resources among them that are short, with their numbers.
        insufficient: Vec<Insufficient>,
    },
}

/// A resource the node does not have enough of (`Insufficient <resource>`). Amounts are cpu in
/// millicores and everything else in units (bytes, pods, devices).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Insufficient {
    /// The resource, as the API names it (`pods`, `cpu`, `memory`, `nvidia.com/gpu`, …).
    pub resource: String,
    /// What the pod requests (1 for `pods`).
    pub requested: i64,
    /// What the node's pods already request.
    pub used: i64,
    /// The node's allocatable amount.
    pub capacity: i64,
}

impl Fit {
    /// True if the pod fits.
    pub fn fits(&self) -> bool {
        matches!(self, Fit::Fits)
    }
}

/// Whether `pod` fits `node`, on which `pods_on_node` run (their `spec.nodeName` is taken to be
/// the node's; each needs its own namespace/name), by the scheduler's GeneralPredicates and
/// taint predicates, every reason collected. Pure: no cache or scheduler state outlives the call.
pub fn fits(pod: &Pod, node: &Node, pods_on_node: &[Pod]) -> Fit {
    let mut cache = ClusterCache::new();
    cache.upsert_node(node);
    let name = node.metadata.name.clone();
    for p in pods_on_node {
        let mut p = p.clone();
        p.spec.node_name = name.clone();
        cache.upsert_pod(&p);
    }
    let info = cache.compile_pod(pod);
    let Some(ix) = cache.node_index(&name) else {
        return Fit::Fits;
    };
    let mut scheduler = Scheduler::builder()
        .build()
        .expect("the default policy builds");
    let preds: Vec<Pred> = FITS.iter().map(|n| Pred::of(*n)).collect();
    let mut reasons = Vec::new();
    let result = scheduler.prepare(&preds, &cache, &info).and_then(|ctx| {
        let view = NodeView {
            info: &cache.nodes[ix as usize],
            ix,
            added: &[],
        };
        filter::run_predicates(&ctx, &preds, true, &view, &mut reasons)
    });
    match result {
        Ok(true) => Fit::Fits,
        Err(e) => Fit::Unfit {
            reasons: vec![e],
            insufficient: Vec::new(),
        },
        Ok(false) => {
            let node_info = &cache.nodes[ix as usize];
            let i = &cache.interner;
            let insufficient = reasons
                .iter()
                .filter_map(|r| match r {
                    Reason::Insufficient(res) => Some(*res),
                    Reason::Declared(_) => None,
                })
                .map(|res| {
                    let (requested, used, capacity) = match res {
                        ResourceName::Pods => (1, node_info.pod_count, node_info.alloc_pods),
                        ResourceName::Cpu => (
                            info.request.cpu,
                            node_info.requested.cpu,
                            node_info.alloc.cpu,
                        ),
                        ResourceName::Memory => (
                            info.request.memory,
                            node_info.requested.memory,
                            node_info.alloc.memory,
                        ),
                        ResourceName::EphemeralStorage => (
                            info.request.ephemeral,
                            node_info.requested.ephemeral,
                            node_info.alloc.ephemeral,
                        ),
                        ResourceName::Scalar(s) => (
                            info.request.scalar(s),
                            node_info.requested.scalar(s),
                            node_info.alloc.scalar(s),
                        ),
                    };
                    Insufficient {
                        resource: res.as_str(i).to_string(),
                        requested,
                        used,
                        capacity,
                    }
                })
                .collect();
            Fit::Unfit {
                reasons: reasons.iter().map(|r| r.text(i)).collect(),
                insufficient,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(v: serde_json::Value) -> Node {
        serde_json::from_value(v).unwrap()
    }
    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn reports_every_reason_with_the_resource_numbers() {
        let n = node(json!({"metadata": {"name": "n1"},
            "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"}}}));
        let other = pod(json!({"metadata": {"name": "o", "namespace": "d"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "800m"}}}]}}));
        let p = pod(json!({"metadata": {"name": "p", "namespace": "d"},
            "spec": {"nodeSelector": {"a": "b"},
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "300m"}}}]}}));
        assert_eq!(
            fits(&p, &n, &[other]),
            Fit::Unfit {
                reasons: vec![
                    "Insufficient cpu".to_string(),
                    "node(s) didn't match node selector".into(),
                    "node(s) had taints that the pod didn't tolerate".into(),
                ],
                insufficient: vec![Insufficient {
                    resource: "cpu".into(),
                    requested: 300,
                    used: 800,
                    capacity: 1000,
                }],
            }
        );
        let small = pod(json!({"metadata": {"name": "s", "namespace": "d"},
            "spec": {"tolerations": [{"operator": "Exists"}], "containers": [{"name": "c"}]}}));
        assert!(fits(&small, &n, &[]).fits());
    }
}
