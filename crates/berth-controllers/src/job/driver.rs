//! The Job controller loop: on Job or pod changes (or when a back-off, deadline or TTL ends),
//! sync every Job — create and delete its pods, write its status — and delete finished Jobs
//! whose `ttlSecondsAfterFinished` has passed (upstream's TTL-after-finished controller).

use super::per_index::{FAILURE_COUNT_KEY, IGNORED_FAILURE_COUNT_KEY};
use super::sync::{is_finished, sync, ttl_expires_at, JobSync};
use super::tracking::{has_finalizer, FINALIZER};
use crate::claim::{claim, Candidate, Claim};
use crate::create_backoff::{self, CreateBackoff};
use crate::events;
use crate::model::{EventRecord, Involved, PodRef};
use crate::owned_pods::{pod_from_template, Owner};
use crate::recorder::Recorder;

/// The component Job events are recorded as.
const COMPONENT: &str = "job-controller";
use crate::wait::wait;
use crate::Clock;
use berth_core::labels::Selector;
use berth_informers::Informer;
use chrono::{DateTime, Duration, Utc};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// How long a created pod counts as on its way before the watch must have shown it.
const IN_FLIGHT_TIMEOUT: i64 = 30;

/// Pods created per Job uid that the watch has not shown yet: (pod name, when created, its
/// completion index in an Indexed Job).
type InFlight = BTreeMap<String, Vec<(String, DateTime<Utc>, Option<i32>)>>;

/// Runs Jobs through `client` (the job-controller) and deletes finished ones past their TTL
/// through `ttl_after_finished` (upstream's separate ttl-after-finished-controller).
pub(crate) async fn run(
    client: kube::Client,
    ttl_after_finished: kube::Client,
    informers: crate::informers::Informers,
    clock: Clock,
    metrics: crate::metrics::ControllerMetrics,
) {
    let queue = metrics.queue("job", &clock);
    // Upstream's ttl-after-finished controller's: each finished Job with a TTL is one key.
    let ttl_queue = metrics.queue("ttl_jobs_to_delete", &clock);
    let mut pods: Informer<Pod> = informers.pods.clone();
    let mut jobs: Informer<Job> = informers.shared();
    if !(jobs.synced().await && pods.synced().await) {
        return;
    }
    let mut in_flight = InFlight::new();
    let mut backoff = CreateBackoff::default();
    let recorder = Recorder::new(client.clone(), clock.clone());
    // Whether pods may still hold the tracking finalizer of a Job that is gone: true at start
    // and after a pass that saw Jobs or such pods.
    let mut orphans_possible = true;
    loop {
        let now = clock.now();
        let all_jobs: Vec<Arc<Job>> = jobs.store.state();
        // No Job, no pod to look at: most passes in a cluster without Jobs stop here.
        let all_pods: Vec<Arc<Pod>> = if all_jobs.is_empty() && !orphans_possible {
            Vec::new()
        } else {
            pods.store.state()
        };
        let orphans = release_orphans(client.clone(), &all_jobs, &all_pods).await;
        orphans_possible = !all_jobs.is_empty() || orphans > 0;
        let mut by_owner: HashMap<&str, Vec<&Pod>> = HashMap::new();
        // Pods without a controller, by namespace: candidates for adoption.
        let mut orphans: HashMap<&str, Vec<&Pod>> = HashMap::new();
        for p in &all_pods {
            let controller = p
                .metadata
                .owner_references
                .iter()
                .flatten()
                .find(|r| r.controller == Some(true));
            match controller {
                Some(r) if r.kind == "Job" && r.api_version == "batch/v1" => {
                    by_owner.entry(r.uid.as_str()).or_default().push(p.as_ref());
                }
                Some(_) => {}
                None => orphans
                    .entry(p.metadata.namespace.as_deref().unwrap_or(""))
                    .or_default()
                    .push(p.as_ref()),
            }
        }
        in_flight.retain(|uid, _| {
            all_jobs
                .iter()
                .any(|j| j.metadata.uid.as_deref() == Some(uid))
        });
        backoff.retain(|uid| {
            all_jobs
                .iter()
                .any(|j| j.metadata.uid.as_deref() == Some(uid))
        });
        let mut next: Option<DateTime<Utc>> = None;
        let mut later =
            |at: DateTime<Utc>| next = Some(next.map_or(at, |n: DateTime<Utc>| n.min(at)));
        let with_ttl = all_jobs
            .iter()
            .filter(|j| is_finished(j) && j.metadata.deletion_timestamp.is_none())
            .filter(|j| ttl_expires_at(j).is_some())
            .count();
        let mut ttl_pass = ttl_queue.pass(with_ttl);
        let mut pass = queue.pass(all_jobs.len());
        for job in &all_jobs {
            let work = pass.take();
            let uid = job.metadata.uid.clone().unwrap_or_default();
            let owned: &[&Pod] = by_owner.get(uid.as_str()).map_or(&[], |v| v.as_slice());
            let claimed;
            let mine: &[&Pod] = if is_finished(job) || job.metadata.deletion_timestamp.is_some() {
                owned
            } else {
                let candidates = orphans.get(ns_of(job)).map_or(&[][..], |v| v.as_slice());
                claimed = claim_pods(&client, job, owned, candidates).await;
                &claimed
            };
            if is_finished(job) || job.metadata.deletion_timestamp.is_some() {
                let s = sync(job, mine, &[], now);
                release(&Api::namespaced(client.clone(), ns_of(job)), &s.release).await;
                if job.metadata.deletion_timestamp.is_some() {
                    continue;
                }
                let _ttl_work = ttl_expires_at(job).map(|_| ttl_pass.take());
                match ttl_expires_at(job) {
                    Some(at) if at <= now => delete_job(&ttl_after_finished, job).await,
                    Some(at) => later(at),
                    None => {}
                }
                continue;
            }
            let waiting = in_flight.entry(uid.clone()).or_default();
            waiting.retain(|(name, at, _)| {
                now < *at + Duration::seconds(IN_FLIGHT_TIMEOUT)
                    && !mine
                        .iter()
                        .any(|p| p.metadata.name.as_deref() == Some(name))
            });
            let on_the_way: Vec<Option<i32>> = waiting.iter().map(|(_, _, i)| *i).collect();
            let s = sync(job, mine, &on_the_way, now);
            if let Some(at) = s.retry_at {
                later(at);
            }
            let failures = backoff.failures(&uid);
            let retry = Retry {
                backoff: &mut backoff,
                recorder: &recorder,
            };
            carry_out(&client, job, s, waiting, now, retry).await;
            if backoff.failures(&uid) > failures {
                work.retry();
            }
        }
        drop(pass);
        let until = [next, backoff.next_retry()]
            .into_iter()
            .flatten()
            .min()
            .map(|at| clock.instant_at(at));
        wait(&mut [&mut jobs.changed, &mut pods.changed], until).await;
    }
}

