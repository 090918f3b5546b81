//! `FitError`: why no node fits, with the upstream message format (scheduler.md §2.6).

use crate::cache::ClusterCache;
use crate::predicates::Reason;
use serde::Serialize;
use std::collections::BTreeMap;

/// No node fits the pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FitError {
    /// Number of nodes in the cluster.
    pub num_all_nodes: usize,
    /// Failure reasons per node (name → reasons), for nodes that were evaluated.
    pub failed_predicates: BTreeMap<String, Vec<String>>,
    /// True if preemption might help on some node (no unresolvable reason there).
    pub resolvable_somewhere: bool,
}

impl FitError {
    pub(crate) fn new(cache: &ClusterCache, n: usize, failed: &[(u32, Reason)]) -> FitError {
        // A pod that fits nowhere fails on every node, so this runs over the whole cluster on
        // each such decision (and preemption follows it): render each distinct reason once,
        // and build the map from name-sorted entries instead of one look-up per reason. The
        // filters report a node's reasons in one run, usually in name order.
        let mut texts: Vec<(Reason, String)> = Vec::new();
        let mut runs: Vec<(u32, Vec<String>, bool)> = Vec::new();
        for &(ix, r) in failed {
            let text = match texts.iter().find(|(x, _)| *x == r) {
                Some((_, t)) => t.clone(),
                None => {
                    let t = r.text(&cache.interner);
                    texts.push((r, t.clone()));
                    t
                }
            };
            match runs.last_mut() {
                Some(run) if run.0 == ix => {
                    run.1.push(text);
                    run.2 |= !r.resolvable();
                }
                _ => runs.push((ix, vec![text], !r.resolvable())),
            }
        }
        let name = |ix: u32| cache.nodes[ix as usize].name.as_str();
        // The cache's rank is each node's place in name order: integers to sort, not names.
        runs.sort_by_key(|run| cache.rank[run.0 as usize]);
        let mut merged: Vec<(String, Vec<String>)> = Vec::with_capacity(runs.len());
        let (mut nodes, mut resolvable_node) = (0, false);
        let mut last: Option<(u32, bool)> = None;
        for (ix, reasons, unresolvable) in runs {
            match (&mut last, merged.last_mut()) {
                // a node reported in more than one run: its reasons in report order
                (Some((prev, u)), Some((_, rs))) if *prev == ix => {
                    rs.extend(reasons);
                    *u |= unresolvable;
                }
                _ => {
                    if let Some((_, u)) = last {
                        resolvable_node |= !u;
                    }
                    nodes += 1;
                    merged.push((name(ix).to_string(), reasons));
                    last = Some((ix, unresolvable));
                }
            }
        }
        if let Some((_, u)) = last {
            resolvable_node |= !u;
        }
        FitError {
            num_all_nodes: n,
            failed_predicates: merged.into_iter().collect(),
            resolvable_somewhere: resolvable_node || nodes < n,
        }
    }

    /// The upstream message: `0/N nodes are available: <count> <reason>, ….`
    pub fn message(&self) -> String {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for reasons in self.failed_predicates.values() {
            for r in reasons {
                *counts.entry(r.as_str()).or_default() += 1;
            }
        }
        let mut parts: Vec<String> = counts.iter().map(|(r, c)| format!("{c} {r}")).collect();
        parts.sort();
        format!(
            "0/{} nodes are available: {}.",
            self.num_all_nodes,
            parts.join(", ")
        )
    }
}

impl std::fmt::Display for FitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message())
    }
}

#[cfg(test)]
mod tests {
    use super::FitError;
    use crate::predicates::{
        check_node_condition, pod_tolerates_node_taints, Reason, ResourceName,
    };
    use std::collections::BTreeMap;

    #[test]
    fn new_groups_reasons_by_node_name_in_report_order() {
        let mut cache = crate::ClusterCache::new();
        for n in ["b", "a", "c"] {
            cache.upsert_node(&crate::testutil::simple_node(n, "1", "1Gi", 10));
        }
        let ix = |n: &str| cache.node_index(n).unwrap();
        let cpu = Reason::Insufficient(ResourceName::Cpu);
        let failed = [
            (ix("c"), cpu),
            (ix("a"), check_node_condition::NOT_READY.reason()),
            (
                ix("c"),
                pod_tolerates_node_taints::TAINTS_NOT_TOLERATED.reason(),
            ),
            (ix("a"), cpu),
        ];
        let e = FitError::new(&cache, 3, &failed);
        let want: BTreeMap<String, Vec<String>> = [
            ("a", vec!["node(s) were not ready", "Insufficient cpu"]),
            (
                "c",
                vec![
                    "Insufficient cpu",
                    "node(s) had taints that the pod didn't tolerate",
                ],
            ),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
        .collect();
        assert_eq!(e.failed_predicates, want);
        // b reported nothing: preemption might help there
        assert!(e.resolvable_somewhere);
        let e = FitError::new(&cache, 2, &failed);
        assert!(
            !e.resolvable_somewhere,
            "a and c both have an unresolvable reason"
        );
        let e = FitError::new(
            &cache,
            2,
            &[
                (ix("a"), check_node_condition::NOT_READY.reason()),
                (ix("b"), cpu),
            ],
        );
        assert!(e.resolvable_somewhere);
    }

    fn fe(n: usize, nodes: &[(&str, &[&str])]) -> String {
        let map: BTreeMap<String, Vec<String>> = nodes
            .iter()
            .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
            .collect();
        FitError {
            num_all_nodes: n,
            failed_predicates: map,
            resolvable_somewhere: true,
        }
        .message()
    }

    #[test]
    fn vectors() {
        let cpu: &[&str] = &["Insufficient cpu"];
        let sel: &[&str] = &["node(s) didn't match node selector"];
        assert_eq!(
            fe(
                5,
                &[
                    ("n1", cpu),
                    ("n2", cpu),
                    ("n3", cpu),
                    ("n4", sel),
                    ("n5", sel)
                ]
            ),
            "0/5 nodes are available: 2 node(s) didn't match node selector, 3 Insufficient cpu."
        );
        let both: &[&str] = &["Insufficient cpu", "Insufficient memory"];
        assert_eq!(
            fe(2, &[("n1", both), ("n2", both)]),
            "0/2 nodes are available: 2 Insufficient cpu, 2 Insufficient memory."
        );
        let mut nodes: Vec<(String, &[&str])> = (0..10)
            .map(|i| (format!("m{i}"), &["Insufficient memory"][..]))
            .collect();
        nodes.push(("r1".into(), &["node(s) were not ready"]));
        nodes.push(("r2".into(), &["node(s) were not ready"]));
        let refs: Vec<(&str, &[&str])> = nodes.iter().map(|(a, b)| (a.as_str(), *b)).collect();
        assert_eq!(
            fe(12, &refs),
            "0/12 nodes are available: 10 Insufficient memory, 2 node(s) were not ready."
        );
    }
}
