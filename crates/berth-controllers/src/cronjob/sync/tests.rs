use super::*;
use chrono::TimeZone;

fn at(h: u32, m: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 24, h, m, s).unwrap()
}

fn cron(spec: Value, status: Value) -> CronJob {
    let mut spec = spec;
    spec["jobTemplate"] = json!({"metadata": {"labels": {"app": "tick"}},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
                 "containers": [{"name": "c", "image": "busybox"}]}}}});
    serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": "tick", "namespace": "ns", "uid": "c",
                     "creationTimestamp": "2026-11-24T11:58:30Z"},
        "spec": spec, "status": status,
    }))
    .unwrap()
}

fn job(name: &str, outcome: Option<&str>, start: &str) -> Job {
    let mut status = json!({"startTime": start});
    if let Some(o) = outcome {
        status["conditions"] = json!([{"type": o, "status": "True"}]);
        if o == "Complete" {
            status["completionTime"] = json!(start);
        }
    }
    serde_json::from_value(
        json!({"metadata": {"name": name, "namespace": "ns", "uid": format!("u-{name}")},
                                  "status": status}),
    )
    .unwrap()
}

#[test]
fn job_names_are_the_start_time_in_minutes_since_the_epoch() {
    assert_eq!(job_name("tick", at(12, 0, 0)), "tick-29925360");
}

#[test]
fn a_due_start_time_makes_a_job_owned_by_the_cron_job() {
    let c = cron(json!({"schedule": "* * * * *"}), json!({}));
    let s = sync(&c, &[], at(12, 0, 10));
    let job = s.create.unwrap();
    assert_eq!(job["metadata"]["name"], job_name("tick", at(12, 0, 0)));
    assert_eq!(job["metadata"]["labels"]["app"], "tick");
    assert_eq!(
        job["metadata"]["annotations"][SCHEDULED_TIMESTAMP_ANNOTATION],
        "2026-11-24T12:00:00Z"
    );
    assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "CronJob");
    assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never");
    let status = s.status.unwrap();
    assert_eq!(status["lastScheduleTime"], "2026-11-24T12:00:00Z");
    assert_eq!(status["active"][0]["name"], job["metadata"]["name"]);
    assert_eq!(s.next_at, Some(at(12, 1, 0)));
}

#[test]
fn nothing_is_made_before_the_first_start_time_or_twice_for_one() {
    let c = cron(json!({"schedule": "* * * * *"}), json!({}));
    let s = sync(&c, &[], at(11, 58, 50));
    assert!(s.create.is_none());
    assert_eq!(s.next_at, Some(at(11, 59, 0)));
    let c = cron(
        json!({"schedule": "* * * * *"}),
        json!({"lastScheduleTime": "2026-11-24T12:00:00Z"}),
    );
    assert!(sync(&c, &[], at(12, 0, 30)).create.is_none());
}

#[test]
fn suspend_and_a_passed_starting_deadline_make_nothing() {
    let c = cron(json!({"schedule": "* * * * *", "suspend": true}), json!({}));
    assert!(sync(&c, &[], at(12, 0, 10)).create.is_none());
    let c = cron(
        json!({"schedule": "* * * * *", "startingDeadlineSeconds": 5}),
        json!({}),
    );
    assert!(sync(&c, &[], at(12, 0, 10)).create.is_none());
    assert!(sync(&c, &[], at(12, 0, 4)).create.is_some());
}

#[test]
fn forbid_skips_while_a_job_runs_and_replace_deletes_it() {
    let running = job("tick-1", None, "2026-11-24T11:59:00Z");
    let c = cron(
        json!({"schedule": "* * * * *", "concurrencyPolicy": "Forbid"}),
        json!({"lastScheduleTime": "2026-11-24T11:59:00Z"}),
    );
    let s = sync(&c, &[&running], at(12, 0, 10));
    assert!(s.create.is_none());
    assert_eq!(s.event.unwrap().1, "JobAlreadyActive");
    let c = cron(
        json!({"schedule": "* * * * *", "concurrencyPolicy": "Replace"}),
        json!({"lastScheduleTime": "2026-11-24T11:59:00Z"}),
    );
    let s = sync(&c, &[&running], at(12, 0, 10));
    assert_eq!(
        s.replace,
        vec![("tick-1".to_string(), "u-tick-1".to_string())]
    );
    assert!(s.create.is_some());
    let c = cron(
        json!({"schedule": "* * * * *"}),
        json!({"lastScheduleTime": "2026-11-24T11:59:00Z"}),
    );
    let s = sync(&c, &[&running], at(12, 0, 10));
    assert!(s.replace.is_empty());
    assert_eq!(s.status.unwrap()["active"].as_array().unwrap().len(), 2);
}

