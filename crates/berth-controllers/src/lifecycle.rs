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
//! Zones (§3.5, [`zones`]): the lifecycle taints are written through one rate-limited queue per
//! zone, and a zone's disruption state sets its rate; a small zone that lost most of its nodes
//! is not tainted at all, and when every zone is fully disrupted no node is (master disruption
//! mode). Each change of a zone's state is recorded as an event on its not-ready nodes, saying
//! why their pods are or are not evicted.

use crate::model::{
    keys, node_condition, node_taints, same_taint, taint, to_chrono, to_time, upsert_condition,
    EventRecord, Involved,
};
use chrono::{DateTime, Duration, Utc};
use k8s_openapi::api::core::v1::{Node, NodeCondition, Taint};
use std::collections::{BTreeMap, BTreeSet};

pub mod simulated;
pub mod zones;
use zones::{zone_name, zone_of, TaintQueue, ZoneConfig, ZoneState};

/// Kubelet-owned conditions that go `Unknown` with Ready (never NetworkUnavailable).
const KUBELET_CONDITIONS: &[&str] = &["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"];

/// Node lifecycle settings (upstream flags).
#[derive(Clone, Debug)]
pub struct LifecycleConfig {
    /// `--node-monitor-grace-period` (40s).
    pub grace_period: Duration,
    /// `--node-startup-grace-period` (60s): used while a node never posted Ready.
    pub startup_grace_period: Duration,
    /// Zone states and taint rates.
    pub zones: ZoneConfig,
}

impl Default for LifecycleConfig {
    fn default() -> Self {
        LifecycleConfig {
            grace_period: Duration::seconds(40),
            startup_grace_period: Duration::seconds(60),
            zones: ZoneConfig::default(),
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
    /// The node's uid, for the `RemovingNode` event when it is gone.
    uid: String,
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

/// One zone: its state and its queue of nodes to taint.
#[derive(Clone, Debug)]
struct Zone {
    state: ZoneState,
    queue: TaintQueue,
}

/// One node's taint list as read and as a pass changes it.
struct TaintEdit {
    resource_version: Option<String>,
    before: Vec<Taint>,
    after: Vec<Taint>,
}

/// The taint lists a pass changes, one write per node at the end.
#[derive(Default)]
struct TaintEdits {
    by_node: BTreeMap<String, TaintEdit>,
}

impl TaintEdits {
    fn of<'a>(&'a mut self, node: &Node) -> &'a mut Vec<Taint> {
        let name = node.metadata.name.clone().unwrap_or_default();
        &mut self
            .by_node
            .entry(name)
            .or_insert_with(|| {
                let current = node_taints(node).to_vec();
                TaintEdit {
                    resource_version: node.metadata.resource_version.clone(),
                    before: current.clone(),
                    after: current,
                }
            })
            .after
    }

    fn has(&mut self, node: &Node, key: &str) -> bool {
        self.of(node)
            .iter()
            .any(|t| is_lifecycle(t) && t.key == key)
    }

    /// Makes `want` the node's one lifecycle `NoExecute` taint (none for `None`).
    fn set(&mut self, node: &Node, want: Option<&str>, now: DateTime<Utc>) {
        let taints = self.of(node);
        taints.retain(|t| !is_lifecycle(t) || Some(t.key.as_str()) == want);
        if let Some(key) = want {
            if !taints.iter().any(|t| is_lifecycle(t) && t.key == key) {
                taints.push(taint(key, "NoExecute", Some(now)));
            }
        }
    }

    fn into_actions(self, out: &mut Vec<LifecycleAction>) {
        for (node, edit) in self.by_node {
            let same = edit.before.len() == edit.after.len()
                && edit
                    .before
                    .iter()
                    .zip(&edit.after)
                    .all(|(a, b)| same_taint(a, b));
            if !same {
                out.push(LifecycleAction::SetTaints {
                    node,
                    resource_version: edit.resource_version,
                    taints: edit.after,
                });
            }
        }
    }
}

fn is_lifecycle(t: &Taint) -> bool {
    t.effect == "NoExecute" && (t.key == keys::NOT_READY || t.key == keys::UNREACHABLE)
}

/// One zone's nodes as counted in a pass.
#[derive(Default)]
struct ZoneCount<'a> {
    ready: usize,
    not_ready: Vec<&'a Node>,
}

