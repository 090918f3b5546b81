//! The NoExecute taint manager (control-loops §3.6, seed "taint-based evictions"): pods on a node
//! with a `NoExecute` taint they do not tolerate are deleted at once; pods that tolerate it with
//! `tolerationSeconds` are deleted that long after the taint appeared (the minimum over the
//! tolerations used); pods that tolerate it without seconds stay. A taint removed before the
//! deadline cancels the deletion.
//!
//! When the taint appeared: its `timeAdded`, or when this manager first saw it if that is earlier
//! or `timeAdded` is unset (upstream starts the clock at observation; `timeAdded` lets the
//! deadline survive a controller restart). Deletions are plain DELETEs: PDBs are not consulted.
//!
//! The manager is incremental, as upstream's: it keeps each node's `NoExecute` taints, the bound
//! pods by node and a timer per scheduled deletion. A node change re-evaluates only the pods on
//! that node, and only when its `NoExecute` taints changed; a pod change re-evaluates that pod;
//! [`TaintManager::due`] fires the timers that came due. [`TaintManager::pass`] resynchronises
//! the whole state from a full list of nodes and pods (at start, and whenever a driver lost
//! events) and decides exactly what the event path would have.
//!
//! ```no_run
//! use berth_controllers::taint_manager::TaintManager;
//! # let (node, pod, now): (k8s_openapi::api::core::v1::Node, k8s_openapi::api::core::v1::Pod, chrono::DateTime<chrono::Utc>) = Default::default();
//! let mut manager = TaintManager::new();
//! let mut actions = manager.node_changed(&node, now); // a watch event for a node
//! actions.extend(manager.pod_changed(&pod, now)); // ... or for a pod
//! let due = manager.due(now); // and when `manager.next_wakeup()` comes
//! ```

use crate::model::{node_taints, pod_node, to_chrono, tolerates, EventRecord, Involved, PodRef};
use chrono::{DateTime, Duration, Utc};
use k8s_openapi::api::core::v1::{Node, Pod, Taint, Toleration};
use std::collections::{BTreeMap, BTreeSet};

/// How long a deletion the manager asked for counts as done before it asks again.
const REFIRE_AFTER: i64 = 30;

/// What the manager decided.
#[derive(Clone, Debug, PartialEq)]
pub enum TaintAction {
    /// Delete the pod (default grace).
    Delete(PodRef),
    /// Record an event.
    Event(EventRecord),
}

/// The result of a pass or of the timers firing: actions now, and when the next deadline falls.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaintPass {
    pub actions: Vec<TaintAction>,
    pub next_wakeup: Option<DateTime<Utc>>,
}

/// (key, value, effect) — a taint as observed on one node.
type TaintId = (String, String, String);

/// A node's `NoExecute` taint and when it started to count.
#[derive(Debug, Clone, PartialEq)]
struct Counted {
    taint: Taint,
    /// When this manager first saw the taint on the node.
    observed: DateTime<Utc>,
    /// `min(timeAdded, observed)`.
    start: DateTime<Utc>,
}

/// What the manager knows of a node: its `NoExecute` taints and the pods bound to it.
#[derive(Debug, Default)]
struct NodeState {
    taints: Vec<Counted>,
    /// Uids of the (bound, not deleting) pods on the node.
    pods: BTreeSet<String>,
}

/// A bound pod that is not being deleted: what its deadline depends on.
#[derive(Debug)]
struct PodState {
    pod: PodRef,
    /// The resourceVersion last seen (its events' `involvedObject.resourceVersion`).
    resource_version: String,
    node: String,
    tolerations: Vec<Toleration>,
}

/// The taint manager's memory: each node's `NoExecute` taints (with when they were first
/// seen), the bound pods, the scheduled deletions and the deletions asked for.
#[derive(Debug, Default)]
pub struct TaintManager {
    nodes: BTreeMap<String, NodeState>,
    /// Bound pods not being deleted, by uid.
    pods: BTreeMap<String, PodState>,
    /// Scheduled deletions: uid → when.
    scheduled: BTreeMap<String, DateTime<Utc>>,
    /// The same, ordered by when.
    timers: BTreeSet<(DateTime<Utc>, String)>,
    /// Deletions asked for: uid → when (present pods only).
    fired: BTreeMap<String, DateTime<Utc>>,
}

fn taint_id(t: &Taint) -> TaintId {
    (
        t.key.clone(),
        t.value.clone().unwrap_or_default(),
        t.effect.clone(),
    )
}

fn event(pod: &PodRef, resource_version: &str, message: String) -> TaintAction {
    TaintAction::Event(EventRecord {
        involved: Involved::Pod(pod.clone(), resource_version.to_string()),
        type_: "Normal",
        reason: "TaintManagerEviction",
        message,
    })
}

fn tolerations(pod: &Pod) -> &[Toleration] {
    pod.spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or(&[])
}

impl TaintManager {
    /// A manager that has seen nothing yet.
    pub fn new() -> TaintManager {
        TaintManager::default()
    }

