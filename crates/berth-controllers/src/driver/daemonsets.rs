//! The DaemonSet controller loop: on DaemonSet, node or daemon pod changes, sync every
//! DaemonSet; create and delete its pods and write its status.

use super::recorder::Recorder;
use crate::create_backoff::{self, CreateBackoff};
use crate::daemonset::{fit, owned_by, reconcile, Expectations};
use crate::informers::{wait, Informers};
use crate::model::{EventRecord, Involved};
use crate::Clock;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

const COMPONENT: &str = "daemonset-controller";

pub async fn run(
    client: kube::Client,
    mut informers: Informers,
    recorder: Recorder,
    clock: Clock,
    metrics: crate::metrics::ControllerMetrics,
) {
    let queue = metrics.queue("daemonset", &clock);
    let ready = [
        informers.daemon_sets.synced().await,
        informers.nodes.synced().await,
        informers.pods.synced().await,
    ];
    if ready.contains(&false) {
        return;
    }
    let mut revisions: berth_informers::Informer<k8s_openapi::api::apps::v1::ControllerRevision> =
        informers.shared();
    if !revisions.synced().await {
        return;
    }
    let mut expectations = Expectations::default();
    // Refused creates (403, 422, quota) per DaemonSet uid, retried after a back-off.
    let mut backoff = CreateBackoff::default();
    // The FailedPlacement reason last reported per (DaemonSet uid, node): reported again only
    // when it changes, so a full node does not get an event on every pass.
    let mut placements: BTreeMap<(String, String), String> = BTreeMap::new();
    loop {
        let sets: Vec<Arc<DaemonSet>> = informers.daemon_sets.store.state();
        let live: BTreeSet<String> = sets.iter().filter_map(|d| d.metadata.uid.clone()).collect();
        expectations.retain(&live);
        placements.retain(|(uid, _), _| live.contains(uid));
        backoff.retain(|uid| live.contains(uid));
        if !sets.is_empty() {
            let nodes: Vec<Arc<Node>> = informers.nodes.store.state();
            let nodes: Vec<&Node> = nodes.iter().map(|n| n.as_ref()).collect();
            let all: Vec<Arc<Pod>> = informers.pods.store.state();
            let used = fit::node_use(all.iter().map(|p| p.as_ref()));
            // Only pods some DaemonSet owns are a DaemonSet's: pick them out once per pass.
            let pods: Vec<Arc<Pod>> = all
                .into_iter()
                .filter(|p| live.iter().any(|uid| owned_by(p, uid)))
                .collect();
            let mut pass = queue.pass(sets.len());
            for ds in &sets {
                let work = pass.take();
                let ns = ds.metadata.namespace.clone().unwrap_or_default();
                let mine: Vec<&Pod> = pods
                    .iter()
                    .map(|p| p.as_ref())
                    .filter(|p| p.metadata.namespace.as_deref() == Some(ns.as_str()))
                    .collect();
                let mut sync = reconcile(ds, &nodes, &mine, &used, &mut expectations, clock.now());
                // Template revisions for `kubectl rollout history`; created pods carry theirs.
                let all_revisions = revisions.store.state();
                let Some(hash) =
                    crate::daemonset::revisions::record(&client, ds, &mine, &all_revisions).await
                else {
                    continue;
                };
                crate::daemonset::revisions::label(&mut sync.create, &hash);
                let failed = std::mem::take(&mut sync.failed_placements);
                report_placements(&recorder, ds, failed, &mut placements).await;
                let uid = ds.metadata.uid.as_deref().unwrap_or_default();
                let version = ds.metadata.resource_version.as_deref();
                let backing_off = !backoff.may_create(uid, version, clock.now());
                if backing_off {
                    sync.create.clear();
                }
                let refused =
                    carry_out(&client, ds, sync, &mut expectations, &recorder, &clock).await;
                if refused {
                    work.retry();
                    backoff.failed(uid, version, clock.now());
                } else if !backing_off {
                    backoff.forget(uid);
                }
            }
        }
        let now = clock.now();
        let until = [expectations.next_retry(now), backoff.next_retry()]
            .into_iter()
            .flatten()
            .min()
            .map(|at| clock.instant_at(at));
        let i = &mut informers;
        wait(
            &mut [
                &mut i.daemon_sets.changed,
                &mut i.nodes.changed,
                &mut i.pods.changed,
                &mut revisions.changed,
            ],
            until,
        )
        .await;
    }
}

