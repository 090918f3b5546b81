//! LowNodeUtilization (§1.7): when some nodes are underutilized, evict pods from overutilized
//! nodes until they drop below their targets or the underutilized nodes' room is used up.
//!
//! Usage is the pods' requests as a percentage of allocatable (every pod on the node counts,
//! evictable or not); a zero allocatable counts as 100% used. Pods leave in
//! [`eviction_order`](crate::eviction_order).

use crate::engine::Pass;
use crate::evictable::eviction_order;
use crate::policy::{LowNodeUtilization, Thresholds};
use crate::Strategy;

const S: Strategy = Strategy::LowNodeUtilization;

/// A node's usage in percent.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Usage {
    pub cpu: f64,
    pub memory: f64,
    pub pods: f64,
}

fn pct(used: i64, cap: i64) -> f64 {
    if cap <= 0 {
        100.0
    } else {
        100.0 * used as f64 / cap as f64
    }
}

pub(crate) fn usage(pass: &Pass, n: usize) -> Usage {
    let node = pass.nodes[n];
    let (mut cpu, mut memory, mut count) = (0i64, 0i64, 0i64);
    for p in pass.live(n) {
        let r = pass.pods[p].request;
        cpu = cpu.saturating_add(r.cpu_milli);
        memory = memory.saturating_add(r.memory_bytes);
        count += 1;
    }
    Usage {
        cpu: pct(cpu, node.cpu_milli),
        memory: pct(memory, node.memory_bytes),
        pods: pct(count, node.pods),
    }
}

fn pairs(u: &Usage, t: &Thresholds) -> [(f64, Option<f64>); 3] {
    [(u.cpu, t.cpu), (u.memory, t.memory), (u.pods, t.pods)]
}

pub(crate) fn at_or_below_all(u: &Usage, t: &Thresholds) -> bool {
    pairs(u, t).iter().all(|(u, t)| t.is_none_or(|t| *u <= t))
}

fn above_any(u: &Usage, t: &Thresholds) -> bool {
    pairs(u, t).iter().any(|(u, t)| t.is_some_and(|t| *u > t))
}

pub(crate) fn describe(u: &Usage) -> String {
    format!(
        "cpu {:.1}%, memory {:.1}%, pods {:.1}%",
        u.cpu, u.memory, u.pods
    )
}

fn describe_thresholds(t: &Thresholds) -> String {
    let parts: Vec<String> = [("cpu", t.cpu), ("memory", t.memory), ("pods", t.pods)]
        .iter()
        .filter_map(|(r, v)| v.map(|v| format!("{r} {v}%")))
        .collect();
    parts.join(", ")
}

