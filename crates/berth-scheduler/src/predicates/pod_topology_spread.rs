//! PodTopologySpread (filter): a pod's `DoNotSchedule` topology spread constraints (upstream's
//! PodTopologySpread plugin, 1.35). On a node whose domain already has `matching` pods, with
//! `self` 1 when the pod matches its own selector and `min` the fewest matching pods of any
//! eligible domain (0 while there are fewer than `minDomains` domains), the pod fits when
//! `matching + self - min <= maxSkew`. A node without the topology key fails, unresolvably.
//!
//! Not a 1.11 predicate: no policy file names it. The scheduler honours it for every pod that
//! has such constraints, with or without a policy (see `engine/build.rs`).

use super::unit::{FastClass, PredicateUnit, ReasonDef, VictimsClass};
use super::{NodeView, Pred, Reason};
use crate::cache::ClusterCache;
use crate::ctx::{PodCtx, SpreadState};
use crate::intern::{FxMap, Sym};
use crate::pod_info::PodInfo;
use crate::spread_domains::SpreadMemo;
use crate::topology_spread::{CriticalPaths, SpreadConstraint, TopologySpreadArgs};

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PredicateUnit = PredicateUnit {
    name: "PodTopologySpread",
    aliases: &[],
    order: 22,
    argument: Some(super::unit::Argument::Implicit),
    reasons: &[&CONSTRAINTS_NOT_MATCH, &NODE_LABEL_NOT_MATCH],
    fast: FastClass::TopologySpread,
    victims: VictimsClass::ThroughCache,
};

/// `node(s) didn't match pod topology spread constraints` (preemption may resolve it: removing
/// matching pods lowers the skew).
pub(crate) static CONSTRAINTS_NOT_MATCH: ReasonDef = ReasonDef {
    text: "node(s) didn't match pod topology spread constraints",
    resolvable: true,
};

/// `node(s) didn't match pod topology spread constraints (missing required label)` (preemption
/// cannot resolve it).
pub(crate) static NODE_LABEL_NOT_MATCH: ReasonDef = ReasonDef {
    text: "node(s) didn't match pod topology spread constraints (missing required label)",
    resolvable: false,
};

/// PreFilter: counts the matching pods per domain of each `DoNotSchedule` constraint.
pub(crate) fn prepare(
    cache: &ClusterCache,
    pod: &PodInfo,
    args: &TopologySpreadArgs,
    memo: &mut SpreadMemo,
) -> SpreadState {
    let (constraints, _) = super::spread_counts::constraints(pod, args, cache, true);
    if constraints.is_empty() {
        return SpreadState::default();
    }
    let i = &cache.interner;
    let counts: Vec<FxMap<Sym, i64>> = if every_node_counts(cache, pod, &constraints) {
        constraints
            .iter()
            .map(|c| memo.counts(cache, pod.ns, c))
            .collect()
    } else {
        count_directly(cache, pod, &constraints)
    };
    let paths: Vec<CriticalPaths> = counts
        .iter()
        .map(|m: &crate::intern::FxMap<_, i64>| {
            let mut p = CriticalPaths::default();
            for (&v, &n) in m {
                p.update(v, n);
            }
            p
        })
        .collect();
    let limits = constraints
        .iter()
        .zip(counts.iter().zip(&paths))
        .map(|(con, (domains, paths))| {
            let min = if (domains.len() as i64) < con.min_domains {
                0
            } else {
                paths.min()
            };
            let own = con.selector.matches(&pod.labels, i) as i64;
            con.max_skew + min - own
        })
        .collect();
    SpreadState {
        constraints,
        counts,
        paths,
        limits,
    }
}

/// True if every node of the cluster counts for each constraint: all carry every key, and the
/// inclusion policies leave none out (no node affinity of the pod to honour, taints ignored).
/// Then the counts depend only on the namespace, selector and key ([`SpreadMemo`]).
pub(crate) fn every_node_counts(
    cache: &ClusterCache,
    pod: &PodInfo,
    cs: &[SpreadConstraint],
) -> bool {
    let nodes = cache.order.len() as u32;
    let own_affinity = !pod.node_selector.is_empty() || pod.required_node_terms.is_some();
    cs.iter().all(|c| {
        let leaves_some_out = c.honor_taints || (c.honor_affinity && own_affinity);
        let carried_by_all = cache.key_nodes.get(&c.key).copied().unwrap_or(0) == nodes;
        !leaves_some_out && !c.selector.nothing && carried_by_all
    })
}

