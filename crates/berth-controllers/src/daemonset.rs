//! The DaemonSet controller: one pod of each DaemonSet on every node that should run it
//! (seed 000 "taints and tolerations"; seed 002 §16.11.6).
//!
//! A node should run the daemon pod when the pod template's node selector and required node
//! affinity match it and the pod, with the tolerations the controller adds, tolerates the node's
//! `NoSchedule` and `NoExecute` taints. As in the seed's release (Kubernetes 1.11, where
//! ScheduleDaemonSetPods is off) the controller places daemon pods itself: they are created
//! bound to their node (`spec.nodeName`), so a cordon does not keep a daemon off its node, and
//! preemption does not apply to them (seed 002 §16.6). These tolerations are added, so that
//! daemons survive node problems:
//! `not-ready` and `unreachable` `NoExecute` with no `tolerationSeconds`, and `disk-pressure`,
//! `memory-pressure`, `pid-pressure` and `unschedulable` `NoSchedule`
//! (`network-unavailable` too for host-network pods).
//!
//! Pods on nodes that no longer match (selector, affinity, or an untolerated `NoExecute` taint),
//! failed pods (an evicted daemon is recreated at once, as seed 001 says; a node that keeps
//! failing its daemon is retried after a backoff from 1s doubling to 15 minutes, as upstream)
//! and duplicates are deleted. A `RollingUpdate` replaces pods of an older template generation, at most
//! `maxUnavailable` (default 1) unavailable at a time. Creates the watch has not shown yet are
//! remembered, so a quick second pass does not create a node's pod twice. A node without room
//! for the pod gets none, and a `FailedPlacement` reason instead ([`fit`]).

pub mod fit;
pub(crate) mod revisions;

use crate::model::{is_deleting, node_taints, pod_node, tolerates, PodRef};
use berth_core::labels::{Operator, Requirement};
use chrono::{DateTime, Duration, Utc};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, NodeSelectorRequirement, Pod, Toleration};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The label carrying the DaemonSet generation a pod was made from (upstream's name).
pub const TEMPLATE_GENERATION: &str = "pod-template-generation";

/// Upstream's `FailedDaemonPod` warning about a failed daemon pod the controller deletes.
fn failed_daemon_pod(ds: &DaemonSet, pod: &PodRef, node: &str) -> crate::model::EventRecord {
    crate::model::EventRecord {
        involved: crate::model::Involved::DaemonSet {
            namespace: ds.metadata.namespace.clone().unwrap_or_default(),
            name: ds.metadata.name.clone().unwrap_or_default(),
            uid: ds.metadata.uid.clone().unwrap_or_default(),
            resource_version: crate::model::version_of(&ds.metadata),
        },
        type_: "Warning",
        reason: "FailedDaemonPod",
        message: format!(
            "Found failed daemon pod {}/{} on node {node}, will try to kill it",
            pod.namespace, pod.name
        ),
    }
}

/// How long a create counts as on its way before the controller tries again.
const EXPECTATION_TIMEOUT: i64 = 30;

/// What one DaemonSet's sync decided.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DaemonSetSync {
    /// (node, pod to create).
    pub create: Vec<(String, Value)>,
    pub delete: Vec<PodRef>,
    /// The new `status`, when it differs from the stored one.
    pub status: Option<Value>,
    /// (node, why the pod does not fit there) for nodes that should get a pod but have no room.
    pub failed_placements: Vec<(String, String)>,
    /// Events to record: `FailedDaemonPod` for each failed pod deleted.
    pub events: Vec<crate::model::EventRecord>,
}

/// Creates asked for and not yet seen, and the failed-pod backoff, per DaemonSet uid and node.
#[derive(Debug, Default)]
pub struct Expectations {
    pending: BTreeMap<(String, String), DateTime<Utc>>,
    /// (consecutive failures, no new pod before).
    backoff: BTreeMap<(String, String), (u32, DateTime<Utc>)>,
}

/// The failed-pod backoff: 1s, doubling, at most 15 minutes (upstream).
fn backoff_after(failures: u32) -> Duration {
    Duration::seconds((1i64 << failures.saturating_sub(1).min(10)).min(900))
}

impl Expectations {
    fn failed(&mut self, ds: &str, node: &str, now: DateTime<Utc>) {
        let e = self
            .backoff
            .entry((ds.to_string(), node.to_string()))
            .or_insert((0, now));
        e.0 += 1;
        e.1 = now + backoff_after(e.0);
    }

    fn backing_off(&self, ds: &str, node: &str, now: DateTime<Utc>) -> bool {
        self.backoff
            .get(&(ds.to_string(), node.to_string()))
            .is_some_and(|(_, until)| now < *until)
    }

