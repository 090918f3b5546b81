//! The namespace controller's decisions, as upstream's `pkg/controller/namespace/deletion`:
//! a terminating namespace is emptied, its pods first (1.33's ordered deletion), then
//! everything else; its `status.conditions` say what remains and why; once nothing remains
//! its `kubernetes` finalizer goes (`finalize`), and the API server removes it. Pure: what a
//! delete pass found in, conditions and the next step out; the [`driver`] makes the calls.

pub(crate) mod driver;

use k8s_openapi::api::core::v1::NamespaceCondition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::collections::BTreeMap;

/// The `spec.finalizers` entry the namespace controller owns.
pub const FINALIZER: &str = "kubernetes";

/// Seconds allowed for the finalizers of remaining objects to finish before the next pass
/// (upstream's `finalizerEstimateSeconds`): their controllers usually need a moment.
pub const FINALIZER_ESTIMATE_SECONDS: i64 = 15;

/// The condition types the controller maintains, in upstream's order.
pub const CONDITION_TYPES: [&str; 5] = [
    "NamespaceDeletionDiscoveryFailure",
    "NamespaceDeletionGroupVersionParsingFailure",
    "NamespaceDeletionContentFailure",
    "NamespaceContentRemaining",
    "NamespaceFinalizersRemaining",
];

/// The reason and message of a condition type when all is well (status `False`).
fn ok_condition(kind: &str) -> (&'static str, &'static str) {
    match kind {
        "NamespaceDeletionDiscoveryFailure" => (
            "ResourcesDiscovered",
            "All resources successfully discovered",
        ),
        "NamespaceDeletionGroupVersionParsingFailure" => (
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed",
        ),
        "NamespaceDeletionContentFailure" => (
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization",
        ),
        _ => ("ContentRemoved", "All content successfully removed"),
    }
}

/// What is left of one resource type after its objects were deleted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Remaining {
    /// Seconds to wait before looking again (0: nothing to wait for).
    pub estimate: i64,
    /// Objects left, counted only when some carry finalizers.
    pub count: usize,
    /// Objects left per finalizer they carry.
    pub finalizers: BTreeMap<String, usize>,
}

/// Upstream's `deleteAllContentForGroupVersionResource` verdict on the objects still listed
/// after a delete (`finalizers` of each). `estimate` is the graceful-termination estimate (pods).
/// Objects without finalizers that remain with nothing to wait for are an error, named as
/// upstream names it (`gvr`: `apps/v1, Resource=deployments`).
pub fn remaining(
    namespace: &str,
    gvr: &str,
    estimate: i64,
    items: &[Vec<String>],
) -> Result<Remaining, (Remaining, String)> {
    if items.is_empty() {
        return Ok(Remaining {
            estimate,
            ..Remaining::default()
        });
    }
    let mut finalizers = BTreeMap::new();
    for item in items {
        for f in item {
            *finalizers.entry(f.clone()).or_insert(0) += 1;
        }
    }
    let count = items.len();
    if estimate != 0 {
        return Ok(Remaining {
            estimate,
            count,
            finalizers,
        });
    }
    if !finalizers.is_empty() {
        return Ok(Remaining {
            estimate: FINALIZER_ESTIMATE_SECONDS,
            count,
            finalizers,
        });
    }
    Err((
        Remaining::default(),
        format!("unexpected items still remain in namespace: {namespace} for gvr: {gvr}"),
    ))
}

/// A pod as the graceful-termination estimate sees it.
pub struct TerminatingPod {
    pub phase: String,
    pub grace_period_seconds: Option<i64>,
}

/// Upstream's `estimateGracefulTermination` for pods: the longest grace period of the pods not
/// yet terminal, or 0 once the namespace has been terminating that long.
pub fn pods_estimate(pods: &[TerminatingPod], terminating_for_seconds: i64) -> i64 {
    let estimate = pods
        .iter()
        .filter(|p| p.phase != "Succeeded" && p.phase != "Failed")
        .filter_map(|p| p.grace_period_seconds)
        .max()
        .unwrap_or(0)
        .max(0);
    if terminating_for_seconds >= estimate {
        0
    } else {
        estimate
    }
}

/// Everything one pass over a terminating namespace found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pass {
    /// Discovery failed: nothing was deleted.
    pub discovery_error: Option<String>,
    /// What remains per resource (`"pods."`, `"deployments.apps"`: resource and group).
    pub remaining: BTreeMap<String, Remaining>,
    /// Why deleting some resource types failed.
    pub errors: Vec<String>,
}