    /// A node was added or changed: when its `NoExecute` taints changed, re-evaluates the pods
    /// bound to it.
    pub fn node_changed(&mut self, node: &Node, now: DateTime<Utc>) -> Vec<TaintAction> {
        let mut out = Vec::new();
        if let Some(name) = self.apply_node(node, now) {
            self.evaluate_node(&name, now, &mut out);
        }
        out
    }

    /// A node was deleted: its taints are forgotten and deletions scheduled for its pods are
    /// cancelled.
    pub fn node_deleted(&mut self, name: &str, now: DateTime<Utc>) -> Vec<TaintAction> {
        let mut out = Vec::new();
        if self.forget_node_taints(name) {
            self.evaluate_node(name, now, &mut out);
        }
        out
    }

    /// A pod was added or changed: re-evaluates it.
    pub fn pod_changed(&mut self, pod: &Pod, now: DateTime<Utc>) -> Vec<TaintAction> {
        let mut out = Vec::new();
        if let Some(uid) = self.apply_pod(pod) {
            self.evaluate(&uid, now, &mut out);
        }
        out
    }

    /// A pod was deleted: forgets it (a scheduled deletion goes without an event).
    pub fn pod_deleted(&mut self, pod: &Pod) {
        let uid = pod.metadata.uid.as_deref().unwrap_or("");
        self.untrack(uid);
        self.fired.remove(uid);
    }

    /// When the earliest scheduled deletion falls.
    pub fn next_wakeup(&self) -> Option<DateTime<Utc>> {
        self.timers.first().map(|(at, _)| *at)
    }

    /// Fires the scheduled deletions that are due at `now`.
    pub fn due(&mut self, now: DateTime<Utc>) -> TaintPass {
        let mut actions = Vec::new();
        while let Some((at, uid)) = self.timers.first().cloned() {
            if at > now {
                break;
            }
            self.unschedule(&uid);
            self.evaluate(&uid, now, &mut actions);
        }
        TaintPass {
            actions,
            next_wakeup: self.next_wakeup(),
        }
    }

    /// Resynchronises from a full list of nodes and pods and evaluates every pod, as if each
    /// change had arrived as an event; then fires what is due.
    pub fn pass(&mut self, nodes: &[&Node], pods: &[&Pod], now: DateTime<Utc>) -> TaintPass {
        let names: BTreeSet<&str> = nodes
            .iter()
            .map(|n| n.metadata.name.as_deref().unwrap_or(""))
            .collect();
        let gone: Vec<String> = self
            .nodes
            .keys()
            .filter(|n| !names.contains(n.as_str()))
            .cloned()
            .collect();
        for name in gone {
            self.forget_node_taints(&name);
        }
        for node in nodes {
            self.apply_node(node, now);
        }
        let uids: BTreeSet<&str> = pods
            .iter()
            .map(|p| p.metadata.uid.as_deref().unwrap_or(""))
            .collect();
        let known: BTreeSet<String> = self.pods.keys().chain(self.fired.keys()).cloned().collect();
        for uid in known.iter().filter(|u| !uids.contains(u.as_str())) {
            self.untrack(uid);
            self.fired.remove(uid);
        }
        let mut out = Vec::new();
        for pod in pods {
            if let Some(uid) = self.apply_pod(pod) {
                self.evaluate(&uid, now, &mut out);
            }
        }
        let mut due = self.due(now);
        out.append(&mut due.actions);
        TaintPass {
            actions: out,
            next_wakeup: due.next_wakeup,
        }
    }

    /// Takes in the node's `NoExecute` taints; returns its name when they changed.
    fn apply_node(&mut self, node: &Node, now: DateTime<Utc>) -> Option<String> {
        let name = node.metadata.name.as_deref().unwrap_or("");
        let old = self
            .nodes
            .get(name)
            .map_or(&[][..], |n| n.taints.as_slice());
        let mut taints: Vec<Counted> = Vec::new();
        for t in node_taints(node).iter().filter(|t| t.effect == "NoExecute") {
            let id = taint_id(t);
            let observed = old
                .iter()
                .chain(taints.iter())
                .find(|c| taint_id(&c.taint) == id)
                .map_or(now, |c| c.observed);
            let start = t
                .time_added
                .as_ref()
                .map(to_chrono)
                .map_or(observed, |a| a.min(observed));
            taints.push(Counted {
                taint: t.clone(),
                observed,
                start,
            });
        }
        if taints == old {
            return None;
        }
        self.nodes.entry(name.to_string()).or_default().taints = taints;
        Some(name.to_string())
    }

    /// Forgets the node's taints; returns whether it had any.
    fn forget_node_taints(&mut self, name: &str) -> bool {
        let Some(node) = self.nodes.get_mut(name) else {
            return false;
        };
        let had = !node.taints.is_empty();
        node.taints.clear();
        if node.pods.is_empty() {
            self.nodes.remove(name);
        }
        had
    }