#[test]
fn finished_jobs_beyond_the_history_limits_are_deleted_oldest_first() {
    let c = cron(
        json!({"schedule": "* * * * *", "successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 1}),
        json!({"lastScheduleTime": "2026-11-24T12:00:00Z"}),
    );
    let (a, b, c2) = (
        job("a", Some("Complete"), "2026-11-24T11:57:00Z"),
        job("b", Some("Complete"), "2026-11-24T11:58:00Z"),
        job("c", Some("Failed"), "2026-11-24T11:59:00Z"),
    );
    let s = sync(&c, &[&b, &a, &c2], at(12, 0, 10));
    assert_eq!(s.delete, vec![("a".to_string(), "u-a".to_string())]);
    let status = s.status.unwrap();
    assert_eq!(status["lastSuccessfulTime"], "2026-11-24T11:58:00Z");
    assert!(status["active"].is_null());
}

#[test]
fn a_finished_job_leaves_the_active_list() {
    let c = cron(
        json!({"schedule": "* * * * *"}),
        json!({"lastScheduleTime": "2026-11-24T12:00:00Z",
               "active": [{"kind": "Job", "name": "a", "namespace": "ns"}]}),
    );
    let a = job("a", Some("Complete"), "2026-11-24T12:00:00Z");
    let status = sync(&c, &[&a], at(12, 0, 30)).status.unwrap();
    assert!(status["active"].is_null());
}

#[test]
fn an_unchanged_status_is_not_written_again() {
    let c = cron(
        json!({"schedule": "* * * * *"}),
        json!({"lastScheduleTime": "2026-11-24T12:00:00Z",
               "active": [{"kind": "Job", "name": "a", "namespace": "ns", "resourceVersion": "1"}]}),
    );
    let a = job("a", None, "2026-11-24T12:00:00Z");
    assert!(sync(&c, &[&a], at(12, 0, 30)).status.is_none());
}

#[test]
fn a_time_zone_other_than_utc_is_reported_and_not_scheduled() {
    let c = cron(
        json!({"schedule": "* * * * *", "timeZone": "Europe/Paris"}),
        json!({}),
    );
    let s = sync(&c, &[], at(12, 0, 10));
    assert!(s.create.is_none());
    assert_eq!(s.event.unwrap().1, "UnknownTimeZone");
}

/// Issue 30: `startingDeadlineSeconds: 9223372036854775807` panicked the CronJob controller
/// (`TimeDelta::seconds out of bounds`) on every pass, for good. A deadline that far back
/// forgets nothing: the most recent due time still starts.
#[test]
fn r30_a_starting_deadline_of_i64_max_seconds_forgets_nothing() {
    let c = cron(
        json!({"schedule": "* * * * *", "startingDeadlineSeconds": i64::MAX}),
        json!({}),
    );
    let s = sync(&c, &[], at(12, 0, 10));
    let job = s.create.unwrap();
    assert_eq!(job["metadata"]["name"], job_name("tick", at(12, 0, 0)));
}

#[test]
fn a_job_of_the_active_list_that_finished_is_seen_completed_once() {
    let c = cron(
        json!({"schedule": "0 * * * *"}),
        json!({"active": [{"name": "a", "uid": "u-a"}, {"name": "b", "uid": "u-b"}]}),
    );
    let a = job("a", Some("Complete"), "2026-11-24T12:00:00Z");
    let b = job("b", Some("Failed"), "2026-11-24T12:00:00Z");
    let old = job("old", Some("Complete"), "2026-11-24T11:00:00Z");
    let s = sync(&c, &[&a, &b, &old], at(12, 5, 0));
    assert_eq!(
        s.saw_completed,
        [("a".to_string(), "Complete"), ("b".to_string(), "Failed")]
    );
    // Once out of the active list, it is not seen again.
    let c = cron(json!({"schedule": "0 * * * *"}), json!({}));
    assert!(sync(&c, &[&a, &b], at(12, 6, 0)).saw_completed.is_empty());
}
