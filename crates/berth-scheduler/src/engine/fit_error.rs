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
        let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut unresolvable: BTreeMap<u32, bool> = BTreeMap::new();
        for (ix, r) in failed {
            map.entry(cache.nodes[*ix as usize].name.clone())
                .or_default()
                .push(r.text(&cache.interner));
            *unresolvable.entry(*ix).or_default() |= !r.resolvable();
        }
        let resolvable_somewhere = unresolvable.values().any(|u| !u) || unresolvable.len() < n;
        FitError {
            num_all_nodes: n,
            failed_predicates: map,
            resolvable_somewhere,
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
    use std::collections::BTreeMap;

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
