//! One Job's sync: its pods counted, the engine's [`step`](super::step) taken, and what the
//! driver writes — pods to create and delete, the new `status` — as upstream's `syncJob`
//! (NonIndexed and Indexed completion). Pure: the Job, its pods and `now` in, a [`JobSync`] out.

use super::failure_policy::{matching_rule, Action};
use super::indexed::{format_intervals, index_of, next_indexes, parse_intervals};
use super::{step, Failure, JobSpec, PodCounts, Step};
use crate::model::{is_deleting, to_chrono, PodRef};
use crate::owned_pods::{is_ready, phase};
use chrono::{DateTime, Duration, Utc};
use k8s_openapi::api::batch::v1::{Job, JobCondition};
use k8s_openapi::api::core::v1::Pod;
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// What one sync of a Job decided.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobSync {
    /// How many pods to create now.
    pub create: i32,
    /// For an Indexed Job, the completion index of each pod to create (`create` of them).
    pub create_indexes: Vec<i32>,
    /// Active pods to delete.
    pub delete: Vec<PodRef>,
    /// The new `status`, when it differs from the stored one.
    pub status: Option<Value>,
    /// When to sync again though nothing changes (a back-off or the active deadline ends).
    pub retry_at: Option<DateTime<Utc>>,
}

/// The reason and message of the `Complete` and `SuccessCriteriaMet` conditions.
const COMPLETIONS_REACHED: (&str, &str) = (
    "CompletionsReached",
    "Reached expected number of succeeded pods",
);

/// Whether the Job has a `Complete` or `Failed` condition that is `True`.
pub fn is_finished(job: &Job) -> bool {
    finished_at(job).is_some()
}

/// When the Job finished (its `Complete` or `Failed` condition's transition), if it has.
pub fn finished_at(job: &Job) -> Option<DateTime<Utc>> {
    conditions(job)
        .iter()
        .find(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
        .map(|c| {
            c.last_transition_time
                .as_ref()
                .map_or_else(DateTime::default, to_chrono)
        })
}

/// When a finished Job with `ttlSecondsAfterFinished` is due for deletion.
pub fn ttl_expires_at(job: &Job) -> Option<DateTime<Utc>> {
    let ttl = job.spec.as_ref()?.ttl_seconds_after_finished?;
    Some(finished_at(job)? + Duration::seconds(ttl.into()))
}

fn conditions(job: &Job) -> &[JobCondition] {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or(&[])
}

/// The engine's view of a Job's spec.
pub fn job_spec(job: &Job) -> JobSpec {
    let spec = job.spec.clone().unwrap_or_default();
    JobSpec {
        completions: spec.completions,
        parallelism: spec.parallelism.unwrap_or(1),
        backoff_limit: spec.backoff_limit.unwrap_or(6),
        active_deadline_seconds: spec.active_deadline_seconds,
        suspend: spec.suspend.unwrap_or(false),
    }
}

/// Whether the Job's pods carry completion indexes.
pub fn is_indexed(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.completion_mode.as_deref()) == Some("Indexed")
}

