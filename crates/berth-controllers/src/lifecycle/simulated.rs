//! The sign of life of `berth simulate`'s nodes.
//!
//! A kubelet renews its Lease every 10s; in a simulation that is one write per node every 10s
//! of cluster time, so the cost grows with nodes x simulated time while saying nothing new.
//! `berth simulate`'s kubelets therefore renew nothing, and the monitor takes each simulated
//! node's behaviour, the `berth.io/simulate` annotation its Node carries (what `berth node
//! stop`, a cluster file's `failures` and a timeline's `fail` set), as its lease: a node that
//! reaches the API (`running`, `not-ready`, or no annotation) renews at every pass; one
//! `stopped` or `partitioned` renewed last at the last pass that saw it reach the API, so it
//! goes `Unknown` one grace period later, as a silent kubelet does. Nodes the simulation does
//! not run (a Node created by hand) are read from their Lease as ever.

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Node;
use std::collections::{BTreeMap, BTreeSet};

/// The annotation that says how a simulated node behaves (berth-kubelet's `simulate`).
pub const SIMULATE_ANNOTATION: &str = "berth.io/simulate";

/// The simulated nodes' lease renewals, as the monitor is to see them.
#[derive(Clone, Debug, Default)]
pub struct SimulatedLeases {
    nodes: BTreeSet<String>,
    last_alive: BTreeMap<String, DateTime<Utc>>,
    /// The last pass skipped because every node ran and none changed: every node was alive
    /// then, which is recorded once instead of per node.
    all_alive_at: Option<DateTime<Utc>>,
}

/// Whether a node whose annotation reads `value` reaches the API (the kubelet's
/// `Simulate::reaches_api`; an unreadable value is taken as running, as the kubelet keeps its
/// behaviour then).
fn reaches_api(value: Option<&str>) -> bool {
    !matches!(
        value.map(|v| v.trim().to_ascii_lowercase()).as_deref(),
        Some("stopped" | "partitioned")
    )
}

impl SimulatedLeases {
    /// The leases of the nodes named (the simulated kubelets').
    pub fn new(nodes: impl IntoIterator<Item = String>) -> SimulatedLeases {
        SimulatedLeases {
            nodes: nodes.into_iter().collect(),
            last_alive: BTreeMap::new(),
            all_alive_at: None,
        }
    }

    /// Whether `node` is one of the simulated nodes.
    pub fn covers(&self, node: &str) -> bool {
        self.nodes.contains(node)
    }

    /// Whether any node is simulated (a simulation's controller).
    pub fn active(&self) -> bool {
        !self.nodes.is_empty()
    }

