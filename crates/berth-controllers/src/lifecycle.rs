//! Node lifecycle (control-loops §3.1–3.3a): notices nodes that stopped posting status, marks
//! their conditions `Unknown`, and keeps the `NoExecute` taints `node.kubernetes.io/not-ready` /
//! `node.kubernetes.io/unreachable` in line with the Ready condition so that the taint manager
//! evicts their pods.
//!
//! The monitor keeps, per node, when it last saw a sign of life in **its own** time (a changed
//! Ready heartbeat or a renewed lease): kubelet clocks are never trusted. Decisions about the
//! `NoExecute` taints use the Ready condition as read at the start of a pass; an `Unknown`
//! written in a pass is acted on in the next one.
//!
//! Not modelled (yet): per-zone rate limiting of tainting (§3.5 token buckets). The "all nodes
//! not ready" master disruption mode is: then no node is tainted `NoExecute`.

use crate::model::{
    keys, node_condition, node_taints, same_taint, taint, to_chrono, to_time, upsert_condition,
    EventRecord, Involved,
};
use chrono::{DateTime, Duration, Utc};
use k8s_openapi::api::core::v1::{Node, NodeCondition, Taint};
use std::collections::{BTreeMap, BTreeSet};

/// Kubelet-owned conditions that go `Unknown` with Ready (never NetworkUnavailable).
const KUBELET_CONDITIONS: &[&str] = &["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"];

/// Node lifecycle settings (upstream flags).
#[derive(Clone, Debug)]
pub struct LifecycleConfig {
    /// `--node-monitor-grace-period` (40s).
    pub grace_period: Duration,
    /// `--node-startup-grace-period` (60s): used while a node never posted Ready.
    pub startup_grace_period: Duration,
}

impl Default for LifecycleConfig {
    fn default() -> Self {
        LifecycleConfig {
            grace_period: Duration::seconds(40),
            startup_grace_period: Duration::seconds(60),
        }
    }
}

/// What one monitor pass decided.
#[derive(Clone, Debug, PartialEq)]
pub enum LifecycleAction {
    /// Write the node's status conditions (those the kubelet stopped posting, now `Unknown`).
    SetConditions {
        node: String,
        resource_version: Option<String>,
        conditions: Vec<NodeCondition>,
    },
    /// Write the node's whole taint list (its `NoExecute` lifecycle taints changed).
    SetTaints {
        node: String,
        resource_version: Option<String>,
        taints: Vec<Taint>,
    },
    /// Set the `Ready` condition of every pod on the node to `False`.
    MarkPodsNotReady { node: String },
    /// Record an event.
    Event(EventRecord),
}

/// What the monitor remembers about one node, in controller time.
#[derive(Clone, Debug)]
struct Health {
    probe: DateTime<Utc>,
    heartbeat: Option<DateTime<Utc>>,
    lease_renew: Option<DateTime<Utc>>,
    /// The Ready status seen at the previous pass.
    ready: Option<String>,
}

/// One node as the monitor sees it: the object and its lease's `renewTime`.
pub struct NodeView<'a> {
    pub node: &'a Node,
    pub lease_renew: Option<DateTime<Utc>>,
}

/// The node health monitor: a deterministic state machine over (nodes, leases, now).
#[derive(Debug, Default)]
pub struct Monitor {
    config: LifecycleConfig,
    health: BTreeMap<String, Health>,
}

impl Monitor {
    /// A monitor that has seen no node yet.
    pub fn new(config: LifecycleConfig) -> Monitor {
        Monitor {
            config,
            health: BTreeMap::new(),
        }
    }

