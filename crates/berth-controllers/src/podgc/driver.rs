//! The pod GC loop: on pod or node changes (and when a quarantine ends), collect and
//! force-delete (grace 0) what [`super::Quarantine::collect`] picks, after writing what
//! [`super::status_before_delete`] says into its status (as upstream, the delete waits for it).

use super::{status_before_delete, PodInfo, Quarantine};
use crate::informers::{wait, Informers};
use crate::model::to_chrono;
use crate::workqueue::Queue;
use crate::Clock;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use std::collections::{HashMap, HashSet};

/// `queue` is upstream's `orphaned_pods_nodes`: the missing nodes that pods are bound to, each
/// checked by a pass (upstream checks them, after a quarantine, against the API).
pub async fn run(
    client: kube::Client,
    mut informers: Informers,
    clock: Clock,
    threshold: usize,
    queue: Queue,
) {
    if !(informers.pods.synced().await && informers.nodes.synced().await) {
        return;
    }
    let mut quarantine = Quarantine::default();
    loop {
        let node_objects = informers.nodes.store.state();
        let nodes: HashSet<&str> = node_objects
            .iter()
            .filter_map(|n| n.metadata.name.as_deref())
            .collect();
        let pods = informers.pods.store.state();
        let mut by_key: HashMap<String, &Pod> = HashMap::new();
        let infos: Vec<PodInfo> = pods
            .iter()
            .filter_map(|p| {
                let node = p
                    .spec
                    .as_ref()
                    .and_then(|s| s.node_name.as_deref())
                    .unwrap_or("");
                let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
                let terminated = matches!(phase, Some("Succeeded" | "Failed"));
                let deleting = p.metadata.deletion_timestamp.is_some();
                // Only these can be collected: a running pod on a live node never is, and
                // leaving it out keeps a pass from copying every pod of the cluster.
                let candidate = terminated
                    || (node.is_empty() && deleting)
                    || (!node.is_empty() && !nodes.contains(node));
                if !candidate {
                    return None;
                }
                let key = format!(
                    "{}/{}",
                    p.metadata.namespace.as_deref().unwrap_or(""),
                    p.metadata.name.as_deref().unwrap_or("")
                );
                by_key.insert(key.clone(), p);
                Some(PodInfo {
                    key,
                    node: node.to_string(),
                    terminated,
                    deleting,
                    created: p.metadata.creation_timestamp.as_ref().map(to_chrono),
                })
            })
            .collect();
        let orphaning: HashSet<&str> = infos
            .iter()
            .filter(|i| !i.node.is_empty() && !nodes.contains(i.node.as_str()))
            .map(|i| i.node.as_str())
            .collect();
        queue.pass(orphaning.len()).skip(orphaning.len());
        for key in quarantine.collect(&infos, &nodes, threshold, clock.now()) {
            let Some(pod) = by_key.get(&key) else {
                continue;
            };
            let ns = pod.metadata.namespace.clone().unwrap_or_default();
            let name = pod.metadata.name.clone().unwrap_or_default();
            let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
            if !mark_failed(&api, pod, &nodes, &clock).await {
                continue;
            }
            let params = DeleteParams {
                grace_period_seconds: Some(0),
                preconditions: Some(Preconditions {
                    uid: pod.metadata.uid.clone(),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            };
            match api.delete(&name, &params).await {
                Ok(_) => tracing::info!(pod = %key, "pod gc: deleted"),
                Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
                Err(e) => tracing::warn!(pod = %key, error = %e, "pod gc: deleting failed"),
            }
        }
        let until = quarantine.next_check().map(|at| clock.instant_at(at));
        let i = &mut informers;
        wait(&mut [&mut i.pods.changed, &mut i.nodes.changed], until).await;
        // Upstream collects every 20 s; a pass at most once a second is as prompt as a user
        // notices, and keeps a busy cluster's pod churn from turning into back-to-back passes.
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
}

/// Writes the status pod GC leaves on a pod it deletes; false when that write failed (the pod is
/// then tried again on a later pass, as upstream).
async fn mark_failed(api: &Api<Pod>, pod: &Pod, nodes: &HashSet<&str>, clock: &Clock) -> bool {
    let node = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or("");
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    let info = PodInfo {
        key: String::new(),
        node: node.to_string(),
        terminated: matches!(phase, Some("Succeeded" | "Failed")),
        deleting: pod.metadata.deletion_timestamp.is_some(),
        created: None,
    };
    let conditions = pod
        .status
        .as_ref()
        .and_then(|s| serde_json::to_value(&s.conditions).ok())
        .unwrap_or_default();
    let node_gone = !node.is_empty() && !nodes.contains(node);
    let Some(patch) = status_before_delete(&info, node_gone, &conditions, &clock.timestamp())
    else {
        return true;
    };
    let name = pod.metadata.name.as_deref().unwrap_or("");
    match api
        .patch_status(name, &PatchParams::default(), &Patch::Strategic(&patch))
        .await
    {
        Ok(_) => true,
        Err(kube::Error::Api(e)) if e.code == 404 => true,
        Err(e) => {
            tracing::warn!(pod = %name, error = %e, "pod gc: marking the pod failed did not work");
            false
        }
    }
}
