//! The watches the controllers read, one [`Informer`] per kind (`berth-informers`), and the
//! two ways the loops follow them: level-triggered loops [`wait`] on the change signals and read
//! the stores; event-driven loops subscribe to the typed events.

use berth_informers::Informer;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{
    Container, Node, Pod, PodCondition, PodSpec, PodStatus, ReplicationController,
    ResourceRequirements, Toleration,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use kube::runtime::watcher;

/// Every watch the controllers read.
#[derive(Clone)]
pub struct Informers {
    pub nodes: Informer<Node>,
    pub pods: Informer<Pod>,
    pub leases: Informer<Lease>,
    pub pdbs: Informer<PodDisruptionBudget>,
    pub replica_sets: Informer<ReplicaSet>,
    pub replication_controllers: Informer<ReplicationController>,
    pub deployments: Informer<Deployment>,
    pub stateful_sets: Informer<StatefulSet>,
    pub daemon_sets: Informer<DaemonSet>,
}

impl Informers {
    /// Starts one watch per kind (all namespaces; leases of `kube-node-lease`).
    pub fn start(client: &kube::Client) -> Informers {
        let all = watcher::Config::default;
        Informers {
            nodes: Informer::start(Api::all(client.clone()), all()),
            pods: Informer::start_as::<PodView>(Api::all(client.clone()), all()),
            leases: Informer::start(Api::namespaced(client.clone(), "kube-node-lease"), all()),
            pdbs: Informer::start(Api::all(client.clone()), all()),
            replica_sets: Informer::start(Api::all(client.clone()), all()),
            replication_controllers: Informer::start(Api::all(client.clone()), all()),
            deployments: Informer::start(Api::all(client.clone()), all()),
            stateful_sets: Informer::start(Api::all(client.clone()), all()),
            daemon_sets: Informer::start(Api::all(client.clone()), all()),
        }
    }
}

pub use crate::wait::wait;

/// A pod as the controllers read it: `metadata`, `spec.nodeName`, `spec.tolerations`, the
/// containers' and init containers' names and resources (the DaemonSet controller's fit check),
/// `status.phase` and `status.conditions`. The rest (images, env, volumes, ...) is skipped
/// while decoding, which is most of a pod: a loop that needs more adds the field here.
#[derive(Clone, Debug)]
struct PodView(Pod);

impl From<PodView> for Pod {
    fn from(v: PodView) -> Pod {
        v.0
    }
}

impl k8s_openapi::Resource for PodView {
    const API_VERSION: &'static str = <Pod as k8s_openapi::Resource>::API_VERSION;
    const GROUP: &'static str = <Pod as k8s_openapi::Resource>::GROUP;
    const KIND: &'static str = <Pod as k8s_openapi::Resource>::KIND;
    const VERSION: &'static str = <Pod as k8s_openapi::Resource>::VERSION;
    const URL_PATH_SEGMENT: &'static str = <Pod as k8s_openapi::Resource>::URL_PATH_SEGMENT;
    type Scope = k8s_openapi::NamespaceResourceScope;
}

impl k8s_openapi::Metadata for PodView {
    type Ty = ObjectMeta;
    fn metadata(&self) -> &ObjectMeta {
        &self.0.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.0.metadata
    }
}

impl<'de> serde::Deserialize<'de> for PodView {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<PodView, D::Error> {
        #[derive(serde::Deserialize)]
        struct Wire {
            #[serde(default)]
            metadata: ObjectMeta,
            #[serde(default)]
            spec: Option<Spec>,
            #[serde(default)]
            status: Option<Status>,
        }
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Spec {
            #[serde(default)]
            node_name: Option<String>,
            #[serde(default)]
            tolerations: Option<Vec<Toleration>>,
            #[serde(default)]
            containers: Vec<ContainerView>,
            #[serde(default)]
            init_containers: Option<Vec<ContainerView>>,
        }
        #[derive(serde::Deserialize)]
        struct ContainerView {
            #[serde(default)]
            name: String,
            #[serde(default)]
            resources: Option<ResourceRequirements>,
        }
        impl From<ContainerView> for Container {
            fn from(c: ContainerView) -> Container {
                Container {
                    name: c.name,
                    resources: c.resources,
                    ..Container::default()
                }
            }
        }
        #[derive(serde::Deserialize)]
        struct Status {
            #[serde(default)]
            phase: Option<String>,
            #[serde(default)]
            conditions: Option<Vec<PodCondition>>,
        }
        let wire = Wire::deserialize(d)?;
        Ok(PodView(Pod {
            metadata: wire.metadata,
            spec: wire.spec.map(|s| PodSpec {
                node_name: s.node_name,
                tolerations: s.tolerations,
                containers: s.containers.into_iter().map(Container::from).collect(),
                init_containers: s
                    .init_containers
                    .map(|cs| cs.into_iter().map(Container::from).collect()),
                ..PodSpec::default()
            }),
            status: wire.status.map(|s| PodStatus {
                phase: s.phase,
                conditions: s.conditions,
                ..PodStatus::default()
            }),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_view_keeps_what_the_controllers_read() {
        let json = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "7",
                         "labels": {"app": "web"}, "deletionTimestamp": "2026-01-01T00:00:00Z",
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "r", "controller": true}]},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i",
                                                        "resources": {"requests": {"cpu": "100m"}}}],
                     "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                       "containerStatuses": [{"name": "c", "image": "i", "imageID": "", "ready": true, "restartCount": 0}]},
        });
        let view: PodView = serde_json::from_value(json.clone()).unwrap();
        let mut full: Pod = serde_json::from_value(json).unwrap();
        // Of the containers, only names and resources are kept.
        full.spec.as_mut().unwrap().containers[0].image = None;
        full.status.as_mut().unwrap().container_statuses = None;
        assert_eq!(Pod::from(view), full);
    }
}
