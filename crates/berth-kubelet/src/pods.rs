//! Running the pods bound to a simulated node: start them, and finish their deletion.

use crate::container_exit::{self, Ends};
use crate::deadline;
use crate::finish::{self, AfterExit, Run};
use crate::observed;
use crate::probes;
use berth_core::clock::Clock;
use k8s_openapi::api::core::v1::{Container, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::ResourceExt;
use serde_json::json;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a simulated container takes to stop after SIGTERM (capped by the grace period).
const TERMINATION_ANNOTATION: &str = "berth.io/termination-seconds";

/// The uids of pods whose start is under way (their init containers run).
pub type Starting = Arc<Mutex<HashSet<String>>>;

/// Brings one pod towards what its kubelet would make of it.
pub async fn reconcile(
    client: kube::Client,
    pod: std::sync::Arc<Pod>,
    clock: Clock,
    starting: Starting,
) {
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
    // Started already: held Pending by a failing init container.
    if pod.status.as_ref().is_some_and(|s| s.start_time.is_some()) {
        return;
    }
    let uid = pod.uid().unwrap_or_default();
    if !starting.lock().expect("starting pods").insert(uid.clone()) {
        return;
    }
    let started = clock.timestamp();
    let init = init_plan(&pod);
    if init.takes > Duration::ZERO {
        clock.sleep(init.takes).await;
        if current(&api, &name, &uid).await.is_none() {
            starting.lock().expect("starting pods").remove(&uid);
            return;
        }
    }
    let status = match init.failed {
        None => running_status(&pod, &started, &clock.timestamp()),
        Some(failed) => init_failed_status(&pod, &failed, &started, &clock.timestamp()),
    };
    starting.lock().expect("starting pods").remove(&uid);
    let Some(mut status) = status else {
        return;
    };
    observed::stamp(pod.metadata.generation, &mut status);
    if let Err(e) = api
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
        .await
    {
        tracing::debug!(pod = %name, error = %e, "starting pod failed");
        return;
    }
    if let Some((index, exit_code)) = init.failed {
        if pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()) != Some("Never") {
            restart_failing_init(&api, &name, &uid, index, exit_code, &clock).await;
        }
        return;
    }
    {
        let delay = readiness_delay(&pod);
        if delay > Duration::ZERO {
            clock.sleep(delay).await;
            if let Some(live) = current(&api, &name, &uid).await {
                let mut patch = probes::ready_status(&live, &clock.timestamp());
                observed::stamp(live["metadata"]["generation"].as_i64(), &mut patch);
                if let Err(e) = api
                    .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                {
                    tracing::debug!(pod = %name, error = %e, "marking the pod ready failed");
                }
            }
        }
    }
}

/// Restarts a failing init container after each CrashLoopBackOff, as a kubelet does for a pod
/// that may restart: it fails again each time (its command says so), `restartCount` grows and
/// the app containers never start, until the pod is deleted.
async fn restart_failing_init(
    api: &Api<Pod>,
    name: &str,
    uid: &str,
    index: usize,
    exit_code: i32,
    clock: &Clock,
) {
    let mut restarts = 1;
    loop {
        clock.sleep(finish::restart_backoff(restarts - 1)).await;
        let Some(pod) = current(api, name, uid).await else {
            return;
        };
        let restarted = clock.timestamp();
        let mut patch = init_failed_again(
            &pod,
            index,
            exit_code,
            finish::restart_backoff(restarts),
            &restarted,
        );
        observed::stamp(pod["metadata"]["generation"].as_i64(), &mut patch);
        if let Err(e) = api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::debug!(pod = %name, error = %e, "restarting an init container failed");
            return;
        }
        restarts += 1;
    }
}

