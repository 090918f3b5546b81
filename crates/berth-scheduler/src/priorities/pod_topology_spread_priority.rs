//! PodTopologySpread (score): a pod's `ScheduleAnyway` topology spread constraints, or the
//! default constraints for a pod without any of its own (upstream's PodTopologySpread plugin,
//! 1.35). Each feasible node scores, per constraint whose key it carries,
//! `matching × ln(domains + 2) + (maxSkew − 1)` (matching pods in its domain; per node for the
//! hostname key), rounded; the sums are then reversed onto 0..M as
//! `M × (max + min − s) / max`, so the emptiest domains score highest (M = 100, upstream's
//! `MaxNodeScore`, under a profile; 10 when a policy file's scheduler applies it). A node missing one of the
//! pod's own topology keys scores 0 (with system defaults, nodes without a zone still spread by
//! hostname).
//!
//! Not a 1.11 priority: no policy file names it. The scheduler adds it, with weight
//! [`IMPLICIT_WEIGHT`], for every pod that has topology spread constraints (see
//! `engine/build.rs`).

use super::unit::{Argument, PriorityUnit};
use super::Prio;
use crate::ctx::PodCtx;
use crate::intern::{FxMap, Sym};
use crate::topology_spread::DefaultingType;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PriorityUnit = PriorityUnit {
    name: "PodTopologySpread",
    argument: Some(Argument::Implicit),
    hot: None,
};

/// The weight the scheduler gives it when a policy does not name it: upstream's default
/// profile weight for PodTopologySpread.
pub(crate) const IMPLICIT_WEIGHT: i64 = 2;

/// The score every node gets when it does not depend on the node, if so: 0 when no
/// `ScheduleAnyway` constraint applies (upstream skips the plugin).
pub(crate) fn uniform(c: &PodCtx, _p: &Prio) -> Option<i64> {
    let own_soft = c.pod.spread.iter().any(|s| !s.hard);
    if own_soft {
        return None;
    }
    if !c.pod.spread.is_empty() || !c.spread_args.has_defaults() {
        return Some(0);
    }
    let (cs, _) =
        crate::predicates::spread_counts::constraints(c.pod, c.spread_args, c.cache, false);
    cs.is_empty().then_some(0)
}