/// The counts by a pass over the namespace's pods and the cluster's nodes.
fn count_directly(
    cache: &ClusterCache,
    pod: &PodInfo,
    constraints: &[SpreadConstraint],
) -> Vec<FxMap<Sym, i64>> {
    let i = &cache.interner;
    let per_node: Vec<Vec<i64>> = constraints
        .iter()
        .map(|c| super::spread_counts::per_node(cache, pod, c))
        .collect();
    let mut counts = vec![FxMap::default(); constraints.len()];
    for &ix in &cache.order {
        let node = &cache.nodes[ix as usize];
        if !super::spread_counts::has_all_keys(node, constraints) {
            continue;
        }
        for (k, c) in constraints.iter().enumerate() {
            if !super::spread_counts::includes(c, pod, node, i) {
                continue;
            }
            let value = node.labels.get(c.key).unwrap_or_default();
            *counts[k].entry(value).or_insert(0) += per_node[k][ix as usize];
        }
    }
    counts
}

/// The filter's fast path on a node without nominated pods: true when every constraint is met,
/// exactly as [`check`] decides it. A node it refuses runs [`check`] for its reason.
#[inline]
pub(crate) fn fits_fast(s: &SpreadState, node: &crate::node_info::NodeInfo) -> bool {
    s.constraints
        .iter()
        .zip(s.counts.iter().zip(&s.limits))
        .all(|(con, (counts, &limit))| {
            node.labels
                .get(con.key)
                .is_some_and(|value| counts.get(&value).copied().unwrap_or(0) <= limit)
        })
}

/// The registry's entry point.
#[inline]
pub(crate) fn filter(
    c: &PodCtx,
    _p: &Pred,
    n: &NodeView,
    out: &mut Vec<Reason>,
) -> Result<bool, String> {
    Ok(check(c, n, out))
}

