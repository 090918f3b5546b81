use super::*;
use chrono::TimeZone;

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 24, 12, 0, 0).unwrap()
}

fn job(spec: Value, status: Value) -> Job {
    serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "pi", "namespace": "ns", "uid": "j"},
        "spec": spec, "status": status,
    }))
    .unwrap()
}

fn pod(name: &str, phase: &str, ready: bool, transition: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "ns", "uid": format!("u-{name}"),
                     "creationTimestamp": "2026-11-24T11:00:00Z",
                     "finalizers": [super::super::tracking::FINALIZER]},
        "status": {"phase": phase, "conditions": [{"type": "Ready",
            "status": if ready { "True" } else { "False" }, "lastTransitionTime": transition}]},
    }))
    .unwrap()
}

/// The Job and its pods after the driver carried `s` out: its status stored, the released pods
/// without their finalizer.
fn carried_out(j: &Job, pods: &[&Pod], s: &JobSync) -> (Job, Vec<Pod>) {
    let mut job = j.clone();
    if let Some(status) = &s.status {
        job.status = Some(serde_json::from_value(status.clone()).unwrap());
    }
    let pods = pods
        .iter()
        .map(|p| {
            let mut p = (*p).clone();
            if s.release
                .iter()
                .any(|r| Some(&r.uid) == p.metadata.uid.as_ref())
            {
                p.metadata.finalizers = None;
            }
            p
        })
        .collect();
    (job, pods)
}

/// Syncs twice, as the driver's next pass after the first sync's writes: the status the second
/// pass writes, with every finished pod counted.
fn settled(j: &Job, pods: &[&Pod]) -> (JobSync, Value) {
    let first = sync(j, pods, &[], now());
    let (job, pods) = carried_out(j, pods, &first);
    let refs: Vec<&Pod> = pods.iter().collect();
    let second = sync(&job, &refs, &[], now());
    let status = second
        .status
        .clone()
        .or_else(|| first.status.clone())
        .unwrap();
    (first, status)
}

fn types(status: &Value) -> Vec<&str> {
    status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["type"].as_str())
        .collect()
}

#[test]
fn a_new_job_creates_parallelism_pods_and_records_its_start() {
    let j = job(json!({"completions": 3, "parallelism": 2}), json!({}));
    let s = sync(&j, &[], &[], now());
    assert_eq!(s.create, 2);
    let status = s.status.unwrap();
    assert_eq!(status["active"], 2);
    assert_eq!(status["startTime"], "2026-11-24T12:00:00Z");
}

#[test]
fn pods_on_their_way_count_as_active() {
    let j = job(json!({"completions": 3, "parallelism": 2}), json!({}));
    assert_eq!(sync(&j, &[], &[None, None], now()).create, 0);
}

#[test]
fn the_last_completion_completes_the_job_with_upstreams_conditions() {
    let j = job(
        json!({"completions": 2, "parallelism": 2}),
        json!({"startTime": "2026-11-24T11:59:00Z"}),
    );
    let (a, b) = (
        pod("a", "Succeeded", false, "2026-11-24T11:59:30Z"),
        pod("b", "Succeeded", false, "2026-11-24T11:59:40Z"),
    );
    let first = sync(&j, &[&a, &b], &[], now());
    let interim = first.status.clone().unwrap();
    assert_eq!(types(&interim), ["SuccessCriteriaMet"]);
    assert_eq!(
        interim["uncountedTerminatedPods"]["succeeded"],
        json!(["u-a", "u-b"])
    );
    assert_eq!(first.release.len(), 2);
    let (_, status) = settled(&j, &[&a, &b]);
    assert_eq!(types(&status), ["SuccessCriteriaMet", "Complete"]);
    assert_eq!(status["conditions"][1]["reason"], "CompletionsReached");
    assert_eq!(status["succeeded"], 2);
    assert_eq!(status["completionTime"], "2026-11-24T12:00:00Z");
    assert_eq!(status["startTime"], "2026-11-24T11:59:00Z");
}

