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
mod tests;
