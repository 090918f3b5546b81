//! Per-index back-off limits of Indexed Jobs (`backoffLimitPerIndex`, `maxFailedIndexes`), as
//! upstream's `indexed_job_utils.go`: each pod carries how often its index failed before
//! (`job-index-failure-count`, and `job-index-ignored-failure-count` for failures an `Ignore`
//! rule forgave); an index fails once a counted failure finds that count at the limit, or a
//! `FailIndex` rule matches; a failed index is not retried; the Job fails when more indexes
//! failed than `maxFailedIndexes`, or when every index succeeded or failed and some failed.
//! Pure.

use super::failure_policy::{matching_rule, Action};
use super::indexed::{index_of, parse_intervals};
use super::tracking::{has_finalizer, is_failed};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use std::collections::{BTreeMap, BTreeSet};

/// How often the pod's index failed before it (failures that counted).
pub const FAILURE_COUNT_KEY: &str = "batch.kubernetes.io/job-index-failure-count";
/// How often the pod's index failed before it in ways an `Ignore` rule forgave.
pub const IGNORED_FAILURE_COUNT_KEY: &str = "batch.kubernetes.io/job-index-ignored-failure-count";

/// A count annotation of the pod; 0 when missing or not a count (a user may have edited it).
pub fn annotation_count(pod: &Pod, key: &str) -> i32 {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .and_then(|v| v.parse::<i32>().ok())
        .filter(|n| *n >= 0)
        .unwrap_or(0)
}

/// Every failure of the pod's index before it, counted or forgiven.
fn absolute_count(pod: &Pod) -> i32 {
    annotation_count(pod, FAILURE_COUNT_KEY)
        .saturating_add(annotation_count(pod, IGNORED_FAILURE_COUNT_KEY))
}

/// The Job's per-index limit, when it has one (only Indexed Jobs may).
pub fn limit(job: &Job) -> Option<i32> {
    job.spec.as_ref()?.backoff_limit_per_index
}

/// Whether this failed pod fails its index (upstream `isIndexFailed`).
fn fails_its_index(job: &Job, pod: &Pod, limit: i32) -> bool {
    if !is_failed(pod, job) {
        return false;
    }
    let policy = job
        .spec
        .as_ref()
        .and_then(|s| s.pod_failure_policy.as_ref());
    let counted = match policy.and_then(|p| matching_rule(p, pod)) {
        Some(m) if m.action == Action::FailIndex => return true,
        Some(m) => m.action != Action::Ignore,
        None => true,
    };
    counted && annotation_count(pod, FAILURE_COUNT_KEY) >= limit
}

/// The failed indexes: those recorded in `status.failedIndexes`, and those a pod not yet
/// counted fails now.
pub fn failed_indexes(job: &Job, pods: &[&Pod], limit: i32, completions: i32) -> BTreeSet<i32> {
    let recorded = job
        .status
        .as_ref()
        .and_then(|s| s.failed_indexes.as_deref())
        .unwrap_or("");
    let mut failed = parse_intervals(recorded, completions);
    failed.extend(
        pods.iter()
            .filter(|p| has_finalizer(p) && fails_its_index(job, p, limit))
            .filter_map(|p| index_of(p, completions)),
    );
    failed
}

/// For each index still to run again, its last failed pod: it keeps its finalizer until the
/// replacement exists, which inherits its failure count (upstream
/// `getPodsWithDelayedDeletionPerIndex`).
pub fn last_failures<'a>(
    job: &Job,
    pods: &[&'a Pod],
    completions: i32,
    settled: &BTreeSet<i32>,
    active: &BTreeSet<i32>,
) -> BTreeMap<i32, &'a Pod> {
    let mut last: BTreeMap<i32, &'a Pod> = BTreeMap::new();
    for pod in pods.iter().copied().filter(|p| is_failed(p, job)) {
        let Some(i) = index_of(pod, completions) else {
            continue;
        };
        if settled.contains(&i) || active.contains(&i) {
            continue;
        }
        let newer = last.get(&i).is_none_or(|prev| {
            (absolute_count(prev), super::sync::finished(prev))
                <= (absolute_count(pod), super::sync::finished(pod))
        });
        if newer {
            last.insert(i, pod);
        }
    }
    last
}

