//! Job tracking with finalizers, as upstream's `trackJobStatusAndRemoveFinalizers`: every pod a
//! Job creates carries the `batch.kubernetes.io/job-tracking` finalizer, so a pod cannot vanish
//! before the Job counted it. A finished pod is first recorded in
//! `status.uncountedTerminatedPods`; once that status is stored the finalizer is removed; the
//! next pass moves the pod from the uncounted lists to the `succeeded`/`failed` counters. A pod
//! deleted before it finished counts as failed (unless pods are replaced only once `Failed`).
//! Pure.

use super::failure_policy::{matching_rule, Action};
use super::indexed::index_of;
use crate::model::{is_deleting, PodRef};
use crate::owned_pods::phase;
use k8s_openapi::api::batch::v1::{Job, JobStatus};
use k8s_openapi::api::core::v1::Pod;
use std::collections::{BTreeSet, HashSet};

/// The finalizer that holds a Job's pod until the Job counted it.
pub const FINALIZER: &str = "batch.kubernetes.io/job-tracking";

/// Whether the pod still waits to be counted.
pub fn has_finalizer(pod: &Pod) -> bool {
    pod.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == FINALIZER)
}

/// How a Job is ending, once it is: every pod it holds may then go, and under a failure those
/// not succeeded count as failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    Complete,
    Fail,
}

/// Whether pods are replaced only once `Failed` (`podReplacementPolicy: Failed`, implied by a
/// `podFailurePolicy`): then a pod being deleted is not a failure until it has failed.
pub fn replaces_only_failed(job: &Job) -> bool {
    let spec = job.spec.as_ref();
    spec.and_then(|s| s.pod_replacement_policy.as_deref()) == Some("Failed")
        || spec.is_some_and(|s| s.pod_failure_policy.is_some())
}

/// Whether the pod counts as failed (upstream `isPodFailed`).
pub fn is_failed(pod: &Pod, job: &Job) -> bool {
    match phase(pod) {
        "Failed" => true,
        "Succeeded" => false,
        _ => is_deleting(pod) && !replaces_only_failed(job),
    }
}

/// A Job's counters and uncounted pods after one pass.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// `status.succeeded` and `status.failed`: pods counted and released.
    pub succeeded: i32,
    pub failed: i32,
    /// `status.uncountedTerminatedPods`: uids recorded, whose finalizer is still to go.
    pub uncounted_succeeded: Vec<String>,
    pub uncounted_failed: Vec<String>,
    /// Pods whose finalizer may be removed once the status above is stored.
    pub release: Vec<PodRef>,
    /// Completion indexes of an Indexed Job that succeeded in this pass (an index, not a uid,
    /// keeps them from being counted twice).
    pub new_succeeded_indexes: BTreeSet<i32>,
}

impl Tally {
    /// Succeeded pods, counted or recorded.
    pub fn all_succeeded(&self) -> i32 {
        self.succeeded + self.uncounted_succeeded.len() as i32
    }

    /// Failed pods, counted or recorded.
    pub fn all_failed(&self) -> i32 {
        self.failed + self.uncounted_failed.len() as i32
    }

    /// Whether every recorded pod has been counted: the Job may take its final condition.
    pub fn settled(&self) -> bool {
        self.uncounted_succeeded.is_empty() && self.uncounted_failed.is_empty()
    }
}

