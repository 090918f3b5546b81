//! RemovePodsViolatingNodeAffinity (§1.9): a pod whose required node affinity its node no longer
//! matches is evicted when another node would take it.
//!
//! Both questions go to the scheduler's [`fits`]: the pod's node breaks its node selector or
//! required node affinity when `fits` reports the selector reason there; another node takes it
//! when it is schedulable and `fits` says the pod fits it next to that node's pods (resources,
//! ports, selector and affinity, taints). Upstream asks only about labels and stops at the first
//! matching node even when it is cordoned; berth asks the whole question of every node and says so.

use crate::engine::Pass;
use crate::Strategy;
use berth_scheduler::model::Pod;
use berth_scheduler::{fits, Fit};

const S: Strategy = Strategy::RemovePodsViolatingNodeAffinity;

/// The reason `fits` gives when a node breaks a pod's node selector or required node affinity.
const SELECTOR_REASON: &str = "node(s) didn't match node selector";

fn breaks_selector(fit: &Fit) -> bool {
    match fit {
        Fit::Fits => false,
        Fit::Unfit { reasons, .. } => reasons.iter().any(|r| r == SELECTOR_REASON),
    }
}

pub(crate) fn run(pass: &mut Pass) {
    for n in 0..pass.nodes.len() {
        for p in pass.candidates(n) {
            if !pass.room_on(n) {
                break;
            }
            let pod = &pass.pods[p];
            let required = pod
                .pod
                .spec
                .affinity
                .as_ref()
                .and_then(|a| a.node_affinity.as_ref())
                .and_then(|a| {
                    a.required_during_scheduling_ignored_during_execution
                        .as_ref()
                });
            if required.is_none() {
                continue;
            }
            // The pod as the scheduler would see it again: not bound to any node.
            let mut unbound = pod.pod.clone();
            unbound.spec.node_name.clear();
            if !breaks_selector(&fits(&unbound, &pass.nodes[n].node, &[])) {
                continue;
            }
            let Some(other) = (0..pass.nodes.len()).find(|&m| {
                m != n
                    && !pass.nodes[m].node.spec.unschedulable
                    && fits(&unbound, &pass.nodes[m].node, &pods_on(pass, m)).fits()
            }) else {
                continue;
            };
            let reason = format!(
                "node {} no longer matches its required node affinity; node {} fits it",
                pass.nodes[n].name, pass.nodes[other].name
            );
            pass.evict(p, n, S, reason);
        }
    }
}

/// The pods still on node `m`, as `fits` takes them.
fn pods_on(pass: &Pass, m: usize) -> Vec<Pod> {
    pass.live(m).map(|p| pass.pods[p].pod.clone()).collect()
}

#[cfg(test)]
mod tests {
    use crate::strategies::testutil::*;
    use serde_json::{json, Value};

    fn on() -> crate::Policy {
        policy(json!({"RemovePodsViolatingNodeAffinity": {"enabled": true,
            "params": {"nodeAffinityType": ["requiredDuringSchedulingIgnoredDuringExecution"]}}}))
    }

    fn desired() -> Value {
        json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/desiredNode", "operator": "In", "values": ["yes"]}]}]}}})
    }

    fn with_labels() -> N {
        node("nodeWithLabels").label("kubernetes.io/desiredNode", "yes")
    }

    fn p(on_node: &str) -> P {
        pod("p").rs("r").spec("affinity", desired()).on(on_node)
    }

    #[test]
    fn a_pod_on_a_matching_node_stays() {
        let nodes = vec![with_labels(), node("other")];
        assert!(evicted(nodes, vec![p("nodeWithLabels")], &on(), 0).is_empty());
    }

    #[test]
    fn a_pod_whose_node_lost_the_label_moves_to_a_node_that_has_it() {
        let nodes = vec![node("nodeWithoutLabels"), with_labels()];
        let plan = run(nodes, vec![p("nodeWithoutLabels")], &on(), 1);
        assert_eq!(names(&plan), ["p"]);
        assert_eq!(
            plan.evictions[0].reason,
            "node nodeWithoutLabels no longer matches its required node affinity; node nodeWithLabels fits it"
        );
    }

    #[test]
    fn it_stays_when_no_other_node_would_take_it() {
        let cordoned = vec![node("nodeWithoutLabels"), with_labels().unschedulable()];
        assert!(evicted(cordoned, vec![p("nodeWithoutLabels")], &on(), 0).is_empty());
        let unlabelled = vec![node("nodeWithoutLabels"), node("other")];
        assert!(evicted(unlabelled, vec![p("nodeWithoutLabels")], &on(), 0).is_empty());
        let full = vec![
            node("nodeWithoutLabels"),
            with_labels().alloc(100, 1 << 30, 10),
        ];
        assert!(evicted(full, vec![p("nodeWithoutLabels").cpu(200)], &on(), 0).is_empty());
    }

    #[test]
    fn disabled_or_another_affinity_type_does_nothing() {
        let off = policy(json!({"RemovePodsViolatingNodeAffinity": {"enabled": false}}));
        let nodes = vec![node("nodeWithoutLabels"), with_labels()];
        assert!(evicted(nodes, vec![p("nodeWithoutLabels")], &off, 0).is_empty());
        let doc = json!({"apiVersion": "descheduler/v1alpha1", "kind": "DeschedulerPolicy", "strategies": {
            "RemovePodsViolatingNodeAffinity": {"enabled": true,
                "params": {"nodeAffinityType": ["requiredDuringSchedulingRequiredDuringExecution"]}}}});
        let err = crate::Policy::parse("p.json", &doc.to_string()).unwrap_err();
        assert_eq!(err.field, "params.nodeAffinityType[0]");
    }
}
