//! The disruption controller loop: on budget, pod or workload changes, and when an entry of
//! `disruptedPods` expires, sync every budget and write the statuses that changed.

use super::informers::{wait, Informers};
use super::recorder::Recorder;
use crate::disruption::{reconcile, Workload, Workloads};
use crate::Clock;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;

const COMPONENT: &str = "controllermanager";

pub async fn run(client: kube::Client, mut informers: Informers, recorder: Recorder, clock: Clock) {
    let ready = [
        informers.pdbs.synced().await,
        informers.pods.synced().await,
        informers.replica_sets.synced().await,
        informers.replication_controllers.synced().await,
        informers.deployments.synced().await,
        informers.stateful_sets.synced().await,
    ];
    if ready.contains(&false) {
        return;
    }
    loop {
        let budgets: Vec<Arc<PodDisruptionBudget>> = informers.pdbs.store.state();
        let now = clock.now();
        let pods = if budgets.is_empty() {
            Vec::new()
        } else {
            informers.pods.store.state()
        };
        let mut by_namespace: BTreeMap<&str, Vec<&Pod>> = BTreeMap::new();
        for p in &pods {
            by_namespace
                .entry(p.metadata.namespace.as_deref().unwrap_or(""))
                .or_default()
                .push(p);
        }
        let workloads = workloads(&informers);
        let mut resync = None;
        for pdb in budgets {
            let ns = pdb.metadata.namespace.clone().unwrap_or_default();
            let in_ns = by_namespace
                .get(ns.as_str())
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let sync = reconcile(&pdb, in_ns, &workloads, now);
            for e in &sync.events {
                recorder.record(COMPONENT, e).await;
            }
            if let Some(at) = sync.resync_at {
                resync = Some(resync.map_or(at, |r: chrono::DateTime<chrono::Utc>| r.min(at)));
            }
            if let Some(status) = sync.status_patch {
                let name = pdb.metadata.name.clone().unwrap_or_default();
                let api: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), &ns);
                let patch = json!({"metadata": {"resourceVersion": pdb.metadata.resource_version}, "status": status});
                match api
                    .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                {
                    Ok(_) => tracing::debug!(pdb = %name, namespace = %ns, "budget status updated"),
                    // An eviction (or a spec change) got there first; its watch event brings the next pass.
                    Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => {}
                    Err(e) => {
                        tracing::warn!(pdb = %name, namespace = %ns, error = %e, "updating budget status failed")
                    }
                }
            }
        }
        let until = resync.map(|at| clock.instant_at(at + chrono::Duration::seconds(1)));
        let i = &mut informers;
        wait(
            &mut [
                &mut i.pdbs.changed,
                &mut i.pods.changed,
                &mut i.replica_sets.changed,
                &mut i.replication_controllers.changed,
                &mut i.deployments.changed,
                &mut i.stateful_sets.changed,
            ],
            until,
        )
        .await;
    }
}

fn entry(
    kind: &str,
    meta: &ObjectMeta,
    replicas: Option<i32>,
) -> ((String, String, String), Workload) {
    let controller = meta
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .map(|o| (o.kind.clone(), o.name.clone()));
    (
        (
            kind.to_string(),
            meta.namespace.clone().unwrap_or_default(),
            meta.name.clone().unwrap_or_default(),
        ),
        Workload {
            uid: meta.uid.clone().unwrap_or_default(),
            replicas: replicas.unwrap_or(1),
            controller,
        },
    )
}

/// Every scalable workload, by (kind, namespace, name).
fn workloads(i: &Informers) -> Workloads {
    let mut out = Workloads::new();
    for o in i.replica_sets.store.state() {
        out.extend([entry(
            "ReplicaSet",
            &o.metadata,
            o.spec.as_ref().and_then(|s| s.replicas),
        )]);
    }
    for o in i.replication_controllers.store.state() {
        out.extend([entry(
            "ReplicationController",
            &o.metadata,
            o.spec.as_ref().and_then(|s| s.replicas),
        )]);
    }
    for o in i.deployments.store.state() {
        out.extend([entry(
            "Deployment",
            &o.metadata,
            o.spec.as_ref().and_then(|s| s.replicas),
        )]);
    }
    for o in i.stateful_sets.store.state() {
        out.extend([entry(
            "StatefulSet",
            &o.metadata,
            o.spec.as_ref().and_then(|s| s.replicas),
        )]);
    }
    out
}
