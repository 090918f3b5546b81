//! Where each evicted pod would go: the descheduling preview of `berth simulate`.
//!
//! Upstream's dry run evicts each pod in isolation and cannot say where it would land. The
//! preview schedules the plan's pods in the plan's order with the scheduler's own engine, on a
//! [`ClusterCache`] of the pass's nodes and pods: each pod is taken off its node, scheduled as
//! its replacement would be, and assumed where it lands, so each later pod sees the resources
//! the earlier moves took. A pod that fits nowhere is put back and not evicted: evicting it
//! would leave it Pending. The pod may land on the node it left (the scheduler sees that node
//! with the pod gone too).

use crate::engine::Eviction;
use crate::model::{NodeState, PodState};
use berth_scheduler::{ClusterCache, Decision, Scheduler};
use serde::Serialize;

/// Where one evicted pod would go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "to", content = "detail", rename_all = "camelCase")]
pub enum Destination {
    /// The node the scheduler would bind it to.
    Node(String),
    /// No node fits it (the scheduler's message): the pod is not evicted.
    Nowhere(String),
}

impl Destination {
    /// Whether the pod may be evicted (it fits somewhere).
    pub fn fits(&self) -> bool {
        matches!(self, Destination::Node(_))
    }
}

/// One line of the preview: `pod X: node A -> node B`, or `fits nowhere: not evicted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Move {
    /// `namespace/name`.
    pub pod: String,
    /// The node it runs on.
    pub from: String,
    /// Where it would go.
    #[serde(flatten)]
    pub to: Destination,
}

impl std::fmt::Display for Move {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.to {
            Destination::Node(n) => write!(f, "pod {}: node {} -> node {n}", self.pod, self.from),
            Destination::Nowhere(_) => {
                write!(f, "pod {}: fits nowhere: not evicted", self.pod)
            }
        }
    }
}

/// The cache of a pass: its nodes and the pods bound to them that still hold resources.
fn cache_of(nodes: &[NodeState], pods: &[PodState]) -> ClusterCache {
    let mut cache = ClusterCache::new();
    for n in nodes {
        let _ = cache.upsert_node(&n.node);
    }
    for p in pods
        .iter()
        .filter(|p| !p.node.is_empty() && !p.is_terminal())
    {
        let _ = cache.upsert_pod(&p.pod);
    }
    cache
}

/// Schedules the pods of `evictions`, in order, as their replacements would be (see the module
/// doc); one [`Move`] per eviction, same order. `scheduler` should be the cluster's (its
/// policy); its tie-breaking state advances as it decides.
pub fn preview(
    nodes: &[NodeState],
    pods: &[PodState],
    evictions: &[Eviction],
    scheduler: &mut Scheduler,
) -> Vec<Move> {
    let mut cache = cache_of(nodes, pods);
    evictions
        .iter()
        .map(|e| {
            let key = format!("{}/{}", e.namespace, e.name);
            let found = pods
                .iter()
                .find(|p| p.namespace == e.namespace && p.name == e.name);
            let to = match found {
                None => Destination::Nowhere(format!("pod {key} is not in the snapshot")),
                Some(p) => place(&mut cache, scheduler, p, &key),
            };
            Move {
                pod: key,
                from: e.node.clone(),
                to,
            }
        })
        .collect()
}