/// Checks each constraint on the node (nominated pods added to it count, as upstream's AddPod).
pub(crate) fn check(c: &PodCtx, n: &NodeView, out: &mut Vec<Reason>) -> bool {
    let s = &c.spread;
    if s.constraints.is_empty() {
        return true;
    }
    let node = n.info;
    let counted = !n.added.is_empty() && super::spread_counts::has_all_keys(node, &s.constraints);
    for (k, con) in s.constraints.iter().enumerate() {
        let Some(value) = node.labels.get(con.key) else {
            out.push(NODE_LABEL_NOT_MATCH.reason());
            return false;
        };
        let mut matching = s.counts[k].get(&value).copied().unwrap_or(0);
        let mut paths = s.paths[k];
        let mut domains = s.counts[k].len() as i64;
        if counted && super::spread_counts::includes(con, c.pod, node, c.i) {
            let added = n
                .added
                .iter()
                .filter(|p| p.ns == c.pod.ns && con.selector.matches(&p.labels, c.i))
                .count() as i64;
            if added > 0 {
                if !s.counts[k].contains_key(&value) {
                    domains += 1;
                }
                matching += added;
                paths.update(value, matching);
            }
        }
        let min = if domains < con.min_domains {
            0
        } else {
            paths.min()
        };
        let own = con.selector.matches(&c.pod.labels, c.i) as i64;
        if matching + own - min > con.max_skew {
            out.push(CONSTRAINTS_NOT_MATCH.reason());
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::{json, Value};

    const FILTERED: &str = "node(s) didn't match pod topology spread constraints";
    const MISSING: &str =
        "node(s) didn't match pod topology spread constraints (missing required label)";

    fn node(name: &str, zone: Option<&str>) -> crate::model::Node {
        let mut labels = json!({"node": name});
        if let Some(z) = zone {
            labels["zone"] = json!(z);
        }
        node_json(json!({"metadata": {"name": name, "labels": labels}}))
    }

    fn placed(name: &str, node: &str, labels: Value) -> crate::model::Pod {
        pod(
            json!({"metadata": {"name": name, "namespace": "default", "labels": labels},
                   "spec": {"nodeName": node, "containers": [{"name": "c"}]}}),
        )
    }

    fn incoming(constraints: Value, labels: Value, extra: Value) -> crate::model::Pod {
        let mut spec = json!({"topologySpreadConstraints": constraints,
                              "containers": [{"name": "c"}]});
        if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
            s.extend(e.clone());
        }
        pod(
            json!({"metadata": {"name": "p", "namespace": "default", "labels": labels},
                   "spec": spec}),
        )
    }

    fn hard(key: &str, max_skew: i32) -> Value {
        json!({"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}})
    }

    /// Per node in name order: `fit`, `skew` or `missing` (the key).
    fn run(
        nodes: Vec<crate::model::Node>,
        pods: Vec<crate::model::Pod>,
        p: crate::model::Pod,
    ) -> Vec<&'static str> {
        reasons_of(builtin(P::PodTopologySpread), nodes, pods, p)
            .iter()
            .map(|r| match r.first() {
                None => "fit",
                Some(t) if t == MISSING => "missing",
                Some(t) if t == FILTERED => "skew",
                Some(_) => "other",
            })
            .collect()
    }

    fn zones4() -> Vec<crate::model::Node> {
        vec![
            node("node-a", Some("zone1")),
            node("node-b", Some("zone1")),
            node("node-x", Some("zone2")),
            node("node-y", Some("zone2")),
        ]
    }

    /// (name, nodes, placed pods, incoming pod, want per node in name order).
    type Case = (
        &'static str,
        Vec<crate::model::Node>,
        Vec<crate::model::Pod>,
        crate::model::Pod,
        Vec<&'static str>,
    );

    #[test]
    fn upstream_filter_vectors() {
        let foo = json!({"foo": ""});
        let cases: Vec<Case> = vec![
            (
                "no existing pods: every node with the key fits",
                zones4(),
                vec![],
                incoming(json!([hard("zone", 1)]), foo.clone(), json!({})),
                vec!["fit", "fit", "fit", "fit"],
            ),
            (
                "no existing pods, incoming pod doesn't match itself",
                zones4(),
                vec![],
                incoming(json!([hard("zone", 1)]), json!({}), json!({})),
                vec!["fit", "fit", "fit", "fit"],
            ),
            (
                "existing pods in a different namespace do not count",
                zones4(),
                vec![
                    pod(
                        json!({"metadata": {"name": "p-a1", "namespace": "ns1", "labels": {"foo": ""}},
                               "spec": {"nodeName": "node-a"}}),
                    ),
                    pod(
                        json!({"metadata": {"name": "p-b1", "namespace": "ns2", "labels": {"foo": ""}},
                               "spec": {"nodeName": "node-b"}}),
                    ),
                    placed("p-x1", "node-x", foo.clone()),
                    placed("p-y1", "node-y", foo.clone()),
                    placed("p-y2", "node-y", foo.clone()),
                ],
                incoming(json!([hard("zone", 1)]), foo.clone(), json!({})),
                vec!["fit", "fit", "skew", "skew"],
            ),
            (
                "pods spread across zones as 3/3, all nodes fit",
                zones4(),
                vec![
                    placed("p-a1", "node-a", foo.clone()),
                    placed("p-b1", "node-b", foo.clone()),
                    placed("p-b2", "node-b", foo.clone()),
                    placed("p-x1", "node-x", foo.clone()),
                    placed("p-y1", "node-y", foo.clone()),
                    placed("p-y2", "node-y", foo.clone()),
                ],
                incoming(json!([hard("zone", 1)]), foo.clone(), json!({})),
                vec!["fit", "fit", "fit", "fit"],
            ),
            (
                "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
                vec![
                    node("node-a", Some("zone1")),
                    node("node-b", None),
                    node("node-x", Some("zone2")),
                    node("node-y", Some("zone2")),
                ],
                vec![
                    placed("p-a1", "node-a", foo.clone()),
                    placed("p-b1", "node-b", foo.clone()),
                    placed("p-x1", "node-x", foo.clone()),
                    placed("p-y1", "node-y", foo.clone()),
                ],
                incoming(json!([hard("zone", 1)]), foo.clone(), json!({})),
                vec!["fit", "missing", "skew", "skew"],
            ),
            (
                "pod cannot be scheduled as all nodes don't have label 'rack'",
                vec![node("node-a", Some("zone1")), node("node-x", Some("zone2"))],
                vec![],
                incoming(json!([hard("rack", 1)]), foo.clone(), json!({})),
                vec!["missing", "missing"],
            ),
            (
                "pods spread across nodes as 2/1/0/3, only node-x fits",
                zones4(),
                vec![
                    placed("p-a1", "node-a", foo.clone()),
                    placed("p-a2", "node-a", foo.clone()),
                    placed("p-b1", "node-b", foo.clone()),
                    placed("p-y1", "node-y", foo.clone()),
                    placed("p-y2", "node-y", foo.clone()),
                    placed("p-y3", "node-y", foo.clone()),
                ],
                incoming(json!([hard("node", 1)]), foo.clone(), json!({})),
                vec!["skew", "skew", "fit", "skew"],
            ),
            (
                "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
                zones4(),
                vec![
                    placed("p-a1", "node-a", foo.clone()),
                    placed("p-a2", "node-a", foo.clone()),
                    placed("p-b1", "node-b", foo.clone()),
                    placed("p-y1", "node-y", foo.clone()),
                    placed("p-y2", "node-y", foo.clone()),
                    placed("p-y3", "node-y", foo.clone()),
                ],
                incoming(json!([hard("node", 2)]), foo.clone(), json!({})),
                vec!["skew", "fit", "fit", "skew"],
            ),
            (
                "terminating pods are not counted",
                zones4(),
                vec![
                    placed("p-a", "node-a", foo.clone()),
                    pod(
                        json!({"metadata": {"name": "p-b", "namespace": "default", "labels": {"foo": ""},
                                            "deletionTimestamp": "2020-01-01T00:00:00Z"},
                               "spec": {"nodeName": "node-b"}}),
                    ),
                ],
                incoming(json!([hard("node", 1)]), foo.clone(), json!({})),
                vec!["skew", "fit", "fit", "fit"],
            ),
            (
                "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
                zones4(),
                vec![
                    placed("p-a1", "node-a", foo.clone()),
                    placed("p-a2", "node-a", foo.clone()),
                    placed("p-b1", "node-b", foo.clone()),
                    placed("p-y1", "node-y", foo.clone()),
                    placed("p-y2", "node-y", foo.clone()),
                    placed("p-y3", "node-y", foo.clone()),
                ],
                incoming(
                    json!([hard("node", 1)]),
                    foo.clone(),
                    json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                        {"nodeSelectorTerms": [{"matchExpressions": [
                            {"key": "node", "operator": "NotIn", "values": ["node-b", "node-x"]}]}]}}}}),
                ),
                // node-b and node-x fail the pod's own node affinity elsewhere; this filter
                // alone judges them against the domains node-a and node-y (min 2)
                vec!["fit", "fit", "fit", "skew"],
            ),
            (
                "nodeAffinityPolicy Ignore counts every node: min 0, node-x fits only",
                zones4(),
                vec![
                    placed("p-a1", "node-a", foo.clone()),
                    placed("p-a2", "node-a", foo.clone()),
                    placed("p-b1", "node-b", foo.clone()),
                    placed("p-y1", "node-y", foo.clone()),
                    placed("p-y2", "node-y", foo.clone()),
                    placed("p-y3", "node-y", foo.clone()),
                ],
                incoming(
                    json!([{"maxSkew": 1, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule",
                            "nodeAffinityPolicy": "Ignore",
                            "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}}]),
                    foo.clone(),
                    json!({"nodeSelector": {"zone": "zone1"}}),
                ),
                vec!["skew", "skew", "fit", "skew"],
            ),
            (
                "two constraints on zone and node, spreads = [3/3, 2/1/0/3]",
                zones4(),
                vec![
                    placed("p-a1", "node-a", foo.clone()),
                    placed("p-a2", "node-a", foo.clone()),
                    placed("p-b1", "node-b", foo.clone()),
                    placed("p-x1", "node-x", foo.clone()),
                    placed("p-y1", "node-y", foo.clone()),
                    placed("p-y2", "node-y", foo.clone()),
                ],
                incoming(
                    json!([hard("zone", 1), hard("node", 1)]),
                    foo.clone(),
                    json!({}),
                ),
                vec!["skew", "fit", "fit", "skew"],
            ),
            (
                "minDomains 3 with two domains takes the global minimum as 0",
                zones4(),
                vec![
                    placed("p-a1", "node-a", foo.clone()),
                    placed("p-x1", "node-x", foo.clone()),
                ],
                incoming(
                    json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                            "minDomains": 3,
                            "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}}]),
                    foo.clone(),
                    json!({}),
                ),
                vec!["skew", "skew", "skew", "skew"],
            ),
            (
                "matchLabelKeys narrows the selector to the pod's own value",
                zones4(),
                vec![
                    placed("p-a1", "node-a", json!({"foo": "", "rev": "1"})),
                    placed("p-a2", "node-a", json!({"foo": "", "rev": "1"})),
                    placed("p-x1", "node-x", json!({"foo": "", "rev": "2"})),
                ],
                incoming(
                    json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                            "matchLabelKeys": ["rev"],
                            "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}}]),
                    json!({"foo": "", "rev": "2"}),
                    json!({}),
                ),
                // rev=2 counts zone1 0, zone2 1: zone1 fits, zone2 gives skew 2
                vec!["fit", "fit", "skew", "skew"],
            ),
        ];
        for (name, nodes, pods, p, want) in cases {
            assert_eq!(run(nodes, pods, p), want, "{name}");
        }
    }

    #[test]
    fn taints_policy_honor_leaves_tainted_nodes_out_of_the_domains() {
        let foo = json!({"foo": ""});
        let mut nodes = zones4();
        nodes[3] = node_json(
            json!({"metadata": {"name": "node-y", "labels": {"node": "node-y", "zone": "zone2"}},
            "spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}}),
        );
        let pods = vec![
            placed("p-a1", "node-a", foo.clone()),
            placed("p-b1", "node-b", foo.clone()),
            placed("p-x1", "node-x", foo.clone()),
        ];
        let with = |policy: &str| {
            incoming(
                json!([{"maxSkew": 1, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule",
                        "nodeTaintsPolicy": policy,
                        "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}}]),
                foo.clone(),
                json!({}),
            )
        };
        // Ignore: node-y (0 pods) is a domain, min 0: only node-y fits
        assert_eq!(
            run(nodes.clone(), pods.clone(), with("Ignore")),
            ["skew", "skew", "skew", "fit"]
        );
        // Honor: node-y is not a domain, min 1: every node fits this filter
        assert_eq!(
            run(nodes, pods, with("Honor")),
            ["fit", "fit", "fit", "fit"]
        );
    }

    #[test]
    fn reasons_are_marked_for_preemption_as_upstream() {
        assert!(super::CONSTRAINTS_NOT_MATCH.resolvable);
        assert!(!super::NODE_LABEL_NOT_MATCH.resolvable);
    }
}

/// The filter against a direct count of the constraint on random clusters (a cluster is drawn
/// from a seed, so a failing case is one number to replay): nodes with or without the zone key,
/// some tainted; placed pods in two namespaces with two labels, some terminating; the incoming
/// pod with one constraint over the zone or the node name, any maxSkew, minDomains and taints
/// policy, sometimes a node selector.
#[cfg(test)]
mod proptests {
    use crate::testutil::*;
    use proptest::prelude::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    use serde_json::json;
    use std::collections::BTreeMap;

    struct Drawn {
        nodes: Vec<(String, Option<&'static str>, bool)>,
        pods: Vec<(String, &'static str, &'static str, bool)>,
        key: &'static str,
        max_skew: i64,
        min_domains: i64,
        honor_taints: bool,
        selector_zone: Option<&'static str>,
        own_match: bool,
    }

    fn draw(seed: u64) -> Drawn {
        let r = &mut SmallRng::seed_from_u64(seed);
        let zones = [None, Some("z1"), Some("z2"), Some("z3")];
        let nodes: Vec<_> = (0..r.random_range(1..8))
            .map(|i| {
                (
                    format!("n{i}"),
                    zones[r.random_range(0..4)],
                    r.random_bool(0.2),
                )
            })
            .collect();
        let pods = (0..r.random_range(0..14))
            .map(|_| {
                let n = &nodes[r.random_range(0..nodes.len())].0;
                (
                    n.clone(),
                    ["default", "other"][r.random_range(0..2)],
                    ["a", "b"][r.random_range(0..2)],
                    r.random_bool(0.1),
                )
            })
            .collect();
        Drawn {
            nodes,
            pods,
            key: ["zone", "host"][r.random_range(0..2)],
            max_skew: r.random_range(1..4),
            min_domains: r.random_range(1..5),
            honor_taints: r.random_bool(0.3),
            selector_zone: r
                .random_bool(0.3)
                .then(|| ["z1", "z2"][r.random_range(0..2)]),
            own_match: r.random_bool(0.8),
        }
    }

    /// Per node in name order: `fit`, `skew` or `missing`, counted directly.
    fn reference(d: &Drawn) -> Vec<&'static str> {
        let label = |n: &(String, Option<&str>, bool)| -> Option<String> {
            match d.key {
                "zone" => n.1.map(str::to_string),
                _ => Some(n.0.clone()),
            }
        };
        let included = |n: &(String, Option<&str>, bool)| {
            label(n).is_some()
                && d.selector_zone.is_none_or(|z| n.1 == Some(z))
                && !(d.honor_taints && n.2)
        };
        let mut domains: BTreeMap<String, i64> = BTreeMap::new();
        for n in d.nodes.iter().filter(|n| included(n)) {
            let matching = d
                .pods
                .iter()
                .filter(|p| p.0 == n.0 && p.1 == "default" && p.2 == "a" && !p.3)
                .count() as i64;
            *domains.entry(label(n).unwrap()).or_insert(0) += matching;
        }
        let min = if (domains.len() as i64) < d.min_domains {
            0
        } else {
            domains
                .values()
                .copied()
                .min()
                .unwrap_or(i64::from(i32::MAX))
        };
        let mut nodes: Vec<_> = d.nodes.iter().collect();
        nodes.sort_by(|a, b| a.0.cmp(&b.0));
        nodes
            .iter()
            .map(|n| match label(n) {
                None => "missing",
                Some(v) => {
                    let matching = domains.get(&v).copied().unwrap_or(0);
                    if matching + d.own_match as i64 - min > d.max_skew {
                        "skew"
                    } else {
                        "fit"
                    }
                }
            })
            .collect()
    }

    fn engine(d: &Drawn) -> Vec<&'static str> {
        let (nodes, pods, incoming) = objects(d);
        reasons_of(builtin(P::PodTopologySpread), nodes, pods, incoming)
            .iter()
            .map(|r| match r.first().map(String::as_str) {
                None => "fit",
                Some(t) if t.ends_with("(missing required label)") => "missing",
                Some(_) => "skew",
            })
            .collect()
    }

    /// Per node in name order: does the filter's fast path (`fits_fast`) decide as `check`?
    fn fast_path_agrees(d: &Drawn) -> Result<(), String> {
        let (nodes, pods, incoming) = objects(d);
        let mut cache = crate::ClusterCache::new();
        for n in &nodes {
            cache.upsert_node(n);
        }
        for p in &pods {
            cache.upsert_pod(p);
        }
        let info = cache.compile_pod(&incoming);
        let mut s = crate::Scheduler::builder().build().unwrap();
        let preds = vec![crate::predicates::Pred::of(P::PodTopologySpread)];
        let ctx = s.prepare(&preds, &cache, &info)?;
        for &ix in &cache.order {
            let node = &cache.nodes[ix as usize];
            let view = super::NodeView {
                info: node,
                ix,
                added: &[],
            };
            let slow = super::check(&ctx, &view, &mut Vec::new());
            if super::fits_fast(&ctx.spread, node) != slow {
                return Err(format!("node {}: check says {slow}", node.name));
            }
        }
        Ok(())
    }

    fn objects(
        d: &Drawn,
    ) -> (
        Vec<crate::model::Node>,
        Vec<crate::model::Pod>,
        crate::model::Pod,
    ) {
        let nodes = d
            .nodes
            .iter()
            .map(|(name, zone, tainted)| {
                let mut labels = json!({"host": name});
                if let Some(z) = zone {
                    labels["zone"] = json!(z);
                }
                let taints = if *tainted {
                    json!([{"key": "k", "effect": "NoSchedule"}])
                } else {
                    json!([])
                };
                node_json(json!({"metadata": {"name": name, "labels": labels},
                                 "spec": {"taints": taints}}))
            })
            .collect();
        let pods = d
            .pods
            .iter()
            .enumerate()
            .map(|(i, (node, ns, app, terminating))| {
                let mut meta = json!({"name": format!("p{i}"), "namespace": ns,
                                      "labels": {"app": app}});
                if *terminating {
                    meta["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
                }
                pod(json!({"metadata": meta, "spec": {"nodeName": node}}))
            })
            .collect();
        let mut spec = json!({"topologySpreadConstraints": [{
            "maxSkew": d.max_skew, "topologyKey": d.key, "whenUnsatisfiable": "DoNotSchedule",
            "minDomains": d.min_domains,
            "nodeTaintsPolicy": if d.honor_taints { "Honor" } else { "Ignore" },
            "labelSelector": {"matchLabels": {"app": "a"}}}]});
        if let Some(z) = d.selector_zone {
            spec["nodeSelector"] = json!({"zone": z});
        }
        let own = if d.own_match { "a" } else { "c" };
        let incoming = pod(json!({"metadata": {"name": "in", "namespace": "default",
                                               "labels": {"app": own}}, "spec": spec}));
        (nodes, pods, incoming)
    }

    /// Random changes to a cluster (pods placed, moved, removed or terminating, nodes
    /// relabelled, added and removed); after each, the remembered counts must equal a direct
    /// count. Returns the first disagreement.
    fn memo_follows_changes(seed: u64) -> Result<(), String> {
        let r = &mut SmallRng::seed_from_u64(seed);
        let zones = ["z1", "z2", "z3"];
        let node = |i: usize, z: &str| {
            node_json(json!({"metadata": {"name": format!("n{i}"),
                                          "labels": {"zone": z, "host": format!("n{i}")}}}))
        };
        let mut cache = crate::ClusterCache::new();
        for i in 0..r.random_range(1..6) {
            cache.upsert_node(&node(i, zones[r.random_range(0..3)]));
        }
        let incoming = pod(json!({"metadata": {"name": "in", "namespace": "default",
                                               "labels": {"app": "a"}},
            "spec": {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "a"}}}]}}));
        let mut memo = super::SpreadMemo::default();
        for step in 0..r.random_range(1..40) {
            match r.random_range(0..10) {
                0..=5 => {
                    let ns = ["default", "other"][r.random_range(0..2)];
                    let app = ["a", "b"][r.random_range(0..2)];
                    let mut meta = json!({"name": format!("p{}", r.random_range(0..12)),
                        "namespace": ns, "labels": {"app": app}});
                    if r.random_bool(0.1) {
                        meta["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
                    }
                    let on = format!("n{}", r.random_range(0..7));
                    cache.upsert_pod(&pod(json!({"metadata": meta, "spec": {"nodeName": on}})));
                }
                6 => {
                    let ns = ["default", "other"][r.random_range(0..2)];
                    cache.remove_pod(&format!("{ns}/p{}", r.random_range(0..12)));
                }
                7 | 8 => {
                    cache.upsert_node(&node(r.random_range(0..7), zones[r.random_range(0..3)]));
                }
                _ => {
                    cache.remove_node(&format!("n{}", r.random_range(0..7)));
                }
            }
            let info = cache.compile_pod(&incoming);
            let cs = &info.spread;
            let direct = super::count_directly(&cache, &info, cs);
            let kept: Vec<_> = cs.iter().map(|c| memo.counts(&cache, info.ns, c)).collect();
            if kept != direct {
                return Err(format!("step {step}: kept {kept:?}, direct {direct:?}"));
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn the_kept_counts_follow_every_change(seed in any::<u64>()) {
            prop_assert_eq!(memo_follows_changes(seed), Ok(()), "seed {}", seed);
        }

        #[test]
        fn the_filter_agrees_with_a_direct_count(seed in any::<u64>()) {
            let d = draw(seed);
            prop_assert_eq!(engine(&d), reference(&d), "seed {}", seed);
        }

        #[test]
        fn the_fast_path_decides_as_the_filter(seed in any::<u64>()) {
            let d = draw(seed);
            prop_assert_eq!(fast_path_agrees(&d), Ok(()), "seed {}", seed);
        }
    }
}