impl Pass {
    /// The longest wait any resource asked for.
    pub fn estimate(&self) -> i64 {
        self.remaining
            .values()
            .map(|r| r.estimate)
            .max()
            .unwrap_or(0)
    }

    /// Whether the namespace is empty and nothing failed: its finalizer may go.
    pub fn done(&self) -> bool {
        self.discovery_error.is_none() && self.errors.is_empty() && self.estimate() == 0
    }

    /// The failing conditions this pass calls for: `(type, reason, message)`.
    fn failures(&self) -> Vec<(&'static str, &'static str, String)> {
        let mut out = Vec::new();
        if let Some(e) = &self.discovery_error {
            out.push((
                "NamespaceDeletionDiscoveryFailure",
                "DiscoveryFailed",
                e.clone(),
            ));
        }
        if !self.errors.is_empty() {
            let mut errors = self.errors.clone();
            errors.sort();
            out.push((
                "NamespaceDeletionContentFailure",
                "ContentDeletionFailed",
                format!(
                    "Failed to delete all resource types, {} remaining: {}",
                    errors.len(),
                    errors.join(", ")
                ),
            ));
        }
        let mut resources: Vec<String> = self
            .remaining
            .iter()
            .filter(|(_, r)| !r.finalizers.is_empty() && r.count > 0)
            .map(|(gr, r)| format!("{gr} has {} resource instances", r.count))
            .collect();
        resources.sort();
        if !resources.is_empty() {
            out.push((
                "NamespaceContentRemaining",
                "SomeResourcesRemain",
                format!("Some resources are remaining: {}", resources.join(", ")),
            ));
        }
        let mut by_finalizer: BTreeMap<&str, usize> = BTreeMap::new();
        for r in self.remaining.values() {
            for (f, n) in &r.finalizers {
                *by_finalizer.entry(f).or_insert(0) += n;
            }
        }
        let mut finalizers: Vec<String> = by_finalizer
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(f, n)| format!("{f} in {n} resource instances"))
            .collect();
        finalizers.sort();
        if !finalizers.is_empty() {
            out.push((
                "NamespaceFinalizersRemaining",
                "SomeFinalizerRemain",
                format!("Some finalizers are remaining: {}", finalizers.join(", ")),
            ));
        }
        out
    }
}

/// The namespace's conditions after `pass`, or `None` when they already say so. Each type
/// the controller maintains is present: `True` with the failure, else `False` with upstream's
/// all-is-well reason; a condition's transition time moves only when its status does.
pub fn conditions(
    current: &[NamespaceCondition],
    pass: &Pass,
    now: Time,
) -> Option<Vec<NamespaceCondition>> {
    let failures = pass.failures();
    let mut out = current.to_vec();
    let mut changed = false;
    for kind in CONDITION_TYPES {
        let (status, reason, message) = match failures.iter().find(|(t, _, _)| *t == kind) {
            Some((_, reason, message)) => ("True", *reason, message.clone()),
            None => {
                let (reason, message) = ok_condition(kind);
                ("False", reason, message.to_string())
            }
        };
        match out.iter_mut().find(|c| c.type_ == kind) {
            None => {
                out.push(NamespaceCondition {
                    type_: kind.into(),
                    status: status.into(),
                    reason: Some(reason.into()),
                    message: Some(message),
                    last_transition_time: Some(now.clone()),
                });
                changed = true;
            }
            Some(c) => {
                let same = c.status == status
                    && c.reason.as_deref() == Some(reason)
                    && c.message.as_deref() == Some(message.as_str());
                if !same {
                    if c.status != status {
                        c.last_transition_time = Some(now.clone());
                    }
                    c.status = status.into();
                    c.reason = Some(reason.into());
                    c.message = Some(message);
                    changed = true;
                }
            }
        }
    }
    changed.then_some(out)
}

/// `spec.finalizers` without the controller's own, sorted and deduplicated as upstream's
/// `finalizeNamespace` writes them.
pub fn without_own_finalizer(finalizers: &[String]) -> Vec<String> {
    let mut rest: Vec<String> = finalizers
        .iter()
        .filter(|f| *f != FINALIZER)
        .cloned()
        .collect();
    rest.sort();
    rest.dedup();
    rest
}

#[cfg(test)]
mod tests;
