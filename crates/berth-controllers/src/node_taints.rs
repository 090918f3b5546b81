//! Taints by condition (control-loops §3.4): a node's conditions and `spec.unschedulable`
//! become `NoSchedule` taints, so the scheduler only has to look at taints.
//!
//! The engine owns the `NoSchedule` taints of the keys below and nothing else: user taints,
//! other effects of the same keys and other controllers' taints are kept as they are, in order.

use crate::model::{keys, node_condition_status, node_taints, taint};
use k8s_openapi::api::core::v1::{Node, Taint};

/// (condition type, status that taints, taint key).
const CONDITION_TAINTS: &[(&str, &str, &str)] = &[
    ("Ready", "False", keys::NOT_READY),
    ("Ready", "Unknown", keys::UNREACHABLE),
    ("MemoryPressure", "True", keys::MEMORY_PRESSURE),
    ("DiskPressure", "True", keys::DISK_PRESSURE),
    ("PIDPressure", "True", keys::PID_PRESSURE),
    ("NetworkUnavailable", "True", keys::NETWORK_UNAVAILABLE),
];

const EFFECT: &str = "NoSchedule";

/// Whether the taint is one this engine manages.
fn owned(t: &Taint) -> bool {
    t.effect == EFFECT
        && (t.key == keys::UNSCHEDULABLE || CONDITION_TAINTS.iter().any(|(_, _, k)| *k == t.key))
}

/// The `NoSchedule` taint keys the node's state calls for, in a fixed order.
pub fn desired_keys(node: &Node) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = CONDITION_TAINTS
        .iter()
        .filter(|(type_, status, _)| node_condition_status(node, type_) == Some(*status))
        .map(|(_, _, key)| *key)
        .collect();
    if node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true) {
        out.push(keys::UNSCHEDULABLE);
    }
    out
}

/// The node's new taint list, or `None` when its condition taints are already right.
///
/// Taints the node keeps stay in place; missing ones are appended in [`desired_keys`] order.
pub fn reconcile(node: &Node) -> Option<Vec<Taint>> {
    let current = node_taints(node);
    let want = desired_keys(node);
    let mut next: Vec<Taint> = current
        .iter()
        .filter(|t| !owned(t) || want.contains(&t.key.as_str()))
        .cloned()
        .collect();
    // A duplicate of an owned taint (same key twice) is collapsed to one.
    let mut seen = Vec::new();
    next.retain(|t| {
        !owned(t) || {
            let fresh = !seen.contains(&t.key);
            seen.push(t.key.clone());
            fresh
        }
    });
    for key in want {
        if !next.iter().any(|t| t.effect == EFFECT && t.key == key) {
            next.push(taint(key, EFFECT, None));
        }
    }
    (next.as_slice() != current).then_some(next)
}

#[cfg(test)]
mod tests;
