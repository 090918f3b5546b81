//! One Job's sync: its pods counted, the engine's [`step`](super::step) taken, and what the
//! driver writes — pods to create and delete, the new `status` — as upstream's `syncJob`
//! (NonIndexed and Indexed completion). Pure: the Job, its pods and `now` in, a [`JobSync`] out.

use super::failure_policy::{matching_rule, Action};
use super::indexed::{format_intervals, index_of, next_indexes, parse_intervals};
use super::per_index;
use super::success_policy;
use super::tracking::{has_finalizer, track, Ending};
use super::{backoff, step, Failure, JobSpec, PodCounts, Step};
use crate::model::{is_deleting, to_chrono, PodRef};
use crate::owned_pods::{is_ready, phase};
use chrono::{DateTime, Duration, Utc};
use k8s_openapi::api::batch::v1::{Job, JobCondition};
use k8s_openapi::api::core::v1::Pod;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashSet};

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
    /// Pods whose tracking finalizer goes once `status` is stored (they are counted, or the
    /// Job no longer needs them).
    pub release: Vec<PodRef>,
    /// Under a per-index back-off limit, the failure counts (counted, forgiven) each created
    /// index's pod carries.
    pub index_failure_counts: BTreeMap<i32, (i32, i32)>,
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
    Some(berth_core::clock::add_seconds(
        finished_at(job)?,
        ttl.into(),
    ))
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