/// The status patch (merge) for init container `index` of `pod` (as JSON) having run again
/// and failed at `now`, to wait out `backoff` before the next try.
fn init_failed_again(
    pod: &serde_json::Value,
    index: usize,
    exit_code: i32,
    backoff: Duration,
    now: &str,
) -> serde_json::Value {
    let mut inits = pod["status"]["initContainerStatuses"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if let Some(s) = inits.get_mut(index) {
        let restarts = s["restartCount"].as_i64().unwrap_or(0) + 1;
        let message = format!(
            "back-off {} restarting failed container={} pod={}_{}({})",
            finish::human(backoff),
            s["name"].as_str().unwrap_or(""),
            pod["metadata"]["name"].as_str().unwrap_or(""),
            pod["metadata"]["namespace"].as_str().unwrap_or(""),
            pod["metadata"]["uid"].as_str().unwrap_or(""),
        );
        s["lastState"] = json!({"terminated": finish::terminated(exit_code, &json!(now), now, &s["containerID"])});
        s["restartCount"] = json!(restarts);
        s["state"] = json!({"waiting": {"reason": "CrashLoopBackOff", "message": message}});
    }
    json!({"status": {"initContainerStatuses": inits}})
}

/// How the pod's init containers run, in order, as their commands say.
struct InitPlan {
    /// How long they take before the app containers start (or the failing one exits).
    takes: Duration,
    /// The first one to exit non-zero: its index and exit code.
    failed: Option<(usize, i32)>,
}

/// Init containers run one after another; one whose command cannot be told completes at once
/// (as every init container did before); the first to fail stops the others.
fn init_plan(pod: &Pod) -> InitPlan {
    let mut plan = InitPlan {
        takes: Duration::ZERO,
        failed: None,
    };
    let inits = pod
        .spec
        .as_ref()
        .and_then(|s| s.init_containers.as_deref())
        .unwrap_or_default();
    for (i, c) in inits.iter().enumerate() {
        // Sidecars (restartPolicy Always) start and keep running.
        if c.restart_policy.as_deref() == Some("Always") {
            continue;
        }
        if let Ends::After { after, exit_code } = container_ends(c) {
            plan.takes += after;
            if exit_code != 0 {
                plan.failed = Some((i, exit_code));
                break;
            }
        }
    }
    plan
}

/// How one container ends, as its command says.
pub(crate) fn container_ends(c: &Container) -> Ends {
    container_exit::derive(
        c.command.as_deref().unwrap_or_default(),
        c.args.as_deref().unwrap_or_default(),
        c.image.as_deref().unwrap_or_default(),
    )
}

/// How long until the pod's containers pass their readiness probes: the longest
/// `initialDelaySeconds` (simulated probes succeed at their first run).
fn readiness_delay(pod: &Pod) -> Duration {
    pod.spec
        .iter()
        .flat_map(|s| &s.containers)
        .filter_map(|c| c.readiness_probe.as_ref()?.initial_delay_seconds)
        .max()
        .map_or(Duration::ZERO, |s| Duration::from_secs(s.max(0) as u64))
}

/// What the status shows of a container's resources (1.35's kubelet: `resources` as applied,
/// `allocatedResources` as admitted, both from the spec on a simulated node).
fn resources_status(c: &Container, status: &mut serde_json::Value) {
    let Some(r) = c.resources.as_ref() else {
        return;
    };
    let mut resources = json!({});
    if let Some(limits) = r.limits.as_ref().filter(|l| !l.is_empty()) {
        resources["limits"] = json!(limits);
    }
    if let Some(requests) = r.requests.as_ref().filter(|l| !l.is_empty()) {
        resources["requests"] = json!(requests);
        status["allocatedResources"] = json!(requests);
    }
    if resources.as_object().is_some_and(|o| !o.is_empty()) {
        status["resources"] = resources;
    }
}

/// The status of a pod whose init containers ran from `started` and whose containers all
/// started at `now`.
fn running_status(pod: &Pod, started: &str, now: &str) -> Option<serde_json::Value> {
    let spec = pod.spec.as_ref()?;
    let node = spec.node_name.clone()?;
    let uid = pod.uid().unwrap_or_default();
    let host_ip = node_ip(&node);
    let ip = pod_ip_of(spec, &uid, &host_ip);
    let unready = probes::delayed_containers(spec);
    let containers: Vec<_> = spec
        .containers
        .iter()
        .map(|c| {
            let ready = !unready.contains(&c.name);
            let mut s = json!({
                "name": c.name, "ready": ready, "started": true, "restartCount": 0,
                "image": c.image.clone().unwrap_or_default(),
                "imageID": format!("berth://{}", c.image.clone().unwrap_or_default()),
                "containerID": format!("berth://{}-{}", uid, c.name),
                "state": {"running": {"startedAt": now}},
            });
            resources_status(c, &mut s);
            s
        })
        .collect();
    let init: Vec<_> = spec
        .init_containers
        .iter()
        .flatten()
        .map(|c| {
            let mut s = json!({
                "name": c.name, "ready": true, "restartCount": 0,
                "image": c.image.clone().unwrap_or_default(),
                "imageID": format!("berth://{}", c.image.clone().unwrap_or_default()),
                "containerID": format!("berth://{}-{}", uid, c.name),
                "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started, "finishedAt": now}},
            });
            if c.restart_policy.as_deref() == Some("Always") {
                s["started"] = json!(true);
                s["state"] = json!({"running": {"startedAt": started}});
            }
            resources_status(c, &mut s);
            s
        })
        .collect();
    let cond = |t: &str| json!({"type": t, "status": "True", "lastProbeTime": null, "lastTransitionTime": now});
    let mut conditions = vec![
        cond("PodReadyToStartContainers"),
        cond("Initialized"),
        cond("Ready"),
        cond("ContainersReady"),
        cond("PodScheduled"),
    ];
    if !unready.is_empty() {
        let message = format!("containers with unready status: [{}]", unready.join(" "));
        for c in &mut conditions[2..4] {
            *c = json!({"type": c["type"], "status": "False", "reason": "ContainersNotReady",
                        "message": message, "lastProbeTime": null, "lastTransitionTime": now});
        }
    }
    let mut status = json!({"status": {
        "phase": "Running",
        "conditions": conditions,
        "hostIP": host_ip, "hostIPs": [{"ip": host_ip}],
        "podIP": ip, "podIPs": [{"ip": ip}],
        "startTime": started,
        "containerStatuses": containers,
    }});
    if !init.is_empty() {
        status["status"]["initContainerStatuses"] = json!(init);
    }
    Some(status)
}

/// The status of a pod whose init container `failed.0` exited `failed.1` at `now`: the app
/// containers never start; with `restartPolicy: Never` the pod fails, otherwise it stays
/// Pending with the init container in CrashLoopBackOff (upstream's init container specs).
fn init_failed_status(
    pod: &Pod,
    failed: &(usize, i32),
    started: &str,
    now: &str,
) -> Option<serde_json::Value> {
    let spec = pod.spec.as_ref()?;
    let node = spec.node_name.clone()?;
    let uid = pod.uid().unwrap_or_default();
    let host_ip = node_ip(&node);
    let ip = pod_ip_of(spec, &uid, &host_ip);
    let never = spec.restart_policy.as_deref() == Some("Never");
    let (index, exit_code) = *failed;
    let inits = spec.init_containers.as_deref().unwrap_or_default();
    let base = |c: &Container| {
        json!({"name": c.name, "ready": false, "restartCount": 0,
               "image": c.image.clone().unwrap_or_default(),
               "imageID": format!("berth://{}", c.image.clone().unwrap_or_default()),
               "containerID": format!("berth://{}-{}", uid, c.name)})
    };
    let init: Vec<_> = inits
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut s = base(c);
            let exit =
                |code: i32| finish::terminated(code, &json!(started), now, &s["containerID"]);
            match i.cmp(&index) {
                std::cmp::Ordering::Less => s["state"] = json!({"terminated": exit(0)}),
                std::cmp::Ordering::Equal if never => {
                    s["state"] = json!({"terminated": exit(exit_code)})
                }
                std::cmp::Ordering::Equal => {
                    let message = format!(
                        "back-off 10s restarting failed container={} pod={}_{}({})",
                        c.name,
                        pod.name_any(),
                        pod.namespace().unwrap_or_default(),
                        uid
                    );
                    s["lastState"] = json!({"terminated": exit(exit_code)});
                    s["restartCount"] = json!(1);
                    s["state"] =
                        json!({"waiting": {"reason": "CrashLoopBackOff", "message": message}});
                }
                std::cmp::Ordering::Greater => {
                    s["state"] = json!({"waiting": {"reason": "PodInitializing"}})
                }
            }
            s
        })
        .collect();
    let containers: Vec<_> = spec
        .containers
        .iter()
        .map(|c| {
            let mut s = base(c);
            s["started"] = json!(false);
            s["state"] = json!({"waiting": {"reason": "PodInitializing"}});
            s
        })
        .collect();
    let incomplete = &inits[index].name;
    let not = |t: &str, reason: &str, message: String| {
        json!({"type": t, "status": "False", "reason": reason, "message": message,
               "lastProbeTime": null, "lastTransitionTime": now})
    };
    let unready: Vec<&str> = spec.containers.iter().map(|c| c.name.as_str()).collect();
    let unready = format!("containers with unready status: [{}]", unready.join(" "));
    let conditions = json!([
        {"type": "PodReadyToStartContainers", "status": "True", "lastProbeTime": null, "lastTransitionTime": started},
        not("Initialized", "ContainersNotInitialized", format!("containers with incomplete status: [{incomplete}]")),
        not("Ready", "ContainersNotReady", unready.clone()),
        not("ContainersReady", "ContainersNotReady", unready),
        {"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": started},
    ]);
    Some(json!({"status": {
        "phase": if never { "Failed" } else { "Pending" },
        "conditions": conditions,
        "hostIP": host_ip, "hostIPs": [{"ip": host_ip}],
        "podIP": ip, "podIPs": [{"ip": ip}],
        "startTime": started,
        "initContainerStatuses": init,
        "containerStatuses": containers,
    }}))
}

