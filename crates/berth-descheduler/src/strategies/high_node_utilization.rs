//! HighNodeUtilization (v1alpha2): the opposite of LowNodeUtilization, for bin packing. Pods
//! leave the underutilized nodes (at or below every threshold; a missing threshold is 100%)
//! while the other, schedulable nodes still have room for them, so that the scheduler (with a
//! MostAllocated score) packs them onto fewer nodes and the emptied ones can be removed.
//!
//! Usage is computed as LowNodeUtilization computes it (requests over allocatable). The room is
//! the sum over the destination nodes of allocatable less usage, per resource (upstream's
//! targets are 100%); eviction stops once any resource's room is used up. The least used
//! underutilized nodes are emptied first; pods leave in [`eviction_order`](crate::eviction_order).

use super::low_node_utilization::{at_or_below_all, describe, usage, Usage};
use crate::engine::Pass;
use crate::evictable::eviction_order;
use crate::policy::HighNodeUtilization;
use crate::Strategy;

const S: Strategy = Strategy::HighNodeUtilization;

pub(crate) fn run(pass: &mut Pass, args: &HighNodeUtilization) {
    let usages: Vec<Usage> = (0..pass.nodes.len()).map(|n| usage(pass, n)).collect();
    let mut low = Vec::new();
    let mut high = Vec::new();
    for (n, u) in usages.iter().enumerate() {
        if at_or_below_all(u, &args.thresholds) {
            low.push(n);
        } else if !pass.nodes[n].node.spec.unschedulable {
            high.push(n);
        }
    }
    let note = |pass: &mut Pass, m: &str| pass.note(Some(S), m);
    if low.is_empty() {
        return note(
            pass,
            "no node is underutilized, nothing to do here, you might tune your thresholds further",
        );
    }
    if low.len() <= args.number_of_nodes {
        return note(
            pass,
            &format!(
                "number of nodes underutilized ({}) is less or equal than numberOfNodes ({}), nothing to do here",
                low.len(),
                args.number_of_nodes
            ),
        );
    }
    if low.len() == pass.nodes.len() {
        return note(pass, "all nodes are underutilized, nothing to do here");
    }
    if high.is_empty() {
        return note(
            pass,
            "no node is available to schedule the pods, nothing to do here",
        );
    }
    // What the destination nodes can still take: allocatable less requests, per resource.
    let (mut room_pods, mut room_cpu, mut room_mem) = (0i64, 0i64, 0i64);
    for &n in &high {
        let node = pass.nodes[n];
        let (mut cpu, mut mem, mut count) = (0i64, 0i64, 0i64);
        for p in pass.live(n) {
            let r = pass.pods[p].request;
            cpu = cpu.saturating_add(r.cpu_milli);
            mem = mem.saturating_add(r.memory_bytes);
            count += 1;
        }
        room_pods += node.pods.saturating_sub(count);
        room_cpu += node.cpu_milli.saturating_sub(cpu);
        room_mem += node.memory_bytes.saturating_sub(mem);
    }
    let high_names: Vec<&str> = high.iter().map(|&n| pass.nodes[n].name.as_str()).collect();
    let high_names = high_names.join(", ");
    // The least used first: those are the nodes to empty.
    low.sort_by(|&a, &b| {
        let sum = |u: &Usage| u.cpu + u.memory + u.pods;
        sum(&usages[a])
            .total_cmp(&sum(&usages[b]))
            .then_with(|| pass.nodes[a].name.cmp(&pass.nodes[b].name))
    });
    for n in low {
        let mut candidates: Vec<usize> = pass
            .candidates(n)
            .into_iter()
            .filter(|&p| !args.exclude_namespaces.contains(&pass.pods[p].namespace))
            .collect();
        candidates.sort_by(|&a, &b| eviction_order(&pass.pods[a], &pass.pods[b]));
        for p in candidates {
            if room_pods <= 0 || room_cpu <= 0 || room_mem <= 0 {
                return;
            }
            if !pass.room_on(n) {
                break;
            }
            let reason = format!(
                "node {} is underutilized ({}); room on: {high_names}",
                pass.nodes[n].name,
                describe(&usages[n])
            );
            let r = pass.pods[p].request;
            if pass.evict(p, n, S, reason) {
                room_pods -= 1;
                room_cpu -= r.cpu_milli;
                room_mem -= r.memory_bytes;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::strategies::testutil::*;
    use serde_json::json;

    fn hnu(args: serde_json::Value) -> crate::Policy {
        v2_plugin("HighNodeUtilization", "balance", args)
    }

    /// `highnodeutilization_test.go` "no node below threshold usage": n1..n3 with 4 cpu and 9/10
    /// pods, each over 20% cpu.
    fn busy(name: &str, pods: usize) -> Vec<P> {
        (0..pods)
            .map(|i| pod(&format!("{name}-p{i}")).rs("rs").cpu(400).on(name))
            .collect()
    }

    #[test]
    fn no_underutilized_node_evicts_nothing() {
        let nodes = vec![
            node("n1").alloc(4000, 3000, 9),
            node("n2").alloc(4000, 3000, 10),
        ];
        let mut pods = busy("n1", 4);
        pods.extend(busy("n2", 4));
        let plan = run(nodes, pods, &hnu(json!({"thresholds": {"cpu": 20}})), 0);
        assert!(plan.evictions.is_empty());
        assert!(plan.notes[0]
            .message
            .starts_with("no node is underutilized"));
    }

    /// "without priorities": n1 has two pods of 400m (20% cpu), n2 and n3 are busy; the pods
    /// of n1 leave.
    #[test]
    fn pods_leave_the_underutilized_node_for_the_busy_ones() {
        let nodes = vec![
            node("n1").alloc(4000, 3000, 10),
            node("n2").alloc(4000, 3000, 10),
            node("n3").alloc(4000, 3000, 10),
        ];
        let mut pods = busy("n1", 2);
        pods.extend(busy("n2", 5));
        pods.extend(busy("n3", 5));
        let got = evicted(
            nodes,
            pods,
            &hnu(json!({"thresholds": {"cpu": 20, "pods": 100}})),
            0,
        );
        assert_eq!(got, ["n1-p0", "n1-p1"]);
    }

    #[test]
    fn number_of_nodes_and_all_underutilized_gate_it() {
        let nodes = || {
            vec![
                node("n1").alloc(4000, 3000, 10),
                node("n2").alloc(4000, 3000, 10),
            ]
        };
        let mut pods = busy("n1", 1);
        pods.extend(busy("n2", 5));
        let plan = run(
            nodes(),
            pods,
            &hnu(json!({"thresholds": {"cpu": 20}, "numberOfNodes": 1})),
            0,
        );
        assert!(plan.evictions.is_empty());
        assert!(plan.notes[0]
            .message
            .contains("less or equal than numberOfNodes (1)"));
        let plan = run(
            nodes(),
            busy("n1", 1),
            &hnu(json!({"thresholds": {"cpu": 50}})),
            0,
        );
        assert!(plan.notes[0]
            .message
            .starts_with("all nodes are underutilized"));
    }

    #[test]
    fn excluded_namespaces_stay_and_no_room_means_no_eviction() {
        let nodes = vec![
            node("n1").alloc(4000, 3000, 10),
            node("n2").alloc(4000, 3000, 5),
        ];
        let mut pods = vec![
            pod("sys")
                .rs("rs")
                .cpu(400)
                .on("n1")
                .namespace("kube-system"),
            pod("app").rs("rs").cpu(400).on("n1"),
        ];
        pods.extend(busy("n2", 5));
        // n2 is full (5 of 5 pods): no room, nothing leaves n1.
        let p = hnu(
            json!({"thresholds": {"cpu": 20}, "evictableNamespaces": {"exclude": ["kube-system"]}}),
        );
        assert!(evicted(nodes, pods, &p, 0).is_empty());
        let nodes = vec![
            node("n1").alloc(4000, 3000, 10),
            node("n2").alloc(4000, 3000, 10),
        ];
        let mut pods = vec![
            pod("sys")
                .rs("rs")
                .cpu(400)
                .on("n1")
                .namespace("kube-system"),
            pod("app").rs("rs").cpu(400).on("n1"),
        ];
        pods.extend(busy("n2", 5));
        assert_eq!(evicted(nodes, pods, &p, 0), ["app"]);
    }

    #[test]
    fn bad_arguments_are_refused_with_upstreams_words() {
        for (args, field, words) in [
            (
                json!({}),
                "args.thresholds",
                "no resource threshold is configured",
            ),
            (
                json!({"thresholds": {"cpu": 120}}),
                "args.thresholds.cpu",
                "cpu threshold not in [0, 100] range",
            ),
            (
                json!({"thresholds": {"cpu": 10}, "evictableNamespaces": {"include": ["a"]}}),
                "args.evictableNamespaces.include",
                "only Exclude namespaces can be set, inclusion is not supported",
            ),
        ] {
            let e = v2_error("HighNodeUtilization", "balance", args);
            assert_eq!(e.field, field);
            assert_eq!(e.reason, words);
        }
    }
}
