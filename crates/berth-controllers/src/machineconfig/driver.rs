//! The machine config controller's loop: after a change to KubeletConfigs, pools,
//! MachineConfigs or nodes, it renders the KubeletConfigs, then each pool's configuration,
//! then moves the pools' nodes and writes their status. Every write is of what the stores
//! showed; a conflict means a newer object, and the change it brings runs the next pass.

use super::objects::{KubeletConfig, MachineConfig, MachineConfigPool};
use super::rollout::NodeView;
use super::{kubelet_config, name_of, render, rollout};
use crate::workqueue::Queue;
use crate::Clock;
use berth_informers::Informer;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// When a write failed, how soon the pass is tried again.
const RETRY: Duration = Duration::from_secs(1);

/// The work queues of the machine config operator's controllers this loop does the work of,
/// as OpenShift names them: KubeletConfigs are the keys of
/// `machineconfigcontroller-kubeletconfigcontroller`, pools those of
/// `machineconfigcontroller-rendercontroller` (their configuration rendered) and of
/// `machineconfigcontroller-nodecontroller` (their nodes moved, their status written).
#[derive(Clone)]
pub struct Queues {
    pub kubelet_configs: Queue,
    pub render: Queue,
    pub nodes: Queue,
}

/// Watches through `reads` and writes through `client` (the controller's identity).
pub async fn run(
    reads: kube::Client,
    client: kube::Client,
    nodes: Informer<Node>,
    clock: Clock,
    queues: Queues,
) {
    let pools: Informer<MachineConfigPool> =
        Informer::start(Api::all(reads.clone()), watcher::Config::default());
    let kcs: Informer<KubeletConfig> =
        Informer::start(Api::all(reads.clone()), watcher::Config::default());
    let mcs: Informer<MachineConfig> =
        Informer::start(Api::all(reads.clone()), watcher::Config::default());
    if !(pools.synced().await && kcs.synced().await && mcs.synced().await && nodes.synced().await) {
        return;
    }
    let (mut p, mut k, mut m, mut n) = (
        pools.changed.clone(),
        kcs.changed.clone(),
        mcs.changed.clone(),
        nodes.changed.clone(),
    );
    loop {
        let stores = Stores {
            pools: pools.store.state().iter().map(|o| o.to_value()).collect(),
            kcs: kcs.store.state().iter().map(|o| o.to_value()).collect(),
            mcs: mcs.store.state().iter().map(|o| o.to_value()).collect(),
            nodes: nodes.store.state().iter().map(|n| node_view(n)).collect(),
        };
        let failed = sync(&client, &stores, &clock, &queues).await;
        let retry = failed.then(|| clock.instant_after(RETRY));
        crate::wait::wait(&mut [&mut p, &mut k, &mut m, &mut n], retry).await;
    }
}

/// What one pass reads.
struct Stores {
    pools: Vec<Value>,
    kcs: Vec<Value>,
    mcs: Vec<Value>,
    nodes: Vec<NodeView>,
}

fn node_view(node: &Node) -> NodeView {
    let labels = node
        .metadata
        .labels
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    NodeView {
        name: node.metadata.name.clone().unwrap_or_default(),
        labels,
        annotations: node.metadata.annotations.clone().unwrap_or_default(),
        ready,
    }
}

/// Logs a failed write (not a conflict or a vanished object) and says whether it failed.
fn failed(result: Result<(), kube::Error>, what: &str, name: &str) -> bool {
    match result {
        Ok(()) => false,
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => false,
        Err(e) => {
            tracing::warn!(object = %name, error = %e, "machine config controller: {what} failed");
            true
        }
    }
}

