//! The CronJob controller loop: on CronJob or Job changes, and when the next start time is due,
//! sync every CronJob — delete Jobs it replaces or no longer keeps, create the due Job, write
//! its status. Time is the injected clock's.

use super::sync::{sync, CronJobSync, JobRef};
use crate::model::{EventRecord, Involved};
use crate::recorder::Recorder;
use crate::wait::wait;
use crate::Clock;
use berth_informers::Informer;
use chrono::{DateTime, Utc};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;

const COMPONENT: &str = "cronjob-controller";

pub(crate) async fn run(
    client: kube::Client,
    informers: crate::informers::Informers,
    clock: Clock,
    metrics: crate::metrics::ControllerMetrics,
) {
    let queue = metrics.queue("cronjob", &clock);
    let mut cron_jobs: Informer<CronJob> = informers.shared();
    let mut jobs: Informer<Job> = informers.shared();
    if !(cron_jobs.synced().await && jobs.synced().await) {
        return;
    }
    let recorder = Recorder::new(client.clone(), clock.clone());
    // The last event per CronJob uid: recorded again only when it changes.
    let mut reported: HashMap<String, String> = HashMap::new();
    loop {
        let now = clock.now();
        let all: Vec<Arc<CronJob>> = cron_jobs.store.state();
        let all_jobs: Vec<Arc<Job>> = jobs.store.state();
        let mut by_owner: HashMap<&str, Vec<&Job>> = HashMap::new();
        for j in &all_jobs {
            let owner = j.metadata.owner_references.iter().flatten().find(|r| {
                r.controller == Some(true) && r.kind == "CronJob" && r.api_version == "batch/v1"
            });
            if let Some(r) = owner {
                by_owner.entry(r.uid.as_str()).or_default().push(j.as_ref());
            }
        }
        reported.retain(|uid, _| all.iter().any(|c| c.metadata.uid.as_deref() == Some(uid)));
        let mut next: Option<DateTime<Utc>> = None;
        let mut pass = queue.pass(all.len());
        for cron in &all {
            let _work = pass.take();
            let uid = cron.metadata.uid.clone().unwrap_or_default();
            let mine: &[&Job] = by_owner.get(uid.as_str()).map_or(&[], |v| v.as_slice());
            let s = sync(cron, mine, now);
            if let Some(at) = s.next_at {
                next = Some(next.map_or(at, |n| n.min(at)));
            }
            carry_out(&client, cron, s, &recorder, &mut reported).await;
        }
        drop(pass);
        let until = next.map(|at| clock.instant_at(at));
        wait(&mut [&mut cron_jobs.changed, &mut jobs.changed], until).await;
    }
}

async fn carry_out(
    client: &kube::Client,
    cron: &CronJob,
    s: CronJobSync,
    recorder: &Recorder,
    reported: &mut HashMap<String, String>,
) {
    let ns = cron.metadata.namespace.clone().unwrap_or_default();
    let name = cron.metadata.name.clone().unwrap_or_default();
    let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
    if let Some((type_, reason, message)) = &s.event {
        let uid = cron.metadata.uid.clone().unwrap_or_default();
        if reported.get(&uid) != Some(message) {
            record(recorder, cron, type_, reason, message);
            reported.insert(uid, message.clone());
        }
    }
    for (job, condition) in &s.saw_completed {
        let message = format!("Saw completed job: {job}, condition: {condition}");
        record(recorder, cron, "Normal", "SawCompletedJob", &message);
    }
    for job in &s.replace {
        delete_job(&jobs, job).await;
        record(
            recorder,
            cron,
            "Normal",
            "SuccessfulDelete",
            &format!("Deleted job {}", job.0),
        );
    }
    let mut created = None;
    if let Some(job) = s.create {
        let job: Job = match serde_json::from_value(job) {
            Ok(j) => j,
            Err(e) => {
                tracing::warn!(cronjob = %name, error = %e, "cronjob job template unusable");
                return;
            }
        };
        match jobs.create(&PostParams::default(), &job).await {
            Ok(j) => {
                let job_name = j.metadata.name.clone().unwrap_or_default();
                tracing::info!(cronjob = %name, job = %job_name, "created job");
                record(
                    recorder,
                    cron,
                    "Normal",
                    "SuccessfulCreate",
                    &format!("Created job {job_name}"),
                );
                created = Some(j);
            }
            // Made before (a restart after the create, before the status write).
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => {
                tracing::warn!(cronjob = %name, error = %e, "creating job failed");
                return;
            }
        }
    }
    for job in &s.delete {
        delete_job(&jobs, job).await;
        record(
            recorder,
            cron,
            "Normal",
            "SuccessfulDelete",
            &format!("Deleted job {}", job.0),
        );
    }
    if let Some(mut status) = s.status {
        if let (Some(j), Some(refs)) = (&created, status["active"].as_array_mut()) {
            if let Some(last) = refs.last_mut() {
                last["uid"] = json!(j.metadata.uid);
                last["resourceVersion"] = json!(j.metadata.resource_version);
            }
        }
        let api: Api<CronJob> = Api::namespaced(client.clone(), &ns);
        let patch = json!({"metadata": {"resourceVersion": cron.metadata.resource_version},
                           "status": status});
        match crate::update::update_status(&api, &name, &patch).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => {}
            Err(e) => tracing::warn!(cronjob = %name, error = %e, "updating cronjob status failed"),
        }
    }
}

/// Deletes a Job and, in the background, its pods.
async fn delete_job(jobs: &Api<Job>, (name, uid): &JobRef) {
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(uid.clone()),
            resource_version: None,
        }),
        ..DeleteParams::background()
    };
    match jobs.delete(name, &params).await {
        Ok(_) => tracing::info!(job = %name, "deleted cronjob's job"),
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
        Err(e) => tracing::warn!(job = %name, error = %e, "deleting job failed"),
    }
}

fn record(
    recorder: &Recorder,
    cron: &CronJob,
    type_: &'static str,
    reason: &'static str,
    message: &str,
) {
    let event = EventRecord {
        involved: Involved::Workload {
            api_version: "batch/v1",
            kind: "CronJob",
            namespace: cron.metadata.namespace.clone().unwrap_or_default(),
            name: cron.metadata.name.clone().unwrap_or_default(),
            uid: cron.metadata.uid.clone().unwrap_or_default(),
            resource_version: crate::model::version_of(&cron.metadata),
        },
        type_,
        reason,
        message: message.to_string(),
    };
    recorder.record(COMPONENT, &event);
}