#[test]
fn failures_past_the_backoff_limit_fail_the_job_and_delete_what_runs() {
    let j = job(
        json!({"completions": 2, "parallelism": 2, "backoffLimit": 1}),
        json!({"startTime": "2026-11-24T11:59:00Z"}),
    );
    let (a, b, c) = (
        pod("a", "Failed", false, "2026-11-24T11:59:30Z"),
        pod("b", "Failed", false, "2026-11-24T11:59:40Z"),
        pod("c", "Running", true, "2026-11-24T11:59:40Z"),
    );
    let s = sync(&j, &[&a], &[], now());
    assert_eq!(
        s.status.unwrap()["uncountedTerminatedPods"]["failed"],
        json!(["u-a"])
    );
    let (s, status) = settled(&j, &[&a, &b, &c]);
    assert_eq!(s.delete.len(), 1);
    assert_eq!(s.delete[0].name, "c");
    assert_eq!(types(&status), ["FailureTarget", "Failed"]);
    assert_eq!(status["conditions"][1]["reason"], "BackoffLimitExceeded");
    // The running pod deleted as the Job failed counts as failed too, as upstream.
    assert_eq!(status["failed"], 3);
    assert_eq!(status["active"], 0);
}

#[test]
fn a_failed_pod_is_replaced_after_its_backoff() {
    let j = job(
        json!({"completions": 1, "parallelism": 1, "backoffLimit": 3}),
        json!({"startTime": "2026-11-24T11:59:00Z"}),
    );
    let a = pod("a", "Failed", false, "2026-11-24T11:59:55Z");
    let s = sync(&j, &[&a], &[], now());
    assert_eq!(s.create, 0);
    assert_eq!(
        s.retry_at,
        Some(Utc.with_ymd_and_hms(2026, 11, 24, 12, 0, 5).unwrap())
    );
    let later = now() + Duration::seconds(5);
    assert_eq!(sync(&j, &[&a], &[], later).create, 1);
}

#[test]
fn the_active_deadline_fails_the_job_and_is_when_to_look_again() {
    let j = job(
        json!({"completions": 1, "parallelism": 1, "activeDeadlineSeconds": 30}),
        json!({"startTime": "2026-11-24T11:59:50Z", "active": 1, "ready": 1}),
    );
    let a = pod("a", "Running", true, "2026-11-24T11:59:50Z");
    let s = sync(&j, &[&a], &[], now());
    assert!(s.status.is_none(), "{:?}", s.status);
    assert_eq!(
        s.retry_at,
        Some(Utc.with_ymd_and_hms(2026, 11, 24, 12, 0, 20).unwrap())
    );
    let s = sync(&j, &[&a], &[], now() + Duration::seconds(20));
    let interim = s.status.unwrap();
    assert_eq!(types(&interim), ["FailureTarget"]);
    assert_eq!(interim["conditions"][0]["reason"], "DeadlineExceeded");
    assert_eq!(s.delete.len(), 1);
    assert_eq!(
        s.release.len(),
        1,
        "the pod is released before it is deleted"
    );
}

/// Issue 30: `activeDeadlineSeconds: 9223372036854775807` panicked the Job controller
/// (`TimeDelta::seconds out of bounds`) on every pass, for good.
#[test]
fn r30_an_active_deadline_of_i64_max_seconds_saturates_instead_of_panicking() {
    let j = job(
        json!({"completions": 1, "parallelism": 1, "activeDeadlineSeconds": i64::MAX}),
        json!({"startTime": "2026-11-24T11:59:50Z", "active": 1, "ready": 1}),
    );
    let a = pod("a", "Running", true, "2026-11-24T11:59:50Z");
    let s = sync(&j, &[&a], &[], now());
    assert!(s.status.is_none(), "{:?}", s.status);
    assert_eq!(s.retry_at, Some(berth_core::clock::latest()));
    let spec = job_spec(&j);
    let started = Utc.with_ymd_and_hms(2026, 11, 24, 11, 59, 50).unwrap();
    let counts = super::super::PodCounts {
        active: 1,
        succeeded: 0,
        failed: 0,
        fail_job: None,
    };
    assert_eq!(
        super::super::step(&spec, counts, Some(started), None, now()),
        super::super::Step::Wait
    );
}

/// Issue 30: the TTL of a finished Job is an `i32`, but its expiry is computed as safely.
#[test]
fn r30_a_ttl_of_i32_max_seconds_expires_decades_later() {
    let j = job(
        json!({"completions": 1, "ttlSecondsAfterFinished": i32::MAX}),
        json!({"conditions": [{"type": "Complete", "status": "True",
                               "lastTransitionTime": "2026-11-24T12:00:00Z"}]}),
    );
    assert_eq!(
        ttl_expires_at(&j).map(berth_core::clock::timestamp),
        Some("2094-12-12T15:14:07Z".to_string())
    );
}