    /// When the next backed-off create may happen, if any is waiting.
    pub fn next_retry(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.backoff
            .values()
            .map(|(_, at)| *at)
            .filter(|at| *at > now)
            .min()
    }

    fn covered(&self, ds: &str, node: &str, now: DateTime<Utc>) -> bool {
        self.pending
            .get(&(ds.to_string(), node.to_string()))
            .is_some_and(|at| now < *at + Duration::seconds(EXPECTATION_TIMEOUT))
    }

    /// Records that the pod for `node` was created.
    pub fn created(&mut self, ds: &str, node: &str, now: DateTime<Utc>) {
        self.pending.insert((ds.to_string(), node.to_string()), now);
    }

    fn seen(&mut self, ds: &str, node: &str) {
        self.pending.remove(&(ds.to_string(), node.to_string()));
    }

    /// Forgets DaemonSets that are gone.
    pub fn retain(&mut self, live: &BTreeSet<String>) {
        self.pending.retain(|(ds, _), _| live.contains(ds));
        self.backoff.retain(|(ds, _), _| live.contains(ds));
    }
}

fn toleration(key: &str, effect: &str) -> Toleration {
    Toleration {
        key: Some(key.into()),
        operator: Some("Exists".into()),
        effect: Some(effect.into()),
        ..Toleration::default()
    }
}

/// The tolerations the controller gives every daemon pod.
pub fn daemon_tolerations(host_network: bool) -> Vec<Toleration> {
    use crate::model::keys::*;
    let mut out = vec![
        toleration(NOT_READY, "NoExecute"),
        toleration(UNREACHABLE, "NoExecute"),
        toleration(DISK_PRESSURE, "NoSchedule"),
        toleration(MEMORY_PRESSURE, "NoSchedule"),
        toleration(PID_PRESSURE, "NoSchedule"),
        toleration(UNSCHEDULABLE, "NoSchedule"),
    ];
    if host_network {
        out.push(toleration(NETWORK_UNAVAILABLE, "NoSchedule"));
    }
    out
}

/// The template's tolerations with the daemon ones added (an existing toleration of the same
/// key, operator and effect is replaced, as upstream's AddOrUpdateTolerationInPod does).
fn pod_tolerations(template: &[Toleration], host_network: bool) -> Vec<Toleration> {
    let mut out: Vec<Toleration> = template.to_vec();
    for t in daemon_tolerations(host_network) {
        match out
            .iter_mut()
            .find(|x| x.key == t.key && x.effect == t.effect && x.operator == t.operator)
        {
            Some(x) => *x = t,
            None => out.push(t),
        }
    }
    out
}

fn requirement_matches(r: &NodeSelectorRequirement, get: impl Fn(&str) -> Option<String>) -> bool {
    let op = match r.operator.as_str() {
        "In" => Operator::In,
        "NotIn" => Operator::NotIn,
        "Exists" => Operator::Exists,
        "DoesNotExist" => Operator::DoesNotExist,
        "Gt" => Operator::GreaterThan,
        "Lt" => Operator::LessThan,
        _ => return false,
    };
    let Ok(req) = Requirement::new(&r.key, op, r.values.clone().unwrap_or_default()) else {
        return false;
    };
    let value = get(&r.key);
    req.matches_fn(|_| value.as_deref())
}

/// Whether the template's node selector and required node affinity let it run on `node`.
fn fits_node_affinity(spec: &k8s_openapi::api::core::v1::PodSpec, node: &Node) -> bool {
    let labels = node.metadata.labels.clone().unwrap_or_default();
    if let Some(sel) = &spec.node_selector {
        if sel.iter().any(|(k, v)| labels.get(k) != Some(v)) {
            return false;
        }
    }
    let Some(required) = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
    else {
        return true;
    };
    let name = node.metadata.name.clone().unwrap_or_default();
    required.node_selector_terms.iter().any(|term| {
        let exprs = term.match_expressions.as_deref().unwrap_or(&[]);
        let fields = term.match_fields.as_deref().unwrap_or(&[]);
        (!exprs.is_empty() || !fields.is_empty())
            && exprs
                .iter()
                .all(|r| requirement_matches(r, |k| labels.get(k).cloned()))
            && fields
                .iter()
                .all(|r| requirement_matches(r, |k| (k == "metadata.name").then(|| name.clone())))
    })
}