/// Syncs one Job. `pods` are the pods it controls; `in_flight` the pods it created that the
/// watch has not shown yet (they count as active), with their completion indexes.
pub fn sync(job: &Job, pods: &[&Pod], in_flight: &[Option<i32>], now: DateTime<Utc>) -> JobSync {
    if is_finished(job) || job.metadata.deletion_timestamp.is_some() {
        // Its pods were counted (or no longer matter): nothing need hold them.
        return JobSync {
            release: pods
                .iter()
                .filter(|p| has_finalizer(p))
                .map(|p| PodRef::of(p))
                .collect(),
            ..JobSync::default()
        };
    }
    let spec = job_spec(job);
    let status = job.status.clone().unwrap_or_default();
    let mut active: Vec<&Pod> = pods
        .iter()
        .copied()
        .filter(|p| !is_deleting(p) && !matches!(phase(p), "Succeeded" | "Failed"))
        .collect();
    let failures = Failures::of(job, pods);
    let completions = spec.completions.unwrap_or(0);
    let mut indexes = is_indexed(job).then(|| Indexes::of(job, &spec, pods, in_flight));
    let mut surplus = Vec::new();
    let mut held_by_index: BTreeMap<i32, &Pod> = BTreeMap::new();
    if let Some(ix) = &mut indexes {
        if let Some(limit) = per_index::limit(job) {
            ix.failed = Some(per_index::failed_indexes(job, pods, limit, completions));
        }
        let settled: BTreeSet<i32> = ix.settled().collect();
        // Pods of finished, failed, invalid or doubled indexes go.
        surplus = ix.surplus.clone();
        for p in &active {
            if index_of(p, completions).is_some_and(|i| ix.failed.iter().flatten().any(|f| *f == i))
            {
                surplus.push(PodRef::of(p));
            }
        }
        active.retain(|p| {
            !surplus
                .iter()
                .any(|s: &PodRef| Some(&s.uid) == p.metadata.uid.as_ref())
        });
        if ix.failed.is_some() {
            held_by_index = per_index::last_failures(job, pods, completions, &settled, &ix.active);
        }
    }
    let held: HashSet<&str> = held_by_index
        .values()
        .filter_map(|p| p.metadata.uid.as_deref())
        .collect();
    let recorded_indexes = indexes
        .as_ref()
        .map(|ix| ix.succeeded.clone())
        .unwrap_or_default();
    // A Job with an interim condition stored is ending: it waits for its pods to be counted.
    let interim = ending_condition(job);
    let mut tally = track(
        job,
        pods,
        interim.as_ref().map(|(e, _)| *e),
        &held,
        &recorded_indexes,
    );
    let mut counts = PodCounts {
        active: active.len() as i32 + in_flight.len() as i32,
        succeeded: tally.all_succeeded(),
        failed: tally.all_failed(),
        fail_job: failures.fail_job,
    };
    if let Some(ix) = &indexes {
        counts.succeeded = ix.succeeded.len() as i32;
    }
    let started = status
        .start_time
        .as_ref()
        .map(to_chrono)
        .or((!spec.suspend).then_some(now));
    let last_failure = failures.counted.iter().filter_map(|p| finished(p)).max();
    let mut out = JobSync::default();
    let active_count = counts.active;
    // An Indexed Job's success policy, once a rule holds, completes it.
    let success = match (&interim, &indexes) {
        (None, Some(ix)) => {
            success_policy::matched(job, completions, &ix.succeeded).map(|m| Failure::Stored {
                reason: success_policy::REASON.into(),
                message: m,
            })
        }
        _ => None,
    };
    let decided = match &interim {
        Some((Ending::Fail, Some(failure))) => Step::Fail(failure.clone()),
        Some(_) => Step::Complete,
        None => match step(&spec, counts, started, last_failure, now) {
            Step::Fail(f) => Step::Fail(f),
            other => match indexes
                .as_ref()
                .and_then(|ix| ix.failed_job(job, completions))
            {
                Some(f) => Step::Fail(f),
                None if success.is_some() => Step::Complete,
                None => other,
            },
        },
    };
    let mut ending: Option<(Ending, Option<Failure>)> = None;
    match decided {
        Step::Fail(failure) => {
            out.delete = active.iter().map(|p| PodRef::of(p)).collect();
            ending = Some((Ending::Fail, Some(failure)));
        }
        Step::Complete => {
            out.delete = active.iter().map(|p| PodRef::of(p)).collect();
            // The reason and message: a stored `SuccessCriteriaMet`'s, a matched success
            // policy's, else "CompletionsReached".
            let stored = interim.as_ref().and_then(|(_, f)| f.clone());
            ending = Some((Ending::Complete, stored.or(success)));
        }
        Step::Create { count, wait } => match (&indexes, spec.completions) {
            (Some(ix), Some(completions)) if ix.failed.is_some() => {
                // Each index waits out its own back-off.
                let pending = next_indexes(
                    completions,
                    &ix.settled().collect(),
                    &ix.active,
                    completions,
                );
                for i in pending {
                    let previous = held_by_index.get(&i).copied();
                    let ready_at = previous.and_then(|p| {
                        Some(finished(p)? + backoff(per_index::failures_before_retry(p)))
                    });
                    match ready_at {
                        Some(at) if at > now => {
                            out.retry_at =
                                Some(out.retry_at.map_or(at, |r: DateTime<Utc>| r.min(at)))
                        }
                        _ if (out.create_indexes.len() as i32) < count => {
                            out.create_indexes.push(i);
                            out.index_failure_counts
                                .insert(i, per_index::replacement_counts(job, previous));
                        }
                        _ => {}
                    }
                }
                out.create = out.create_indexes.len() as i32;
            }
            (Some(ix), Some(completions)) if wait <= Duration::zero() => {
                out.create_indexes = next_indexes(completions, &ix.succeeded, &ix.active, count);
                out.create = out.create_indexes.len() as i32;
            }
            (None, _) if wait <= Duration::zero() => out.create = count,
            _ => out.retry_at = Some(now + wait),
        },
        Step::Delete(n) => out.delete = to_delete(&active, n),
        Step::Wait => {}
    }
    out.delete.extend(surplus);
    if let Some((e, _)) = &ending {
        if interim.is_none() {
            tally = track(job, pods, Some(*e), &held, &recorded_indexes);
        }
    }
    // Deleted pods are released first, so that they are not held as failures.
    for d in &out.delete {
        let tracked = pods
            .iter()
            .any(|p| p.metadata.uid.as_ref() == Some(&d.uid) && has_finalizer(p));
        if tracked && !tally.release.contains(d) {
            tally.release.push(d.clone());
        }
    }
    if let (Some(deadline), Some(started), None) = (spec.active_deadline_seconds, started, &ending)
    {
        let at = berth_core::clock::add_seconds(started, deadline);
        out.retry_at = Some(out.retry_at.map_or(at, |r| r.min(at)));
    }
    let mut conditions: Vec<Value> = conditions(job)
        .iter()
        .filter_map(|c| serde_json::to_value(c).ok())
        .collect();
    let mut completion_time = status.completion_time.as_ref().map(to_chrono);
    if let Some((e, failure)) = &ending {
        let (interim_type, final_type) = match e {
            Ending::Fail => ("FailureTarget", "Failed"),
            Ending::Complete => ("SuccessCriteriaMet", "Complete"),
        };
        let (reason, message) = match failure {
            Some(f) => (f.reason(), f.message()),
            None => COMPLETIONS_REACHED,
        };
        if interim.is_none() {
            conditions.push(condition(interim_type, reason, message, now));
        }
        // The final condition waits until every pod the Job held is counted.
        if tally.settled() && tally.release.is_empty() {
            conditions.push(condition(final_type, reason, message, now));
            if *e == Ending::Complete {
                completion_time = Some(now);
            }
        }
    }
    let finishing = ending.is_some();
    let active_after = if finishing {
        0
    } else {
        active_count + out.create - out.delete.len() as i32
    };
    let ready = active.iter().filter(|p| is_ready(p)).count() as i32;
    // An empty list is written as null: the status is stored through a merge, where `[]`
    // would be kept as such and an absent key would keep the old list.
    let listed = |uids: &Vec<String>| (!uids.is_empty()).then(|| json!(uids));
    let uncounted = json!({"succeeded": listed(&tally.uncounted_succeeded),
                           "failed": listed(&tally.uncounted_failed)});
    let mut next = json!({
        "active": active_after,
        "succeeded": tally.succeeded,
        "failed": tally.failed,
        "ready": if finishing { 0 } else { ready },
        "terminating": pods.iter().filter(|p| is_deleting(p) && !matches!(phase(p), "Succeeded" | "Failed")).count(),
        "uncountedTerminatedPods": uncounted,
    });
    if let Some(s) = started {
        next["startTime"] = json!(crate::model::timestamp(s));
    }
    if let Some(c) = completion_time {
        next["completionTime"] = json!(crate::model::timestamp(c));
    }
    if let Some(ix) = &indexes {
        let mut done = ix.succeeded.clone();
        done.extend(tally.new_succeeded_indexes.iter().copied());
        // An index counts once, however many of its pods succeeded.
        next["succeeded"] = json!(done.len());
        next["completedIndexes"] = json!(format_intervals(&done));
        if let Some(failed) = &ix.failed {
            next["failedIndexes"] = json!(format_intervals(failed));
        }
    }
    if !conditions.is_empty() {
        next["conditions"] = json!(conditions);
    }
    let stored = serde_json::to_value(&status).unwrap_or_default();
    if strip_zeros(&stored) != strip_zeros(&next) {
        out.status = Some(next);
    }
    out.release = tally.release;
    out
}