/// Syncs one unfinished Job. `pods` are the pods it controls; `in_flight` the pods it created
/// that the watch has not shown yet (they count as active), with their completion indexes.
pub fn sync(job: &Job, pods: &[&Pod], in_flight: &[Option<i32>], now: DateTime<Utc>) -> JobSync {
    if is_finished(job) {
        return JobSync::default();
    }
    let spec = job_spec(job);
    let status = job.status.clone().unwrap_or_default();
    let mut active: Vec<&Pod> = pods
        .iter()
        .copied()
        .filter(|p| !is_deleting(p) && !matches!(phase(p), "Succeeded" | "Failed"))
        .collect();
    let count = |ph: &str| pods.iter().filter(|p| phase(p) == ph).count() as i32;
    let failures = Failures::of(job, pods);
    // Counted pods stay counted after they are gone (pod GC, a user's delete).
    let mut counts = PodCounts {
        active: active.len() as i32 + in_flight.len() as i32,
        succeeded: count("Succeeded").max(status.succeeded.unwrap_or(0)),
        failed: (failures.counted.len() as i32).max(status.failed.unwrap_or(0)),
        fail_job: failures.fail_job,
    };
    let indexes = is_indexed(job).then(|| Indexes::of(job, &spec, pods, in_flight));
    let mut surplus = Vec::new();
    if let Some(ix) = &indexes {
        // An index counts once it succeeded; pods of finished, invalid or doubled indexes go.
        counts.succeeded = ix.succeeded.len() as i32;
        surplus = ix.surplus.clone();
        active.retain(|p| {
            !surplus
                .iter()
                .any(|s: &PodRef| Some(&s.uid) == p.metadata.uid.as_ref())
        });
        counts.active = active.len() as i32 + in_flight.len() as i32;
    }
    let started = status
        .start_time
        .as_ref()
        .map(to_chrono)
        .or((!spec.suspend).then_some(now));
    let last_failure = failures.counted.iter().filter_map(|p| finished(p)).max();
    let mut out = JobSync::default();
    let mut new_conditions: Vec<Value> = Vec::new();
    let mut completion_time = status.completion_time.as_ref().map(to_chrono);
    let (active_count, succeeded, failed) = (counts.active, counts.succeeded, counts.failed);
    match step(&spec, counts, started, last_failure, now) {
        Step::Fail(failure) => {
            out.delete = active.iter().map(|p| PodRef::of(p)).collect();
            new_conditions = failed_conditions(failure, now);
        }
        Step::Complete => {
            out.delete = active.iter().map(|p| PodRef::of(p)).collect();
            new_conditions = complete_conditions(now);
            completion_time = Some(now);
        }
        Step::Create { count, wait } if wait <= Duration::zero() => {
            out.create = count;
            if let (Some(ix), Some(completions)) = (&indexes, spec.completions) {
                out.create_indexes = next_indexes(completions, &ix.succeeded, &ix.active, count);
                out.create = out.create_indexes.len() as i32;
            }
        }
        Step::Create { wait, .. } => out.retry_at = Some(now + wait),
        Step::Delete(n) => out.delete = to_delete(&active, n),
        Step::Wait => {}
    }
    out.delete.extend(surplus);
    if let (Some(deadline), Some(started), true) = (
        spec.active_deadline_seconds,
        started,
        new_conditions.is_empty(),
    ) {
        let at = started + Duration::seconds(deadline);
        out.retry_at = Some(out.retry_at.map_or(at, |r| r.min(at)));
    }
    let finishing = !new_conditions.is_empty();
    let active_after = if finishing {
        0
    } else {
        active_count + out.create - out.delete.len() as i32
    };
    let ready = active.iter().filter(|p| is_ready(p)).count() as i32;
    let mut conditions: Vec<Value> = conditions(job)
        .iter()
        .filter_map(|c| serde_json::to_value(c).ok())
        .collect();
    conditions.extend(new_conditions);
    let mut next = json!({
        "active": active_after,
        "succeeded": succeeded,
        "failed": failed,
        "ready": if finishing { 0 } else { ready },
        "terminating": pods.iter().filter(|p| is_deleting(p) && !matches!(phase(p), "Succeeded" | "Failed")).count(),
        "uncountedTerminatedPods": {},
    });
    if let Some(s) = started {
        next["startTime"] = json!(crate::model::timestamp(s));
    }
    if let Some(c) = completion_time {
        next["completionTime"] = json!(crate::model::timestamp(c));
    }
    if let Some(ix) = &indexes {
        next["completedIndexes"] = json!(format_intervals(&ix.succeeded));
    }
    if !conditions.is_empty() {
        next["conditions"] = json!(conditions);
    }
    let stored = serde_json::to_value(&status).unwrap_or_default();
    if strip_zeros(&stored) != strip_zeros(&next) {
        out.status = Some(next);
    }
    out
}

/// The Job's failed pods as its `podFailurePolicy` reads them.
struct Failures<'a> {
    /// Failed pods that count towards `backoffLimit`: all of them without a policy, else those
    /// no `Ignore` rule matched.
    counted: Vec<&'a Pod>,
    /// The message of the first failed pod that matched a `FailJob` rule.
    fail_job: Option<String>,
}

