//! Running the pods bound to a simulated node: start them, and finish their deletion.

use crate::finish::{self, AfterExit, Run};
use berth_core::clock::Clock;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::ResourceExt;
use serde_json::json;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
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
            clock.sleep(Duration::from_secs(takes)).await;
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

/// Starts the run of a pod whose containers finish by themselves (`berth.io/run-seconds`),
/// unless it already runs, ended, or is being deleted.
pub fn start_run(
    client: &kube::Client,
    pod: &Pod,
    clock: &Clock,
    runs: &Arc<Mutex<HashSet<String>>>,
    hosted: Arc<crate::share::Hosted>,
) {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if pod.metadata.deletion_timestamp.is_some() || matches!(phase, Some("Succeeded" | "Failed")) {
        return;
    }
    let run = match Run::of(pod.annotations()) {
        Ok(Some(run)) => run,
        Ok(None) => return,
        Err(e) => {
            tracing::warn!(pod = %pod.name_any(), error = %e, "the pod runs until deleted");
            return;
        }
    };
    let uid = pod.uid().unwrap_or_default();
    if !runs.lock().expect("runs").insert(uid.clone()) {
        return;
    }
    let api: Api<Pod> = Api::namespaced(client.clone(), &pod.namespace().unwrap_or_default());
    let policy = pod
        .spec
        .as_ref()
        .and_then(|s| s.restart_policy.clone())
        .unwrap_or_else(|| "Always".into());
    let (name, clock, runs) = (pod.name_any(), clock.clone(), runs.clone());
    let node = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default();
    // A run whose node moved to another replica stops here; the new owner runs it on.
    let here = move || hosted.runs(&node);
    tokio::spawn(async move {
        run_containers(&api, &name, &uid, run, &policy, &clock, &here).await;
        runs.lock().expect("runs").remove(&uid);
    });
}

/// Runs the containers of one pod to their exit, and again after each restart its
/// `restartPolicy` calls for, until the pod ends or is deleted.
async fn run_containers(
    api: &Api<Pod>,
    name: &str,
    uid: &str,
    run: Run,
    policy: &str,
    clock: &Clock,
    here: &(dyn Fn() -> bool + Send + Sync),
) {
    let mut restarts = 0;
    let ran = Duration::from_secs(run.seconds);
    loop {
        clock.sleep(ran).await;
        if !here() {
            return;
        }
        let Some(pod) = running(api, name, uid).await else {
            return;
        };
        restarts = finish::backoff_restarts(restarts, ran);
        let after = finish::after_exit(policy, run.exit_code, restarts);
        let patch = finish::exited_status(&pod, run.exit_code, after, &clock.timestamp());
        if let Err(e) = api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::debug!(pod = %name, error = %e, "recording the containers' exit failed");
            return;
        }
        tracing::info!(pod = %name, exit_code = run.exit_code, ?after, "containers exited");
        let AfterExit::Restart(backoff) = after else {
            return;
        };
        post_backoff(api, &pod, clock).await;
        clock.sleep(backoff).await;
        if !here() {
            return;
        }
        restarts += 1;
        let Some(pod) = current(api, name, uid).await else {
            return;
        };
        let patch = finish::restarted_status(&pod, &clock.timestamp());
        if let Err(e) = api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::debug!(pod = %name, error = %e, "restarting the containers failed");
            return;
        }
    }
}

/// Records the `BackOff` warning of each of the pod's containers, as the kubelet does when it
/// holds a restart back.
async fn post_backoff(api: &Api<Pod>, pod: &serde_json::Value, clock: &Clock) {
    let client = api.clone().into_client();
    let meta = &pod["metadata"];
    let text = |v: &serde_json::Value| v.as_str().unwrap_or("").to_string();
    let (ns, name, uid) = (
        text(&meta["namespace"]),
        text(&meta["name"]),
        text(&meta["uid"]),
    );
    let node = text(&pod["spec"]["nodeName"]);
    let containers = pod["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for c in containers {
        let container = text(&c["name"]);
        let involved = json!({"kind": "Pod", "apiVersion": "v1", "namespace": ns, "name": name,
                              "uid": uid, "fieldPath": format!("spec.containers{{{container}}}")});
        let message = finish::backoff_message(&container, &name, &ns, &uid);
        crate::sim::post_event(
            &client,
            clock,
            &ns,
            involved,
            "Warning",
            "BackOff",
            &message,
            &node,
            Default::default(),
        )
        .await;
    }
}

/// The pod (as JSON) once it runs: `None` when it is gone, replaced, being deleted or ended.
async fn running(api: &Api<Pod>, name: &str, uid: &str) -> Option<serde_json::Value> {
    // The start is written by the pod's reconcile; give it a moment if it has not landed yet.
    for _ in 0..50 {
        let pod = current(api, name, uid).await?;
        match pod["status"]["phase"].as_str() {
            Some("Running") => return Some(pod),
            Some("Pending") | None => tokio::time::sleep(Duration::from_millis(200)).await,
            _ => return None,
        }
    }
    None
}

/// The pod as the API shows it now, unless it is gone, replaced, being deleted or ended.
async fn current(api: &Api<Pod>, name: &str, uid: &str) -> Option<serde_json::Value> {
    let pod = api.get_opt(name).await.ok()??;
    let live = pod.uid().as_deref() == Some(uid)
        && pod.metadata.deletion_timestamp.is_none()
        && !matches!(
            pod.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Succeeded" | "Failed")
        );
    live.then(|| serde_json::to_value(&pod).ok()).flatten()
}