/// The ending a Job's stored interim condition (`FailureTarget`, `SuccessCriteriaMet`) names.
fn ending_condition(job: &Job) -> Option<(Ending, Option<Failure>)> {
    conditions(job).iter().find_map(|c| {
        if c.status != "True" {
            return None;
        }
        match c.type_.as_str() {
            "FailureTarget" => Some((
                Ending::Fail,
                Some(Failure::Stored {
                    reason: c.reason.clone().unwrap_or_default(),
                    message: c.message.clone().unwrap_or_default(),
                }),
            )),
            "SuccessCriteriaMet" => Some((
                Ending::Complete,
                Some(Failure::Stored {
                    reason: c.reason.clone().unwrap_or_default(),
                    message: c.message.clone().unwrap_or_default(),
                }),
            )),
            _ => None,
        }
    })
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
    /// Under a per-index back-off limit, the indexes that failed.
    failed: Option<BTreeSet<i32>>,
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
            failed: None,
        }
    }

    /// Indexes that need no more pods: succeeded or failed.
    fn settled(&self) -> impl Iterator<Item = i32> + '_ {
        self.succeeded
            .iter()
            .chain(self.failed.iter().flatten())
            .copied()
    }

    /// How failed indexes fail the Job (upstream checks `maxFailedIndexes` first).
    fn failed_job(&self, job: &Job, completions: i32) -> Option<Failure> {
        let failed = self.failed.as_ref()?;
        let max = job.spec.as_ref().and_then(|s| s.max_failed_indexes);
        if max.is_some_and(|m| failed.len() as i64 > i64::from(m)) {
            Some(Failure::MaxFailedIndexesExceeded)
        } else if !failed.is_empty()
            && (failed.len() + self.succeeded.len()) as i64 >= i64::from(completions)
        {
            Some(Failure::FailedIndexes)
        } else {
            None
        }
    }
}

/// When a finished pod ended: its `Ready` condition's last transition.
pub(super) fn finished(pod: &Pod) -> Option<DateTime<Utc>> {
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

/// A status without its zero counts, nulls and empty objects (at every level), so that an
/// unset field and its zero compare equal.
fn strip_zeros(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), strip_zeros(v)))
                .filter(|(_, v)| {
                    !(v.is_null() || *v == json!(0) || *v == json!({}) || *v == json!([]))
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests;
