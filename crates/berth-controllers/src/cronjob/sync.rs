//! One CronJob's sync, as upstream's `cronjob_controllerv2.go` `syncCronJob` and
//! `cleanupFinishedJobs`: its Jobs become `status.active` (finished ones leave it, and the
//! newest completion is `lastSuccessfulTime`); the most recent due start time gets a Job named
//! `<cronjob>-<minutes since the epoch>` unless suspended, too late for
//! `startingDeadlineSeconds`, already made, or forbidden by `concurrencyPolicy` (`Forbid` skips
//! it, `Replace` deletes the running Jobs first); finished Jobs beyond
//! `successfulJobsHistoryLimit`/`failedJobsHistoryLimit` are deleted, oldest first.
//! Pure: the CronJob, its Jobs and `now` in, a [`CronJobSync`] out.

use super::schedule::{most_recent_due, Schedule, TOO_MANY_MISSED};
use crate::model::to_chrono;
use chrono::{DateTime, Utc};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use serde_json::{json, Value};

/// The annotation on a Job naming the start time it was made for (upstream 1.28+).
pub const SCHEDULED_TIMESTAMP_ANNOTATION: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

/// A Job to delete: (name, uid).
pub type JobRef = (String, String);

/// What one sync of a CronJob decided.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CronJobSync {
    /// Running Jobs to delete before the new one (`concurrencyPolicy: Replace`).
    pub replace: Vec<JobRef>,
    /// The Job to create.
    pub create: Option<Value>,
    /// Finished Jobs beyond the history limits.
    pub delete: Vec<JobRef>,
    /// (Job, `Complete` or `Failed`) for each Job of `status.active` now finished
    /// (upstream's `SawCompletedJob`).
    pub saw_completed: Vec<(String, &'static str)>,
    /// The new `status`, when it differs from the stored one.
    pub status: Option<Value>,
    /// When the next start time is due.
    pub next_at: Option<DateTime<Utc>>,
    /// (type, reason, message) of an event to record.
    pub event: Option<(&'static str, &'static str, String)>,
}

/// The name of the Job for start time `at`.
pub fn job_name(cron_job: &str, at: DateTime<Utc>) -> String {
    format!("{cron_job}-{}", at.timestamp().div_euclid(60))
}

fn finished(job: &Job) -> Option<&'static str> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    conditions
        .iter()
        .find_map(|c| match (c.type_.as_str(), c.status.as_str()) {
            ("Complete", "True") => Some("Complete"),
            ("Failed", "True") => Some("Failed"),
            _ => None,
        })
}

fn start_of(job: &Job) -> Option<DateTime<Utc>> {
    job.status
        .as_ref()
        .and_then(|s| s.start_time.as_ref())
        .or(job.metadata.creation_timestamp.as_ref())
        .map(to_chrono)
}

fn job_ref(job: &Job) -> JobRef {
    (
        job.metadata.name.clone().unwrap_or_default(),
        job.metadata.uid.clone().unwrap_or_default(),
    )
}

