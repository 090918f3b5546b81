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
mod tests {
    use super::*;
    use serde_json::json;

    fn node(conditions: &[(&str, &str)], unschedulable: bool, taints: serde_json::Value) -> Node {
        let conditions: Vec<_> = conditions
            .iter()
            .map(|(t, s)| json!({"type": t, "status": s}))
            .collect();
        serde_json::from_value(json!({
            "metadata": {"name": "n1"},
            "spec": {"unschedulable": unschedulable, "taints": taints},
            "status": {"conditions": conditions},
        }))
        .unwrap()
    }

    fn keys_of(taints: &[Taint]) -> Vec<String> {
        taints
            .iter()
            .map(|t| format!("{}:{}", t.key, t.effect))
            .collect()
    }

    const HEALTHY: &[(&str, &str)] = &[
        ("Ready", "True"),
        ("MemoryPressure", "False"),
        ("DiskPressure", "False"),
        ("PIDPressure", "False"),
    ];

    #[test]
    fn table() {
        struct Case {
            name: &'static str,
            conditions: &'static [(&'static str, &'static str)],
            unschedulable: bool,
            taints: serde_json::Value,
            want: Option<Vec<&'static str>>,
        }
        let cases = [
            Case {
                name: "healthy, no taints: nothing to do",
                conditions: HEALTHY,
                unschedulable: false,
                taints: json!(null),
                want: None,
            },
            Case {
                name: "healthy with a user taint: kept, no write",
                conditions: HEALTHY,
                unschedulable: false,
                taints: json!([{"key": "k", "value": "v", "effect": "NoSchedule"}]),
                want: None,
            },
            Case {
                name: "memory pressure adds its taint",
                conditions: &[("Ready", "True"), ("MemoryPressure", "True")],
                unschedulable: false,
                taints: json!(null),
                want: Some(vec!["node.kubernetes.io/memory-pressure:NoSchedule"]),
            },
            Case {
                name: "disk and pid pressure",
                conditions: &[("DiskPressure", "True"), ("PIDPressure", "True")],
                unschedulable: false,
                taints: json!([]),
                want: Some(vec![
                    "node.kubernetes.io/disk-pressure:NoSchedule",
                    "node.kubernetes.io/pid-pressure:NoSchedule",
                ]),
            },
            Case {
                name: "network unavailable",
                conditions: &[("NetworkUnavailable", "True")],
                unschedulable: false,
                taints: json!([]),
                want: Some(vec!["node.kubernetes.io/network-unavailable:NoSchedule"]),
            },
            Case {
                name: "Ready False is not-ready",
                conditions: &[("Ready", "False")],
                unschedulable: false,
                taints: json!([]),
                want: Some(vec!["node.kubernetes.io/not-ready:NoSchedule"]),
            },
            Case {
                name: "Ready Unknown is unreachable",
                conditions: &[("Ready", "Unknown")],
                unschedulable: false,
                taints: json!([]),
                want: Some(vec!["node.kubernetes.io/unreachable:NoSchedule"]),
            },
            Case {
                name: "cordon adds unschedulable after the user taint",
                conditions: HEALTHY,
                unschedulable: true,
                taints: json!([{"key": "k", "effect": "NoExecute"}]),
                want: Some(vec![
                    "k:NoExecute",
                    "node.kubernetes.io/unschedulable:NoSchedule",
                ]),
            },
            Case {
                name: "uncordon removes it, keeps the user taint",
                conditions: HEALTHY,
                unschedulable: false,
                taints: json!([{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}, {"key": "k", "effect": "NoSchedule"}]),
                want: Some(vec!["k:NoSchedule"]),
            },
            Case {
                name: "pressure cleared removes it",
                conditions: HEALTHY,
                unschedulable: false,
                taints: json!([{"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}]),
                want: Some(vec![]),
            },
            Case {
                name: "already right: no write",
                conditions: &[("Ready", "True"), ("MemoryPressure", "True")],
                unschedulable: true,
                taints: json!([{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}, {"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}]),
                want: None,
            },
            Case {
                name: "NoExecute of an owned key is not ours",
                conditions: HEALTHY,
                unschedulable: false,
                taints: json!([{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]),
                want: None,
            },
            Case {
                name: "Ready back to True swaps nothing in, removes unreachable",
                conditions: HEALTHY,
                unschedulable: false,
                taints: json!([{"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"}, {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]),
                want: Some(vec!["node.kubernetes.io/unreachable:NoExecute"]),
            },
            Case {
                name: "duplicate owned taint collapsed",
                conditions: &[("MemoryPressure", "True")],
                unschedulable: false,
                taints: json!([{"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}, {"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}]),
                want: Some(vec!["node.kubernetes.io/memory-pressure:NoSchedule"]),
            },
        ];
        for c in cases {
            let n = node(c.conditions, c.unschedulable, c.taints);
            let got = reconcile(&n).map(|t| keys_of(&t));
            let want = c
                .want
                .map(|w| w.into_iter().map(String::from).collect::<Vec<_>>());
            assert_eq!(got, want, "{}", c.name);
        }
    }

    #[test]
    fn stable_after_applying() {
        let mut n = node(
            &[("Ready", "Unknown"), ("DiskPressure", "True")],
            true,
            json!([{"key": "a", "effect": "NoSchedule"}]),
        );
        let next = reconcile(&n).unwrap();
        n.spec.as_mut().unwrap().taints = Some(next);
        assert_eq!(reconcile(&n), None);
    }
}