#[test]
fn a_finished_job_is_left_alone_and_expires_after_its_ttl() {
    let j = job(
        json!({"completions": 1, "ttlSecondsAfterFinished": 60}),
        json!({"conditions": [{"type": "Complete", "status": "True",
                               "lastTransitionTime": "2026-11-24T12:00:00Z"}]}),
    );
    assert_eq!(sync(&j, &[], &[], now()), JobSync::default());
    assert_eq!(
        ttl_expires_at(&j),
        Some(Utc.with_ymd_and_hms(2026, 11, 24, 12, 1, 0).unwrap())
    );
}

#[test]
fn lowering_parallelism_deletes_not_ready_pods_first() {
    let j = job(
        json!({"completions": 5, "parallelism": 1}),
        json!({"startTime": "2026-11-24T11:59:00Z"}),
    );
    let (a, b) = (
        pod("a", "Running", true, "2026-11-24T11:59:30Z"),
        pod("b", "Pending", false, "2026-11-24T11:59:30Z"),
    );
    let s = sync(&j, &[&a, &b], &[], now());
    assert_eq!(s.delete.len(), 1);
    assert_eq!(s.delete[0].name, "b");
}

#[test]
fn an_unchanged_status_is_not_written_again() {
    let j = job(
        json!({"completions": 2, "parallelism": 1}),
        json!({"startTime": "2026-11-24T11:59:00Z", "active": 1, "ready": 1,
               "uncountedTerminatedPods": {}}),
    );
    let a = pod("a", "Running", true, "2026-11-24T11:59:30Z");
    assert_eq!(sync(&j, &[&a], &[], now()).status, None);
}

fn indexed_pod(name: &str, index: &str, phase: &str) -> Pod {
    let mut p = pod(name, phase, phase == "Running", "2026-11-24T11:00:00Z");
    p.metadata.annotations = Some(
        [(
            crate::job::indexed::INDEX_KEY.to_string(),
            index.to_string(),
        )]
        .into_iter()
        .collect(),
    );
    p
}

#[test]
fn an_indexed_job_creates_the_lowest_free_indexes() {
    let j = job(
        json!({"completions": 3, "parallelism": 2, "completionMode": "Indexed"}),
        json!({}),
    );
    let s = sync(&j, &[], &[], now());
    assert_eq!((s.create, s.create_indexes), (2, vec![0, 1]));
    // Index 0 succeeded, 1 runs: index 2 is next; an index on its way is not created twice.
    let (a, b) = (
        indexed_pod("a", "0", "Succeeded"),
        indexed_pod("b", "1", "Running"),
    );
    let s = sync(&j, &[&a, &b], &[], now());
    assert_eq!(s.create_indexes, vec![2]);
    assert_eq!(s.status.unwrap()["completedIndexes"], "0");
    assert_eq!(sync(&j, &[&a, &b], &[Some(2)], now()).create, 0);
}

#[test]
fn an_indexed_job_completes_when_every_index_succeeded() {
    let j = job(
        json!({"completions": 3, "parallelism": 3, "completionMode": "Indexed"}),
        json!({"completedIndexes": "0-1", "succeeded": 2}),
    );
    let c = indexed_pod("c", "2", "Succeeded");
    let s = sync(&j, &[&c], &[], now());
    let interim = s.status.unwrap();
    assert_eq!(interim["completedIndexes"], "0-2");
    assert!(
        interim["uncountedTerminatedPods"]["succeeded"].is_null(),
        "an index is not a uid"
    );
    let (_, status) = settled(&j, &[&c]);
    assert_eq!(status["completedIndexes"], "0-2");
    assert_eq!(status["succeeded"], 3);
    assert!(types(&status).contains(&"Complete"));
}