impl<'a> Failures<'a> {
    fn of(job: &Job, pods: &[&'a Pod]) -> Failures<'a> {
        let policy = job
            .spec
            .as_ref()
            .and_then(|s| s.pod_failure_policy.as_ref());
        let mut out = Failures {
            counted: Vec::new(),
            fail_job: None,
        };
        for pod in pods.iter().copied().filter(|p| phase(p) == "Failed") {
            let matched = policy.and_then(|policy| matching_rule(policy, pod));
            match matched {
                Some(m) if m.action == Action::Ignore => continue,
                Some(m) if m.action == Action::FailJob && out.fail_job.is_none() => {
                    out.fail_job = Some(m.message);
                }
                // `Count`, and `FailIndex` (per-index back-off limits are not implemented:
                // the failure counts towards backoffLimit).
                _ => {}
            }
            out.counted.push(pod);
        }
        out
    }
}

/// The completion indexes of an Indexed Job's pods.
struct Indexes {
    /// Indexes with a succeeded pod (or recorded as completed in the status).
    succeeded: BTreeSet<i32>,
    /// Indexes with a running (or on its way) pod.
    active: BTreeSet<i32>,
    /// Active pods to delete: no valid index, an index already completed, or a second pod of one.
    surplus: Vec<PodRef>,
}

impl Indexes {
    fn of(job: &Job, spec: &JobSpec, pods: &[&Pod], in_flight: &[Option<i32>]) -> Indexes {
        let completions = spec.completions.unwrap_or(0);
        let recorded = job
            .status
            .as_ref()
            .and_then(|s| s.completed_indexes.as_deref())
            .unwrap_or("");
        let mut succeeded = parse_intervals(recorded, completions);
        succeeded.extend(
            pods.iter()
                .filter(|p| phase(p) == "Succeeded")
                .filter_map(|p| index_of(p, completions)),
        );
        let mut active: BTreeSet<i32> = in_flight.iter().flatten().copied().collect();
        let mut surplus = Vec::new();
        for p in pods
            .iter()
            .filter(|p| !is_deleting(p) && !matches!(phase(p), "Succeeded" | "Failed"))
        {
            match index_of(p, completions) {
                Some(i) if !succeeded.contains(&i) && active.insert(i) => {}
                _ => surplus.push(PodRef::of(p)),
            }
        }
        Indexes {
            succeeded,
            active,
            surplus,
        }
    }
}

/// When a finished pod ended: its `Ready` condition's last transition.
fn finished(pod: &Pod) -> Option<DateTime<Utc>> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")?
        .last_transition_time
        .as_ref()
        .map(to_chrono)
}

/// The `n` active pods to delete first: not ready before ready, then the newest.
fn to_delete(active: &[&Pod], n: i32) -> Vec<PodRef> {
    let mut ranked: Vec<&&Pod> = active.iter().collect();
    ranked.sort_by_key(|p| {
        (
            is_ready(p),
            std::cmp::Reverse(p.metadata.creation_timestamp.as_ref().map(to_chrono)),
        )
    });
    ranked
        .into_iter()
        .take(n.max(0) as usize)
        .map(|p| PodRef::of(p))
        .collect()
}

fn condition(type_: &str, reason: &str, message: &str, now: DateTime<Utc>) -> Value {
    let at = crate::model::timestamp(now);
    json!({"type": type_, "status": "True", "reason": reason, "message": message,
           "lastProbeTime": at, "lastTransitionTime": at})
}

/// `FailureTarget` and `Failed`, as upstream 1.32 adds them.
fn failed_conditions(failure: Failure, now: DateTime<Utc>) -> Vec<Value> {
    ["FailureTarget", "Failed"]
        .iter()
        .map(|t| condition(t, failure.reason(), failure.message(), now))
        .collect()
}

/// `SuccessCriteriaMet` and `Complete`, as upstream 1.32 adds them.
fn complete_conditions(now: DateTime<Utc>) -> Vec<Value> {
    let (reason, message) = COMPLETIONS_REACHED;
    ["SuccessCriteriaMet", "Complete"]
        .iter()
        .map(|t| condition(t, reason, message, now))
        .collect()
}

/// A status without its zero counts and empty objects, so that an unset field and its zero
/// compare equal.
fn strip_zeros(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| {
                    !(v.is_null() || *v == &json!(0) || *v == &json!({}) || *v == &json!([]))
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests;
