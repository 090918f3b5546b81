//! Running the pods bound to a simulated node: start them, and finish their deletion.

use berth_core::clock::Clock;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::ResourceExt;
use serde_json::json;
use std::time::Duration;

/// How long a simulated container takes to stop after SIGTERM (capped by the grace period).
const TERMINATION_ANNOTATION: &str = "berth.io/termination-seconds";

/// Brings one pod towards what its kubelet would make of it.
pub async fn reconcile(client: kube::Client, pod: std::sync::Arc<Pod>, clock: Clock) {
    let ns = pod.namespace().unwrap_or_default();
    let name = pod.name_any();
    let api: Api<Pod> = Api::namespaced(client, &ns);
    if pod.metadata.deletion_timestamp.is_some() {
        let grace = pod
            .metadata
            .deletion_grace_period_seconds
            .unwrap_or(0)
            .max(0) as u64;
        let takes = pod
            .annotations()
            .get(TERMINATION_ANNOTATION)
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(0)
            .min(grace);
        if takes > 0 {
            tokio::time::sleep(Duration::from_secs(takes)).await;
        }
        let dp = DeleteParams {
            grace_period_seconds: Some(0),
            ..DeleteParams::default()
        };
        let precondition = kube::api::Preconditions {
            uid: pod.metadata.uid.clone(),
            resource_version: None,
        };
        let dp = DeleteParams {
            preconditions: Some(precondition),
            ..dp
        };
        if let Err(e) = api.delete(&name, &dp).await {
            tracing::debug!(pod = %name, error = %e, "finishing deletion failed");
        }
        return;
    }
    let phase = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.clone())
        .unwrap_or_default();
    if phase != "Pending" && !phase.is_empty() {
        return;
    }
    let Some(status) = running_status(&pod, &clock.timestamp()) else {
        return;
    };
    if let Err(e) = api
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
        .await
    {
        tracing::debug!(pod = %name, error = %e, "starting pod failed");
    }
}

/// The status of a pod whose containers all started at `now`.
fn running_status(pod: &Pod, now: &str) -> Option<serde_json::Value> {
    let spec = pod.spec.as_ref()?;
    let node = spec.node_name.clone()?;
    let uid = pod.uid().unwrap_or_default();
    let ip = pod_ip(&uid);
    let host_ip = node_ip(&node);
    let containers: Vec<_> = spec
        .containers
        .iter()
        .map(|c| {
            json!({
                "name": c.name, "ready": true, "started": true, "restartCount": 0,
                "image": c.image.clone().unwrap_or_default(),
                "imageID": format!("berth://{}", c.image.clone().unwrap_or_default()),
                "containerID": format!("berth://{}-{}", uid, c.name),
                "state": {"running": {"startedAt": now}},
            })
        })
        .collect();
    let init: Vec<_> = spec
        .init_containers
        .iter()
        .flatten()
        .map(|c| {
            json!({
                "name": c.name, "ready": true, "restartCount": 0,
                "image": c.image.clone().unwrap_or_default(),
                "imageID": format!("berth://{}", c.image.clone().unwrap_or_default()),
                "containerID": format!("berth://{}-{}", uid, c.name),
                "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}},
            })
        })
        .collect();
    let cond = |t: &str| json!({"type": t, "status": "True", "lastProbeTime": null, "lastTransitionTime": now});
    let mut status = json!({"status": {
        "phase": "Running",
        "conditions": [cond("PodReadyToStartContainers"), cond("Initialized"), cond("Ready"), cond("ContainersReady"), cond("PodScheduled")],
        "hostIP": host_ip, "hostIPs": [{"ip": host_ip}],
        "podIP": ip, "podIPs": [{"ip": ip}],
        "startTime": now,
        "containerStatuses": containers,
    }});
    if !init.is_empty() {
        status["status"]["initContainerStatuses"] = json!(init);
    }
    Some(status)
}

/// A stable pod IP in 10.244.0.0/16 derived from the pod's uid.
fn pod_ip(uid: &str) -> String {
    let h = uid
        .bytes()
        .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32));
    format!("10.244.{}.{}", (h >> 8) % 256, h % 254 + 1)
}

fn node_ip(node: &str) -> String {
    // node-N → 10.0.x.y as NodeSpec::internal_ip; other names get a hash.
    match node
        .rsplit('-')
        .next()
        .and_then(|n| n.parse::<usize>().ok())
    {
        Some(i) => format!("10.0.{}.{}", (i / 250) % 250, i % 250 + 1),
        None => {
            let h = node
                .bytes()
                .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32));
            format!("10.0.{}.{}", (h >> 8) % 250, h % 250 + 1)
        }
    }
}
