use super::*;
use serde_json::json;

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
        .unwrap()
        .to_utc()
}

fn node(name: &str, ready: &str, heartbeat: DateTime<Utc>, taints: serde_json::Value) -> Node {
    let hb = crate::model::timestamp(heartbeat);
    let c = |t: &str, s: &str| json!({"type": t, "status": s, "lastHeartbeatTime": hb, "lastTransitionTime": hb});
    serde_json::from_value(json!({
        "metadata": {"name": name, "resourceVersion": "7", "creationTimestamp": hb},
        "spec": {"taints": taints},
        "status": {"conditions": [c("MemoryPressure", "False"), c("DiskPressure", "False"), c("PIDPressure", "False"), c("Ready", ready), c("NetworkUnavailable", "False")]},
    }))
    .unwrap()
}

fn set_conditions(actions: &[LifecycleAction]) -> Vec<&Vec<NodeCondition>> {
    actions
        .iter()
        .filter_map(|a| match a {
            LifecycleAction::SetConditions { conditions, .. } => Some(conditions),
            _ => None,
        })
        .collect()
}

fn set_taints(actions: &[LifecycleAction]) -> Vec<Vec<String>> {
    actions
        .iter()
        .filter_map(|a| match a {
            LifecycleAction::SetTaints { taints, .. } => Some(
                taints
                    .iter()
                    .map(|t| format!("{}:{}", t.key, t.effect))
                    .collect(),
            ),
            _ => None,
        })
        .collect()
}

#[test]
fn lease_keeps_a_node_alive_past_the_grace_period() {
    let mut m = Monitor::new(LifecycleConfig::default());
    let n = node("n1", "True", t0(), json!(null));
    let other = node("n2", "True", t0(), json!(null));
    let first = m.pass(
        &[
            NodeView {
                node: &n,
                lease_renew: Some(t0()),
            },
            NodeView {
                node: &other,
                lease_renew: Some(t0()),
            },
        ],
        t0(),
    );
    assert!(first
        .iter()
        .any(|a| matches!(a, LifecycleAction::Event(e) if e.reason == "RegisteredNode")));
    // Lease renewed every 10s: never stale, although the Ready heartbeat never moves.
    for s in (10..=120).step_by(10) {
        let now = t0() + Duration::seconds(s);
        let acts = m.pass(
            &[
                NodeView {
                    node: &n,
                    lease_renew: Some(now),
                },
                NodeView {
                    node: &other,
                    lease_renew: Some(now),
                },
            ],
            now,
        );
        assert!(set_conditions(&acts).is_empty(), "at {s}s: {acts:?}");
    }
}

#[test]
fn stale_node_goes_unknown_after_grace_then_tainted_unreachable() {
    let mut m = Monitor::new(LifecycleConfig::default());
    let n = node(
        "n1",
        "True",
        t0(),
        json!([{"key": "user", "effect": "NoSchedule"}]),
    );
    let healthy = node("n2", "True", t0(), json!(null));
    let pass = |m: &mut Monitor, n: &Node, s: i64| {
        let now = t0() + Duration::seconds(s);
        m.pass(
            &[
                NodeView {
                    node: n,
                    lease_renew: Some(t0()),
                },
                NodeView {
                    node: &healthy,
                    lease_renew: Some(now),
                },
            ],
            now,
        )
    };
    pass(&mut m, &n, 0);
    // At exactly the grace period: not yet (strictly later).
    assert!(set_conditions(&pass(&mut m, &n, 40)).is_empty());
    let acts = pass(&mut m, &n, 41);
    let conds = set_conditions(&acts);
    assert_eq!(conds.len(), 1);
    let by_type: BTreeMap<_, _> = conds[0].iter().map(|c| (c.type_.as_str(), c)).collect();
    for t in KUBELET_CONDITIONS {
        assert_eq!(by_type[t].status, "Unknown", "{t}");
        assert_eq!(by_type[t].reason.as_deref(), Some("NodeStatusUnknown"));
        assert_eq!(
            by_type[t].message.as_deref(),
            Some("Kubelet stopped posting node status.")
        );
    }
    assert_eq!(by_type["NetworkUnavailable"].status, "False");
    // The Unknown is acted on in the next pass: not-ready/unreachable NoExecute taint.
    assert!(set_taints(&acts).is_empty());
    let unknown = node(
        "n1",
        "Unknown",
        t0(),
        json!([{"key": "user", "effect": "NoSchedule"}]),
    );
    let acts = pass(&mut m, &unknown, 46);
    assert!(acts
        .iter()
        .any(|a| matches!(a, LifecycleAction::Event(e) if e.reason == "NodeNotReady")));
    assert!(acts.contains(&LifecycleAction::MarkPodsNotReady { node: "n1".into() }));
    assert_eq!(
        set_taints(&acts),
        vec![vec![
            "user:NoSchedule".to_string(),
            "node.kubernetes.io/unreachable:NoExecute".into()
        ]]
    );
    let LifecycleAction::SetTaints { taints, .. } = acts
        .iter()
        .find(|a| matches!(a, LifecycleAction::SetTaints { .. }))
        .unwrap()
    else {
        unreachable!()
    };
    assert_eq!(
        taints[1].time_added.as_ref().map(to_chrono),
        Some(t0() + Duration::seconds(46))
    );
}

