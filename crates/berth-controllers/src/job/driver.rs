//! The Job controller loop: on Job or pod changes (or when a back-off, deadline or TTL ends),
//! sync every Job — create and delete its pods, write its status — and delete finished Jobs
//! whose `ttlSecondsAfterFinished` has passed (upstream's TTL-after-finished controller).

use super::sync::{is_finished, sync, ttl_expires_at, JobSync};
use crate::model::PodRef;
use crate::owned_pods::{pod_from_template, Owner};
use crate::wait::wait;
use crate::Clock;
use berth_informers::Informer;
use chrono::{DateTime, Duration, Utc};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use kube::runtime::watcher;
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
    mut pods: Informer<Pod>,
    clock: Clock,
) {
    let mut jobs: Informer<Job> =
        Informer::start(Api::all(client.clone()), watcher::Config::default());
    if !(jobs.synced().await && pods.synced().await) {
        return;
    }
    let mut in_flight = InFlight::new();
    loop {
        let now = clock.now();
        let all_jobs: Vec<Arc<Job>> = jobs.store.state();
        // No Job, no pod to look at: most passes in a cluster without Jobs stop here.
        let all_pods: Vec<Arc<Pod>> = if all_jobs.is_empty() {
            Vec::new()
        } else {
            pods.store.state()
        };
        let mut by_owner: HashMap<&str, Vec<&Pod>> = HashMap::new();
        for p in &all_pods {
            let owner = p.metadata.owner_references.iter().flatten().find(|r| {
                r.controller == Some(true) && r.kind == "Job" && r.api_version == "batch/v1"
            });
            if let Some(r) = owner {
                by_owner.entry(r.uid.as_str()).or_default().push(p.as_ref());
            }
        }
        in_flight.retain(|uid, _| {
            all_jobs
                .iter()
                .any(|j| j.metadata.uid.as_deref() == Some(uid))
        });
        let mut next: Option<DateTime<Utc>> = None;
        let mut later =
            |at: DateTime<Utc>| next = Some(next.map_or(at, |n: DateTime<Utc>| n.min(at)));
        for job in &all_jobs {
            if job.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let uid = job.metadata.uid.clone().unwrap_or_default();
            if is_finished(job) {
                match ttl_expires_at(job) {
                    Some(at) if at <= now => delete_job(&ttl_after_finished, job).await,
                    Some(at) => later(at),
                    None => {}
                }
                continue;
            }
            let mine: &[&Pod] = by_owner.get(uid.as_str()).map_or(&[], |v| v.as_slice());
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
            carry_out(&client, job, s, waiting, now).await;
        }
        let until = next.map(|at| clock.instant_at(at));
        wait(&mut [&mut jobs.changed, &mut pods.changed], until).await;
    }
}

async fn carry_out(
    client: &kube::Client,
    job: &Job,
    s: JobSync,
    in_flight: &mut Vec<(String, DateTime<Utc>, Option<i32>)>,
    now: DateTime<Utc>,
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
    for n in 0..s.create {
        let index = s.create_indexes.get(n as usize).copied();
        let mut pod = pod_from_template(&template, &ns, &owner, None);
        if let Some(i) = index {
            super::indexed::stamp(&mut pod, &name, i);
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
                in_flight.push((created.metadata.name.unwrap_or_default(), now, index));
            }
            Err(e) => {
                tracing::warn!(job = %name, error = %e, "creating job pod failed");
                break;
            }
        }
    }
    for pod in &s.delete {
        delete_pod(&pods, pod).await;
    }
    if let Some(status) = s.status {
        let api: Api<Job> = Api::namespaced(client.clone(), &ns);
        let patch = json!({"metadata": {"resourceVersion": job.metadata.resource_version},
                           "status": status});
        match crate::update::update_status(&api, &name, &patch).await {
            Ok(_) => {}
            // A newer Job is on its way through the watch; the next pass starts from it.
            Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => {}
            Err(e) => tracing::warn!(job = %name, error = %e, "updating job status failed"),
        }
    }
}

async fn delete_pod(pods: &Api<Pod>, pod: &PodRef) {
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(pod.uid.clone()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match pods.delete(&pod.name, &params).await {
        Ok(_) => tracing::info!(pod = %pod.name, "deleted job pod"),
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
        Err(e) => tracing::warn!(pod = %pod.name, error = %e, "deleting job pod failed"),
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
