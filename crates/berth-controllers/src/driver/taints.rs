//! The NoExecute taint manager loop: each node or pod change goes to the engine as it arrives
//! (nodes first), the engine's timers wake the loop at the next deadline, and a full pass over
//! the stores resynchronises it at start, after each relist, and
//! to retry a deletion that failed. A pod is marked `DisruptionTarget` before it is deleted.

use super::recorder::Recorder;
use crate::informers::Informers;
use crate::taint_manager::{TaintAction, TaintManager};
use crate::workqueue::Queue;
use crate::Clock;
use berth_core::pod_conditions;
use berth_informers::Event;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

const COMPONENT: &str = "taint-eviction-controller";

/// After a deletion failed every try, when the pass that asks again runs (past the engine's
/// 30 s during which a deletion asked for counts as under way).
const RETRY_FAILED_AFTER: Duration = Duration::from_secs(31);

/// Why the loop woke.
enum Wake {
    Node(Option<Event<Node>>),
    Pod(Option<Event<Pod>>),
    Timer,
}

/// Node and pod changes are the keys of `node_queue` and `pod_queue` (upstream's
/// `noexec_taint_node` and `noexec_taint_pod`); a full pass adds every node and pod.
pub async fn run(
    client: kube::Client,
    informers: Informers,
    recorder: Recorder,
    clock: Clock,
    metrics: crate::metrics::ControllerMetrics,
    node_queue: Queue,
    pod_queue: Queue,
) {
    // Subscribed before the stores are read: nothing falls in between.
    let mut node_changes = informers.nodes.subscribe();
    let mut pod_changes = informers.pods.subscribe();
    if !informers.nodes.synced().await || !informers.pods.synced().await {
        return;
    }
    let mut manager = TaintManager::new();
    let queues = [&node_queue, &pod_queue];
    let mut actions = full_pass(&mut manager, &informers, &clock, queues);
    let mut retry_at: Option<Instant> = None;
    loop {
        if !execute(&client, &recorder, &metrics, &clock, actions).await {
            retry_at = Some(clock.instant() + RETRY_FAILED_AFTER);
        }
        let deadline = manager.next_wakeup().map(|at| clock.instant_at(at));
        let until = match (deadline, retry_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let wake = tokio::select! {
            biased;
            change = node_changes.recv() => Wake::Node(change),
            change = pod_changes.recv() => Wake::Pod(change),
            _ = sleep_until(until) => Wake::Timer,
        };
        let now = clock.now();
        actions = match wake {
            Wake::Node(Some(Event::Added(node) | Event::Updated { new: node, .. })) => {
                one(&node_queue, || manager.node_changed(&node, now))
            }
            Wake::Node(Some(Event::Deleted(node))) => one(&node_queue, || {
                manager.node_deleted(node.metadata.name.as_deref().unwrap_or(""), now)
            }),
            Wake::Pod(Some(Event::Added(pod) | Event::Updated { new: pod, .. })) => {
                one(&pod_queue, || manager.pod_changed(&pod, now))
            }
            Wake::Pod(Some(Event::Deleted(pod))) => one(&pod_queue, || {
                manager.pod_deleted(&pod);
                Vec::new()
            }),
            Wake::Node(None) | Wake::Pod(None) => return,
            Wake::Node(Some(Event::Synced)) | Wake::Pod(Some(Event::Synced)) => {
                full_pass(&mut manager, &informers, &clock, queues)
            }
            Wake::Timer if retry_at.is_some_and(|at| at <= clock.instant()) => {
                retry_at = None;
                full_pass(&mut manager, &informers, &clock, queues)
            }
            Wake::Timer => Vec::new(),
        };
        actions.append(&mut manager.due(now).actions);
    }
}

async fn sleep_until(until: Option<Instant>) {
    match until {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// One change handed to the engine: one key of `queue`, synced by `sync`.
fn one<T>(queue: &Queue, sync: impl FnOnce() -> T) -> T {
    let mut pass = queue.pass(1);
    let _work = pass.take();
    sync()
}

/// Resynchronises the manager from the stores: every node and pod is one key of its queue
/// (`queues`: nodes', pods'), all synced by the one engine pass.
fn full_pass(
    manager: &mut TaintManager,
    informers: &Informers,
    clock: &Clock,
    queues: [&Queue; 2],
) -> Vec<TaintAction> {
    let nodes: Vec<Arc<Node>> = informers.nodes.store.state();
    let pods: Vec<Arc<Pod>> = informers.pods.store.state();
    let node_refs: Vec<&Node> = nodes.iter().map(|n| n.as_ref()).collect();
    let pod_refs: Vec<&Pod> = pods.iter().map(|p| p.as_ref()).collect();
    let actions = manager.pass(&node_refs, &pod_refs, clock.now()).actions;
    queues[0].pass(nodes.len()).skip(nodes.len());
    queues[1].pass(pods.len()).skip(pods.len());
    actions
}

/// Carries the actions out; returns whether every deletion went through.
async fn execute(
    client: &kube::Client,
    recorder: &Recorder,
    metrics: &crate::metrics::ControllerMetrics,
    clock: &Clock,
    actions: Vec<TaintAction>,
) -> bool {
    let mut all_done = true;
    for action in actions {
        match action {
            TaintAction::Event(e) => recorder.record(COMPONENT, &e),
            TaintAction::Delete(pod) => {
                let api: Api<Pod> = Api::namespaced(client.clone(), &pod.namespace);
                let params = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid: Some(pod.uid.clone()),
                        resource_version: None,
                    }),
                    ..DeleteParams::default()
                };
                // Up to 5 tries, 10 ms apart (upstream).
                let mut done = false;
                for attempt in 1..=5 {
                    let deleted = match mark_disruption_target(&api, &pod.name, clock).await {
                        Ok(()) => api.delete(&pod.name, &params).await.map(|_| ()),
                        Err(e) => Err(e),
                    };
                    match deleted {
                        Ok(_) => {
                            metrics.pod_deleted();
                            done = true;
                        }
                        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => done = true,
                        Err(e) => {
                            tracing::warn!(pod = %pod.name, attempt, error = %e, "taint manager deletion failed");
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                    }
                    if done {
                        break;
                    }
                }
                all_done &= done;
            }
        }
    }
    all_done
}

/// Writes `DisruptionTarget` (`DeletionByTaintManager`) into the pod's status before it is
/// deleted, reading the pod afresh as upstream's `addConditionAndDeletePod` does.
async fn mark_disruption_target(
    api: &Api<Pod>,
    name: &str,
    clock: &Clock,
) -> Result<(), kube::Error> {
    let pod = api.get(name).await?;
    let conditions = pod
        .status
        .as_ref()
        .and_then(|s| serde_json::to_value(&s.conditions).ok())
        .unwrap_or_default();
    let wanted = pod_conditions::disruption_target(
        pod_conditions::DELETION_BY_TAINT_MANAGER,
        pod_conditions::TAINT_MANAGER_MESSAGE,
    );
    if let Some(c) = pod_conditions::update(&conditions, &wanted, &clock.timestamp()) {
        let patch = serde_json::json!({"status": {"conditions": [c]}});
        api.patch_status(name, &PatchParams::default(), &Patch::Strategic(&patch))
            .await?;
    }
    Ok(())
}