/// The per-Job create back-off and how refusals are reported.
struct Retry<'a> {
    backoff: &'a mut CreateBackoff,
    recorder: &'a Recorder,
}

async fn carry_out(
    client: &kube::Client,
    job: &Job,
    mut s: JobSync,
    in_flight: &mut Vec<(String, DateTime<Utc>, Option<i32>)>,
    now: DateTime<Utc>,
    retry: Retry<'_>,
) {
    let ns = job.metadata.namespace.clone().unwrap_or_default();
    let name = job.metadata.name.clone().unwrap_or_default();
    let uid = job.metadata.uid.clone().unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let owner = Owner {
        api_version: "batch/v1",
        kind: "Job",
        name: &name,
        uid: &uid,
    };
    let template = job
        .spec
        .as_ref()
        .and_then(|s| serde_json::to_value(&s.template).ok())
        .unwrap_or_default();
    // Pods are only created, deleted and released once the status that accounts for them is
    // stored: a pod released before its uid is recorded could go uncounted.
    if let Some(status) = s.status.take() {
        let api: Api<Job> = Api::namespaced(client.clone(), &ns);
        let patch = json!({"metadata": {"resourceVersion": job.metadata.resource_version},
                           "status": status});
        match crate::update::update_status(&api, &name, &patch).await {
            Ok(_) => {
                let said = [suspended_event(job, &status), finished_event(job, &status)];
                for e in said.into_iter().flatten() {
                    retry.recorder.record(COMPONENT, &e);
                }
            }
            // A newer Job is on its way through the watch; the next pass starts from it.
            Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => return,
            Err(e) => {
                tracing::warn!(job = %name, error = %e, "updating job status failed");
                return;
            }
        }
    }
    release(&pods, &s.release).await;
    let version = job.metadata.resource_version.as_deref();
    let backing_off = !retry.backoff.may_create(&uid, version, now);
    if backing_off {
        s.create = 0;
    }
    let mut refused = false;
    for n in 0..s.create {
        let index = s.create_indexes.get(n as usize).copied();
        let mut pod = pod_from_template(&template, &ns, &owner, None);
        pod["metadata"]["finalizers"] = json!([FINALIZER]);
        if let Some(i) = index {
            super::indexed::stamp(&mut pod, &name, i);
            if let Some((counted, forgiven)) = s.index_failure_counts.get(&i) {
                let annotations = &mut pod["metadata"]["annotations"];
                annotations[FAILURE_COUNT_KEY] = json!(counted.to_string());
                if *forgiven > 0 {
                    annotations[IGNORED_FAILURE_COUNT_KEY] = json!(forgiven.to_string());
                }
            }
        }
        let pod: Pod = match serde_json::from_value(pod) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(job = %name, error = %e, "job pod template unusable");
                break;
            }
        };
        match pods.create(&PostParams::default(), &pod).await {
            Ok(created) => {
                tracing::info!(job = %name, pod = ?created.metadata.name, "created job pod");
                let pod = created.metadata.name.clone().unwrap_or_default();
                retry
                    .recorder
                    .record(COMPONENT, &events::created_pod(&involved(job), &pod));
                in_flight.push((created.metadata.name.unwrap_or_default(), now, index));
            }
            Err(e) => {
                tracing::warn!(job = %name, error = %e, "creating job pod failed");
                failed_create(retry.recorder, job, &e);
                retry.backoff.failed(&uid, version, now);
                refused = true;
                break;
            }
        }
    }
    if !refused && !backing_off {
        retry.backoff.forget(&uid);
    }
    for pod in &s.delete {
        match delete_pod(&pods, pod).await {
            Ok(true) => retry
                .recorder
                .record(COMPONENT, &events::deleted_pod(&involved(job), &pod.name)),
            Ok(false) => {}
            Err(message) => retry
                .recorder
                .record(COMPONENT, &events::failed_delete(&involved(job), &message)),
        }
    }
}

