//! The disruption controller (control-loops §5.2): keeps each PodDisruptionBudget's `status`
//! true, so that the eviction subresource can trust `disruptionsAllowed`.
//!
//! `pods` are the pods of the budget's namespace its selector matches (policy/v1: `{}` matches
//! every pod, a missing selector none — as the API server's eviction handler reads it).
//!
//! | mode | expectedPods | desiredHealthy |
//! |---|---|---|
//! | `maxUnavailable` (int or %) | Σ scale of distinct controllers (+1 per pod without one) | `max(0, expected − ⌈maxUnavailable⌉)` |
//! | `minAvailable` integer | number of matching pods | `minAvailable` |
//! | `minAvailable` percent | Σ scale of distinct controllers (+1 per pod without one) | `⌈p × expected / 100⌉` |
//!
//! A pod without a known scalable controller counts as one expected pod of its own (upstream
//! 1.11 fails the sync instead; modern upstream ignores such pods).

use crate::model::{to_chrono, to_time, EventRecord, Involved};
use chrono::{DateTime, Duration, Utc};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::{BTreeMap, BTreeSet};

/// How long an eviction recorded in `disruptedPods` waits for its pod to be deleted (upstream
/// `DeletionTimeout`).
pub const DELETION_TIMEOUT: i64 = 120;

/// A workload with a scale: ReplicaSet, ReplicationController, Deployment or StatefulSet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    pub uid: String,
    pub replicas: i32,
    /// The workload's own controller (a ReplicaSet's Deployment): (kind, name).
    pub controller: Option<(String, String)>,
}

/// Workloads by (kind, namespace, name).
pub type Workloads = BTreeMap<(String, String, String), Workload>;

/// What syncing one budget decided.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BudgetSync {
    /// The new status, as a JSON merge patch of `status` (removed `disruptedPods` entries are
    /// `null`), or `None` when the status is already right.
    pub status_patch: Option<serde_json::Value>,
    /// The new status itself.
    pub status: PodDisruptionBudgetStatus,
    pub events: Vec<EventRecord>,
    /// When the budget must be synced again (an entry of `disruptedPods` expires).
    pub resync_at: Option<DateTime<Utc>>,
}

/// Why the expected count could not be computed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SyncError(String);

/// The budget's selector, compiled (a missing or malformed one selects nothing).
fn compiled_selector(pdb: &PodDisruptionBudget) -> Option<berth_core::labels::Selector> {
    let selector = pdb.spec.as_ref()?.selector.as_ref()?;
    let selector = serde_json::to_value(selector).ok()?;
    berth_core::labels::Selector::from_label_selector(&selector).ok()
}

/// Whether a compiled selector of a budget in `namespace` selects the pod.
fn selected(
    selector: Option<&berth_core::labels::Selector>,
    namespace: Option<&str>,
    pod: &Pod,
) -> bool {
    let Some(selector) = selector else {
        return false;
    };
    if pod.metadata.namespace.as_deref() != namespace {
        return false;
    }
    let labels = pod.metadata.labels.as_ref();
    selector.matches_fn(|k| labels.and_then(|l| l.get(k)).map(String::as_str))
}

/// Whether the budget's selector selects the pod.
pub fn selects(pdb: &PodDisruptionBudget, pod: &Pod) -> bool {
    selected(
        compiled_selector(pdb).as_ref(),
        pdb.metadata.namespace.as_deref(),
        pod,
    )
}

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// `⌈p × n / 100⌉` for `p%`, the integer itself otherwise.
fn scaled(v: &IntOrString, n: i32) -> Result<i32, SyncError> {
    match v {
        IntOrString::Int(i) => Ok(*i),
        IntOrString::String(s) => {
            let p: i64 = s
                .strip_suffix('%')
                .and_then(|d| d.parse().ok())
                .ok_or_else(|| {
                    SyncError(format!(
                        "invalid value for IntOrString: invalid value {s:?}"
                    ))
                })?;
            Ok(((p * n as i64 + 99) / 100) as i32)
        }
    }
}

/// The controller whose scale counts for the pod: (kind, name) → replicas.
fn scale_of(pod: &Pod, ns: &str, workloads: &Workloads) -> Option<((String, String), i32)> {
    let owner = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))?;
    let key = (owner.kind.clone(), ns.to_string(), owner.name.clone());
    let w = workloads
        .get(&key)
        .filter(|w| w.uid.is_empty() || owner.uid.is_empty() || w.uid == owner.uid)?;
    if owner.kind == "ReplicaSet" {
        if let Some((kind, name)) = &w.controller {
            if let Some(d) = workloads.get(&(kind.clone(), ns.to_string(), name.clone())) {
                return Some(((kind.clone(), name.clone()), d.replicas));
            }
        }
    }
    Some(((owner.kind.clone(), owner.name.clone()), w.replicas))
}

/// Σ scale over the distinct controllers of `pods`, plus one per pod without one.
fn expected_from_scale(pods: &[&Pod], ns: &str, workloads: &Workloads) -> i32 {
    let mut seen = BTreeSet::new();
    let mut total = 0i32;
    for pod in pods {
        match scale_of(pod, ns, workloads) {
            Some((key, replicas)) => {
                if seen.insert(key) {
                    total = total.saturating_add(replicas.max(0));
                }
            }
            None => total = total.saturating_add(1),
        }
    }
    total
}