/// One pass of tracking. `held` are uids whose finalizer stays for now (the last failed pod of
/// an index waiting for its replacement, which inherits its failure count);
/// `succeeded_indexes` those already recorded for an Indexed Job.
pub fn track(
    job: &Job,
    pods: &[&Pod],
    ending: Option<Ending>,
    held: &HashSet<&str>,
    succeeded_indexes: &BTreeSet<i32>,
) -> Tally {
    let status = job.status.clone().unwrap_or_default();
    let mut tally = counted(&status, pods);
    let completions = job.spec.as_ref().and_then(|s| s.completions).unwrap_or(0);
    let indexed = super::sync::is_indexed(job);
    let policy = job
        .spec
        .as_ref()
        .and_then(|s| s.pod_failure_policy.as_ref());
    let deleting_job = job.metadata.deletion_timestamp.is_some();
    for pod in pods.iter().copied().filter(|p| has_finalizer(p)) {
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        let failed = is_failed(pod, job);
        let releasable = deleting_job
            || ending.is_some()
            || phase(pod) == "Succeeded"
            || (failed && !held.contains(uid));
        if !releasable {
            continue;
        }
        tally.release.push(PodRef::of(pod));
        let recorded_failed = tally.uncounted_failed.iter().any(|u| u == uid);
        if phase(pod) == "Succeeded" && !recorded_failed {
            if indexed {
                if let Some(i) = index_of(pod, completions) {
                    if !succeeded_indexes.contains(&i) {
                        tally.new_succeeded_indexes.insert(i);
                    }
                }
            } else if !tally.uncounted_succeeded.iter().any(|u| u == uid) {
                tally.uncounted_succeeded.push(uid.to_string());
            }
        } else if (failed || ending == Some(Ending::Fail)) && !recorded_failed {
            let valid_index = !indexed || index_of(pod, completions).is_some();
            let ignored = policy
                .and_then(|p| matching_rule(p, pod))
                .is_some_and(|m| m.action == Action::Ignore);
            if valid_index && !ignored {
                tally.uncounted_failed.push(uid.to_string());
            }
        }
    }
    tally
}