/// Takes `pod` off its node and schedules it; assumes it where it lands, or puts it back.
fn place(
    cache: &mut ClusterCache,
    scheduler: &mut Scheduler,
    pod: &PodState,
    key: &str,
) -> Destination {
    let was_placed = cache.remove_pod(key).is_some();
    let mut unbound = pod.pod.clone();
    unbound.spec.node_name.clear();
    let info = cache.compile_pod(&unbound);
    let decision = scheduler.schedule(cache, &info);
    let to = match decision {
        Decision::Scheduled { node, .. } => match cache.assume(info, &node) {
            Ok(()) => return Destination::Node(node),
            Err(e) => Destination::Nowhere(e.to_string()),
        },
        Decision::Unschedulable(fit) => Destination::Nowhere(fit.message()),
        Decision::Error(e) => Destination::Nowhere(e),
    };
    if was_placed {
        let _ = cache.upsert_pod(&pod.pod);
    }
    to
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strategy;
    use serde_json::json;

    fn node(name: &str, cpu: &str) -> NodeState {
        NodeState::from_json(
            &json!({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}),
        )
        .unwrap()
    }

    fn pod(name: &str, node: &str, cpu: &str) -> PodState {
        PodState::from_json(
            &json!({"metadata": {"name": name, "namespace": "d", "uid": name},
            "spec": {"nodeName": node, "containers": [{"name": "c",
                "resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": "Running"}}),
        )
        .unwrap()
    }

    fn eviction(name: &str, node: &str) -> Eviction {
        Eviction {
            namespace: "d".into(),
            name: name.into(),
            node: node.into(),
            strategy: Strategy::LowNodeUtilization,
            reason: "test".into(),
        }
    }

    fn scheduler() -> Scheduler {
        Scheduler::builder().seed(1).build().unwrap()
    }

    #[test]
    fn each_pod_goes_where_the_scheduler_puts_it_with_earlier_moves_counted() {
        // n2 has room for one 1500m pod; the second must go back to n1.
        let nodes = [node("n1", "4"), node("n2", "2")];
        let pods = [pod("a", "n1", "1500m"), pod("b", "n1", "1500m")];
        let moves = preview(
            &nodes,
            &pods,
            &[eviction("a", "n1"), eviction("b", "n1")],
            &mut scheduler(),
        );
        assert_eq!(moves[0].to, Destination::Node("n2".into()));
        assert_eq!(moves[1].to, Destination::Node("n1".into()));
        assert_eq!(moves[0].to_string(), "pod d/a: node n1 -> node n2");
    }

    #[test]
    fn a_pod_that_fits_nowhere_is_not_evicted_and_keeps_its_place() {
        let nodes = [node("n1", "2"), node("n2", "1")];
        let pods = [
            pod("big", "n1", "1500m"),
            pod("filler", "n2", "500m"),
            pod("small", "n1", "500m"),
        ];
        let moves = preview(
            &nodes,
            &pods,
            &[eviction("big", "n1"), eviction("small", "n1")],
            &mut scheduler(),
        );
        // big fits back on n1 only (n2 has 500m left) ...
        assert_eq!(moves[0].to, Destination::Node("n1".into()));
        // ... a node too small for it everywhere: put back, not evicted.
        let nodes = [node("n1", "2")];
        let pods = [pod("big", "n1", "3")];
        let moves = preview(&nodes, &pods, &[eviction("big", "n1")], &mut scheduler());
        match &moves[0].to {
            Destination::Nowhere(why) => {
                assert!(why.contains("0/1 nodes are available"), "{why}")
            }
            other => panic!("{other:?}"),
        }
        assert!(!moves[0].to.fits());
        assert_eq!(moves[0].to_string(), "pod d/big: fits nowhere: not evicted");
    }

    #[test]
    fn every_move_is_feasible_with_the_moves_before_it() {
        let nodes = [node("n1", "2"), node("n2", "2"), node("n3", "1")];
        let pods: Vec<PodState> = (0..6)
            .map(|i| pod(&format!("p{i}"), "n1", "600m"))
            .collect();
        let evictions: Vec<Eviction> = (0..6).map(|i| eviction(&format!("p{i}"), "n1")).collect();
        let moves = preview(&nodes, &pods, &evictions, &mut scheduler());
        // Replay: each destination has room for the pod after the moves before it.
        let mut used: std::collections::BTreeMap<&str, i64> =
            [("n1", 3600), ("n2", 0), ("n3", 0)].into();
        let cap: std::collections::BTreeMap<&str, i64> =
            [("n1", 2000), ("n2", 2000), ("n3", 1000)].into();
        for m in &moves {
            if let Destination::Node(to) = &m.to {
                *used.get_mut("n1").unwrap() -= 600;
                *used.get_mut(to.as_str()).unwrap() += 600;
                assert!(used[to.as_str()] <= cap[to.as_str()], "{m}: {used:?}");
            }
        }
    }
}