/// (should run a new daemon pod, should keep a running one) on `node` (upstream
/// `NodeShouldRunDaemonPod`).
pub fn node_should_run(ds: &DaemonSet, node: &Node) -> (bool, bool) {
    let Some(spec) = ds.spec.as_ref().and_then(|s| s.template.spec.as_ref()) else {
        return (false, false);
    };
    let name = node.metadata.name.as_deref().unwrap_or("");
    let fits_name = spec
        .node_name
        .as_deref()
        .is_none_or(|n| n.is_empty() || n == name);
    if !fits_name || !fits_node_affinity(spec, node) {
        return (false, false);
    }
    let tolerations = pod_tolerations(
        spec.tolerations.as_deref().unwrap_or(&[]),
        spec.host_network == Some(true),
    );
    let tolerated = |effect: &str| {
        node_taints(node)
            .iter()
            .filter(|t| t.effect == effect)
            .all(|t| tolerations.iter().any(|x| tolerates(x, t)))
    };
    let keeps = tolerated("NoExecute");
    (keeps && tolerated("NoSchedule"), keeps)
}

/// The node a daemon pod is for: where it is bound, else its `matchFields` affinity.
pub fn target_node(pod: &Pod) -> Option<String> {
    if let Some(n) = pod_node(pod) {
        return Some(n.to_string());
    }
    pod.spec
        .as_ref()?
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms
        .iter()
        .flat_map(|t| t.match_fields.as_deref().unwrap_or(&[]))
        .find(|f| f.key == "metadata.name" && f.operator == "In")
        .and_then(|f| f.values.as_ref()?.first().cloned())
}

/// Whether the pod is owned (as controller) by the DaemonSet with `uid`.
pub fn owned_by(pod: &Pod, uid: &str) -> bool {
    pod.metadata
        .owner_references
        .as_deref()
        .unwrap_or(&[])
        .iter()
        .any(|o| o.controller == Some(true) && o.uid == uid)
}

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

fn generation_of(pod: &Pod) -> Option<i64> {
    pod.metadata
        .labels
        .as_ref()?
        .get(TEMPLATE_GENERATION)?
        .parse()
        .ok()
}

/// The daemon pod for `node`, from the DaemonSet's template.
pub fn new_pod(ds: &DaemonSet, node: &str) -> Value {
    let spec = ds.spec.as_ref();
    let template = spec.map(|s| &s.template);
    let mut pod_spec = template.and_then(|t| t.spec.clone()).unwrap_or_default();
    pod_spec.tolerations = Some(pod_tolerations(
        pod_spec.tolerations.as_deref().unwrap_or(&[]),
        pod_spec.host_network == Some(true),
    ));
    pod_spec.node_name = Some(node.to_string());
    let spec_json = serde_json::to_value(&pod_spec).unwrap_or_else(|_| json!({}));
    let meta = template.and_then(|t| t.metadata.as_ref());
    let mut labels: BTreeMap<String, String> =
        meta.and_then(|m| m.labels.clone()).unwrap_or_default();
    let generation = ds.metadata.generation.unwrap_or(1);
    labels.insert(TEMPLATE_GENERATION.into(), generation.to_string());
    let name = ds.metadata.name.clone().unwrap_or_default();
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "generateName": format!("{name}-"),
            "namespace": ds.metadata.namespace,
            "labels": labels,
            "annotations": meta.and_then(|m| m.annotations.clone()).unwrap_or_default(),
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": name,
                "uid": ds.metadata.uid, "controller": true, "blockOwnerDeletion": true}],
        },
        "spec": spec_json,
    })
}

fn max_unavailable(ds: &DaemonSet, desired: i64) -> Option<i64> {
    let strategy = ds.spec.as_ref()?.update_strategy.as_ref();
    if strategy.and_then(|s| s.type_.as_deref()) == Some("OnDelete") {
        return None;
    }
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    let v = strategy
        .and_then(|s| s.rolling_update.as_ref())
        .and_then(|r| r.max_unavailable.clone())
        .unwrap_or(IntOrString::Int(1));
    let n = match v {
        IntOrString::Int(i) => i as i64,
        IntOrString::String(s) => {
            let pct: i64 = s.trim_end_matches('%').parse().unwrap_or(0);
            // Rounded up, as upstream's GetScaledValueFromIntOrPercent(…, true).
            (desired * pct + 99) / 100
        }
    };
    Some(n.max(1))
}

