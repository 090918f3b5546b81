//! The machine config daemon of each simulated node (OpenShift's `machine-config-daemon`):
//! when the machine config controller points a node at a configuration (the node annotation
//! `machineconfiguration.openshift.io/desiredConfig`), the daemon reads that MachineConfig,
//! restarts the node's simulated kubelet with its kubelet configuration (the file
//! `/etc/kubernetes/kubelet.conf`, laid over the node's own settings from the cluster file),
//! writes the node's new capacity and allocatable, and answers `currentConfig` and
//! `state: Done`. A kubelet that cannot run with the file leaves the node `Degraded`, with the
//! reason, as the daemon of a node that failed its update.
//!
//! A node whose kubelet starts (`berth serve` again, or a node taken over) comes up on its
//! `currentConfig`: the daemon applies it without a state change. A node with no machine
//! configuration, or one whose configuration leaves its settings as they are, is untouched.
//!
//! The daemon acts as its ServiceAccount
//! (`system:serviceaccount:openshift-machine-config-operator:machine-config-daemon`): the Node
//! authorizer lets a kubelet read nothing of the machine configs. The node's status is written
//! by the node's own kubelet client. The decision ([`step`]) is pure.

use crate::clients::Clients;
use crate::sim::Sim;
use crate::NodeConfig;
use base64::Engine;
use berth_informers::{Event, Informer};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::runtime::watcher;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// The node annotations the daemon and the machine config controller talk through.
pub const CURRENT_CONFIG: &str = "machineconfiguration.openshift.io/currentConfig";
pub const DESIRED_CONFIG: &str = "machineconfiguration.openshift.io/desiredConfig";
pub const STATE: &str = "machineconfiguration.openshift.io/state";
pub const REASON: &str = "machineconfiguration.openshift.io/reason";
/// Where an OpenShift node's kubelet reads its configuration.
pub const KUBELET_CONF_PATH: &str = "/etc/kubernetes/kubelet.conf";
/// The loop's name under the supervisor.
pub const LOOP_NAME: &str = "machine-config-daemon";

/// What the daemon does about its node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Nothing to do.
    Idle,
    /// The kubelet (re)started: it runs on `currentConfig`, applied without a state change.
    Boot(String),
    /// The controller asks for another configuration: `Working`, apply, then `currentConfig`
    /// and `Done`.
    Update(String),
}

/// What to do, given the node's annotations, the configuration the kubelet runs on here, and
/// the configuration whose update failed last (not retried until another is desired).
pub fn step(
    annotations: &BTreeMap<String, String>,
    applied: Option<&str>,
    failed: Option<&str>,
) -> Step {
    let get = |k: &str| annotations.get(k).map_or("", String::as_str);
    let (current, desired) = (get(CURRENT_CONFIG), get(DESIRED_CONFIG));
    if current.is_empty() {
        return Step::Idle;
    }
    if !desired.is_empty() && desired != current {
        // Already running it here: the node's `Done` is on its way (a stale event).
        if applied == Some(desired) {
            return Step::Idle;
        }
        return match failed {
            Some(f) if f == desired => Step::Idle,
            _ => Step::Update(desired.to_string()),
        };
    }
    if applied != Some(current) {
        return Step::Boot(current.to_string());
    }
    Step::Idle
}

/// The kubelet configuration a MachineConfig carries (`{}` when it has none), or why it
/// cannot be read.
pub fn kubelet_config_of(mc: &Value) -> Result<Value, String> {
    let files = mc
        .pointer("/spec/config/storage/files")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let Some(file) = files.iter().rev().find(|f| f["path"] == KUBELET_CONF_PATH) else {
        return Ok(json!({}));
    };
    let source = file
        .pointer("/contents/source")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let bytes = decode_data_url(source)
        .ok_or_else(|| format!("cannot decode the contents of {KUBELET_CONF_PATH}"))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("{KUBELET_CONF_PATH} is not text"))?;
    // The operator writes YAML; berth's controller JSON, which is YAML too.
    serde_saphyr::from_str::<Value>(&text).map_err(|e| format!("{KUBELET_CONF_PATH}: {e}"))
}