/// The registry's entry point: 0..10 (policy) or 0..100 (profile) per feasible node.
pub(crate) fn score_nodes(
    c: &PodCtx,
    _p: &Prio,
    feasible: &[u32],
    _counts: &mut Vec<i64>,
    out: &mut [i64],
) {
    let (cs, own) =
        crate::predicates::spread_counts::constraints(c.pod, c.spread_args, c.cache, false);
    if cs.is_empty() {
        out.fill(0);
        return;
    }
    let (cache, pod, i) = (c.cache, c.pod, c.i);
    let all_keys = own || c.spread_args.defaulting_type != DefaultingType::System;
    // PreScore: the domains of the feasible nodes, and each constraint's normalizing weight
    let ignored: Vec<bool> = feasible
        .iter()
        .map(|&ix| {
            all_keys
                && !crate::predicates::spread_counts::has_all_keys(&cache.nodes[ix as usize], &cs)
        })
        .collect();
    let mut domains: Vec<FxMap<Sym, i64>> = vec![FxMap::default(); cs.len()];
    for (&ix, _) in feasible.iter().zip(&ignored).filter(|(_, ig)| !**ig) {
        let node = &cache.nodes[ix as usize];
        for (k, con) in cs.iter().enumerate() {
            if !con.hostname {
                domains[k]
                    .entry(node.labels.get(con.key).unwrap_or_default())
                    .or_insert(0);
            }
        }
    }
    let scored = ignored.iter().filter(|ig| !**ig).count();
    let weights: Vec<f64> = cs
        .iter()
        .zip(&domains)
        .map(|(con, d)| {
            let size = if con.hostname { scored } else { d.len() };
            ((size + 2) as f64).ln()
        })
        .collect();
    let per_node: Vec<Vec<i64>> =
        if crate::predicates::pod_topology_spread::every_node_counts(cache, pod, &cs) {
            // every node counts: the counts kept across decisions serve, per domain of a
            // feasible node and per node for the hostname key
            let mut memo = c
                .spread_memo
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            cs.iter()
                .zip(domains.iter_mut())
                .map(|(con, d)| {
                    if con.hostname {
                        return memo.node_counts(cache, pod.ns, con);
                    }
                    let kept = memo.counts(cache, pod.ns, con);
                    for (value, n) in d.iter_mut() {
                        *n = kept.get(value).copied().unwrap_or(0);
                    }
                    Vec::new()
                })
                .collect()
        } else {
            let per_node: Vec<Vec<i64>> = cs
                .iter()
                .map(|con| crate::predicates::spread_counts::per_node(cache, pod, con))
                .collect();
            for &ix in &cache.order {
                let node = &cache.nodes[ix as usize];
                if all_keys && !crate::predicates::spread_counts::has_all_keys(node, &cs) {
                    continue;
                }
                for (k, con) in cs.iter().enumerate() {
                    if con.hostname
                        || !crate::predicates::spread_counts::includes(con, pod, node, i)
                    {
                        continue;
                    }
                    let value = node.labels.get(con.key).unwrap_or_default();
                    if let Some(n) = domains[k].get_mut(&value) {
                        *n += per_node[k][ix as usize];
                    }
                }
            }
            per_node
        };
    // Score
    for ((o, &ix), ig) in out.iter_mut().zip(feasible).zip(&ignored) {
        if *ig {
            *o = -1;
            continue;
        }
        let node = &cache.nodes[ix as usize];
        let mut s = 0f64;
        for (k, con) in cs.iter().enumerate() {
            let Some(value) = node.labels.get(con.key) else {
                continue;
            };
            let count = if con.hostname {
                per_node[k][ix as usize]
            } else {
                domains[k].get(&value).copied().unwrap_or(0)
            };
            s += count as f64 * weights[k] + (con.max_skew - 1) as f64;
        }
        *o = s.round() as i64;
    }
    // NormalizeScore
    let valid = || out.iter().copied().filter(|s| *s >= 0);
    let min = valid().min().unwrap_or(0);
    let max = valid().max().unwrap_or(0);
    let top = c.scale.max();
    for o in out.iter_mut() {
        *o = if *o < 0 {
            0
        } else if max == 0 {
            top
        } else {
            top * (max + min - *o) / max
        };
    }
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::{json, Value};

    fn node(name: &str, zone: Option<&str>) -> crate::model::Node {
        let mut labels = json!({"node": name});
        if let Some(z) = zone {
            labels["zone"] = json!(z);
        }
        node_json(json!({"metadata": {"name": name, "labels": labels}}))
    }

    fn placed(name: &str, node: &str) -> crate::model::Pod {
        pod(
            json!({"metadata": {"name": name, "namespace": "default", "labels": {"foo": ""}},
                   "spec": {"nodeName": node, "containers": [{"name": "c"}]}}),
        )
    }

    fn soft(key: &str, max_skew: i32) -> Value {
        json!({"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "ScheduleAnyway",
               "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}})
    }

    fn incoming(constraints: Value) -> crate::model::Pod {
        pod(
            json!({"metadata": {"name": "p", "namespace": "default", "labels": {"foo": ""}},
                   "spec": {"topologySpreadConstraints": constraints,
                            "containers": [{"name": "c"}]}}),
        )
    }

    fn score(
        nodes: Vec<crate::model::Node>,
        pods: Vec<crate::model::Pod>,
        p: crate::model::Pod,
    ) -> Vec<i64> {
        scores_of(builtin_prio(R::PodTopologySpread), nodes, pods, p)
    }

    /// Upstream's TestPodTopologySpreadScore vectors, on the 0..10 scale (upstream's 0..100
    /// results divided by 10 with integer division, the formula recomputed with MAX 10).
    #[test]
    fn upstream_score_vectors() {
        // one constraint on node, no existing pods: every node scores the maximum
        let nodes = vec![node("node-a", None), node("node-b", None)];
        assert_eq!(
            score(nodes, vec![], incoming(json!([soft("node", 1)]))),
            [10, 10]
        );

        // one constraint on node, pods spread as 2/1/0/3: raw = count × ln(4+2), rounded:
        // 2→4, 1→2, 0→0, 3→5; normalized 10 × (5 + 0 − s) / 5
        let nodes = vec![
            node("node-a", None),
            node("node-b", None),
            node("node-c", None),
            node("node-d", None),
        ];
        let pods = vec![
            placed("a1", "node-a"),
            placed("a2", "node-a"),
            placed("b1", "node-b"),
            placed("d1", "node-d"),
            placed("d2", "node-d"),
            placed("d3", "node-d"),
        ];
        assert_eq!(
            score(nodes, pods, incoming(json!([soft("node", 1)]))),
            [2, 6, 10, 0]
        );

        // zone constraint, zones 3/1: raw = count × ln(2+2) → zone1 3×1.386=4, zone2 1.386→1
        let nodes = vec![
            node("node-a", Some("zone1")),
            node("node-b", Some("zone1")),
            node("node-x", Some("zone2")),
            node("node-y", Some("zone2")),
        ];
        let pods = vec![
            placed("a1", "node-a"),
            placed("a2", "node-a"),
            placed("b1", "node-b"),
            placed("x1", "node-x"),
        ];
        assert_eq!(
            score(nodes, pods, incoming(json!([soft("zone", 1)]))),
            [2, 2, 10, 10]
        );

        // a node missing the key scores 0 and does not count toward min/max
        let nodes = vec![node("node-a", Some("zone1")), node("node-b", None)];
        assert_eq!(
            score(
                nodes,
                vec![placed("a1", "node-a")],
                incoming(json!([soft("zone", 1)]))
            ),
            [10, 0]
        );
    }

    #[test]
    fn a_pod_without_soft_constraints_scores_nothing() {
        let nodes = vec![node("node-a", Some("zone1"))];
        let hard = json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                           "labelSelector": {"matchLabels": {"foo": ""}}}]);
        assert_eq!(score(nodes, vec![], incoming(hard)), [0]);
    }

    /// The counts kept across decisions score as a direct count: the same pod is scored once
    /// as is (kept counts) and once with a nodeSelector every node matches (the pod's own
    /// affinity then makes the score count directly), on random clusters.
    #[test]
    fn kept_counts_score_as_a_direct_count() {
        use rand::{Rng, SeedableRng};
        for seed in 0..200u64 {
            let r = &mut rand::rngs::SmallRng::seed_from_u64(seed);
            let nodes = || {
                let mut r = rand::rngs::SmallRng::seed_from_u64(seed);
                (0..r.random_range(1..7))
                    .map(|n| {
                        let zone = ["z1", "z2", "z3"][r.random_range(0..3)];
                        node_json(json!({"metadata": {"name": format!("n{n}"), "labels": {
                            "zone": zone, "node": format!("n{n}"), "all": "yes"}}}))
                    })
                    .collect::<Vec<_>>()
            };
            let count = nodes().len();
            let pods: Vec<crate::model::Pod> = (0..r.random_range(0..15))
                .map(|k| {
                    let labels = if r.random_bool(0.7) {
                        json!({"foo": ""})
                    } else {
                        json!({})
                    };
                    let ns = ["default", "other"][r.random_range(0..2)];
                    let on = format!("n{}", r.random_range(0..count));
                    pod(
                        json!({"metadata": {"name": format!("e{k}"), "namespace": ns,
                                            "labels": labels},
                               "spec": {"nodeName": on, "containers": [{"name": "c"}]}}),
                    )
                })
                .collect();
            let key = ["zone", "node"][r.random_range(0..2)];
            let constraints = json!([soft(key, r.random_range(1..3)), soft("zone", 2)]);
            let kept = score(nodes(), pods.clone(), incoming(constraints.clone()));
            let mut direct = incoming(constraints);
            direct.spec.node_selector = [("all".to_string(), "yes".to_string())].into();
            assert_eq!(kept, score(nodes(), pods, direct), "seed {seed}");
        }
    }
}
