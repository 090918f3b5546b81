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