    /// One monitor pass over every node (upstream `monitorNodeHealth`).
    pub fn pass(&mut self, nodes: &[NodeView<'_>], now: DateTime<Utc>) -> Vec<LifecycleAction> {
        let mut actions = Vec::new();
        let names: BTreeSet<&str> = nodes
            .iter()
            .filter_map(|v| v.node.metadata.name.as_deref())
            .collect();
        let gone: Vec<String> = self
            .health
            .keys()
            .filter(|n| !names.contains(n.as_str()))
            .cloned()
            .collect();
        for name in gone {
            self.health.remove(&name);
        }
        // Master disruption mode: no node is Ready ⇒ nobody is tainted NoExecute.
        let any_ready = nodes
            .iter()
            .any(|v| node_condition(v.node, "Ready").is_some_and(|c| c.status == "True"));
        for view in nodes {
            self.node_pass(view, now, any_ready, &mut actions);
        }
        actions
    }

    fn node_pass(
        &mut self,
        view: &NodeView<'_>,
        now: DateTime<Utc>,
        any_ready: bool,
        out: &mut Vec<LifecycleAction>,
    ) {
        let node = view.node;
        let name = node.metadata.name.clone().unwrap_or_default();
        let ready = node_condition(node, "Ready");
        let heartbeat = ready
            .and_then(|c| c.last_heartbeat_time.as_ref())
            .map(to_chrono);
        let observed = ready.map(|c| c.status.clone());
        let health = self.health.entry(name.clone()).or_insert_with(|| {
            out.push(LifecycleAction::Event(EventRecord {
                involved: node_involved(node),
                type_: "Normal",
                reason: "RegisteredNode",
                message: format!("Registered Node {name} in Controller"),
            }));
            Health {
                probe: now,
                heartbeat,
                lease_renew: view.lease_renew,
                ready: observed.clone(),
            }
        });
        if heartbeat != health.heartbeat {
            health.heartbeat = heartbeat;
            health.probe = now;
        }
        if view.lease_renew.is_some() && view.lease_renew > health.lease_renew {
            health.lease_renew = view.lease_renew;
            health.probe = now;
        }
        let grace = if ready.is_none() {
            self.config.startup_grace_period
        } else {
            self.config.grace_period
        };
        if now > health.probe + grace {
            if let Some(conditions) = unknown_conditions(node, now) {
                out.push(LifecycleAction::SetConditions {
                    node: name.clone(),
                    resource_version: node.metadata.resource_version.clone(),
                    conditions,
                });
            }
        }
        // Ready went from True to something else since the last pass.
        if health.ready.as_deref() == Some("True") && observed.as_deref() != Some("True") {
            out.push(LifecycleAction::Event(EventRecord {
                involved: node_involved(node),
                type_: "Normal",
                reason: "NodeNotReady",
                message: format!("Node {name} status is now: NodeNotReady"),
            }));
            out.push(LifecycleAction::MarkPodsNotReady { node: name.clone() });
        }
        health.ready = observed.clone();
        let want = if any_ready {
            match observed.as_deref() {
                Some("False") => Some(keys::NOT_READY),
                Some("Unknown") => Some(keys::UNREACHABLE),
                _ => None,
            }
        } else {
            None
        };
        if let Some(taints) = no_execute_taints(node_taints(node), want, now) {
            out.push(LifecycleAction::SetTaints {
                node: name,
                resource_version: node.metadata.resource_version.clone(),
                taints,
            });
        }
    }
}

fn node_involved(node: &Node) -> Involved {
    Involved::Node {
        name: node.metadata.name.clone().unwrap_or_default(),
        uid: node.metadata.uid.clone().unwrap_or_default(),
    }
}

/// The node's conditions with the kubelet-owned ones set to `Unknown`, or `None` if they are already.
fn unknown_conditions(node: &Node, now: DateTime<Utc>) -> Option<Vec<NodeCondition>> {
    let mut conditions = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default();
    let mut changed = false;
    for type_ in KUBELET_CONDITIONS {
        match conditions.iter().find(|c| c.type_ == *type_) {
            None => {
                changed = true;
                upsert_condition(
                    &mut conditions,
                    NodeCondition {
                        type_: type_.to_string(),
                        status: "Unknown".into(),
                        reason: Some("NodeStatusNeverUpdated".into()),
                        message: Some("Kubelet never posted node status.".into()),
                        last_heartbeat_time: node.metadata.creation_timestamp.clone(),
                        last_transition_time: Some(to_time(now)),
                    },
                );
            }
            Some(c) if c.status != "Unknown" => {
                changed = true;
                let c = NodeCondition {
                    status: "Unknown".into(),
                    reason: Some("NodeStatusUnknown".into()),
                    message: Some("Kubelet stopped posting node status.".into()),
                    last_transition_time: Some(to_time(now)),
                    ..c.clone()
                };
                upsert_condition(&mut conditions, c);
            }
            Some(_) => {}
        }
    }
    changed.then_some(conditions)
}

/// The taint list with exactly `want` among the lifecycle `NoExecute` taints (new ones stamped
/// `timeAdded = now`), or `None` if that is the list already.
fn no_execute_taints(
    current: &[Taint],
    want: Option<&str>,
    now: DateTime<Utc>,
) -> Option<Vec<Taint>> {
    let ours = |t: &Taint| {
        t.effect == "NoExecute" && (t.key == keys::NOT_READY || t.key == keys::UNREACHABLE)
    };
    let mut next: Vec<Taint> = current
        .iter()
        .filter(|t| !ours(t) || Some(t.key.as_str()) == want)
        .cloned()
        .collect();
    if let Some(key) = want {
        if !next.iter().any(|t| ours(t) && t.key == key) {
            next.push(taint(key, "NoExecute", Some(now)));
        }
    }
    let same =
        next.len() == current.len() && next.iter().zip(current).all(|(a, b)| same_taint(a, b));
    (!same).then_some(next)
}

#[cfg(test)]
mod tests {
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
}