/// One pass; `true` when a write failed.
async fn sync(client: &kube::Client, s: &Stores, clock: &Clock, queues: &Queues) -> bool {
    let mut failures = false;
    let mut kc_pass = queues.kubelet_configs.pass(s.kcs.len());
    let mut render_pass = queues.render.pass(s.pools.len());
    let mut node_pass = queues.nodes.pass(s.pools.len());
    let now = clock.timestamp();
    let kc_api: Api<KubeletConfig> = Api::all(client.clone());
    let mc_api: Api<MachineConfig> = Api::all(client.clone());
    let pool_api: Api<MachineConfigPool> = Api::all(client.clone());
    let node_api: Api<Node> = Api::all(client.clone());
    let pp = PostParams::default();

    // KubeletConfigs: their MachineConfigs and status.
    let (outcomes, wanted) = kubelet_config::reconcile(&s.kcs, &s.pools);
    for (name, mc) in &wanted {
        let existing = s.mcs.iter().find(|m| name_of(m) == name);
        let result = match existing {
            None => match serde_json::from_value::<MachineConfig>(mc.clone()) {
                Ok(obj) => mc_api.create(&pp, &obj).await.map(|_| ()),
                Err(_) => Ok(()),
            },
            Some(have) if have.get("spec") == mc.get("spec") => Ok(()),
            Some(have) => {
                let mut obj = mc.clone();
                obj["metadata"]["resourceVersion"] = have["metadata"]["resourceVersion"].clone();
                match serde_json::from_value::<MachineConfig>(obj) {
                    Ok(obj) => mc_api.replace(name, &pp, &obj).await.map(|_| ()),
                    Err(_) => Ok(()),
                }
            }
        };
        failures |= failed(result, "writing a generated MachineConfig", name);
    }
    for mc in s.mcs.iter().filter(|m| kubelet_config::is_generated(m)) {
        let name = name_of(mc);
        if !wanted.contains_key(name) && mc.pointer("/metadata/deletionTimestamp").is_none() {
            let result = mc_api
                .delete(name, &DeleteParams::default())
                .await
                .map(|_| ());
            failures |= failed(result, "deleting a generated MachineConfig", name);
        }
    }
    for (name, outcome) in &outcomes {
        let Some(kc) = s.kcs.iter().find(|k| name_of(k) == name) else {
            continue;
        };
        let _work = kc_pass.take();
        if kubelet_config::status_current(kc, outcome) {
            continue;
        }
        if let Outcome::Failure(e) = outcome {
            tracing::info!(kubeletconfig = %name, error = %e, "KubeletConfig not applied");
        }
        let status = kubelet_config::status(kc, outcome, &now);
        let patch = json!({"status": status});
        let result = kc_api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map(|_| ());
        failures |= failed(result, "writing a KubeletConfig's status", name);
    }

    // The KubeletConfigs without an outcome were synced with the others' MachineConfigs.
    kc_pass.skip(s.kcs.len());
    drop(kc_pass);

    // Pools: the rendered configuration (from the MachineConfigs as they will be), then the
    // rollout over the nodes and the status.
    let mut machine_configs: Vec<Value> = s
        .mcs
        .iter()
        .filter(|m| !kubelet_config::is_generated(m))
        .cloned()
        .collect();
    machine_configs.extend(wanted.values().cloned());
    for pool in &s.pools {
        let name = name_of(pool);
        let mut pool = pool.clone();
        let render_work = render_pass.take();
        if let Some(rendered) = render::render(&pool, &machine_configs) {
            if !s.mcs.iter().any(|m| name_of(m) == rendered.name) {
                if let Ok(obj) =
                    serde_json::from_value::<MachineConfig>(rendered.machine_config.clone())
                {
                    let result = mc_api.create(&pp, &obj).await.map(|_| ());
                    failures |= failed(result, "creating a rendered MachineConfig", &rendered.name);
                }
            }
            let configuration = render::configuration(&rendered);
            if pool.pointer("/spec/configuration") != Some(&configuration) {
                tracing::info!(pool = %name, config = %rendered.name, "pool configuration rendered");
                let patch = json!({"spec": {"configuration": configuration}});
                let result = pool_api
                    .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map(|_| ());
                failures |= failed(result, "setting a pool's configuration", name);
                pool["spec"]["configuration"] = configuration;
            }
        }
        drop(render_work);
        let _work = node_pass.take();
        let members = rollout::nodes_of(&pool, &s.pools, &s.nodes);
        for (node, annotations) in rollout::plan(&pool, &members) {
            if let Some(desired) = annotations.get(super::DESIRED_CONFIG) {
                tracing::info!(pool = %name, node = %node, config = %desired, "node pointed at the pool's configuration");
            }
            let annotations: BTreeMap<&String, &String> = annotations.iter().collect();
            let patch = json!({"metadata": {"annotations": annotations}});
            let result = node_api
                .patch(&node, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map(|_| ());
            failures |= failed(result, "annotating a node", &node);
        }
        let status = rollout::status(&pool, &members, &now);
        if !rollout::status_current(&pool, &status) {
            let patch = json!({"status": status});
            let result = pool_api
                .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map(|_| ());
            failures |= failed(result, "writing a pool's status", name);
        }
    }
    drop((render_pass, node_pass));
    failures
}

use kubelet_config::Outcome;