/// The Job as its events name it.
fn involved(job: &Job) -> Involved {
    Involved::Workload {
        api_version: "batch/v1",
        kind: "Job",
        namespace: ns_of(job).to_string(),
        name: job.metadata.name.clone().unwrap_or_default(),
        uid: job.metadata.uid.clone().unwrap_or_default(),
        resource_version: crate::model::version_of(&job.metadata),
    }
}

/// `Suspended` or `Resumed`, when the `status` just written flips the Job's `Suspended`
/// condition (upstream's `syncJob`).
fn suspended_event(job: &Job, status: &serde_json::Value) -> Option<EventRecord> {
    let was = job
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Suspended"))
        .is_some_and(|c| c.status == "True");
    let now = status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Suspended")?["status"]
        == "True";
    (now != was).then(|| events::job_suspended(&involved(job), now))
}

/// `Completed` or the failure's reason, when the `status` just written finishes the Job
/// (a `Complete` or `Failed` condition it did not have; upstream `recordJobFinished`).
fn finished_event(job: &Job, status: &serde_json::Value) -> Option<EventRecord> {
    let had = |type_: &str| {
        job.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == type_ && c.status == "True"))
    };
    let conditions = status["conditions"].as_array()?;
    let finished = conditions.iter().find(|c| {
        let type_ = c["type"].as_str().unwrap_or("");
        matches!(type_, "Complete" | "Failed") && c["status"] == "True" && !had(type_)
    })?;
    let failure = (finished["type"] == "Failed").then(|| {
        let reason = match finished["reason"].as_str().unwrap_or("") {
            "BackoffLimitExceeded" => "BackoffLimitExceeded",
            "DeadlineExceeded" => "DeadlineExceeded",
            "PodFailurePolicy" => "PodFailurePolicy",
            "MaxFailedIndexesExceeded" => "MaxFailedIndexesExceeded",
            "FailedIndexes" => "FailedIndexes",
            _ => "Failed",
        };
        (reason, finished["message"].as_str().unwrap_or(""))
    });
    Some(events::job_finished(&involved(job), failure))
}