/// The failure counts a replacement of `previous` carries: one more counted failure, or one
/// more forgiven one (upstream `getNewIndexFailureCounts`).
pub fn replacement_counts(job: &Job, previous: Option<&Pod>) -> (i32, i32) {
    let Some(previous) = previous else {
        return (0, 0);
    };
    let (counted, ignored) = (
        annotation_count(previous, FAILURE_COUNT_KEY),
        annotation_count(previous, IGNORED_FAILURE_COUNT_KEY),
    );
    let policy = job
        .spec
        .as_ref()
        .and_then(|s| s.pod_failure_policy.as_ref());
    let forgiven = policy
        .and_then(|p| matching_rule(p, previous))
        .is_some_and(|m| m.action == Action::Ignore);
    if forgiven {
        (counted, ignored.saturating_add(1))
    } else {
        (counted.saturating_add(1), ignored)
    }
}

/// How many failures the back-off before re-running the index of `previous` counts.
pub fn failures_before_retry(previous: &Pod) -> i32 {
    absolute_count(previous).saturating_add(1)
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

    fn pod(uid: &str, index: i32, phase: &str, failures: i32) -> Pod {
        serde_json::from_value(
            json!({"metadata": {"name": uid, "namespace": "ns", "uid": uid,
            "finalizers": [super::super::tracking::FINALIZER],
            "annotations": {super::super::indexed::INDEX_KEY: index.to_string(),
                            FAILURE_COUNT_KEY: failures.to_string()}},
            "status": {"phase": phase}}),
        )
        .unwrap()
    }

    fn spec() -> serde_json::Value {
        json!({"completions": 4, "completionMode": "Indexed", "backoffLimitPerIndex": 1,
               "template": {}})
    }

    #[test]
    fn an_index_fails_when_a_failure_finds_its_count_at_the_limit() {
        let j = job(spec(), json!({"failedIndexes": "3"}));
        let (first, second) = (pod("a", 0, "Failed", 0), pod("b", 1, "Failed", 1));
        assert_eq!(
            failed_indexes(&j, &[&first, &second], 1, 4),
            [1, 3].into_iter().collect()
        );
        assert_eq!(replacement_counts(&j, Some(&first)), (1, 0));
        assert_eq!(replacement_counts(&j, None), (0, 0));
    }

    #[test]
    fn a_fail_index_rule_fails_the_index_at_once_and_ignore_is_forgiven() {
        let mut s = spec();
        s["podFailurePolicy"] = json!({"rules": [
            {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [3]}},
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [4]}}]});
        let j = job(s, json!({}));
        let exited = |uid: &str, code: i32| {
            let mut p = pod(uid, 2, "Failed", 0);
            p.status.as_mut().unwrap().container_statuses = Some(vec![serde_json::from_value(
                json!({"name": "c", "image": "i", "imageID": "", "ready": false,
                       "restartCount": 0, "state": {"terminated": {"exitCode": code}}}),
            )
            .unwrap()]);
            p
        };
        let (three, four) = (exited("a", 3), exited("b", 4));
        assert_eq!(
            failed_indexes(&j, &[&three], 5, 4),
            [2].into_iter().collect()
        );
        assert!(failed_indexes(&j, &[&four], 0, 4).is_empty());
        assert_eq!(replacement_counts(&j, Some(&four)), (0, 1));
    }

    #[test]
    fn the_last_failure_of_an_index_to_retry_is_held() {
        let j = job(spec(), json!({}));
        let (old, new, done) = (
            pod("a", 0, "Failed", 0),
            pod("b", 0, "Failed", 1),
            pod("c", 1, "Failed", 0),
        );
        let settled: BTreeSet<i32> = [1].into_iter().collect();
        let last = last_failures(&j, &[&old, &new, &done], 4, &settled, &BTreeSet::new());
        assert_eq!(last.len(), 1);
        assert_eq!(last[&0].metadata.name.as_deref(), Some("b"));
        assert_eq!(failures_before_retry(last[&0]), 2);
    }
}
