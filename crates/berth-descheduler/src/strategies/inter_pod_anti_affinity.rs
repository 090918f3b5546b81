//! RemovePodsViolatingInterPodAntiAffinity (§1.8), as the seed words it: when podB and podC have
//! required anti-affinity against podA on the same node, podA is evicted so that podB and podC
//! may stay (spec README's decision; upstream's code evicts the pods carrying the term instead).
//!
//! On each node, in list order, a pod is evicted when another evictable pod still on the node
//! has a required anti-affinity term that selects it: the pod's namespace is one the term looks
//! at and its labels match the term's selector. Only co-location counts (upstream ignores
//! topologyKey here); preferred terms are ignored; a term with an invalid selector selects
//! nothing. An evicted pod no longer counts against the pods after it.

use crate::engine::Pass;
use crate::model::PodState;
use crate::Strategy;

const S: Strategy = Strategy::RemovePodsViolatingInterPodAntiAffinity;

/// True if one of `holder`'s required anti-affinity terms selects `target`.
fn selected_by(target: &PodState, holder: &PodState) -> bool {
    holder.anti_affinity.iter().any(|t| {
        t.namespaces.contains(&target.namespace)
            && t.selector.as_ref().is_some_and(|s| {
                let labels = target.labels();
                s.matches_fn(|k| labels.get(k).map(String::as_str))
            })
    })
}

pub(crate) fn run(pass: &mut Pass) {
    for n in 0..pass.nodes.len() {
        let mut remaining = pass.candidates(n);
        let mut i = 0;
        while i < remaining.len() {
            if !pass.room_on(n) {
                break;
            }
            let p = remaining[i];
            let target = &pass.pods[p];
            let holder = remaining
                .iter()
                .find(|&&h| h != p && selected_by(target, &pass.pods[h]));
            if let Some(&h) = holder {
                let reason = format!(
                    "pod {} on node {} has required anti-affinity against it",
                    pass.pods[h].key(),
                    pass.nodes[n].name
                );
                if pass.evict(p, n, S, reason) {
                    remaining.remove(i);
                    continue;
                }
            }
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::strategies::testutil::*;
    use serde_json::{json, Value};

    fn on() -> crate::Policy {
        policy(json!({"RemovePodsViolatingInterPodAntiAffinity": {"enabled": true}}))
    }

    fn against(key: &str, value: &str) -> Value {
        json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]},
            "topologyKey": "kubernetes.io/hostname"}]}})
    }

    #[test]
    fn the_seeds_example_evicts_pod_a_so_pod_b_and_pod_c_stay() {
        let pods = vec![
            pod("pod-a").rs("a").label("app", "a").on("n1"),
            pod("pod-b")
                .rs("b")
                .spec("affinity", against("app", "a"))
                .on("n1"),
            pod("pod-c")
                .rs("c")
                .spec("affinity", against("app", "a"))
                .on("n1"),
        ];
        let plan = run(vec![node("n1"), node("n2")], pods, &on(), 0);
        assert_eq!(names(&plan), ["pod-a"]);
        assert_eq!(
            plan.evictions[0].reason,
            "pod default/pod-b on node n1 has required anti-affinity against it"
        );
    }

    #[test]
    fn the_upstream_vector_evicts_the_selected_pod_once() {
        // p1, p3, p4 carry `foo In [bar]`; p2 is labelled foo=bar.
        let t = against("foo", "bar");
        let pods = vec![
            pod("p1").rs("r").spec("affinity", t.clone()).on("n1"),
            pod("p2").rs("r").label("foo", "bar").on("n1"),
            pod("p3").rs("r").spec("affinity", t.clone()).on("n1"),
            pod("p4").rs("r").spec("affinity", t).on("n1"),
        ];
        assert_eq!(
            evicted(vec![node("n1"), node("n2")], pods, &on(), 0),
            ["p2"]
        );
    }

    #[test]
    fn two_pods_against_each_other_lose_only_the_first() {
        let pods = vec![
            pod("x")
                .rs("r")
                .label("app", "x")
                .spec("affinity", against("app", "y"))
                .on("n1"),
            pod("y")
                .rs("r")
                .label("app", "y")
                .spec("affinity", against("app", "x"))
                .on("n1"),
        ];
        assert_eq!(evicted(vec![node("n1"), node("n2")], pods, &on(), 0), ["x"]);
    }

    #[test]
    fn other_namespaces_pods_on_other_nodes_and_protected_holders_do_not_count() {
        let pods = vec![
            pod("a")
                .namespace("other")
                .rs("a")
                .label("app", "a")
                .on("n1"),
            pod("b")
                .rs("b")
                .spec("affinity", against("app", "a"))
                .on("n1"),
            pod("c").rs("c").label("app", "a").on("n2"),
            pod("d").owner("DaemonSet", "d").label("app", "d").on("n2"),
            pod("e")
                .owner("DaemonSet", "e")
                .spec("affinity", against("app", "d"))
                .on("n2"),
        ];
        assert!(evicted(vec![node("n1"), node("n2")], pods, &on(), 0).is_empty());
    }
}