/// (expectedPods, desiredHealthy) for the budget over its matching pods.
fn expectations(
    pdb: &PodDisruptionBudget,
    pods: &[&Pod],
    workloads: &Workloads,
) -> Result<(i32, i32), SyncError> {
    let ns = pdb.metadata.namespace.as_deref().unwrap_or("");
    let spec = pdb.spec.clone().unwrap_or_default();
    match (&spec.min_available, &spec.max_unavailable) {
        (_, Some(max)) => {
            let expected = expected_from_scale(pods, ns, workloads);
            Ok((expected, (expected - scaled(max, expected)?).max(0)))
        }
        (Some(IntOrString::Int(min)), None) => Ok((pods.len() as i32, *min)),
        (Some(min), None) => {
            let expected = expected_from_scale(pods, ns, workloads);
            Ok((expected, scaled(min, expected)?))
        }
        (None, None) => Ok((pods.len() as i32, 0)),
    }
}

/// Syncs one budget: `pods` are all pods of its namespace (or more; others are ignored).
pub fn reconcile(
    pdb: &PodDisruptionBudget,
    pods: &[&Pod],
    workloads: &Workloads,
    now: DateTime<Utc>,
) -> BudgetSync {
    let pdb_ns = pdb.metadata.namespace.clone().unwrap_or_default();
    let pdb_name = pdb.metadata.name.clone().unwrap_or_default();
    let old = pdb.status.clone().unwrap_or_default();
    let selector = compiled_selector(pdb);
    let matching: Vec<&Pod> = pods
        .iter()
        .copied()
        .filter(|p| selected(selector.as_ref(), pdb.metadata.namespace.as_deref(), p))
        .collect();
    let mut out = BudgetSync::default();

    // disruptedPods: keep young entries of pods still here and not being deleted.
    let old_disrupted = old.disrupted_pods.clone().unwrap_or_default();
    let mut disrupted = BTreeMap::new();
    for pod in &matching {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let Some(t) = old_disrupted.get(&name) else {
            continue;
        };
        if pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let expires = to_chrono(t) + Duration::seconds(DELETION_TIMEOUT);
        if expires < now {
            out.events.push(EventRecord {
                involved: Involved::pod(pod),
                type_: "Warning",
                reason: "NotDeleted",
                message: format!(
                    "Pod was expected by PDB {pdb_ns}/{pdb_name} to be deleted but it wasn't"
                ),
            });
            continue;
        }
        out.resync_at = Some(out.resync_at.map_or(expires, |r| r.min(expires)));
        disrupted.insert(name, t.clone());
    }

    let current = matching
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| !disrupted.contains_key(p.metadata.name.as_deref().unwrap_or("")))
        .filter(|p| is_ready(p))
        .count() as i32;
    let generation = pdb.metadata.generation;
    let (expected, desired, allowed, condition) = match expectations(pdb, &matching, workloads) {
        Ok((expected, desired)) => {
            let allowed = if expected <= 0 {
                0
            } else {
                (current - desired).max(0)
            };
            let (status, reason) = if allowed > 0 {
                ("True", "SufficientPods")
            } else {
                ("False", "InsufficientPods")
            };
            (expected, desired, allowed, (status, reason, String::new()))
        }
        Err(SyncError(message)) => {
            out.events.push(EventRecord {
                involved: Involved::PodDisruptionBudget {
                    namespace: pdb_ns.clone(),
                    name: pdb_name.clone(),
                    uid: pdb.metadata.uid.clone().unwrap_or_default(),
                    resource_version: crate::model::version_of(&pdb.metadata),
                },
                type_: "Warning",
                reason: "CalculateExpectedPodCountFailed",
                message: format!("Failed to calculate the number of expected pods: {message}"),
            });
            (
                old.expected_pods,
                old.desired_healthy,
                0,
                ("False", "SyncFailed", message),
            )
        }
    };
    let old_condition = old
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "DisruptionAllowed");
    let transition = match old_condition {
        Some(c) if c.status == condition.0 => c.last_transition_time.clone(),
        _ => to_time(now),
    };
    let status = PodDisruptionBudgetStatus {
        observed_generation: generation,
        current_healthy: current,
        desired_healthy: desired,
        expected_pods: expected,
        disruptions_allowed: allowed,
        disrupted_pods: (!disrupted.is_empty()).then_some(disrupted.clone()),
        conditions: Some(vec![Condition {
            type_: "DisruptionAllowed".into(),
            status: condition.0.into(),
            reason: condition.1.into(),
            message: condition.2,
            last_transition_time: transition,
            observed_generation: generation,
        }]),
    };
    let empty_old = PodDisruptionBudgetStatus {
        disrupted_pods: old.disrupted_pods.clone().filter(|d| !d.is_empty()),
        ..old
    };
    if status != empty_old {
        let mut patch = serde_json::to_value(&status).unwrap_or_default();
        let mut map: serde_json::Map<String, serde_json::Value> = disrupted
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or_default()))
            .collect();
        for gone in old_disrupted.keys().filter(|k| !disrupted.contains_key(*k)) {
            map.insert(gone.clone(), serde_json::Value::Null);
        }
        // Upstream omits an empty map; `null` removes it.
        patch["disruptedPods"] = if disrupted.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::Value::Object(map)
        };
        out.status_patch = Some(patch);
    }
    out.status = status;
    out
}

#[cfg(test)]
mod tests;