/// The pod's IP: the node's for a `hostNetwork` pod (it shares the node's network namespace,
/// as upstream reports it), else [`pod_ip`].
fn pod_ip_of(spec: &k8s_openapi::api::core::v1::PodSpec, uid: &str, host_ip: &str) -> String {
    if spec.host_network == Some(true) {
        host_ip.to_string()
    } else {
        pod_ip(uid)
    }
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
    events: crate::events::Events,
) {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if pod.metadata.deletion_timestamp.is_some() || matches!(phase, Some("Succeeded" | "Failed")) {
        return;
    }
    let run = match Run::of(pod.annotations()) {
        Ok(Some(run)) => run,
        Ok(None) => match derived_run(pod) {
            Some(run) => run,
            None => return,
        },
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
        run_containers(&api, &name, &uid, run, &policy, &clock, &here, &events).await;
        runs.lock().expect("runs").remove(&uid);
    });
}

/// The run the pod's containers' commands say, unless its init containers fail first (the app
/// containers then never start).
fn derived_run(pod: &Pod) -> Option<Run> {
    let spec = pod.spec.as_ref()?;
    let init = init_plan(pod);
    if init.failed.is_some() {
        return None;
    }
    let ends: Vec<(String, Ends)> = spec
        .containers
        .iter()
        .map(|c| (c.name.clone(), container_ends(c)))
        .collect();
    let mut run = Run::derived(&ends)?;
    // The app containers start once the init containers are done.
    run.first_after = init.takes;
    Some(run)
}

