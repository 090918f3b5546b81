//! RemoveDuplicates (§1.6): on each node, one pod per owner; the others are evicted.
//!
//! The owner key is upstream v0.10's `namespace/kind/name`, once per ownerReference of a pod;
//! groups are visited by key, and in each the first pod (by namespace and name) stays.

use crate::engine::Pass;
use crate::Strategy;
use std::collections::BTreeMap;

const S: Strategy = Strategy::RemoveDuplicates;

pub(crate) fn run(pass: &mut Pass) {
    for n in 0..pass.nodes.len() {
        let mut groups: BTreeMap<(String, String, String), Vec<usize>> = BTreeMap::new();
        for p in pass.candidates(n) {
            let pod = &pass.pods[p];
            for o in &pod.pod.metadata.owner_references {
                groups
                    .entry((pod.namespace.clone(), o.kind.clone(), o.name.clone()))
                    .or_default()
                    .push(p);
            }
        }
        for ((ns, kind, name), pods) in groups {
            let Some((&kept, rest)) = pods.split_first() else {
                continue;
            };
            for &p in rest {
                if !pass.room_on(n) {
                    break;
                }
                let reason = format!(
                    "duplicate: {kind} {ns}/{name} already has pod {} on node {}",
                    pass.pods[kept].name, pass.nodes[n].name
                );
                pass.evict(p, n, S, reason);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::strategies::testutil::*;
    use serde_json::json;

    fn on() -> crate::Policy {
        policy(json!({"RemoveDuplicates": {"enabled": true}}))
    }

    fn nodes() -> Vec<N> {
        vec![node("n1"), node("n2")]
    }

    fn three(ns: &str, names: [&str; 3]) -> Vec<P> {
        names
            .iter()
            .map(|n| pod(n).namespace(ns).rs("replicaset-1").on("n1"))
            .collect()
    }

    #[test]
    fn the_first_pod_of_an_owner_stays_and_the_others_go() {
        assert_eq!(
            evicted(nodes(), three("dev", ["p1", "p2", "p3"]), &on(), 5),
            ["p2", "p3"]
        );
        assert_eq!(
            evicted(nodes(), three("test", ["p8", "p9", "p10"]), &on(), 5).len(),
            2
        );
    }

    #[test]
    fn owners_of_the_same_name_in_two_namespaces_are_two_groups() {
        let mut pods = three("dev", ["p1", "p2", "p3"]);
        pods.extend(three("test", ["p8", "p9", "p10"]));
        assert_eq!(evicted(nodes(), pods, &on(), 5).len(), 4);
    }

    #[test]
    fn the_per_node_cap_holds() {
        let mut pods = three("dev", ["p1", "p2", "p3"]);
        pods.extend(three("test", ["p8", "p9", "p10"]));
        assert_eq!(evicted(nodes(), pods, &on(), 3).len(), 3);
    }

    #[test]
    fn protected_pods_are_never_duplicates() {
        let pods = vec![
            pod("ds1").owner("DaemonSet", "ds").on("n1"),
            pod("ds2").owner("DaemonSet", "ds").on("n1"),
            pod("l1").rs("r").empty_dir().on("n1"),
            pod("l2").rs("r").empty_dir().on("n1"),
            pod("m1").rs("m").mirror().on("n1"),
            pod("m2").rs("m").mirror().on("n1"),
            pod("c1").rs("c").priority(2_000_000_000).on("n1"),
            pod("c2").rs("c").priority(2_000_000_000).on("n1"),
            pod("s1").on("n1"),
            pod("s2").on("n1"),
        ];
        assert!(evicted(nodes(), pods, &on(), 2).is_empty());
    }

    #[test]
    fn pods_of_one_owner_on_different_nodes_are_not_duplicates() {
        let pods = vec![pod("a").rs("r").on("n1"), pod("b").rs("r").on("n2")];
        assert!(evicted(nodes(), pods, &on(), 0).is_empty());
    }

    #[test]
    fn a_one_node_cluster_is_left_alone() {
        assert!(evicted(vec![node("n1")], three("dev", ["p1", "p2", "p3"]), &on(), 0).is_empty());
    }

    /// `defaultevictor_test.go` nodeFit: a pod no other node takes is not evicted.
    #[test]
    fn with_node_fit_a_duplicate_that_fits_nowhere_else_stays() {
        let tainted = || vec![node("n1"), node("n2").taint("k", "v", "NoSchedule")];
        let with = |fit: bool| {
            v2_plugin_with_evictor(
                "RemoveDuplicates",
                "balance",
                json!({}),
                json!({ "nodeFit": fit }),
            )
        };
        let plan = run(tainted(), three("dev", ["p1", "p2", "p3"]), &with(true), 0);
        assert!(plan.evictions.is_empty());
        assert!(plan.notes.iter().any(|n| n.message.contains("nodeFit")));
        assert_eq!(
            evicted(tainted(), three("dev", ["p1", "p2", "p3"]), &with(false), 0),
            ["p2", "p3"]
        );
    }
}
