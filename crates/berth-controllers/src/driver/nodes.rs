//! The node loops: condition taints (event-driven) and the health monitor (periodic).

use super::recorder::Recorder;
use crate::informers::{wait, Informers};
use crate::lifecycle::simulated::SimulatedLeases;
use crate::lifecycle::{LifecycleAction, LifecycleConfig, Monitor, NodeView};
use crate::model::{pod_node, timestamp};
use crate::workqueue::Queue;
use crate::{node_taints, Clock};
use k8s_openapi::api::core::v1::{Node, Pod, Taint};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Duration;

const COMPONENT: &str = "node-controller";

/// How often the zones' taint queues are worked (upstream: 100 ms).
const TAINT_WORKER_PERIOD: Duration = Duration::from_millis(100);

/// How often taints by condition are checked even when no node changed.
const CONDITION_TAINTS_RESYNC: Duration = Duration::from_secs(5);

/// Writes the node's whole taint list, if the node is still at `resource_version`.
async fn write_taints(
    api: &Api<Node>,
    node: &str,
    resource_version: Option<&str>,
    taints: &[Taint],
) {
    let patch =
        json!({"metadata": {"resourceVersion": resource_version}, "spec": {"taints": taints}});
    match api
        .patch(node, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => tracing::debug!(node, "node taints updated"),
        // A newer node is on its way through the watch; the next pass starts from it.
        Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => {}
        Err(e) => tracing::warn!(node, error = %e, "updating node taints failed"),
    }
}

/// Taints by condition: on every node change, bring each node's condition taints in line.
/// `resync`: also every [`CONDITION_TAINTS_RESYNC`] (off in `berth simulate`, whose watches
/// are in process and miss nothing, where it would cost nodes x simulated time). Each node a
/// pass checks is one key of `queue` (upstream's `node_lifecycle_controller`, whose worker
/// does this tainting).
pub async fn run_condition_taints(
    client: kube::Client,
    mut informers: Informers,
    clock: Clock,
    resync: bool,
    queue: Queue,
) {
    let api: Api<Node> = Api::all(client);
    if !informers.nodes.synced().await {
        return;
    }
    loop {
        let nodes = informers.nodes.store.state();
        let mut pass = queue.pass(nodes.len());
        for node in nodes {
            let _work = pass.take();
            if let Some(taints) = node_taints::reconcile(&node) {
                let name = node.metadata.name.clone().unwrap_or_default();
                write_taints(
                    &api,
                    &name,
                    node.metadata.resource_version.as_deref(),
                    &taints,
                )
                .await;
            }
        }
        drop(pass);
        // Level-triggered with a periodic resync, so a missed signal cannot leave a taint stale.
        let next = resync.then(|| clock.instant() + CONDITION_TAINTS_RESYNC);
        wait(&mut [&mut informers.nodes.changed], next).await;
    }
}