#[test]
fn a_second_pod_of_an_index_or_one_without_an_index_is_deleted() {
    let j = job(
        json!({"completions": 2, "parallelism": 2, "completionMode": "Indexed"}),
        json!({}),
    );
    let (a, b, c) = (
        indexed_pod("a", "0", "Running"),
        indexed_pod("b", "0", "Running"),
        indexed_pod("c", "9", "Running"),
    );
    let s = sync(&j, &[&a, &b, &c], &[], now());
    let deleted: Vec<&str> = s.delete.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(deleted, vec!["b", "c"]);
    assert_eq!(s.create_indexes, vec![1]);
}

/// A failed pod whose container `c` exited `code`, with the given pod conditions.
fn failed_with(name: &str, code: i32, conditions: Value) -> Pod {
    let mut p = pod(name, "Failed", false, "2026-11-24T11:59:55Z");
    let mut v = serde_json::to_value(&p).unwrap();
    v["status"]["containerStatuses"] = json!([{"name": "c", "image": "busybox", "imageID": "",
        "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": code}}}]);
    if let Some(extra) = conditions.as_array() {
        let all = v["status"]["conditions"].as_array_mut().unwrap();
        all.extend(extra.iter().cloned());
    }
    p = serde_json::from_value(v).unwrap();
    p
}

#[test]
fn a_fail_job_exit_code_fails_the_job_at_once_with_upstreams_reason_and_message() {
    let j = job(
        json!({"completions": 3, "parallelism": 2, "backoffLimit": 6,
               "podFailurePolicy": {"rules": [
                   {"action": "FailJob", "onExitCodes": {"containerName": "c", "operator": "In", "values": [42]}}]}}),
        json!({"startTime": "2026-11-24T11:59:00Z"}),
    );
    let a = failed_with("a", 42, json!([]));
    let b = pod("b", "Running", true, "2026-11-24T11:59:40Z");
    let (s, status) = settled(&j, &[&a, &b]);
    assert_eq!(s.create, 0);
    assert_eq!(s.delete.len(), 1);
    assert_eq!(s.delete[0].name, "b");
    assert_eq!(types(&status), ["FailureTarget", "Failed"]);
    for c in status["conditions"].as_array().unwrap() {
        assert_eq!(c["reason"], "PodFailurePolicy");
        assert_eq!(
            c["message"],
            "Container c for pod ns/a failed with exit code 42 matching FailJob rule at index 0"
        );
    }
    // The running pod deleted as the Job fails counts as failed, as upstream counts it.
    assert_eq!(status["failed"], 2);
}