/// The node health monitor: a deterministic state machine over (nodes, leases, now).
#[derive(Debug, Default)]
pub struct Monitor {
    config: LifecycleConfig,
    health: BTreeMap<String, Health>,
    zones: BTreeMap<String, Zone>,
    /// Each zone's size and not-ready nodes at the last pass.
    counted: Vec<crate::metrics::ZoneCount>,
    /// The zone of each node tainted since [`Monitor::take_evictions`] was last called.
    evictions: Vec<String>,
}

impl Monitor {
    /// A monitor that has seen no node yet.
    pub fn new(config: LifecycleConfig) -> Monitor {
        Monitor {
            config,
            health: BTreeMap::new(),
            zones: BTreeMap::new(),
            counted: Vec::new(),
            evictions: Vec::new(),
        }
    }

    /// Each zone's state now.
    pub fn zone_states(&self) -> BTreeMap<String, ZoneState> {
        self.zones
            .iter()
            .map(|(k, z)| (k.clone(), z.state))
            .collect()
    }

    /// Each zone's size and not-ready nodes as the last pass counted them.
    pub fn zone_counts(&self) -> &[crate::metrics::ZoneCount] {
        &self.counted
    }

    /// The zone of each node tainted `NoExecute` from a zone's queue since the last call
    /// (upstream counts these in `node_collector_evictions_total`).
    pub fn take_evictions(&mut self) -> Vec<String> {
        std::mem::take(&mut self.evictions)
    }

    /// Whether a zone's queue holds nodes waiting to be tainted (the driver then calls
    /// [`Monitor::work_queues`] more often than it runs passes).
    pub fn has_queued(&self) -> bool {
        self.zones.values().any(|z| !z.queue.is_empty())
    }