#[test]
fn taint_follows_ready() {
    let now = t0();
    let cases = [
        (
            "False",
            json!(null),
            Some(vec!["node.kubernetes.io/not-ready:NoExecute"]),
        ),
        (
            "Unknown",
            json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]),
            Some(vec!["node.kubernetes.io/unreachable:NoExecute"]),
        ),
        (
            "False",
            json!([{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]),
            Some(vec!["node.kubernetes.io/not-ready:NoExecute"]),
        ),
        (
            "True",
            json!([{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}, {"key": "k", "effect": "NoExecute"}]),
            Some(vec!["k:NoExecute"]),
        ),
        (
            "True",
            json!([{"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"}]),
            None,
        ),
        (
            "Unknown",
            json!([{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2025-01-01T00:00:00Z"}]),
            None,
        ),
    ];
    for (ready, taints, want) in cases {
        let mut m = Monitor::new(LifecycleConfig::default());
        let n = node("n1", ready, now, taints.clone());
        let healthy = node("n2", "True", now, json!(null));
        let acts = m.pass(
            &[
                NodeView {
                    node: &n,
                    lease_renew: None,
                },
                NodeView {
                    node: &healthy,
                    lease_renew: None,
                },
            ],
            now,
        );
        let want: Vec<Vec<String>> = want
            .into_iter()
            .map(|w| w.into_iter().map(String::from).collect())
            .collect();
        assert_eq!(set_taints(&acts), want, "{ready} {taints}");
    }
}

#[test]
fn no_node_ready_is_master_disruption_mode() {
    let mut m = Monitor::new(LifecycleConfig::default());
    let a = node(
        "n1",
        "Unknown",
        t0(),
        json!([{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]),
    );
    let b = node("n2", "False", t0(), json!(null));
    let acts = m.pass(
        &[
            NodeView {
                node: &a,
                lease_renew: None,
            },
            NodeView {
                node: &b,
                lease_renew: None,
            },
        ],
        t0(),
    );
    assert_eq!(set_taints(&acts), vec![Vec::<String>::new()]);
}

#[test]
fn heartbeat_change_is_a_probe() {
    let mut m = Monitor::new(LifecycleConfig::default());
    let healthy = node("n2", "True", t0(), json!(null));
    let at = |s: i64| t0() + Duration::seconds(s);
    m.pass(
        &[
            NodeView {
                node: &node("n1", "True", at(0), json!(null)),
                lease_renew: None,
            },
            NodeView {
                node: &healthy,
                lease_renew: None,
            },
        ],
        at(0),
    );
    // The kubelet posts a new heartbeat at 30s (its clock is irrelevant, only the change).
    let n = node("n1", "True", at(-1000), json!(null));
    assert!(set_conditions(&m.pass(
        &[
            NodeView {
                node: &n,
                lease_renew: None
            },
            NodeView {
                node: &healthy,
                lease_renew: None
            }
        ],
        at(30)
    ))
    .is_empty());
    let acts = m.pass(
        &[
            NodeView {
                node: &n,
                lease_renew: None,
            },
            NodeView {
                node: &healthy,
                lease_renew: None,
            },
        ],
        at(69),
    );
    // n1 was probed at 30s (fresh until 70s); n2 never moved since 0s (stale after 40s).
    let marked: Vec<&str> = acts
        .iter()
        .filter_map(|a| match a {
            LifecycleAction::SetConditions { node, .. } => Some(node.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(marked, vec!["n2"]);
}