/// Records `FailedPlacement` for nodes whose reason is new or changed; forgets nodes that now
/// have room (or no longer want the pod).
async fn report_placements(
    recorder: &Recorder,
    ds: &DaemonSet,
    failed: Vec<(String, String)>,
    placements: &mut BTreeMap<(String, String), String>,
) {
    let uid = ds.metadata.uid.clone().unwrap_or_default();
    let now: BTreeSet<&str> = failed.iter().map(|(n, _)| n.as_str()).collect();
    placements.retain(|(u, node), _| *u != uid || now.contains(node.as_str()));
    for (node, why) in failed {
        if placements.get(&(uid.clone(), node.clone())) == Some(&why) {
            continue;
        }
        let event = EventRecord {
            involved: Involved::DaemonSet {
                namespace: ds.metadata.namespace.clone().unwrap_or_default(),
                name: ds.metadata.name.clone().unwrap_or_default(),
                uid: uid.clone(),
                resource_version: crate::model::version_of(&ds.metadata),
            },
            type_: "Warning",
            reason: "FailedPlacement",
            message: format!("failed to place pod on {node:?}: {why}"),
        };
        recorder.record(COMPONENT, &event);
        placements.insert((uid.clone(), node), why);
    }
}

/// Carries out one DaemonSet's sync; true when a pod create was refused (the rest of the
/// creates then wait for the back-off, as upstream's slow start stops at a failing batch).
async fn carry_out(
    client: &kube::Client,
    ds: &DaemonSet,
    sync: crate::daemonset::DaemonSetSync,
    expectations: &mut Expectations,
    recorder: &Recorder,
    clock: &Clock,
) -> bool {
    let ns = ds.metadata.namespace.clone().unwrap_or_default();
    let name = ds.metadata.name.clone().unwrap_or_default();
    let uid = ds.metadata.uid.clone().unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let mut refused = false;
    for e in &sync.events {
        recorder.record(COMPONENT, e);
    }
    let owner = Involved::DaemonSet {
        namespace: ns.clone(),
        name: name.clone(),
        uid: uid.clone(),
        resource_version: crate::model::version_of(&ds.metadata),
    };
    for (node, pod) in sync.create {
        let pod: Pod = match serde_json::from_value(pod) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(daemonset = %name, error = %e, "daemon pod template unusable");
                continue;
            }
        };
        match pods.create(&PostParams::default(), &pod).await {
            Ok(created) => {
                let pod = created.metadata.name.unwrap_or_default();
                recorder.record(COMPONENT, &crate::events::created_pod(&owner, &pod));
                expectations.created(&uid, &node, clock.now())
            }
            Err(e) => {
                tracing::warn!(daemonset = %name, node = %node, error = %e, "creating daemon pod failed");
                let event = EventRecord {
                    involved: owner.clone(),
                    type_: "Warning",
                    reason: create_backoff::FAILED_CREATE,
                    message: create_backoff::error_creating(&e),
                };
                recorder.record(COMPONENT, &event);
                refused = true;
                break;
            }
        }
    }
    for pod in sync.delete {
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(pod.uid.clone()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match pods.delete(&pod.name, &params).await {
            Ok(_) => {
                tracing::info!(daemonset = %name, pod = %pod.name, "deleted daemon pod");
                recorder.record(COMPONENT, &crate::events::deleted_pod(&owner, &pod.name));
            }
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
            Err(e) => {
                tracing::warn!(daemonset = %name, pod = %pod.name, error = %e, "deleting daemon pod failed");
                let message = create_backoff::api_message(&e);
                recorder.record(COMPONENT, &crate::events::failed_delete(&owner, &message));
            }
        }
    }
    if let Some(status) = sync.status {
        let api: Api<DaemonSet> = Api::namespaced(client.clone(), &ns);
        let patch = json!({"metadata": {"resourceVersion": ds.metadata.resource_version}, "status": status});
        match crate::update::update_status(&api, &name, &patch).await {
            Ok(_) => {}
            // A newer DaemonSet is on its way through the watch; the next pass starts from it.
            Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => {}
            Err(e) => {
                tracing::warn!(daemonset = %name, error = %e, "updating daemonset status failed")
            }
        }
    }
    refused
}