    /// Takes in the pod; returns its uid when it is bound and not being deleted (so it needs
    /// evaluating).
    fn apply_pod(&mut self, pod: &Pod) -> Option<String> {
        let uid = pod.metadata.uid.as_deref().unwrap_or("");
        let Some(node) = pod_node(pod).filter(|_| pod.metadata.deletion_timestamp.is_none()) else {
            self.untrack(uid);
            return None;
        };
        let tolerations = tolerations(pod);
        match self.pods.get_mut(uid) {
            Some(state) if state.node == node => {
                if state.tolerations != tolerations {
                    state.tolerations = tolerations.to_vec();
                }
            }
            _ => {
                // New, or (which the API does not allow) moved: a scheduled deletion stays
                // until the evaluation decides.
                self.unindex(uid);
                self.nodes
                    .entry(node.to_string())
                    .or_default()
                    .pods
                    .insert(uid.to_string());
                self.pods.insert(
                    uid.to_string(),
                    PodState {
                        pod: PodRef::of(pod),
                        resource_version: crate::model::version_of(&pod.metadata),
                        node: node.to_string(),
                        tolerations: tolerations.to_vec(),
                    },
                );
            }
        }
        Some(uid.to_string())
    }

    /// Stops tracking the pod: off its node's list, any scheduled deletion dropped silently.
    fn untrack(&mut self, uid: &str) {
        self.unindex(uid);
        self.unschedule(uid);
    }

    /// Takes the pod off its node's list and out of the tracked pods.
    fn unindex(&mut self, uid: &str) {
        if let Some(state) = self.pods.remove(uid) {
            if let Some(node) = self.nodes.get_mut(&state.node) {
                node.pods.remove(uid);
                if node.pods.is_empty() && node.taints.is_empty() {
                    self.nodes.remove(&state.node);
                }
            }
        }
    }

    fn schedule(&mut self, uid: &str, at: DateTime<Utc>) {
        if let Some(old) = self.scheduled.insert(uid.to_string(), at) {
            self.timers.remove(&(old, uid.to_string()));
        }
        self.timers.insert((at, uid.to_string()));
    }

    /// Drops the pod's scheduled deletion; returns whether there was one.
    fn unschedule(&mut self, uid: &str) -> bool {
        match self.scheduled.remove(uid) {
            Some(at) => {
                self.timers.remove(&(at, uid.to_string()));
                true
            }
            None => false,
        }
    }

    fn evaluate_node(&mut self, name: &str, now: DateTime<Utc>, out: &mut Vec<TaintAction>) {
        let uids: Vec<String> = self
            .nodes
            .get(name)
            .map(|n| n.pods.iter().cloned().collect())
            .unwrap_or_default();
        for uid in uids {
            self.evaluate(&uid, now, out);
        }
    }

    /// Decides for one tracked pod: cancel, delete now, or schedule.
    fn evaluate(&mut self, uid: &str, now: DateTime<Utc>, out: &mut Vec<TaintAction>) {
        let Some(state) = self.pods.get(uid) else {
            return;
        };
        let taints = self
            .nodes
            .get(&state.node)
            .map_or(&[][..], |n| n.taints.as_slice());
        match deadline(&state.tolerations, taints) {
            None => {
                let (r, rv) = (state.pod.clone(), state.resource_version.clone());
                if self.unschedule(uid) {
                    let msg = format!("Cancelling deletion of Pod {}/{}", r.namespace, r.name);
                    out.push(event(&r, &rv, msg));
                }
            }
            Some(at) if at <= now => {
                let (r, rv) = (state.pod.clone(), state.resource_version.clone());
                self.unschedule(uid);
                let recent = self
                    .fired
                    .get(uid)
                    .is_some_and(|f| now - *f < Duration::seconds(REFIRE_AFTER));
                if !recent {
                    self.fired.insert(uid.to_string(), now);
                    let msg = format!("Marking for deletion Pod {}/{}", r.namespace, r.name);
                    out.push(event(&r, &rv, msg));
                    out.push(TaintAction::Delete(r));
                }
            }
            Some(at) => self.schedule(uid, at),
        }
    }
}

/// When a pod with these tolerations must leave a node with these `NoExecute` taints: `None`
/// if never, the earliest `start + tolerationSeconds` over the tolerations used, or the taint's
/// start if one taint is not tolerated at all.
fn deadline(tolerations: &[Toleration], taints: &[Counted]) -> Option<DateTime<Utc>> {
    let mut earliest: Option<DateTime<Utc>> = None;
    for Counted { taint, start, .. } in taints {
        let at = match tolerations.iter().find(|t| tolerates(t, taint)) {
            None => *start,
            Some(t) => match t.toleration_seconds {
                None => continue,
                Some(s) => berth_core::clock::add_seconds(*start, s.max(0)),
            },
        };
        earliest = Some(earliest.map_or(at, |e| e.min(at)));
    }
    earliest
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod equivalence;