pub(crate) fn run(pass: &mut Pass, lnu: &LowNodeUtilization) {
    let usages: Vec<Usage> = (0..pass.nodes.len()).map(|n| usage(pass, n)).collect();
    let mut low = Vec::new();
    let mut over = Vec::new();
    for (n, u) in usages.iter().enumerate() {
        if !pass.nodes[n].node.spec.unschedulable && at_or_below_all(u, &lnu.thresholds) {
            low.push(n);
        } else if above_any(u, &lnu.target_thresholds) {
            over.push(n);
        }
    }
    let note = |pass: &mut Pass, m: String| pass.note(Some(S), m);
    if low.is_empty() {
        return note(
            pass,
            "no node is underutilized, nothing to do here, you might tune your thresholds further"
                .into(),
        );
    }
    let too_few = if lnu.gate_inclusive {
        low.len() <= lnu.number_of_nodes
    } else {
        low.len() < lnu.number_of_nodes
    };
    if too_few {
        return note(
            pass,
            format!(
                "number of nodes underutilized ({}) is less than numberOfNodes ({}), nothing to do here",
                low.len(),
                lnu.number_of_nodes
            ),
        );
    }
    if low.len() == pass.nodes.len() {
        return note(
            pass,
            "all nodes are underutilized, nothing to do here".into(),
        );
    }
    if over.is_empty() {
        return note(
            pass,
            "all nodes are under target utilization, nothing to do here".into(),
        );
    }
    let target = lnu.target_thresholds;
    // What the underutilized nodes can take before they reach the targets.
    let (mut budget_pods, mut budget_cpu, mut budget_mem) = (0f64, 0f64, 0f64);
    for &n in &low {
        let (u, node) = (usages[n], pass.nodes[n]);
        if let Some(t) = target.pods {
            budget_pods += (t - u.pods) * node.pods as f64 / 100.0;
        }
        if let Some(t) = target.cpu {
            budget_cpu += (t - u.cpu) * node.cpu_milli as f64 / 100.0;
        }
        if let Some(t) = target.memory {
            budget_mem += (t - u.memory) * node.memory_bytes as f64 / 100.0;
        }
    }
    let low_names: Vec<&str> = low.iter().map(|&n| pass.nodes[n].name.as_str()).collect();
    let low_names = low_names.join(", ");
    over.sort_by(|&a, &b| {
        let sum = |u: &Usage| u.cpu + u.memory + u.pods;
        sum(&usages[b])
            .total_cmp(&sum(&usages[a]))
            .then_with(|| pass.nodes[a].name.cmp(&pass.nodes[b].name))
    });
    for n in over {
        let node = pass.nodes[n];
        let mut u = usages[n];
        let mut candidates = pass.candidates(n);
        candidates.sort_by(|&a, &b| eviction_order(&pass.pods[a], &pass.pods[b]));
        for p in candidates {
            let budget_left = budget_pods > 0.0 || budget_cpu > 0.0 || budget_mem > 0.0;
            if !above_any(&u, &target) || !budget_left || !pass.room_on(n) {
                break;
            }
            let r = pass.pods[p].request;
            let reason = format!(
                "node {} is overutilized ({} against targets {}); underutilized: {}",
                node.name,
                describe(&u),
                describe_thresholds(&target),
                low_names
            );
            if !pass.evict(p, n, S, reason) {
                continue;
            }
            let step = |cap: i64, amount: i64| {
                if cap > 0 {
                    100.0 * amount as f64 / cap as f64
                } else {
                    0.0
                }
            };
            u.pods -= step(node.pods, 1);
            u.cpu -= step(node.cpu_milli, r.cpu_milli);
            u.memory -= step(node.memory_bytes, r.memory_bytes);
            budget_pods -= 1.0;
            budget_cpu -= r.cpu_milli as f64;
            budget_mem -= r.memory_bytes as f64;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::strategies::testutil::*;
    use serde_json::json;

    fn spec_policy() -> crate::Policy {
        policy(
            json!({"LowNodeUtilization": {"enabled": true, "params": {"nodeResourceUtilizationThresholds": {
            "thresholds": {"cpu": 30, "pods": 30}, "targetThresholds": {"cpu": 50, "pods": 50}}}}}),
        )
    }

    /// `lownodeutilization_test.go`'s cluster (control-loops §1.7).
    fn cluster(priorities: bool) -> (Vec<N>, Vec<P>) {
        let nodes = vec![
            node("n1").alloc(4000, 3000, 9),
            node("n2").alloc(4000, 3000, 10),
            node("n3").alloc(4000, 3000, 10).unschedulable(),
        ];
        let mut pods: Vec<P> = (1..=5)
            .map(|i| {
                let p = pod(&format!("p{i}")).rs("rs").cpu(400).on("n1");
                match (priorities, i) {
                    (true, 5) => p.priority(0),
                    (true, _) => p.priority(10000),
                    _ => p,
                }
            })
            .collect();
        pods.push(pod("p6").owner("DaemonSet", "ds").cpu(400).on("n1"));
        pods.push(pod("p7").rs("rs").mirror().empty_dir().cpu(400).on("n1"));
        pods.push(pod("p8").rs("rs").priority(2_000_000_000).cpu(400).on("n1"));
        pods.push(pod("p9").rs("rs2").cpu(400).on("n2"));
        (nodes, pods)
    }

    #[test]
    fn the_spec_vector_evicts_four_until_the_budget_is_spent() {
        let (nodes, pods) = cluster(false);
        assert_eq!(
            evicted(nodes, pods, &spec_policy(), 0),
            ["p1", "p2", "p3", "p4"]
        );
    }

    #[test]
    fn the_per_node_cap_stops_at_three() {
        let (nodes, pods) = cluster(false);
        assert_eq!(evicted(nodes, pods, &spec_policy(), 3).len(), 3);
    }

    #[test]
    fn lower_priority_leaves_first_within_a_class() {
        let (nodes, pods) = cluster(true);
        assert_eq!(evicted(nodes, pods, &spec_policy(), 3), ["p5", "p1", "p2"]);
    }

    /// The seed's thresholds (20/50) on three nodes of 4 cpu and 10 pods: node-1 runs 6 pods of
    /// 500m (75% cpu, 60% pods), node-2 one (12.5%, 10%), node-3 three (37.5%, 30%).
    #[test]
    fn the_seeds_thresholds_move_pods_from_the_overutilized_node() {
        let seed = policy(
            json!({"LowNodeUtilization": {"enabled": true, "params": {"nodeResourceUtilizationThresholds": {
            "thresholds": {"cpu": 20, "memory": 20, "pods": 20},
            "targetThresholds": {"cpu": 50, "memory": 50, "pods": 50}, "numberOfNodes": 0}}}}),
        );
        let nodes = vec![
            node("node-1").alloc(4000, 1 << 30, 10),
            node("node-2").alloc(4000, 1 << 30, 10),
            node("node-3").alloc(4000, 1 << 30, 10),
        ];
        let mut pods: Vec<P> = (0..6)
            .map(|i| pod(&format!("big-{i}")).rs("big").cpu(500).on("node-1"))
            .collect();
        pods.push(pod("small").rs("small").cpu(500).on("node-2"));
        pods.extend((0..3).map(|i| pod(&format!("mid-{i}")).rs("mid").cpu(500).on("node-3")));
        let plan = run(nodes, pods, &seed, 0);
        // node-2 can take 40% of 10 pods = 4 and 37.5% of 4000m = 1500m: three pods of 500m.
        // node-1 falls from 75% cpu to 50% after two evictions and is no longer over target.
        assert_eq!(names(&plan), ["big-0", "big-1"]);
        assert!(plan.evictions.iter().all(|e| e.node == "node-1"));
        assert!(
            plan.evictions[0].reason.contains("underutilized: node-2"),
            "{}",
            plan.evictions[0].reason
        );
    }

    #[test]
    fn number_of_nodes_gates_the_strategy() {
        let gated = policy(
            json!({"LowNodeUtilization": {"enabled": true, "params": {"nodeResourceUtilizationThresholds": {
            "thresholds": {"cpu": 30, "pods": 30}, "targetThresholds": {"cpu": 50, "pods": 50}, "numberOfNodes": 2}}}}),
        );
        let (nodes, pods) = cluster(false);
        let plan = run(nodes, pods, &gated, 0);
        assert!(plan.evictions.is_empty());
        assert!(plan.notes[0]
            .message
            .contains("less than numberOfNodes (2)"));
    }

    #[test]
    fn nothing_moves_without_an_underutilized_node() {
        let (mut nodes, mut pods) = cluster(false);
        nodes.truncate(1);
        nodes.push(node("n2").alloc(4000, 3000, 10));
        pods.extend((0..5).map(|i| pod(&format!("x{i}")).rs("x").cpu(400).on("n2")));
        let plan = run(nodes, pods, &spec_policy(), 0);
        assert!(plan.evictions.is_empty());
        assert!(plan.notes[0]
            .message
            .starts_with("no node is underutilized"));
    }
}