/// Syncs one CronJob whose Jobs (those it controls) are `jobs`.
pub fn sync(cron: &CronJob, jobs: &[&Job], now: DateTime<Utc>) -> CronJobSync {
    let mut out = CronJobSync::default();
    let spec = cron.spec.clone().unwrap_or_default();
    let stored = cron.status.clone().unwrap_or_default();
    let name = cron.metadata.name.clone().unwrap_or_default();
    let namespace = cron.metadata.namespace.clone().unwrap_or_default();

    let mut active: Vec<&Job> = jobs
        .iter()
        .copied()
        .filter(|j| finished(j).is_none() && j.metadata.deletion_timestamp.is_none())
        .collect();
    let was_active = |j: &Job| {
        stored.active.iter().flatten().any(|r| match &r.uid {
            Some(uid) => Some(uid) == j.metadata.uid.as_ref(),
            None => r.name == j.metadata.name,
        })
    };
    for j in jobs {
        if let (Some(condition), true) = (finished(j), was_active(j)) {
            let name = j.metadata.name.clone().unwrap_or_default();
            out.saw_completed.push((name, condition));
        }
    }
    let mut last_successful = stored.last_successful_time.as_ref().map(to_chrono);
    for j in jobs.iter().filter(|j| finished(j) == Some("Complete")) {
        if let Some(done) = j
            .status
            .as_ref()
            .and_then(|s| s.completion_time.as_ref())
            .map(to_chrono)
        {
            last_successful = Some(last_successful.map_or(done, |l| l.max(done)));
        }
    }
    let mut last_schedule = stored.last_schedule_time.as_ref().map(to_chrono);

    out.delete = over_history_limit(
        jobs,
        "Complete",
        spec.successful_jobs_history_limit.unwrap_or(3),
    );
    out.delete.extend(over_history_limit(
        jobs,
        "Failed",
        spec.failed_jobs_history_limit.unwrap_or(1),
    ));

    let deleting = cron.metadata.deletion_timestamp.is_some();
    let zone_ok = spec
        .time_zone
        .as_deref()
        .is_none_or(|z| matches!(z, "UTC" | "Etc/UTC" | ""));
    if !zone_ok {
        out.event = Some((
            "Warning",
            "UnknownTimeZone",
            format!(
                "invalid timeZone: {:?}: berth reads schedules in UTC only",
                spec.time_zone.as_deref().unwrap_or("")
            ),
        ));
    }
    let schedule = Schedule::parse(&spec.schedule);
    if let (Err(e), false) = (&schedule, deleting) {
        out.event = Some((
            "Warning",
            "UnparseableSchedule",
            format!("unparseable schedule: {:?} : {}", spec.schedule, e.reason),
        ));
    }
    if let (Ok(schedule), false, true, false) =
        (&schedule, deleting, zone_ok, spec.suspend.unwrap_or(false))
    {
        let earliest = last_schedule
            .or(cron.metadata.creation_timestamp.as_ref().map(to_chrono))
            .unwrap_or(now);
        let deadline = spec
            .starting_deadline_seconds
            .map(berth_core::clock::seconds);
        let (due, missed) = most_recent_due(schedule, earliest, now, deadline);
        out.next_at = schedule.next_after(now);
        if missed > TOO_MANY_MISSED {
            out.event = Some((
                "Warning",
                "TooManyMissedTimes",
                "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew".into(),
            ));
        }
        if let Some(at) = due {
            let job_name = job_name(&name, at);
            let made = jobs
                .iter()
                .any(|j| j.metadata.name.as_deref() == Some(job_name.as_str()))
                || last_schedule == Some(at);
            let policy = spec.concurrency_policy.as_deref().unwrap_or("Allow");
            if made {
            } else if policy == "Forbid" && !active.is_empty() {
                out.event = Some((
                    "Normal",
                    "JobAlreadyActive",
                    "Not starting job because prior execution is running and concurrency policy is Forbid".into(),
                ));
            } else {
                if policy == "Replace" {
                    out.replace = active.iter().map(|j| job_ref(j)).collect();
                    active.clear();
                }
                out.create = Some(new_job(cron, &namespace, &job_name, at));
                last_schedule = Some(at);
            }
        }
    }

    let mut refs: Vec<Value> = active
        .iter()
        .map(|j| {
            json!({"apiVersion": "batch/v1", "kind": "Job", "namespace": namespace,
                   "name": j.metadata.name, "uid": j.metadata.uid,
                   "resourceVersion": j.metadata.resource_version})
        })
        .collect();
    if let Some(job) = &out.create {
        refs.push(
            json!({"apiVersion": "batch/v1", "kind": "Job", "namespace": namespace,
                         "name": job["metadata"]["name"]}),
        );
    }
    let mut status = json!({});
    if !refs.is_empty() {
        status["active"] = json!(refs);
    }
    if let Some(t) = last_schedule {
        status["lastScheduleTime"] = json!(crate::model::timestamp(t));
    }
    if let Some(t) = last_successful {
        status["lastSuccessfulTime"] = json!(crate::model::timestamp(t));
    }
    let before = serde_json::to_value(&stored).unwrap_or_default();
    // Compared without resourceVersions: a running Job's status updates are not the CronJob's.
    if comparable(&before) != comparable(&status) {
        if status.get("active").is_none() {
            status["active"] = Value::Null;
        }
        out.status = Some(status);
    }
    out
}

fn comparable(status: &Value) -> Value {
    let mut s = status.clone();
    if let Some(refs) = s.get_mut("active").and_then(Value::as_array_mut) {
        for r in refs {
            if let Some(o) = r.as_object_mut() {
                o.retain(|k, _| k == "name");
            }
        }
    }
    if s.get("active")
        .is_some_and(|a| a.as_array().is_some_and(Vec::is_empty) || a.is_null())
    {
        if let Some(o) = s.as_object_mut() {
            o.remove("active");
        }
    }
    s
}

/// Finished Jobs (`Complete` or `Failed`) beyond `limit`, oldest start first.
fn over_history_limit(jobs: &[&Job], outcome: &str, limit: i32) -> Vec<JobRef> {
    let mut done: Vec<&&Job> = jobs
        .iter()
        .filter(|j| finished(j) == Some(outcome) && j.metadata.deletion_timestamp.is_none())
        .collect();
    let excess = done.len().saturating_sub(limit.max(0) as usize);
    done.sort_by_key(|j| (start_of(j), j.metadata.name.clone()));
    done.into_iter().take(excess).map(|j| job_ref(j)).collect()
}

/// The Job for start time `at`: the template's labels, annotations and spec, owned by the
/// CronJob.
fn new_job(cron: &CronJob, namespace: &str, name: &str, at: DateTime<Utc>) -> Value {
    let template = cron
        .spec
        .as_ref()
        .map(|s| serde_json::to_value(&s.job_template).unwrap_or_default())
        .unwrap_or_default();
    let mut annotations = template["metadata"]["annotations"].clone();
    if !annotations.is_object() {
        annotations = json!({});
    }
    annotations[SCHEDULED_TIMESTAMP_ANNOTATION] = json!(crate::model::timestamp(at));
    let mut metadata = json!({
        "name": name, "namespace": namespace, "annotations": annotations,
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob",
            "name": cron.metadata.name, "uid": cron.metadata.uid,
            "controller": true, "blockOwnerDeletion": true}],
    });
    if let Some(labels) = template["metadata"].get("labels").filter(|l| l.is_object()) {
        metadata["labels"] = labels.clone();
    }
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata,
           "spec": template.get("spec").cloned().unwrap_or_else(|| json!({}))})
}

#[cfg(test)]
mod tests;