/// Node lifecycle: a monitor pass every `period`. The pods it marks not ready are keys of
/// `pods_queue` (upstream's `node_lifecycle_controller_pods`).
#[allow(clippy::too_many_arguments)]
pub async fn run_lifecycle(
    client: kube::Client,
    mut informers: Informers,
    recorder: Recorder,
    clock: Clock,
    config: LifecycleConfig,
    period: Duration,
    metrics: crate::metrics::ControllerMetrics,
    simulated: Option<SimulatedLeases>,
    pods_queue: Queue,
) {
    let mut simulated = simulated.unwrap_or_default();
    let nodes_api: Api<Node> = Api::all(client.clone());
    if !informers.nodes.synced().await || !informers.leases.synced().await {
        return;
    }
    let mut monitor = Monitor::new(config);
    // `berth simulate`: whether every simulated node ran at the last pass (none has run yet).
    let mut all_ran = false;
    let first = clock.instant_after(period);
    let mut tick = tokio::time::interval_at(first, clock.tokio_duration(period));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        // Between passes, the zones' taint queues are worked every 100 ms while they hold nodes.
        let actions = loop {
            let worker = tokio::time::sleep(TAINT_WORKER_PERIOD);
            tokio::select! {
                _ = tick.tick() => break None,
                _ = worker, if monitor.has_queued() => {
                    let nodes = informers.nodes.store.state();
                    let refs: Vec<&Node> = nodes.iter().map(|n| n.as_ref()).collect();
                    let actions = monitor.work_queues(&refs, clock.now());
                    for zone in monitor.take_evictions() {
                        metrics.eviction(&zone);
                    }
                    if !actions.is_empty() {
                        break Some(actions);
                    }
                }
            }
        };
        if let Some(actions) = actions {
            for action in actions {
                if let LifecycleAction::SetTaints {
                    node,
                    resource_version,
                    taints,
                } = action
                {
                    write_taints(&nodes_api, &node, resource_version.as_deref(), &taints).await;
                }
            }
            continue;
        }
        // `berth simulate`: a pass over simulated nodes that all ran at the last pass and none
        // of which changed since (the node store's change signal says so, in O(1)) decides
        // nothing, and it would cost nodes x simulated time: it is skipped, and the leases are
        // renewed in one step.
        let changed = informers.nodes.changed.has_changed().unwrap_or(true);
        informers.nodes.changed.borrow_and_update();
        if simulated.active() && all_ran && !changed {
            simulated.renew_unchanged(clock.now());
            continue;
        }
        let nodes = informers.nodes.store.state();
        if simulated.active() {
            all_ran = simulated.renew_all(nodes.iter().map(|n| n.as_ref()), clock.now());
        }
        let leases: BTreeMap<String, _> = informers
            .leases
            .store
            .state()
            .iter()
            .filter_map(|l| {
                let renew = l.spec.as_ref()?.renew_time.as_ref()?;
                let renew = crate::model::to_chrono(
                    &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(renew.0),
                );
                Some((l.metadata.name.clone()?, renew))
            })
            .collect();
        let now = clock.now();
        let views: Vec<NodeView<'_>> = nodes
            .iter()
            .map(|n| {
                let name = n.metadata.name.as_deref().unwrap_or_default();
                let lease_renew = if simulated.covers(name) {
                    simulated.renew_time(n, now)
                } else {
                    leases.get(name).copied()
                };
                NodeView {
                    node: n,
                    lease_renew,
                }
            })
            .collect();
        let actions = monitor.pass(&views, now);
        metrics.zones(monitor.zone_counts());
        for zone in monitor.take_evictions() {
            metrics.eviction(&zone);
        }
        for action in actions {
            match action {
                LifecycleAction::SetConditions {
                    node,
                    resource_version,
                    conditions,
                } => {
                    let patch = json!({"metadata": {"resourceVersion": resource_version}, "status": {"conditions": conditions}});
                    match nodes_api
                        .patch_status(&node, &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                    {
                        Ok(_) => {
                            tracing::info!(node = %node, "node stopped posting status; conditions now Unknown")
                        }
                        Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => {}
                        Err(e) => {
                            tracing::warn!(node = %node, error = %e, "updating node conditions failed")
                        }
                    }
                }
                LifecycleAction::SetTaints {
                    node,
                    resource_version,
                    taints,
                } => {
                    write_taints(&nodes_api, &node, resource_version.as_deref(), &taints).await;
                }
                LifecycleAction::MarkPodsNotReady { node } => {
                    mark_pods_not_ready(&client, &informers, &recorder, &node, now, &pods_queue)
                        .await;
                }
                LifecycleAction::Event(e) => recorder.record(COMPONENT, &e),
            }
        }
    }
}

/// Sets `Ready=False` on every pod bound to `node` (upstream `MarkPodsNotReady`).
async fn mark_pods_not_ready(
    client: &kube::Client,
    informers: &Informers,
    recorder: &Recorder,
    node: &str,
    now: chrono::DateTime<chrono::Utc>,
    queue: &Queue,
) {
    let pods: Vec<std::sync::Arc<Pod>> = informers
        .pods
        .store
        .state_filter(|p| pod_node(p) == Some(node));
    let mut pass = queue.pass(pods.len());
    for pod in pods {
        let _work = pass.take();
        let ready = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"));
        if ready.is_none_or(|c| c.status == "False") {
            continue;
        }
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let patch = json!({"status": {"conditions": [{"type": "Ready", "status": "False", "lastProbeTime": null, "lastTransitionTime": timestamp(now)}]}});
        match api
            .patch_status(&name, &PatchParams::default(), &Patch::Strategic(&patch))
            .await
        {
            // Recorded after the update, as upstream: the pod still exists.
            Ok(_) => recorder.record(COMPONENT, &crate::events::pod_node_not_ready(&pod)),
            Err(e) => tracing::debug!(pod = %name, error = %e, "marking pod not ready failed"),
        }
    }
}