/// One DaemonSet's sync over every node and the pods it owns; `used` is what every node's pods
/// request ([`fit::node_use`] over all pods, this DaemonSet's included).
pub fn reconcile(
    ds: &DaemonSet,
    nodes: &[&Node],
    pods: &[&Pod],
    used: &BTreeMap<String, fit::NodeUse>,
    expectations: &mut Expectations,
    now: DateTime<Utc>,
) -> DaemonSetSync {
    let uid = ds.metadata.uid.clone().unwrap_or_default();
    let request = ds
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .map(fit::pod_request)
        .unwrap_or_default();
    let generation = ds.metadata.generation.unwrap_or(1);
    let mut sync = DaemonSetSync::default();
    let mut by_node: BTreeMap<String, Vec<&Pod>> = BTreeMap::new();
    for p in pods.iter().filter(|p| owned_by(p, &uid) && !is_deleting(p)) {
        if let Some(n) = target_node(p) {
            by_node.entry(n).or_default().push(p);
        }
    }
    let (mut desired, mut current, mut misscheduled, mut ready, mut updated) = (0, 0, 0, 0, 0);
    let mut old_ready: Vec<PodRef> = Vec::new();
    let mut unavailable = 0;
    for node in nodes {
        let name = node.metadata.name.clone().unwrap_or_default();
        let (should_run, should_keep) = node_should_run(ds, node);
        let mut daemons: Vec<&Pod> = by_node.remove(&name).unwrap_or_default();
        if !daemons.is_empty() {
            expectations.seen(&uid, &name);
        }
        if should_run || (should_keep && !daemons.is_empty()) {
            // A daemon kept on a node it would not be placed on now (a NoSchedule taint it does
            // not tolerate came later) stays, but counts as misscheduled, as upstream's status.
            if !should_run {
                misscheduled += 1;
            }
            // Failed pods go; the oldest healthy one stays, later duplicates go.
            let before = daemons.len();
            daemons.retain(|p| {
                let failed = p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Failed");
                if failed {
                    let pod = PodRef::of(p);
                    sync.events.push(failed_daemon_pod(ds, &pod, &name));
                    sync.delete.push(pod);
                }
                !failed
            });
            if daemons.len() < before {
                expectations.failed(&uid, &name, now);
            }
            daemons.sort_by_key(|p| {
                (
                    p.metadata.creation_timestamp.clone().map(|t| t.0),
                    p.metadata.name.clone(),
                )
            });
            for extra in daemons.iter().skip(1) {
                sync.delete.push(PodRef::of(extra));
            }
            match daemons.first() {
                // kept, not wanted: counted as misscheduled above, nothing more to do
                _ if !should_run => {}
                None => {
                    desired += 1;
                    unavailable += 1;
                    if !expectations.covered(&uid, &name, now)
                        && !expectations.backing_off(&uid, &name, now)
                    {
                        // The node's other pods: its own ones (failed or not) are not counted.
                        let mut others = used.get(&name).cloned().unwrap_or_default();
                        for own in pods.iter().filter(|p| {
                            owned_by(p, &uid)
                                && fit::occupies_node(p)
                                && target_node(p).as_deref() == Some(name.as_str())
                                && crate::model::pod_node(p).is_some()
                        }) {
                            let r = own.spec.as_ref().map(fit::pod_request).unwrap_or_default();
                            others.add(&r, -1);
                        }
                        match fit::insufficient(&request, node, &others) {
                            None => sync.create.push((name.clone(), new_pod(ds, &name))),
                            Some(why) => sync.failed_placements.push((name.clone(), why)),
                        }
                    }
                }
                Some(p) => {
                    desired += 1;
                    current += 1;
                    let is_current = generation_of(p) == Some(generation);
                    if is_current {
                        updated += 1;
                    }
                    if is_ready(p) {
                        ready += 1;
                        if !is_current {
                            old_ready.push(PodRef::of(p));
                        }
                    } else {
                        unavailable += 1;
                        if !is_current {
                            // An old pod that is not available anyway is replaced at once.
                            sync.delete.push(PodRef::of(p));
                        }
                    }
                }
            }
        } else if !daemons.is_empty() {
            misscheduled += 1;
            for p in daemons {
                sync.delete.push(PodRef::of(p));
            }
        }
    }
    // Pods for nodes that no longer exist.
    for p in by_node.into_values().flatten() {
        sync.delete.push(PodRef::of(p));
    }
    if let Some(max) = max_unavailable(ds, desired) {
        let room = (max - unavailable).max(0) as usize;
        sync.delete.extend(old_ready.into_iter().take(room));
    }
    let status = json!({
        "currentNumberScheduled": current,
        "desiredNumberScheduled": desired,
        "numberMisscheduled": misscheduled,
        "numberReady": ready,
        "numberAvailable": ready,
        "numberUnavailable": desired - ready,
        "updatedNumberScheduled": updated,
        "observedGeneration": generation,
    });
    let stored = ds
        .status
        .as_ref()
        .and_then(|s| serde_json::to_value(s).ok())
        .unwrap_or_else(|| json!({}));
    let same = status
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| stored.get(k).unwrap_or(&json!(0)) == v);
    if !same {
        sync.status = Some(status);
    }
    sync
}

#[cfg(test)]
mod tests;
