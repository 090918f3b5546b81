//! A simulated node's `Node` object and its lease.

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

/// What a simulated node looks like.
#[derive(Clone, Debug)]
pub struct NodeSpec {
    pub name: String,
    pub cpu: String,
    pub memory: String,
    pub pods: String,
    pub ephemeral_storage: String,
    pub labels: BTreeMap<String, String>,
    /// Position among the nodes, used for its internal IP.
    pub index: usize,
}

impl NodeSpec {
    /// `count` workers `node-1`..`node-N` with 4 CPU, 16Gi and 110 pods each.
    pub fn quick(count: usize) -> Vec<NodeSpec> {
        (1..=count)
            .map(|i| {
                let name = format!("node-{i}");
                let labels = BTreeMap::from([
                    ("kubernetes.io/hostname".to_string(), name.clone()),
                    ("kubernetes.io/os".to_string(), "linux".to_string()),
                    ("kubernetes.io/arch".to_string(), "amd64".to_string()),
                    ("node-role.kubernetes.io/worker".to_string(), String::new()),
                ]);
                NodeSpec {
                    name,
                    cpu: "4".into(),
                    memory: "16Gi".into(),
                    pods: "110".into(),
                    ephemeral_storage: "100Gi".into(),
                    labels,
                    index: i,
                }
            })
            .collect()
    }

    /// The node's internal IP: 10.0.x.y from its index.
    pub fn internal_ip(&self) -> String {
        format!("10.0.{}.{}", (self.index / 250) % 250, self.index % 250 + 1)
    }

    fn object(&self, now: &str) -> serde_json::Value {
        let resources = json!({"cpu": self.cpu, "memory": self.memory, "pods": self.pods, "ephemeral-storage": self.ephemeral_storage});
        let condition = |type_: &str, status: &str, reason: &str, message: &str| {
            json!({"type": type_, "status": status, "reason": reason, "message": message,
                   "lastHeartbeatTime": now, "lastTransitionTime": now})
        };
        json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": self.name, "labels": self.labels},
            "spec": {},
            "status": {
                "capacity": resources, "allocatable": resources,
                "conditions": [
                    condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                    condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                    condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                    condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
                ],
                "addresses": [{"type": "InternalIP", "address": self.internal_ip()}, {"type": "Hostname", "address": self.name}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": {
                    "machineID": format!("berth-{}", self.name), "systemUUID": format!("berth-{}", self.name), "bootID": format!("berth-{}", self.name),
                    "kernelVersion": "6.1.0-berth", "osImage": "berth simulated node", "containerRuntimeVersion": "berth://0.1.0",
                    "kubeletVersion": "v1.32.0-berth", "kubeProxyVersion": "v1.32.0-berth", "operatingSystem": "linux", "architecture": "amd64",
                },
                "images": [],
            }
        })
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Creates the node, or refreshes its status if it already exists (a restart).
pub async fn register(client: &kube::Client, spec: &NodeSpec) -> Result<(), kube::Error> {
    let api: Api<Node> = Api::all(client.clone());
    let obj = spec.object(&now());
    let node: Node = serde_json::from_value(obj.clone()).map_err(kube::Error::SerdeError)?;
    match api.create(&PostParams::default(), &node).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => return Err(e),
    }
    // The status subresource carries capacity and conditions (create ignores status upstream).
    let status = json!({"status": obj["status"]});
    api.patch_status(&spec.name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    Ok(())
}

/// Renews every node's lease in `kube-node-lease` each `every`.
pub async fn renew_leases(client: kube::Client, nodes: Arc<HashSet<String>>, every: Duration) {
    let api: Api<Lease> = Api::namespaced(client, "kube-node-lease");
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        let renew = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        for node in nodes.iter() {
            let lease = json!({
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": node, "namespace": "kube-node-lease"},
                "spec": {"holderIdentity": node, "leaseDurationSeconds": 40, "renewTime": renew},
            });
            let result = api
                .patch(
                    node,
                    &PatchParams::apply("berth-kubelet").force(),
                    &Patch::Apply(&lease),
                )
                .await;
            if let Err(e) = result {
                tracing::debug!(node = %node, error = %e, "lease renewal failed");
            }
        }
    }
}