/// The stored counters, with the recorded pods that no longer hold a finalizer (released, or
/// gone) moved into them (upstream `cleanUncountedPodsWithoutFinalizers`).
fn counted(status: &JobStatus, pods: &[&Pod]) -> Tally {
    let holding: HashSet<&str> = pods
        .iter()
        .filter(|p| has_finalizer(p))
        .filter_map(|p| p.metadata.uid.as_deref())
        .collect();
    let uncounted = status.uncounted_terminated_pods.clone().unwrap_or_default();
    let split = |uids: Option<Vec<String>>| -> (Vec<String>, i32) {
        let uids = uids.unwrap_or_default();
        let total = uids.len() as i32;
        let still: Vec<String> = uids
            .into_iter()
            .filter(|u| holding.contains(u.as_str()))
            .collect();
        let released = total - still.len() as i32;
        (still, released)
    };
    let (uncounted_succeeded, succeeded) = split(uncounted.succeeded);
    let (uncounted_failed, failed) = split(uncounted.failed);
    Tally {
        succeeded: status.succeeded.unwrap_or(0) + succeeded,
        failed: status.failed.unwrap_or(0) + failed,
        uncounted_succeeded,
        uncounted_failed,
        ..Tally::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(spec: serde_json::Value, status: serde_json::Value) -> Job {
        serde_json::from_value(
            json!({"metadata": {"name": "j", "namespace": "ns", "uid": "j"},
                                      "spec": spec, "status": status}),
        )
        .unwrap()
    }

    fn pod(uid: &str, phase: &str, tracked: bool, deleting: bool) -> Pod {
        let mut meta = json!({"name": uid, "namespace": "ns", "uid": uid});
        if tracked {
            meta["finalizers"] = json!([FINALIZER]);
        }
        if deleting {
            meta["deletionTimestamp"] = json!("2026-11-24T12:00:00Z");
        }
        serde_json::from_value(json!({"metadata": meta, "status": {"phase": phase}})).unwrap()
    }

    fn spec() -> serde_json::Value {
        json!({"completions": 3, "template": {}})
    }

    #[test]
    fn a_finished_pod_is_recorded_first_and_counted_once_released() {
        let (a, b) = (
            pod("a", "Succeeded", true, false),
            pod("b", "Failed", true, false),
        );
        let j = job(spec(), json!({}));
        let t = track(&j, &[&a, &b], None, &HashSet::new(), &BTreeSet::new());
        assert_eq!((t.succeeded, t.failed), (0, 0));
        assert_eq!(t.uncounted_succeeded, ["a"]);
        assert_eq!(t.uncounted_failed, ["b"]);
        assert_eq!(t.release.len(), 2);
        assert_eq!((t.all_succeeded(), t.all_failed()), (1, 1));

        // Stored, then released: a is gone, b lost its finalizer.
        let j = job(
            spec(),
            json!({"succeeded": 1, "uncountedTerminatedPods": {"succeeded": ["a"], "failed": ["b"]}}),
        );
        let b = pod("b", "Failed", false, false);
        let t = track(&j, &[&b], None, &HashSet::new(), &BTreeSet::new());
        assert_eq!((t.succeeded, t.failed), (2, 1));
        assert!(t.settled());
        assert!(t.release.is_empty());
    }

    #[test]
    fn a_running_pod_being_deleted_is_a_failure_unless_only_failed_pods_are_replaced() {
        let a = pod("a", "Running", true, true);
        let t = track(
            &job(spec(), json!({})),
            &[&a],
            None,
            &HashSet::new(),
            &BTreeSet::new(),
        );
        assert_eq!(t.uncounted_failed, ["a"]);
        let mut s = spec();
        s["podReplacementPolicy"] = json!("Failed");
        let t = track(
            &job(s, json!({})),
            &[&a],
            None,
            &HashSet::new(),
            &BTreeSet::new(),
        );
        assert!(t.uncounted_failed.is_empty());
        assert!(t.release.is_empty(), "held until it has failed");
    }

    #[test]
    fn a_running_pod_is_held_until_the_job_ends_and_counts_as_failed_when_it_fails() {
        let a = pod("a", "Running", true, false);
        let j = job(spec(), json!({}));
        let t = track(&j, &[&a], None, &HashSet::new(), &BTreeSet::new());
        assert!(t.release.is_empty());
        let t = track(
            &j,
            &[&a],
            Some(Ending::Fail),
            &HashSet::new(),
            &BTreeSet::new(),
        );
        assert_eq!(t.uncounted_failed, ["a"]);
        let t = track(
            &j,
            &[&a],
            Some(Ending::Complete),
            &HashSet::new(),
            &BTreeSet::new(),
        );
        assert!(t.uncounted_failed.is_empty());
        assert_eq!(t.release.len(), 1);
    }

    #[test]
    fn an_ignored_failure_is_released_without_being_counted_and_a_held_pod_stays() {
        let mut s = spec();
        s["podFailurePolicy"] = json!({"rules": [{"action": "Ignore",
            "onPodConditions": [{"type": "DisruptionTarget"}]}]});
        let mut a = pod("a", "Failed", true, false);
        a.status.as_mut().unwrap().conditions = Some(vec![serde_json::from_value(
            json!({"type": "DisruptionTarget", "status": "True"}),
        )
        .unwrap()]);
        let t = track(
            &job(s, json!({})),
            &[&a],
            None,
            &HashSet::new(),
            &BTreeSet::new(),
        );
        assert!(t.uncounted_failed.is_empty());
        assert_eq!(t.release.len(), 1);
        let b = pod("b", "Failed", true, false);
        let held: HashSet<&str> = ["b"].into_iter().collect();
        let t = track(
            &job(spec(), json!({})),
            &[&b],
            None,
            &held,
            &BTreeSet::new(),
        );
        assert!(t.release.is_empty() && t.uncounted_failed.is_empty());
    }

    #[test]
    fn pods_without_the_finalizer_were_counted_before() {
        let a = pod("a", "Succeeded", false, false);
        let t = track(
            &job(spec(), json!({"succeeded": 1})),
            &[&a],
            None,
            &HashSet::new(),
            &BTreeSet::new(),
        );
        assert_eq!(t.all_succeeded(), 1);
        assert!(t.release.is_empty());
    }
}
