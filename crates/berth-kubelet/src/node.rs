//! A simulated node's `Node` object and its lease.

use crate::config::NodeConfig;
use berth_core::clock::Clock;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use std::collections::BTreeMap;

/// The node object a simulated node registers, from its configuration.
pub struct NodeSpec<'a> {
    pub config: &'a NodeConfig,
    /// Position among the nodes, used for its internal IP.
    pub index: usize,
    /// Where its kubelet endpoints answer.
    pub endpoint: &'a Endpoint<'a>,
    /// The replica running its kubelet, when the kubelets are shared among replicas: part of
    /// its `bootID`, which changes when the kubelet moves, as after a reboot.
    pub replica: Option<&'a str>,
}

/// The listener of the kubelet endpoints, shared by every simulated node of the process.
pub struct Endpoint<'a> {
    pub host: &'a str,
    pub port: u16,
}

fn list(l: &crate::allocatable::ResourceList) -> BTreeMap<String, String> {
    l.iter().map(|(k, v)| (k.clone(), v.to_string())).collect()
}

/// The node's `status.images`, largest first (as upstream lists them).
pub fn images_status(images: &BTreeMap<String, crate::model::ImageState>) -> serde_json::Value {
    let mut v: Vec<_> = images.iter().collect();
    v.sort_by(|a, b| b.1.size_bytes.cmp(&a.1.size_bytes).then(a.0.cmp(b.0)));
    json!(v
        .into_iter()
        .map(|(n, i)| json!({"names": [n], "sizeBytes": i.size_bytes}))
        .collect::<Vec<_>>())
}

impl NodeSpec<'_> {
    /// The node's internal IP: 10.0.x.y from its index.
    pub fn internal_ip(&self) -> String {
        format!("10.0.{}.{}", (self.index / 250) % 250, self.index % 250 + 1)
    }

    fn boot_id(&self) -> String {
        match self.replica {
            Some(r) => format!("berth-{}@{r}", self.config.name),
            None => format!("berth-{}", self.config.name),
        }
    }

    fn object(&self, now: &str) -> serde_json::Value {
        let c = self.config;
        let condition = |type_: &str, status: &str, reason: &str, message: &str| {
            json!({"type": type_, "status": status, "reason": reason, "message": message,
                   "lastHeartbeatTime": now, "lastTransitionTime": now})
        };
        let images = crate::model::NodeModel::new(c.clone()).images;
        let mut spec = json!({});
        if !c.taints.is_empty() {
            spec["taints"] = json!(c.taints);
        }
        json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": c.name, "labels": c.labels},
            "spec": spec,
            "status": {
                "capacity": list(&c.capacity), "allocatable": list(&c.allocatable),
                "conditions": [
                    condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                    condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                    condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                    condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
                ],
                // The simulated InternalIP is not routable; InternalDNS is where the API server
                // reaches the kubelet endpoints (naming the node in the Host header).
                "addresses": [{"type": "InternalIP", "address": self.internal_ip()}, {"type": "Hostname", "address": c.name},
                              {"type": "InternalDNS", "address": self.endpoint.host}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": self.endpoint.port}},
                "nodeInfo": {
                    "machineID": format!("berth-{}", c.name), "systemUUID": format!("berth-{}", c.name), "bootID": self.boot_id(),
                    "kernelVersion": "6.1.0-berth", "osImage": "berth simulated node", "containerRuntimeVersion": "berth://0.1.0",
                    "kubeletVersion": "v1.32.0-berth", "kubeProxyVersion": "v1.32.0-berth", "operatingSystem": "linux", "architecture": "amd64",
                },
                "images": images_status(&images),
            }
        })
    }
}

/// Creates the node, or refreshes its status if it already exists (a restart). The node is
/// created by `provisioner`, as an administrator provisions it: a pool's labels and taints may
/// include ones a kubelet may not set on itself (`node-role.kubernetes.io/*`,
/// `node-restriction.kubernetes.io/*`, which NodeRestriction refuses); its status is then
/// written by the node's own `kubelet` client.
pub async fn register(
    provisioner: &kube::Client,
    kubelet: &kube::Client,
    spec: &NodeSpec<'_>,
    clock: &Clock,
) -> Result<(), kube::Error> {
    let api: Api<Node> = Api::all(provisioner.clone());
    let obj = spec.object(&clock.timestamp());
    let node: Node = serde_json::from_value(obj.clone()).map_err(kube::Error::SerdeError)?;
    match api.create(&PostParams::default(), &node).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => return Err(e),
    }
    // The status subresource carries capacity and conditions (create ignores status upstream).
    let status = json!({"status": obj["status"]});
    let api: Api<Node> = Api::all(kubelet.clone());
    api.patch_status(
        &spec.config.name,
        &PatchParams::default(),
        &Patch::Merge(&status),
    )
    .await?;
    Ok(())
}