/// The bytes of a `data:` URL (RFC 2397: base64 or percent-encoded).
fn decode_data_url(url: &str) -> Option<Vec<u8>> {
    let rest = url.strip_prefix("data:")?;
    let (meta, data) = rest.split_once(',')?;
    if meta.ends_with(";base64") {
        return base64::engine::general_purpose::STANDARD.decode(data).ok();
    }
    let mut out = Vec::with_capacity(data.len());
    let bytes = data.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

/// The daemons of this process's nodes.
pub struct Daemons {
    /// The daemon's own client (its ServiceAccount).
    client: kube::Client,
    clients: Clients,
    sim: Arc<Sim>,
    /// Each node's own settings (the cluster file's), what machine configs are laid over.
    own: BTreeMap<String, NodeConfig>,
}

/// What the daemons remember between events.
#[derive(Default)]
struct Memory {
    /// The configuration each node's kubelet runs on here.
    applied: HashMap<String, String>,
    /// The configuration whose update failed, by node.
    failed: HashMap<String, String>,
}

impl Daemons {
    pub fn new(
        client: kube::Client,
        clients: Clients,
        sim: Arc<Sim>,
        own: Vec<NodeConfig>,
    ) -> Daemons {
        Daemons {
            client,
            clients,
            sim,
            own: own.into_iter().map(|c| (c.name.clone(), c)).collect(),
        }
    }

    /// Watches the nodes and carries out each one's [`step`].
    pub async fn run(self: Arc<Self>) {
        let nodes: Informer<Node> =
            Informer::start(Api::all(self.client.clone()), watcher::Config::default());
        let mut events = nodes.subscribe();
        let mut memory = Memory::default();
        while let Some(event) = events.recv().await {
            let node = match event {
                Event::Added(n) | Event::Updated { new: n, .. } => n,
                Event::Deleted(n) => {
                    let name = n.metadata.name.clone().unwrap_or_default();
                    memory.applied.remove(&name);
                    memory.failed.remove(&name);
                    continue;
                }
                Event::Synced => continue,
            };
            let name = node.metadata.name.clone().unwrap_or_default();
            if !self.own.contains_key(&name)
                || !self.sim.runs_here(&name)
                || !self.sim.mode(&name).reaches_api()
            {
                // A kubelet that is not running here comes up on its config when it does.
                memory.applied.remove(&name);
                continue;
            }
            let annotations = node.metadata.annotations.clone().unwrap_or_default();
            let applied = memory.applied.get(&name).map(String::as_str);
            let failed = memory.failed.get(&name).map(String::as_str);
            match step(&annotations, applied, failed) {
                Step::Idle => {}
                Step::Boot(config) => match self.apply(&name, &config).await {
                    Ok(()) => {
                        memory.applied.insert(name, config);
                    }
                    Err(e) => {
                        tracing::warn!(node = %name, config = %config, error = %e, "machine config daemon: the node's current configuration cannot be applied");
                        memory.applied.insert(name, config);
                    }
                },
                Step::Update(config) => {
                    tracing::info!(node = %name, config = %config, "machine config daemon: updating the node");
                    let _ = self
                        .annotate(&name, &[(STATE, "Working"), (REASON, "")])
                        .await;
                    match self.apply(&name, &config).await {
                        Ok(()) => {
                            let done = [
                                (CURRENT_CONFIG, config.as_str()),
                                (STATE, "Done"),
                                (REASON, ""),
                            ];
                            if self.annotate(&name, &done).await {
                                memory.failed.remove(&name);
                                memory.applied.insert(name, config);
                            }
                        }
                        Err(e) => {
                            tracing::warn!(node = %name, config = %config, error = %e, "machine config daemon: update failed; the node is degraded");
                            let reason = format!("failed to apply {config}: {e}");
                            let _ = self
                                .annotate(&name, &[(STATE, "Degraded"), (REASON, &reason)])
                                .await;
                            memory.failed.insert(name, config);
                        }
                    }
                }
            }
        }
    }

    /// Restarts `node`'s kubelet on the MachineConfig `config` and writes its new capacity and
    /// allocatable (nothing when they do not change).
    async fn apply(&self, node: &str, config: &str) -> Result<(), String> {
        let gvk = GroupVersionKind::gvk("machineconfiguration.openshift.io", "v1", "MachineConfig");
        let resource = ApiResource::from_gvk_with_plural(&gvk, "machineconfigs");
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
        let mc = api
            .get(config)
            .await
            .map_err(|e| format!("reading {config}: {e}"))?;
        let mc = serde_json::to_value(&mc).map_err(|e| e.to_string())?;
        let kubelet_config = kubelet_config_of(&mc)?;
        let own = self.own.get(node).ok_or("not a node of this process")?;
        let reconfigured = own
            .reconfigured(&kubelet_config)
            .map_err(|e| e.to_string())?;
        let list = |l: &crate::allocatable::ResourceList| -> BTreeMap<String, String> {
            l.iter().map(|(k, v)| (k.clone(), v.to_string())).collect()
        };
        let patch = json!({"status": {"capacity": list(&reconfigured.capacity),
                                      "allocatable": list(&reconfigured.allocatable)}});
        if !self.sim.reconfigure(node, reconfigured) {
            return Ok(());
        }
        tracing::info!(
            node,
            config,
            "kubelet restarted with the machine config's settings"
        );
        let api: Api<Node> = Api::all(self.clients.node(node));
        api.patch_status(node, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| format!("writing the node's allocatable: {e}"))?;
        Ok(())
    }

    /// Sets the daemon's annotations on `node`; whether it was written.
    async fn annotate(&self, node: &str, values: &[(&str, &str)]) -> bool {
        let annotations: BTreeMap<&str, &str> = values.iter().copied().collect();
        let patch = json!({"metadata": {"annotations": annotations}});
        let api: Api<Node> = Api::all(self.client.clone());
        match api
            .patch(node, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => true,
            Err(e) => {
                tracing::warn!(node, error = %e, "machine config daemon: annotating the node failed");
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_daemon_updates_boots_or_waits() {
        let none = annotations(&[]);
        assert_eq!(step(&none, None, None), Step::Idle);
        let at_a = annotations(&[
            (CURRENT_CONFIG, "a"),
            (DESIRED_CONFIG, "a"),
            (STATE, "Done"),
        ]);
        assert_eq!(step(&at_a, None, None), Step::Boot("a".into()));
        assert_eq!(step(&at_a, Some("a"), None), Step::Idle);
        let to_b = annotations(&[
            (CURRENT_CONFIG, "a"),
            (DESIRED_CONFIG, "b"),
            (STATE, "Done"),
        ]);
        assert_eq!(step(&to_b, Some("a"), None), Step::Update("b".into()));
        // A failed update is not retried until another configuration is desired.
        assert_eq!(step(&to_b, Some("a"), Some("b")), Step::Idle);
        assert_eq!(step(&to_b, Some("a"), Some("c")), Step::Update("b".into()));
        // An event from before the update finished: nothing more to do.
        assert_eq!(step(&to_b, Some("b"), None), Step::Idle);
    }

    #[test]
    fn the_kubelet_configuration_is_read_from_the_machine_config() {
        let conf = json!({"kind": "KubeletConfiguration", "maxPods": 42});
        let data = base64::engine::general_purpose::STANDARD.encode(conf.to_string());
        let mc = json!({"spec": {"config": {"storage": {"files": [
            {"path": "/etc/motd", "contents": {"source": "data:,hello"}},
            {"path": KUBELET_CONF_PATH, "contents": {"source": format!("data:text/plain;charset=utf-8;base64,{data}")}},
        ]}}}});
        assert_eq!(kubelet_config_of(&mc).unwrap()["maxPods"], 42);
        let yaml = json!({"spec": {"config": {"storage": {"files": [
            {"path": KUBELET_CONF_PATH, "contents": {"source": "data:,maxPods%3A%2050%0A"}},
        ]}}}});
        assert_eq!(kubelet_config_of(&yaml).unwrap()["maxPods"], 50);
        assert_eq!(kubelet_config_of(&json!({"spec": {}})).unwrap(), json!({}));
        let broken = json!({"spec": {"config": {"storage": {"files": [
            {"path": KUBELET_CONF_PATH, "contents": {"source": "data:;base64,@@@"}},
        ]}}}});
        assert!(kubelet_config_of(&broken).is_err());
    }
}