/// Runs the containers of one pod to their exit, and again after each restart its
/// `restartPolicy` calls for, until the pod ends or is deleted.
#[allow(clippy::too_many_arguments)]
async fn run_containers(
    api: &Api<Pod>,
    name: &str,
    uid: &str,
    run: Run,
    policy: &str,
    clock: &Clock,
    here: &(dyn Fn() -> bool + Send + Sync),
    events: &crate::events::Events,
) {
    let mut restarts = 0;
    let ran = run.after;
    let mut first = run.first_after;
    loop {
        clock.sleep(ran + std::mem::take(&mut first)).await;
        if !here() {
            return;
        }
        let Some(pod) = running(api, name, uid).await else {
            return;
        };
        restarts = finish::backoff_restarts(restarts, ran);
        let after = finish::after_exit(policy, run.exit_code, restarts);
        let mut patch = finish::exited_status(&pod, &run, after, &clock.timestamp());
        observed::stamp(pod["metadata"]["generation"].as_i64(), &mut patch);
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
        post_backoff(events, &pod, clock);
        clock.sleep(backoff).await;
        if !here() {
            return;
        }
        restarts += 1;
        let Some(pod) = current(api, name, uid).await else {
            return;
        };
        let mut patch = finish::restarted_status(&pod, &clock.timestamp());
        observed::stamp(pod["metadata"]["generation"].as_i64(), &mut patch);
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
fn post_backoff(events: &crate::events::Events, pod: &serde_json::Value, clock: &Clock) {
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
            events,
            clock,
            &ns,
            involved,
            "Warning",
            "BackOff",
            &message,
            &node,
            Default::default(),
        );
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

/// The deadline each pod's timer was armed for, by uid (`activeDeadlineSeconds`).
pub type Deadlines = Arc<Mutex<std::collections::HashMap<String, i64>>>;

/// Arms the pod's `activeDeadlineSeconds` timer, unless one is armed for the same deadline:
/// when it fires, a pod still past its deadline (as it shows then) is failed with reason
/// `DeadlineExceeded` and its containers are killed ([`crate::deadline`]).
pub fn arm_deadline(client: &kube::Client, pod: &Pod, clock: &Clock, armed: &Deadlines) {
    let Some(seconds) = pod.spec.as_ref().and_then(|s| s.active_deadline_seconds) else {
        return;
    };
    let uid = pod.uid().unwrap_or_default();
    let Ok(value) = serde_json::to_value(pod) else {
        return;
    };
    let Some((start, _)) = deadline::of(&value) else {
        return;
    };
    if armed
        .lock()
        .expect("deadlines")
        .insert(uid.clone(), seconds)
        == Some(seconds)
    {
        return;
    }
    let api: Api<Pod> = Api::namespaced(client.clone(), &pod.namespace().unwrap_or_default());
    let (name, clock, armed) = (pod.name_any(), clock.clone(), armed.clone());
    tokio::spawn(async move {
        clock
            .sleep(deadline::remaining(start, seconds, clock.now()))
            .await;
        let Some(live) = current(&api, &name, &uid).await else {
            armed.lock().expect("deadlines").remove(&uid);
            return;
        };
        let passed = deadline::of(&live)
            .is_some_and(|(start, s)| deadline::remaining(start, s, clock.now()).is_zero());
        if !passed {
            // Raised meanwhile: the timer armed for the new deadline acts.
            return;
        }
        armed.lock().expect("deadlines").remove(&uid);
        let mut patch = deadline::exceeded_status(&live, &clock.timestamp());
        observed::stamp(live["metadata"]["generation"].as_i64(), &mut patch);
        match api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => tracing::info!(pod = %name, "pod failed: past its activeDeadlineSeconds"),
            Err(e) => {
                tracing::debug!(pod = %name, error = %e, "failing the pod at its deadline failed")
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(spec: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
            "spec": spec,
        }))
        .unwrap()
    }

    fn busybox(name: &str, command: &[&str]) -> serde_json::Value {
        json!({"name": name, "image": "busybox:1.36", "command": command})
    }

    #[test]
    fn init_containers_run_in_order_and_the_first_failure_stops_them() {
        let cases = [
            ("no init containers", json!([]), 0, None),
            (
                "two that sleep add up",
                json!([busybox("a", &["sleep", "2"]), busybox("b", &["sleep", "3"])]),
                5,
                None,
            ),
            (
                "one that cannot be told completes at once",
                json!([{"name": "a", "image": "nginx"}]),
                0,
                None,
            ),
            (
                "the first failure stops the rest",
                json!([
                    busybox("a", &["sleep", "1"]),
                    busybox("b", &["false"]),
                    busybox("c", &["sleep", "9"])
                ]),
                1,
                Some((1, 1)),
            ),
            (
                "a sidecar keeps running",
                json!([{"name": "s", "image": "busybox", "command": ["false"], "restartPolicy": "Always"}]),
                0,
                None,
            ),
        ];
        for (name, inits, takes, failed) in cases {
            let p = pod(json!({"containers": [busybox("c", &["true"])], "initContainers": inits}));
            let plan = init_plan(&p);
            assert_eq!(plan.takes, Duration::from_secs(takes), "{name}");
            assert_eq!(plan.failed, failed, "{name}");
        }
    }

    #[test]
    fn a_pod_runs_as_long_as_its_init_containers_then_its_longest_container() {
        let p = pod(json!({
            "initContainers": [busybox("i", &["sleep", "2"])],
            "containers": [busybox("a", &["sleep", "1"]), busybox("b", &["sh", "-c", "sleep 3; exit 4"])]}));
        let run = derived_run(&p).unwrap();
        assert_eq!(run.first_after, Duration::from_secs(2));
        assert_eq!(run.after, Duration::from_secs(3));
        assert_eq!((run.exit_code_of("a"), run.exit_code_of("b")), (0, 4));
        let failing_init = pod(json!({
            "initContainers": [busybox("i", &["false"])],
            "containers": [busybox("a", &["true"])]}));
        assert_eq!(
            derived_run(&failing_init),
            None,
            "the app containers never start"
        );
    }

    #[test]
    fn a_failed_init_container_fails_a_never_pod_and_holds_others_pending() {
        let spec = |policy: &str| {
            json!({"nodeName": "node-1", "restartPolicy": policy,
                   "initContainers": [busybox("i1", &["true"]), busybox("i2", &["false"]), busybox("i3", &["true"])],
                   "containers": [busybox("c", &["true"])]})
        };
        let s = &init_failed_status(&pod(spec("Never")), &(1, 1), "t0", "t1").unwrap()["status"];
        assert_eq!(s["phase"], "Failed");
        let inits = &s["initContainerStatuses"];
        assert_eq!(inits[0]["state"]["terminated"]["exitCode"], 0);
        assert_eq!(inits[1]["state"]["terminated"]["exitCode"], 1);
        assert_eq!(inits[1]["state"]["terminated"]["reason"], "Error");
        assert_eq!(inits[2]["state"]["waiting"]["reason"], "PodInitializing");
        assert_eq!(
            s["containerStatuses"][0]["state"]["waiting"]["reason"],
            "PodInitializing"
        );
        assert_eq!(s["conditions"][1]["type"], "Initialized");
        assert_eq!(
            s["conditions"][1]["message"],
            "containers with incomplete status: [i2]"
        );
        let s = &init_failed_status(&pod(spec("Always")), &(1, 1), "t0", "t1").unwrap()["status"];
        assert_eq!(s["phase"], "Pending");
        let failing = &s["initContainerStatuses"][1];
        assert_eq!(failing["state"]["waiting"]["reason"], "CrashLoopBackOff");
        assert_eq!(failing["lastState"]["terminated"]["exitCode"], 1);
        assert_eq!(failing["restartCount"], 1);
        let again = init_failed_again(
            &json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "status": s}),
            1,
            1,
            Duration::from_secs(20),
            "t2",
        );
        let failing = &again["status"]["initContainerStatuses"][1];
        assert_eq!(failing["restartCount"], 2);
        assert_eq!(failing["lastState"]["terminated"]["finishedAt"], "t2");
        assert!(failing["state"]["waiting"]["message"]
            .as_str()
            .unwrap()
            .starts_with("back-off 20s restarting failed container=i2 pod=p_ns(u)"));
    }

    #[test]
    fn a_running_pod_reports_its_resources_and_waits_for_delayed_probes() {
        let p = pod(json!({"nodeName": "node-1", "containers": [
            {"name": "sized", "image": "nginx",
             "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "200m"}}},
            {"name": "probed", "image": "nginx",
             "readinessProbe": {"initialDelaySeconds": 5, "exec": {"command": ["true"]}}}]}));
        let s = &running_status(&p, "t0", "t1").unwrap()["status"];
        let sized = &s["containerStatuses"][0];
        assert_eq!(
            sized["resources"],
            json!({"requests": {"cpu": "100m"}, "limits": {"cpu": "200m"}})
        );
        assert_eq!(sized["allocatedResources"], json!({"cpu": "100m"}));
        assert_eq!(sized["ready"], true);
        let probed = &s["containerStatuses"][1];
        assert!(probed.get("resources").is_none());
        assert_eq!(probed["ready"], false);
        let ready = s["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Ready")
            .unwrap();
        assert_eq!(ready["status"], "False");
        assert_eq!(ready["message"], "containers with unready status: [probed]");
        assert_eq!(readiness_delay(&p), Duration::from_secs(5));
    }

    #[test]
    fn a_host_network_pod_has_the_node_ip() {
        let spec = |host: bool| json!({"nodeName": "node-3", "hostNetwork": host, "containers": [{"name": "c", "image": "nginx"}]});
        let s = &running_status(&pod(spec(true)), "t0", "t1").unwrap()["status"];
        assert_eq!(s["podIP"], s["hostIP"]);
        assert_eq!(s["podIPs"], json!([{"ip": "10.0.0.4"}]));
        let s = &running_status(&pod(spec(false)), "t0", "t1").unwrap()["status"];
        assert_ne!(s["podIP"], s["hostIP"]);
    }
}