/// Records upstream's `FailedCreate` warning on the Job.
fn failed_create(recorder: &Recorder, job: &Job, error: &kube::Error) {
    let event = EventRecord {
        involved: involved(job),
        type_: "Warning",
        reason: create_backoff::FAILED_CREATE,
        message: create_backoff::error_creating(error),
    };
    recorder.record(COMPONENT, &event);
}

/// Adopts the orphan pods `job` selects (with the tracking finalizer, as upstream) and
/// releases the pods it owns but no longer selects; the pods it owns after that.
async fn claim_pods<'a>(
    client: &kube::Client,
    job: &Job,
    owned: &[&'a Pod],
    orphans: &[&'a Pod],
) -> Vec<&'a Pod> {
    let uid = job.metadata.uid.as_deref().unwrap_or("");
    let selector = job
        .spec
        .as_ref()
        .and_then(|s| s.selector.as_ref())
        .and_then(|s| serde_json::to_value(s).ok())
        .and_then(|s| Selector::from_label_selector(&s).ok());
    let Some(selector) = selector else {
        return owned.to_vec();
    };
    let name = job.metadata.name.clone().unwrap_or_default();
    let owner = Owner {
        api_version: "batch/v1",
        kind: "Job",
        name: &name,
        uid,
    };
    let api: Api<Pod> = Api::namespaced(client.clone(), ns_of(job));
    let mut claimed = Vec::with_capacity(owned.len());
    for &pod in owned.iter().chain(orphans) {
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        let controller = pod
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|r| r.controller == Some(true))
            .map(|r| r.uid.as_str());
        let candidate = Candidate {
            controller_uid: controller,
            selected: !labels.is_empty()
                && selector.matches_fn(|k| labels.get(k).map(String::as_str)),
            deleting: pod.metadata.deletion_timestamp.is_some(),
        };
        let refs = pod.metadata.owner_references.iter().flatten();
        let pod_name = pod.metadata.name.clone().unwrap_or_default();
        match claim(uid, false, candidate) {
            Claim::Owned => claimed.push(pod),
            Claim::Ignore => {}
            Claim::Adopt => {
                // Upstream's adoption patch: merged into the pod's references and finalizers
                // by uid, with no resourceVersion, so the orphan finalizer release of the same
                // pass cannot make it conflict (a lost adoption would make the Job create a
                // replacement and then delete one pod too many). The pod's uid guards against
                // a same-named replacement; the API server refuses a second controller.
                let patch = json!({"metadata": {"ownerReferences": [owner.reference()],
                                                "finalizers": [FINALIZER],
                                                "uid": pod.metadata.uid}});
                if patch_pod(&api, &pod_name, &Patch::Strategic(&patch), "adopting").await {
                    claimed.push(pod);
                }
            }
            Claim::Release => {
                let refs: Vec<serde_json::Value> = refs
                    .filter(|r| r.uid != uid)
                    .filter_map(|r| serde_json::to_value(r).ok())
                    .collect();
                let patch = json!({"metadata": {"ownerReferences": refs,
                                                "resourceVersion": pod.metadata.resource_version}});
                if !patch_pod(&api, &pod_name, &Patch::Merge(&patch), "releasing").await {
                    claimed.push(pod);
                }
            }
        }
    }
    claimed
}

/// Patches a pod; whether it was written (a conflict or absence is for the next pass).
async fn patch_pod(
    api: &Api<Pod>,
    name: &str,
    patch: &Patch<&serde_json::Value>,
    what: &str,
) -> bool {
    match api.patch(name, &PatchParams::default(), patch).await {
        Ok(_) => true,
        // Gone, changed, replaced (uid) or already controlled: the next pass sees why.
        Err(kube::Error::Api(e)) if matches!(e.code, 404 | 409 | 422) => false,
        Err(e) => {
            tracing::warn!(pod = %name, error = %e, "{what} a job pod failed");
            false
        }
    }
}

fn ns_of(job: &Job) -> &str {
    job.metadata.namespace.as_deref().unwrap_or_default()
}

/// Removes the tracking finalizer from each pod (gone already is as good).
async fn release(pods: &Api<Pod>, which: &[PodRef]) {
    let patch = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": [FINALIZER]}});
    for pod in which {
        match pods
            .patch(
                &pod.name,
                &PatchParams::default(),
                &Patch::Strategic(&patch),
            )
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => tracing::warn!(pod = %pod.name, error = %e, "releasing job pod failed"),
        }
    }
}

