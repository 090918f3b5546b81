//! Failure messages as kube-scheduler 1.35 words them, for profiles of a
//! KubeSchedulerConfiguration (a Policy keeps the seed's words, [`crate::FitError::message`]).
//!
//! The engine reports the legacy predicates' reasons; each maps to the reason of the plugin that
//! runs it (each plugin's `ErrReason…` constant upstream). The message then follows upstream's
//! `FitError.Error()`: `0/N nodes are available: <count> <reason>, ….` and the postFilter
//! plugins' messages (`no new claims to deallocate`, `preemption: 0/N nodes are available: …`).

use crate::FitError;
use std::collections::BTreeMap;

/// Legacy reason → 1.35 reason; `None` drops it (1.11's generic inter-pod affinity reason,
/// which upstream no longer reports next to the specific one).
pub fn reason(legacy: &str) -> Option<&str> {
    Some(match legacy {
        "node(s) didn't match node selector" => "node(s) didn't match Pod's node affinity/selector",
        "node(s) had taints that the pod didn't tolerate" => "node(s) had untolerated taint(s)",
        "node(s) didn't match the requested hostname" => {
            "node(s) didn't match the requested node name"
        }
        "node(s) didn't match pod affinity/anti-affinity" => return None,
        "Insufficient pods" => "Too many pods",
        other => other,
    })
}

/// Whether a 1.35 reason is `UnschedulableAndUnresolvable` (preemption cannot help there).
pub fn unresolvable(reason: &str) -> bool {
    matches!(
        reason,
        "node(s) didn't match Pod's node affinity/selector"
            | "node(s) didn't match scheduler-enforced node affinity"
            | "node(s) had untolerated taint(s)"
            | "node(s) didn't match the requested node name"
            | "node(s) were unschedulable"
            | "node(s) didn't match pod affinity rules"
            | "node(s) had no available volume zone"
            | "node(s) had volume node affinity conflict"
            | "node(s) didn't find available persistent volumes to bind"
    )
}

/// Postfilter message of DefaultPreemption when no candidate was found: each node counted as
/// `Preemption is not helpful for scheduling` (an unresolvable reason there) or
/// `No preemption victims found for incoming pod`.
pub const NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";
/// See [`NOT_HELPFUL`].
pub const NO_VICTIMS: &str = "No preemption victims found for incoming pod";
/// DynamicResources' postFilter message for a pod without claims.
pub const NO_CLAIMS: &str = "no new claims to deallocate";

/// What the profile's postFilter plugins said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostFilter {
    /// DynamicResources is enabled.
    pub dynamic_resources: bool,
    /// DefaultPreemption is enabled and found no candidate (it did not nominate the pod).
    pub preemption_failed: bool,
}

/// The FailedScheduling message of 1.35 for `fit`.
pub fn fit_message(fit: &FitError, post: PostFilter) -> String {
    let n = fit.num_all_nodes;
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut preemption: BTreeMap<&str, usize> = BTreeMap::new();
    for reasons in fit.failed_predicates.values() {
        let mut hard = false;
        for r in reasons.iter().filter_map(|r| reason(r)) {
            *counts.entry(r).or_default() += 1;
            hard |= unresolvable(r);
        }
        *preemption
            .entry(if hard { NOT_HELPFUL } else { NO_VICTIMS })
            .or_default() += 1;
    }
    let mut message = format!("0/{n} nodes are available: {}.", joined(&counts));
    let mut post_messages = Vec::new();
    if post.dynamic_resources {
        post_messages.push(NO_CLAIMS.to_string());
    }
    if post.preemption_failed {
        post_messages.push(format!(
            "preemption: 0/{n} nodes are available: {}.",
            joined(&preemption)
        ));
    }
    if !post_messages.is_empty() {
        message.push(' ');
        message.push_str(&post_messages.join(", "));
    }
    message
}

/// `<count> <reason>` pairs sorted as upstream sorts the strings, joined by `, `.
fn joined(counts: &BTreeMap<&str, usize>) -> String {
    let mut parts: Vec<String> = counts.iter().map(|(r, c)| format!("{c} {r}")).collect();
    parts.sort();
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fit(n: usize, nodes: &[(&str, &[&str])]) -> FitError {
        FitError {
            num_all_nodes: n,
            failed_predicates: nodes
                .iter()
                .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
                .collect(),
            resolvable_somewhere: true,
        }
    }

    #[test]
    fn selector_and_cpu_failures_read_as_1_35_with_the_preemption_summary() {
        let cpu: &[&str] = &["Insufficient cpu"];
        let sel: &[&str] = &["node(s) didn't match node selector"];
        let f = fit(
            5,
            &[("a", sel), ("b", sel), ("c", cpu), ("d", cpu), ("e", cpu)],
        );
        let post = PostFilter {
            dynamic_resources: false,
            preemption_failed: true,
        };
        assert_eq!(
            fit_message(&f, post),
            "0/5 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, \
             3 Insufficient cpu. preemption: 0/5 nodes are available: \
             2 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod."
        );
    }

    #[test]
    fn the_default_profile_adds_dynamic_resources_message_first() {
        let taint: &[&str] = &["node(s) had taints that the pod didn't tolerate"];
        let f = fit(1, &[("a", taint)]);
        let post = PostFilter {
            dynamic_resources: true,
            preemption_failed: true,
        };
        assert_eq!(
            fit_message(&f, post),
            "0/1 nodes are available: 1 node(s) had untolerated taint(s). no new claims to \
             deallocate, preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
        );
    }

    #[test]
    fn without_post_filter_plugins_the_message_ends_after_the_reasons() {
        let f = fit(
            2,
            &[
                ("a", &["Insufficient pods"][..]),
                (
                    "b",
                    &[
                        "node(s) didn't match pod affinity/anti-affinity",
                        "node(s) didn't match pod affinity rules",
                    ][..],
                ),
            ],
        );
        let post = PostFilter {
            dynamic_resources: false,
            preemption_failed: false,
        };
        assert_eq!(
            fit_message(&f, post),
            "0/2 nodes are available: 1 Too many pods, 1 node(s) didn't match pod affinity rules."
        );
    }
}