#[test]
fn another_exit_code_counts_towards_the_backoff_limit_as_usual() {
    let j = job(
        json!({"completions": 1, "parallelism": 1, "backoffLimit": 0,
               "podFailurePolicy": {"rules": [
                   {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]}}),
        json!({"startTime": "2026-11-24T11:59:00Z"}),
    );
    let a = failed_with("a", 1, json!([]));
    let (_, status) = settled(&j, &[&a]);
    assert_eq!(status["conditions"][1]["reason"], "BackoffLimitExceeded");
}

#[test]
fn an_ignored_disruption_does_not_count_and_is_replaced_without_backoff() {
    let j = job(
        json!({"completions": 1, "parallelism": 1, "backoffLimit": 0,
               "podFailurePolicy": {"rules": [
                   {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}}),
        json!({"startTime": "2026-11-24T11:59:00Z"}),
    );
    let disruption = json!([{"type": "DisruptionTarget", "status": "True",
                             "reason": "TerminationByKubelet"}]);
    let (a, b) = (
        failed_with("a", 137, disruption.clone()),
        failed_with("b", 137, disruption),
    );
    let s = sync(&j, &[&a, &b], &[], now());
    assert_eq!(s.create, 1);
    let status = s.status.unwrap();
    assert!(types(&status).is_empty());
    assert_eq!(status["failed"], 0);
}

#[test]
fn without_the_ignore_rule_a_disruption_counts() {
    let j = job(
        json!({"completions": 1, "parallelism": 1, "backoffLimit": 0}),
        json!({"startTime": "2026-11-24T11:59:00Z"}),
    );
    let disruption = json!([{"type": "DisruptionTarget", "status": "True"}]);
    let a = failed_with("a", 137, disruption);
    let (_, status) = settled(&j, &[&a]);
    assert_eq!(status["conditions"][1]["reason"], "BackoffLimitExceeded");
}

#[test]
fn a_count_rule_counts_the_failure() {
    let j = job(
        json!({"completions": 1, "parallelism": 1, "backoffLimit": 1,
               "podFailurePolicy": {"rules": [
                   {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [42]}}]}}),
        json!({"startTime": "2026-11-24T11:59:00Z"}),
    );
    let (a, b) = (
        failed_with("a", 1, json!([])),
        failed_with("b", 2, json!([])),
    );
    let (_, status) = settled(&j, &[&a]);
    assert_eq!(status["failed"], 1);
    let (_, status) = settled(&j, &[&a, &b]);
    assert_eq!(status["conditions"][1]["reason"], "BackoffLimitExceeded");
}

fn counted_pod(name: &str, index: &str, phase: &str, failures: i32) -> Pod {
    let mut p = indexed_pod(name, index, phase);
    p.metadata.annotations.as_mut().unwrap().insert(
        super::super::per_index::FAILURE_COUNT_KEY.into(),
        failures.to_string(),
    );
    p
}

#[test]
fn a_per_index_limit_retries_an_index_after_its_backoff_then_fails_the_job_with_failed_indexes() {
    let j = job(
        json!({"completions": 3, "parallelism": 3, "completionMode": "Indexed",
               "backoffLimitPerIndex": 1, "backoffLimit": i32::MAX}),
        json!({"startTime": "2026-11-24T11:59:00Z"}),
    );
    let (a, b, c) = (
        counted_pod("a", "0", "Failed", 0),
        counted_pod("b", "1", "Running", 0),
        counted_pod("c", "2", "Succeeded", 0),
    );
    // Index 0 failed once, 5s ago: it is retried 10s after, the new pod carrying one failure;
    // the failed pod keeps its finalizer until then.
    let mut a = a;
    a.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].last_transition_time =
        Some(crate::model::to_time(now() - Duration::seconds(5)));
    let s = sync(&j, &[&a, &b, &c], &[], now());
    assert_eq!(s.create, 0);
    assert!(!s.release.iter().any(|r| r.name == "a"));
    assert_eq!(s.status.as_ref().unwrap()["failedIndexes"], "");
    let s = sync(&j, &[&a, &b, &c], &[], now() + Duration::seconds(10));
    assert_eq!(s.create_indexes, vec![0]);
    assert_eq!(s.index_failure_counts[&0], (1, 0));
    // Its second failure reaches the limit: index 0 failed, no retry; once index 1 succeeds
    // every index is settled and the Job fails.
    let (a2, b) = (
        counted_pod("a2", "0", "Failed", 1),
        counted_pod("b", "1", "Succeeded", 0),
    );
    let (s, status) = settled(&j, &[&a2, &b, &c]);
    assert_eq!(s.create, 0);
    assert_eq!(status["failedIndexes"], "0");
    assert_eq!(status["completedIndexes"], "1,2");
    assert_eq!(types(&status), ["FailureTarget", "Failed"]);
    assert_eq!(status["conditions"][1]["reason"], "FailedIndexes");
    assert_eq!(status["conditions"][1]["message"], "Job has failed indexes");
}

#[test]
fn more_failed_indexes_than_allowed_fail_the_job_at_once() {
    let j = job(
        json!({"completions": 4, "parallelism": 4, "completionMode": "Indexed",
               "backoffLimitPerIndex": 0, "maxFailedIndexes": 0, "backoffLimit": i32::MAX}),
        json!({"startTime": "2026-11-24T11:59:00Z"}),
    );
    let (a, b) = (
        counted_pod("a", "0", "Failed", 0),
        counted_pod("b", "1", "Running", 0),
    );
    let (s, status) = settled(&j, &[&a, &b]);
    assert_eq!(s.delete.len(), 1);
    assert_eq!(
        status["conditions"][1]["message"],
        "Job has exceeded the specified maximal number of failed indexes"
    );
}

#[test]
fn a_pod_deleted_before_it_finished_is_held_and_counted_as_a_failure() {
    let j = job(
        json!({"completions": 1, "parallelism": 1, "backoffLimit": 3}),
        json!({"startTime": "2026-11-24T11:59:00Z"}),
    );
    let mut a = pod("a", "Running", true, "2026-11-24T11:59:30Z");
    a.metadata.deletion_timestamp = Some(crate::model::to_time(now()));
    let (_, status) = settled(&j, &[&a]);
    assert_eq!(status["failed"], 1);
}