    /// One monitor pass over every node (upstream `monitorNodeHealth`), in three steps: the
    /// health of every node, then each zone's state from all of them, then each node's taint
    /// with its zone's new state (so no node is tainted at a rate its zone has already left).
    pub fn pass(&mut self, nodes: &[NodeView<'_>], now: DateTime<Utc>) -> Vec<LifecycleAction> {
        let mut actions = Vec::new();
        let names: BTreeSet<&str> = nodes
            .iter()
            .filter_map(|v| v.node.metadata.name.as_deref())
            .collect();
        // Nodes gone since the last pass (upstream's `knownNodeSet` difference).
        self.health.retain(|n, h| {
            let kept = names.contains(n.as_str());
            if !kept {
                actions.push(LifecycleAction::Event(crate::events::removing_node(
                    n, &h.uid,
                )));
            }
            kept
        });
        let mut counts: BTreeMap<String, ZoneCount<'_>> = BTreeMap::new();
        let mut observed = Vec::with_capacity(nodes.len());
        for view in nodes {
            let zone = zone_of(view.node);
            let (seen, current) = self.node_pass(view, now, &mut actions);
            let count = counts.entry(zone.clone()).or_default();
            if current.as_deref() == Some("True") {
                count.ready += 1;
            } else {
                count.not_ready.push(view.node);
            }
            observed.push((view.node, zone, seen));
        }
        let rate = self.config.zones.eviction_rate;
        for zone in counts.keys() {
            self.zones.entry(zone.clone()).or_insert_with(|| Zone {
                state: ZoneState::Initial,
                queue: TaintQueue::new(rate),
            });
        }
        self.counted = counts
            .iter()
            .map(|(zone, c)| crate::metrics::ZoneCount {
                zone: zone.clone(),
                size: c.ready + c.not_ready.len(),
                unhealthy: c.not_ready.len(),
            })
            .collect();
        let mut edits = TaintEdits::default();
        self.handle_disruption(&counts, now, &mut edits, &mut actions);
        for (node, zone, seen) in &observed {
            self.taint_by_ready(node, zone, seen.as_deref(), now, &mut edits);
        }
        let by_name: BTreeMap<&str, &Node> = nodes
            .iter()
            .filter_map(|v| Some((v.node.metadata.name.as_deref()?, v.node)))
            .collect();
        self.work(&by_name, now, &mut edits);
        edits.into_actions(&mut actions);
        actions
    }

    /// Takes the nodes each zone's rate allows off the taint queues (upstream's taint worker,
    /// every 100 ms).
    pub fn work_queues(&mut self, nodes: &[&Node], now: DateTime<Utc>) -> Vec<LifecycleAction> {
        let by_name: BTreeMap<&str, &Node> = nodes
            .iter()
            .filter_map(|n| Some((n.metadata.name.as_deref()?, *n)))
            .collect();
        let mut edits = TaintEdits::default();
        self.work(&by_name, now, &mut edits);
        let mut actions = Vec::new();
        edits.into_actions(&mut actions);
        actions
    }

    fn work(&mut self, nodes: &BTreeMap<&str, &Node>, now: DateTime<Utc>, edits: &mut TaintEdits) {
        let evictions = &mut self.evictions;
        for (key, zone) in self.zones.iter_mut() {
            zone.queue.work(now, |name| {
                let Some(node) = nodes.get(name) else {
                    return true;
                };
                match node_condition(node, "Ready").map(|c| c.status.as_str()) {
                    Some("False") => {
                        edits.set(node, Some(keys::NOT_READY), now);
                        evictions.push(key.clone());
                    }
                    Some("Unknown") => {
                        edits.set(node, Some(keys::UNREACHABLE), now);
                        evictions.push(key.clone());
                    }
                    Some(_) => {}
                    // No Ready condition yet: try again.
                    None => return false,
                }
                true
            });
        }
    }

    /// Upstream `processTaintBaseEviction`: the taint a node's Ready condition calls for goes
    /// through its zone's queue, unless it only swaps one lifecycle taint for the other.
    fn taint_by_ready(
        &mut self,
        node: &Node,
        zone: &str,
        observed: Option<&str>,
        now: DateTime<Utc>,
        edits: &mut TaintEdits,
    ) {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let Some(queue) = self.zones.get_mut(zone).map(|z| &mut z.queue) else {
            return;
        };
        match observed {
            Some("False") if edits.has(node, keys::UNREACHABLE) => {
                edits.set(node, Some(keys::NOT_READY), now)
            }
            Some("Unknown") if edits.has(node, keys::NOT_READY) => {
                edits.set(node, Some(keys::UNREACHABLE), now)
            }
            Some("False") | Some("Unknown") => queue.add(name),
            Some("True") => {
                if node_taints(node).iter().any(is_lifecycle) {
                    edits.set(node, None, now);
                }
                queue.remove(name);
            }
            _ => {}
        }
    }

    /// Upstream `handleDisruption`: zone states, their rates, and master disruption mode.
    fn handle_disruption(
        &mut self,
        counts: &BTreeMap<String, ZoneCount<'_>>,
        now: DateTime<Utc>,
        edits: &mut TaintEdits,
        out: &mut Vec<LifecycleAction>,
    ) {
        let config = self.config.zones.clone();
        self.zones.retain(|z, _| counts.contains_key(z));
        let new_states: BTreeMap<&str, ZoneState> = counts
            .iter()
            .map(|(z, c)| (z.as_str(), config.state(c.ready, c.not_ready.len())))
            .collect();
        let all_are_full =
            !new_states.is_empty() && new_states.values().all(|s| *s == ZoneState::FullDisruption);
        let all_were_full = !self.zones.is_empty()
            && self
                .zones
                .values()
                .all(|z| z.state == ZoneState::FullDisruption);
        if all_are_full && all_were_full {
            return;
        }
        if all_are_full {
            // The controller may be the one cut off: nothing is evicted anywhere.
            for (zone, count) in counts {
                for node in &count.not_ready {
                    edits.set(node, None, now);
                    if let Some(z) = self.zones.get_mut(zone) {
                        z.queue
                            .remove(node.metadata.name.as_deref().unwrap_or_default());
                    }
                    out.push(zone_event(
                        node,
                        "Warning",
                        "MasterDisruption",
                        "Controller detected that all Nodes are not-Ready: every zone is in FullDisruption (master disruption mode), so no node is tainted NoExecute and no pod is evicted".into(),
                    ));
                }
            }
            for z in self.zones.values_mut() {
                z.queue.bucket.swap(0.0, now);
                z.state = ZoneState::FullDisruption;
            }
            return;
        }
        if all_were_full {
            // Leaving master disruption mode: every node gets a fresh grace period.
            for h in self.health.values_mut() {
                h.probe = now;
            }
        }
        for (zone, count) in counts {
            let Some(z) = self.zones.get_mut(zone) else {
                continue;
            };
            let state = new_states[zone.as_str()];
            if z.state == state && !all_were_full {
                continue;
            }
            let size = count.ready + count.not_ready.len();
            let rate = config.rate(state, size);
            z.queue.bucket.swap(rate, now);
            let was = z.state;
            z.state = state;
            let quiet = (was == state && !all_were_full)
                || (was == ZoneState::Initial && state == ZoneState::Normal);
            if quiet {
                continue;
            }
            let why = match state {
                ZoneState::PartialDisruption if rate > 0.0 => format!(
                    "{} of {size} nodes are not ready (at least {}), in a zone of more than {} nodes: nodes are tainted NoExecute at the secondary rate of {rate}/s",
                    count.not_ready.len(), config.unhealthy_zone_threshold, config.large_cluster_size_threshold
                ),
                ZoneState::PartialDisruption => format!(
                    "{} of {size} nodes are not ready (at least {}), in a zone of at most {} nodes: no node is tainted NoExecute, no pod is evicted",
                    count.not_ready.len(), config.unhealthy_zone_threshold, config.large_cluster_size_threshold
                ),
                ZoneState::FullDisruption => format!(
                    "no node of the zone is ready (other zones are): nodes are tainted NoExecute at {rate}/s"
                ),
                ZoneState::Normal | ZoneState::Initial => format!(
                    "{} of {size} nodes are not ready: nodes are tainted NoExecute at {rate}/s",
                    count.not_ready.len()
                ),
            };
            let (type_, reason) = match state {
                ZoneState::PartialDisruption => ("Warning", "ZonePartialDisruption"),
                ZoneState::FullDisruption => ("Warning", "ZoneFullDisruption"),
                ZoneState::Normal | ZoneState::Initial => ("Normal", "ZoneNormal"),
            };
            let left = if all_were_full {
                "Controller detected that some Nodes are Ready: leaving master disruption mode. "
            } else {
                ""
            };
            for node in &count.not_ready {
                out.push(zone_event(
                    node,
                    type_,
                    reason,
                    format!(
                        "{left}Zone {} is now in state {state}: {why}",
                        zone_name(zone)
                    ),
                ));
            }
        }
    }

    /// The health part of a pass for one node; returns the Ready status as read at the start
    /// of the pass (what taint decisions use) and as it is after the pass (what zone states
    /// count).
    fn node_pass(
        &mut self,
        view: &NodeView<'_>,
        now: DateTime<Utc>,
        out: &mut Vec<LifecycleAction>,
    ) -> (Option<String>, Option<String>) {
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
                message: format!("Node {name} event: Registered Node {name} in Controller"),
            }));
            Health {
                uid: node.metadata.uid.clone().unwrap_or_default(),
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
        let mut current = observed.clone();
        if now > health.probe + grace {
            if let Some(conditions) = unknown_conditions(node, now) {
                current = Some("Unknown".into());
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
        (observed, current)
    }
}

fn zone_event(
    node: &Node,
    type_: &'static str,
    reason: &'static str,
    message: String,
) -> LifecycleAction {
    LifecycleAction::Event(EventRecord {
        involved: node_involved(node),
        type_,
        reason,
        message,
    })
}

fn node_involved(node: &Node) -> Involved {
    Involved::Node {
        name: node.metadata.name.clone().unwrap_or_default(),
        uid: node.metadata.uid.clone().unwrap_or_default(),
        resource_version: crate::model::version_of(&node.metadata),
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

#[cfg(test)]
mod tests;
