//! The watches the controllers read, one [`Informer`] per kind (`berth-informers`), and the
//! two ways the loops follow them: level-triggered loops [`wait`] on the change signals and read
//! the stores; event-driven loops subscribe to the typed events.

use berth_informers::Informer;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateTerminated, ContainerStatus, Node, Pod, PodCondition,
    PodSpec, PodStatus, ReplicationController, ResourceRequirements, Toleration,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use kube::runtime::watcher;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Every watch the controllers read: one per kind and process, as upstream's shared
/// informer factory (a loop that restarts gets the same watch back).
#[derive(Clone)]
pub struct Informers {
    /// The kinds only some loops read (Jobs, ControllerRevisions, PersistentVolumeClaims):
    /// started by the first loop that asks, through [`Informers::shared`].
    pub kinds: SharedKinds,
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
            kinds: SharedKinds {
                client: client.clone(),
                started: Default::default(),
            },
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

impl Informers {
    /// The process's one watch of `K` (all namespaces), started on the first call.
    pub fn shared<K>(&self) -> Informer<K>
    where
        K: kube::Resource<DynamicType = ()>
            + Clone
            + std::fmt::Debug
            + serde::de::DeserializeOwned
            + Send
            + Sync
            + 'static,
    {
        self.kinds.get()
    }
}

/// The watches of kinds started on demand, by type; clones share them.
#[derive(Clone)]
pub struct SharedKinds {
    client: kube::Client,
    started: Arc<Mutex<HashMap<TypeId, Box<dyn Any + Send + Sync>>>>,
}

impl SharedKinds {
    fn get<K>(&self) -> Informer<K>
    where
        K: kube::Resource<DynamicType = ()>
            + Clone
            + std::fmt::Debug
            + serde::de::DeserializeOwned
            + Send
            + Sync
            + 'static,
    {
        let start = || Informer::start(Api::all(self.client.clone()), watcher::Config::default());
        let Ok(mut started) = self.started.lock() else {
            return start();
        };
        let entry = started
            .entry(TypeId::of::<K>())
            .or_insert_with(|| Box::new(start()));
        match entry.downcast_ref::<Informer<K>>() {
            Some(informer) => informer.clone(),
            None => start(),
        }
    }
}

pub use crate::wait::wait;

/// A pod as the controllers read it: `metadata`, `spec.nodeName`, `spec.tolerations`, the
/// containers' and init containers' names and resources (the DaemonSet controller's fit check),
/// `status.phase`, `status.startTime` (the autoscaler's CPU initialization) and
/// `status.conditions`, and the name and exit code of each terminated
/// container (a Job's podFailurePolicy). The rest (images, env, volumes, ...) is skipped
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
        #[serde(rename_all = "camelCase")]
        struct Status {
            #[serde(default)]
            phase: Option<String>,
            #[serde(default)]
            start_time: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
            #[serde(default)]
            conditions: Option<Vec<PodCondition>>,
            #[serde(default)]
            container_statuses: Option<Vec<ContainerStatusView>>,
            #[serde(default)]
            init_container_statuses: Option<Vec<ContainerStatusView>>,
        }
        #[derive(serde::Deserialize)]
        struct ContainerStatusView {
            #[serde(default)]
            name: String,
            #[serde(default)]
            state: Option<StateView>,
        }
        #[derive(serde::Deserialize)]
        struct StateView {
            #[serde(default)]
            terminated: Option<TerminatedView>,
        }
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct TerminatedView {
            #[serde(default)]
            exit_code: i32,
        }
        /// Only terminated containers are kept: running ones are most of a cluster's.
        fn terminated(statuses: Option<Vec<ContainerStatusView>>) -> Option<Vec<ContainerStatus>> {
            let kept: Vec<ContainerStatus> = statuses?
                .into_iter()
                .filter_map(|s| {
                    let exit_code = s.state?.terminated?.exit_code;
                    Some(ContainerStatus {
                        name: s.name,
                        state: Some(ContainerState {
                            terminated: Some(ContainerStateTerminated {
                                exit_code,
                                ..ContainerStateTerminated::default()
                            }),
                            ..ContainerState::default()
                        }),
                        ..ContainerStatus::default()
                    })
                })
                .collect();
            (!kept.is_empty()).then_some(kept)
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
                start_time: s.start_time,
                conditions: s.conditions,
                container_statuses: terminated(s.container_statuses),
                init_container_statuses: terminated(s.init_container_statuses),
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

    #[test]
    fn a_pod_view_keeps_the_exit_codes_of_terminated_containers() {
        let json = serde_json::json!({
            "metadata": {"name": "p"},
            "status": {"phase": "Failed", "containerStatuses": [
                {"name": "c", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"terminated": {"exitCode": 42, "reason": "Error"}}},
                {"name": "d", "image": "i", "imageID": "", "ready": true, "restartCount": 0,
                 "state": {"running": {}}}]},
        });
        let view: Pod = serde_json::from_value::<PodView>(json).unwrap().into();
        let statuses = view.status.unwrap().container_statuses.unwrap();
        assert_eq!(statuses.len(), 1);
        assert_eq!(statuses[0].name, "c");
        let exit = statuses[0]
            .state
            .as_ref()
            .unwrap()
            .terminated
            .as_ref()
            .unwrap();
        assert_eq!(exit.exit_code, 42);
    }
}