/// Releases pods that hold the tracking finalizer of a Job that no longer exists (upstream's
/// orphan pod handling); returns how many it found.
async fn release_orphans(client: kube::Client, jobs: &[Arc<Job>], pods: &[Arc<Pod>]) -> usize {
    let mut found = 0;
    for pod in pods.iter().filter(|p| has_finalizer(p)) {
        let owned = pod.metadata.owner_references.iter().flatten().any(|r| {
            r.controller == Some(true)
                && r.kind == "Job"
                && jobs
                    .iter()
                    .any(|j| j.metadata.uid.as_deref() == Some(r.uid.as_str()))
        });
        if !owned {
            found += 1;
            let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
            release(&Api::namespaced(client.clone(), ns), &[PodRef::of(pod)]).await;
        }
    }
    found
}

/// Deletes a pod of the Job: `Ok(true)` when deleted, `Ok(false)` when already gone or
/// replaced, else the API server's message.
async fn delete_pod(pods: &Api<Pod>, pod: &PodRef) -> Result<bool, String> {
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(pod.uid.clone()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match pods.delete(&pod.name, &params).await {
        Ok(_) => {
            tracing::info!(pod = %pod.name, "deleted job pod");
            Ok(true)
        }
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => Ok(false),
        Err(e) => {
            tracing::warn!(pod = %pod.name, error = %e, "deleting job pod failed");
            Err(create_backoff::api_message(&e))
        }
    }
}

/// Deletes a Job whose TTL after finishing has passed; its pods go with it (background
/// propagation, as upstream's TTL controller).
async fn delete_job(client: &kube::Client, job: &Job) {
    let ns = job.metadata.namespace.clone().unwrap_or_default();
    let name = job.metadata.name.clone().unwrap_or_default();
    let api: Api<Job> = Api::namespaced(client.clone(), &ns);
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: job.metadata.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::background()
    };
    match api.delete(&name, &params).await {
        Ok(_) => tracing::info!(job = %name, "deleted job after its ttlSecondsAfterFinished"),
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
        Err(e) => tracing::warn!(job = %name, error = %e, "deleting finished job failed"),
    }
}

#[cfg(test)]
mod event_tests {
    use super::*;

    fn job(conditions: serde_json::Value) -> Job {
        serde_json::from_value(json!({
            "metadata": {"name": "pi", "namespace": "ns", "uid": "u"},
            "status": {"conditions": conditions},
        }))
        .unwrap()
    }

    fn said(e: Option<EventRecord>) -> Option<(&'static str, &'static str, String)> {
        e.map(|e| (e.type_, e.reason, e.message))
    }

    #[test]
    fn a_status_that_completes_the_job_records_completed_once() {
        let status = json!({"conditions": [{"type": "Complete", "status": "True"}]});
        assert_eq!(
            said(finished_event(&job(json!([])), &status)),
            Some(("Normal", "Completed", "Job completed".into()))
        );
        // Already complete: the status is rewritten, nothing is recorded again.
        let done = job(json!([{"type": "Complete", "status": "True"}]));
        assert_eq!(said(finished_event(&done, &status)), None);
    }

    #[test]
    fn a_failed_job_records_its_condition_s_reason_and_message() {
        let status = json!({"conditions": [
            {"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded"},
            {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
             "message": "Job has reached the specified backoff limit"}]});
        assert_eq!(
            said(finished_event(&job(json!([])), &status)),
            Some((
                "Warning",
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit".into()
            ))
        );
    }

    #[test]
    fn suspending_and_resuming_are_recorded_when_the_condition_flips() {
        let suspended = json!({"conditions": [{"type": "Suspended", "status": "True"}]});
        let resumed = json!({"conditions": [{"type": "Suspended", "status": "False"}]});
        assert_eq!(
            said(suspended_event(&job(json!([])), &suspended)),
            Some(("Normal", "Suspended", "Job suspended".into()))
        );
        let was = job(json!([{"type": "Suspended", "status": "True"}]));
        assert_eq!(said(suspended_event(&was, &suspended)), None);
        assert_eq!(
            said(suspended_event(&was, &resumed)),
            Some(("Normal", "Resumed", "Job resumed".into()))
        );
    }
}