    /// Renews every simulated node that reaches the API at `now` (as [`Self::renew_time`]);
    /// returns whether every node is simulated and reaches the API. A pass over such nodes,
    /// unchanged since the last one, would decide nothing: the driver skips it.
    pub fn renew_all<'a>(
        &mut self,
        nodes: impl IntoIterator<Item = &'a Node>,
        now: DateTime<Utc>,
    ) -> bool {
        let mut all = true;
        for node in nodes {
            let name = node.metadata.name.as_deref().unwrap_or_default();
            let alive = self.covers(name) && self.renew_time(node, now) == Some(now);
            all &= alive;
        }
        all
    }

    /// A pass skipped at `now` because every node ran at the last pass and none changed since:
    /// every lease is renewed at `now`, in one step rather than one per node.
    pub fn renew_unchanged(&mut self, now: DateTime<Utc>) {
        self.all_alive_at = Some(now);
    }

    /// The renewal time of a simulated node's lease at a pass at `now`: `now` while it reaches
    /// the API, else when it last did (none if it never did).
    pub fn renew_time(&mut self, node: &Node, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let name = node.metadata.name.as_deref()?;
        let value = node
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(SIMULATE_ANNOTATION))
            .map(String::as_str);
        if reaches_api(value) {
            match self.last_alive.get_mut(name) {
                Some(at) => *at = now,
                None => {
                    self.last_alive.insert(name.to_string(), now);
                }
            }
            return Some(now);
        }
        let own = self.last_alive.get(name).copied();
        match (own, self.all_alive_at) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lifecycle::{LifecycleAction, LifecycleConfig, Monitor, NodeView};
    use serde_json::json;

    fn node(behaviour: Option<&str>) -> Node {
        let annotations = behaviour.map(|b| json!({SIMULATE_ANNOTATION: b}));
        serde_json::from_value(json!({
            "metadata": {"name": "n1", "uid": "u1", "annotations": annotations},
            "status": {"conditions": [{"type": "Ready", "status": "True",
                "lastHeartbeatTime": "2026-01-01T00:00:00Z"}]},
        }))
        .unwrap()
    }

    fn t(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_767_225_600 + s, 0).unwrap()
    }

    #[test]
    fn every_node_renewed_means_a_pass_may_be_skipped() {
        let mut leases = SimulatedLeases::new(["n1".to_string()]);
        assert!(leases.active());
        assert!(leases.renew_all([&node(None)], t(0)));
        assert!(!leases.renew_all([&node(Some("stopped"))], t(5)));
        assert_eq!(leases.renew_time(&node(Some("stopped")), t(10)), Some(t(0)));
        let other: Node = serde_json::from_value(json!({"metadata": {"name": "n2"}})).unwrap();
        assert!(!leases.renew_all([&node(None), &other], t(15)));
        assert!(!SimulatedLeases::default().active());
    }

    #[test]
    fn skipped_passes_renew_every_lease_so_a_later_stop_counts_from_the_last_one() {
        let mut leases = SimulatedLeases::new(["n1".to_string()]);
        assert!(leases.renew_all([&node(None)], t(0)));
        // An hour of skipped passes, then the node stops: its lease was last renewed at the
        // last skipped pass, not at the last full one.
        for s in (5..=3600).step_by(5) {
            leases.renew_unchanged(t(s));
        }
        assert_eq!(
            leases.renew_time(&node(Some("stopped")), t(3605)),
            Some(t(3600))
        );
        // A node that never ran before the skips has no earlier renewal of its own.
        let mut fresh = SimulatedLeases::new(["n1".to_string()]);
        fresh.renew_unchanged(t(10));
        assert_eq!(fresh.renew_time(&node(Some("stopped")), t(15)), Some(t(10)));
        // A renewal after the skips wins over them.
        assert_eq!(fresh.renew_time(&node(None), t(20)), Some(t(20)));
        assert_eq!(fresh.renew_time(&node(Some("stopped")), t(25)), Some(t(20)));
    }

    #[test]
    fn a_running_node_renews_at_every_pass_and_a_stopped_one_keeps_its_last() {
        let mut leases = SimulatedLeases::new(["n1".to_string()]);
        assert!(leases.covers("n1") && !leases.covers("n2"));
        assert_eq!(leases.renew_time(&node(None), t(0)), Some(t(0)));
        assert_eq!(
            leases.renew_time(&node(Some("not-ready")), t(5)),
            Some(t(5))
        );
        assert_eq!(leases.renew_time(&node(Some("Stopped")), t(10)), Some(t(5)));
        assert_eq!(
            leases.renew_time(&node(Some("partitioned")), t(60)),
            Some(t(5))
        );
        assert_eq!(
            leases.renew_time(&node(Some("running")), t(65)),
            Some(t(65))
        );
        let mut fresh = SimulatedLeases::new(["n1".to_string()]);
        assert_eq!(fresh.renew_time(&node(Some("stopped")), t(0)), None);
    }

    /// The monitor marks a stopped simulated node `Unknown` one grace period after the last
    /// pass that saw it running, as it would a kubelet that stopped renewing its lease then.
    #[test]
    fn a_stopped_node_goes_unknown_after_the_grace_period() {
        let mut leases = SimulatedLeases::new(["n1".to_string()]);
        let mut monitor = Monitor::new(LifecycleConfig::default());
        let mut unknown_at = None;
        for s in (0..=120).step_by(5) {
            let n = node((s >= 20).then_some("stopped"));
            let renew = leases.renew_time(&n, t(s));
            let actions = monitor.pass(
                &[NodeView {
                    node: &n,
                    lease_renew: renew,
                }],
                t(s),
            );
            let marked = actions
                .iter()
                .any(|a| matches!(a, LifecycleAction::SetConditions { .. }));
            if marked && unknown_at.is_none() {
                unknown_at = Some(s);
            }
        }
        // Last seen running at 15s; 40s of grace are over after 55s: the pass at 60s.
        assert_eq!(unknown_at, Some(60));
    }
}
