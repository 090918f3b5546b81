//! The DaemonSet controller loop: on DaemonSet, node or daemon pod changes, sync every
//! DaemonSet; create and delete its pods and write its status.

use super::informers::{wait, Informers};
use crate::daemonset::{owned_by, reconcile, Expectations};
use crate::Clock;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;

pub async fn run(client: kube::Client, mut informers: Informers, clock: Clock) {
    let ready = [
        informers.daemon_sets.synced().await,
        informers.nodes.synced().await,
        informers.pods.synced().await,
    ];
    if ready.contains(&false) {
        return;
    }
    let mut expectations = Expectations::default();
    loop {
        let sets: Vec<Arc<DaemonSet>> = informers.daemon_sets.store.state();
        let live: BTreeSet<String> = sets.iter().filter_map(|d| d.metadata.uid.clone()).collect();
        expectations.retain(&live);
        if !sets.is_empty() {
            let nodes: Vec<Arc<Node>> = informers.nodes.store.state();
            let nodes: Vec<&Node> = nodes.iter().map(|n| n.as_ref()).collect();
            // Only pods some DaemonSet owns matter: pick them out once per pass.
            let pods: Vec<Arc<Pod>> = informers
                .pods
                .store
                .state()
                .into_iter()
                .filter(|p| live.iter().any(|uid| owned_by(p, uid)))
                .collect();
            for ds in &sets {
                let ns = ds.metadata.namespace.clone().unwrap_or_default();
                let mine: Vec<&Pod> = pods
                    .iter()
                    .map(|p| p.as_ref())
                    .filter(|p| p.metadata.namespace.as_deref() == Some(ns.as_str()))
                    .collect();
                let sync = reconcile(ds, &nodes, &mine, &mut expectations, clock.now());
                carry_out(&client, ds, sync, &mut expectations, &clock).await;
            }
        }
        let until = expectations
            .next_retry(clock.now())
            .map(|at| clock.instant_at(at));
        let i = &mut informers;
        wait(
            &mut [
                &mut i.daemon_sets.changed,
                &mut i.nodes.changed,
                &mut i.pods.changed,
            ],
            until,
        )
        .await;
    }
}

async fn carry_out(
    client: &kube::Client,
    ds: &DaemonSet,
    sync: crate::daemonset::DaemonSetSync,
    expectations: &mut Expectations,
    clock: &Clock,
) {
    let ns = ds.metadata.namespace.clone().unwrap_or_default();
    let name = ds.metadata.name.clone().unwrap_or_default();
    let uid = ds.metadata.uid.clone().unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    for (node, pod) in sync.create {
        let pod: Pod = match serde_json::from_value(pod) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(daemonset = %name, error = %e, "daemon pod template unusable");
                continue;
            }
        };
        match pods.create(&PostParams::default(), &pod).await {
            Ok(_) => expectations.created(&uid, &node, clock.now()),
            Err(e) => {
                tracing::warn!(daemonset = %name, node = %node, error = %e, "creating daemon pod failed")
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
            Ok(_) => tracing::info!(daemonset = %name, pod = %pod.name, "deleted daemon pod"),
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
            Err(e) => {
                tracing::warn!(daemonset = %name, pod = %pod.name, error = %e, "deleting daemon pod failed")
            }
        }
    }
    if let Some(status) = sync.status {
        let api: Api<DaemonSet> = Api::namespaced(client.clone(), &ns);
        let patch = json!({"metadata": {"resourceVersion": ds.metadata.resource_version}, "status": status});
        match api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {}
            // A newer DaemonSet is on its way through the watch; the next pass starts from it.
            Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => {}
            Err(e) => {
                tracing::warn!(daemonset = %name, error = %e, "updating daemonset status failed")
            }
        }
    }
}
