//! Informers: one [`berth_informers::Informer`] per kind the engine reads, each object decoded
//! once, straight into the engine's model ([`Watched`]), and every event forwarded to the
//! scheduling loop as a typed [`Update`].

use berth_informers::{Event, Informer, Keep};
use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{
    Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController, Service,
};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::Api;
use kube::runtime::watcher;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::marker::PhantomData;
use tokio::sync::mpsc;

use crate::model;

/// An object off the watch, decoded straight into the engine's model `T` (no typed Kubernetes
/// object in between), with the little metadata the watch itself needs (resourceVersion); `R`
/// is the Kubernetes kind it is read as.
#[derive(Debug)]
pub struct Watched<T, R> {
    meta: kube::api::ObjectMeta,
    pub value: T,
    kind: PhantomData<fn() -> R>,
}

// Not derived: a derive would ask `R: Clone`.
impl<T: Clone, R> Clone for Watched<T, R> {
    fn clone(&self) -> Self {
        Watched {
            meta: self.meta.clone(),
            value: self.value.clone(),
            kind: PhantomData,
        }
    }
}

impl<T, R> Watched<T, R> {
    /// `metadata.name`.
    pub fn name(&self) -> &str {
        self.meta.name.as_deref().unwrap_or("")
    }

    /// `namespace/name`, as the cache keys namespaced objects.
    pub fn key(&self) -> String {
        format!(
            "{}/{}",
            self.meta.namespace.as_deref().unwrap_or(""),
            self.name()
        )
    }
}

pub type WatchedPod = Watched<model::Pod, Pod>;

impl<T, R: k8s_openapi::Resource> k8s_openapi::Resource for Watched<T, R> {
    const API_VERSION: &'static str = R::API_VERSION;
    const GROUP: &'static str = R::GROUP;
    const KIND: &'static str = R::KIND;
    const VERSION: &'static str = R::VERSION;
    const URL_PATH_SEGMENT: &'static str = R::URL_PATH_SEGMENT;
    type Scope = R::Scope;
}

impl<T, R: k8s_openapi::Resource> k8s_openapi::Metadata for Watched<T, R> {
    type Ty = kube::api::ObjectMeta;
    fn metadata(&self) -> &kube::api::ObjectMeta {
        &self.meta
    }
    fn metadata_mut(&mut self) -> &mut kube::api::ObjectMeta {
        &mut self.meta
    }
}

/// Which kind an [`Update`] is about (to count the kinds listed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Pod,
    Node,
    Service,
    ReplicationController,
    ReplicaSet,
    StatefulSet,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
}

/// How many kinds [`spawn_all`] watches (each reports [`Event::Synced`] once listed).
pub const KINDS: usize = 9;

/// What the informers send to the scheduling loop: one kind's event, typed.
#[derive(Debug)]
pub enum Update {
    Pod(Event<WatchedPod>),
    Node(Event<Watched<model::Node, Node>>),
    Service(Event<Watched<model::Service, Service>>),
    ReplicationController(Event<Watched<model::ReplicationController, ReplicationController>>),
    ReplicaSet(Event<Watched<model::SelectorWorkload, ReplicaSet>>),
    StatefulSet(Event<Watched<model::SelectorWorkload, StatefulSet>>),
    PersistentVolume(Event<Watched<model::PersistentVolume, PersistentVolume>>),
    PersistentVolumeClaim(Event<Watched<model::PersistentVolumeClaim, PersistentVolumeClaim>>),
    StorageClass(Event<Watched<model::StorageClass, StorageClass>>),
}

impl Update {
    /// The kind whose list completed, if this is a [`Event::Synced`].
    pub fn synced(&self) -> Option<Kind> {
        let (kind, synced) = match self {
            Update::Pod(e) => (Kind::Pod, matches!(e, Event::Synced)),
            Update::Node(e) => (Kind::Node, matches!(e, Event::Synced)),
            Update::Service(e) => (Kind::Service, matches!(e, Event::Synced)),
            Update::ReplicationController(e) => {
                (Kind::ReplicationController, matches!(e, Event::Synced))
            }
            Update::ReplicaSet(e) => (Kind::ReplicaSet, matches!(e, Event::Synced)),
            Update::StatefulSet(e) => (Kind::StatefulSet, matches!(e, Event::Synced)),
            Update::PersistentVolume(e) => (Kind::PersistentVolume, matches!(e, Event::Synced)),
            Update::PersistentVolumeClaim(e) => {
                (Kind::PersistentVolumeClaim, matches!(e, Event::Synced))
            }
            Update::StorageClass(e) => (Kind::StorageClass, matches!(e, Event::Synced)),
        };
        synced.then_some(kind)
    }
}

/// Starts an informer of `Watched<T, R>` whose events go to the loop as `wrap(event)`, its store
/// keeping what `keep` says (the loop reads only the events).
fn spawn<T, R>(
    client: &kube::Client,
    tx: &mpsc::UnboundedSender<Update>,
    wrap: fn(Event<Watched<T, R>>) -> Update,
    keep: Keep<Watched<T, R>>,
) where
    T: DeserializeOwned + Clone + Debug + Send + Sync + 'static,
    R: k8s_openapi::Resource + Debug + 'static,
{
    let informer: Informer<Watched<T, R>> = Informer::start_keeping::<Watched<T, R>>(
        Api::all(client.clone()),
        watcher::Config::default(),
        keep,
    );
    let tx = tx.clone();
    informer.on_event(move |event| tx.send(wrap(event)).is_ok());
}

/// Starts an informer for every kind the engine reads.
pub fn spawn_all(client: &kube::Client, tx: &mpsc::UnboundedSender<Update>) {
    // Pods are the many: the cache holds them, the informer only their identities.
    spawn(client, tx, Update::Pod, Keep::Identity(pod_identity));
    spawn(client, tx, Update::Node, Keep::Whole);
    spawn(client, tx, Update::Service, Keep::Whole);
    spawn(client, tx, Update::ReplicationController, Keep::Whole);
    spawn(client, tx, Update::ReplicaSet, Keep::Whole);
    spawn(client, tx, Update::StatefulSet, Keep::Whole);
    spawn(client, tx, Update::PersistentVolume, Keep::Whole);
    spawn(client, tx, Update::PersistentVolumeClaim, Keep::Whole);
    spawn(client, tx, Update::StorageClass, Keep::Whole);
}

/// What forgetting a pod needs (its key, uid and node), when a relist finds it gone.
fn pod_identity(pod: &WatchedPod) -> WatchedPod {
    let m = &pod.value.metadata;
    Watched {
        meta: pod.meta.clone(),
        value: model::Pod {
            metadata: model::ObjectMeta {
                name: m.name.clone(),
                namespace: m.namespace.clone(),
                uid: m.uid.clone(),
                ..Default::default()
            },
            spec: model::PodSpec {
                node_name: pod.value.spec.node_name.clone(),
                ..Default::default()
            },
            status: Default::default(),
        },
        kind: PhantomData,
    }
}

/// Removes the `null` members of every object in `v`: the model reads absent and `null` alike
/// (its fields default), but a `null` where it expects a string would fail to decode.
fn drop_nulls(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            m.retain(|_, x| !x.is_null());
            m.values_mut().for_each(drop_nulls);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

impl<'de, T: DeserializeOwned, R> serde::Deserialize<'de> for Watched<T, R> {
    /// Decodes from the object's JSON text: straight into the model when it reads as it is,
    /// else (a `null` the model cannot take, which an API server may send for an absent field)
    /// through a `Value` without its nulls. The text comes from any serde_json deserializer,
    /// a `Value` included; both API servers send the event type ahead of the object, so the
    /// object reaches here unbuffered.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Watched<T, R>, D::Error> {
        use serde::de::Error;
        let json = Box::<serde_json::value::RawValue>::deserialize(d)?;
        let json = json.get();
        match (
            serde_json::from_str::<Envelope>(json),
            serde_json::from_str::<T>(json),
        ) {
            (Ok(envelope), Ok(value)) => Ok(Watched {
                meta: envelope.metadata.into(),
                value,
                kind: PhantomData,
            }),
            _ => Watched::from_value(serde_json::from_str(json).map_err(D::Error::custom)?)
                .map_err(D::Error::custom),
        }
    }
}

impl<T: DeserializeOwned, R> Watched<T, R> {
    /// The slow way, from a `Value`: nulls dropped first.
    fn from_value(mut v: serde_json::Value) -> serde_json::Result<Watched<T, R>> {
        drop_nulls(&mut v);
        let field = |v: &serde_json::Value, f: &str| {
            v.get("metadata")
                .and_then(|m| m.get(f))
                .and_then(|x| x.as_str())
                .map(str::to_string)
        };
        let meta = kube::api::ObjectMeta {
            name: field(&v, "name"),
            namespace: field(&v, "namespace"),
            uid: field(&v, "uid"),
            resource_version: field(&v, "resourceVersion"),
            ..Default::default()
        };
        let value = serde_json::from_value(v)?;
        Ok(Watched {
            meta,
            value,
            kind: PhantomData,
        })
    }
}

/// The metadata a watched object carries for the informer, read past everything else.
#[derive(serde::Deserialize)]
struct Envelope {
    #[serde(default)]
    metadata: Names,
}

#[derive(Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Names {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
}

impl From<Names> for kube::api::ObjectMeta {
    fn from(names: Names) -> Self {
        kube::api::ObjectMeta {
            name: names.name,
            namespace: names.namespace,
            uid: names.uid,
            resource_version: names.resource_version,
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watched_pod_decodes_as_the_typed_pod_did() {
        // What the apiserver may send (nulls, fields the model does not read) must come out as
        // it did through a typed `Pod` re-encoded.
        let wire = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "42",
                         "labels": {"app": "web"}, "annotations": null, "generateName": null,
                         "creationTimestamp": "2026-01-01T00:00:00Z",
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "r", "controller": true}]},
            "spec": {"nodeName": null, "schedulerName": "default-scheduler", "priority": 5,
                     "containers": [{"name": "c", "image": "i", "imagePullPolicy": null,
                                     "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}},
                                     "ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"}]}],
                     "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
                     "nodeSelector": {"disk": "ssd"},
                     "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                         {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}]}}},
            "status": {"phase": "Pending", "nominatedNodeName": null, "conditions": null},
        });
        let watched: WatchedPod = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(watched.meta.resource_version.as_deref(), Some("42"));
        assert_eq!(watched.meta.name.as_deref(), Some("p"));
        let typed: Pod = serde_json::from_value(wire).unwrap();
        let before: crate::model::Pod =
            serde_json::from_slice(&serde_json::to_vec(&typed).unwrap()).unwrap();
        assert_eq!(watched.value, before);
        // And from the bytes of a watch line, as kube decodes them.
        let line = format!(
            r#"{{"type":"ADDED","object":{}}}"#,
            serde_json::to_string(&typed).unwrap()
        );
        let event: kube::core::WatchEvent<WatchedPod> = serde_json::from_str(&line).unwrap();
        match event {
            kube::core::WatchEvent::Added(p) => {
                // Without nulls it decodes straight into the model, to what the slow way gives.
                let slow = WatchedPod::from_value(serde_json::to_value(&typed).unwrap()).unwrap();
                assert_eq!(p.value, before);
                assert_eq!(p.value, slow.value);
                assert_eq!(p.meta, slow.meta);
            }
            other => panic!("{other:?}"),
        }
    }

    /// The other kinds, too, decode as they did through a typed object re-encoded.
    fn decodes_as_typed<T, R>(wire: serde_json::Value)
    where
        T: DeserializeOwned + PartialEq + Debug,
        R: DeserializeOwned + serde::Serialize,
    {
        let watched: Watched<T, R> = serde_json::from_value(wire.clone()).unwrap();
        let typed: R = serde_json::from_value(wire).unwrap();
        let before: T = serde_json::from_slice(&serde_json::to_vec(&typed).unwrap()).unwrap();
        assert_eq!(watched.value, before);
    }

    #[test]
    fn watched_objects_decode_as_the_typed_ones_did() {
        use serde_json::json;
        decodes_as_typed::<model::Node, Node>(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n1", "resourceVersion": "3", "labels": {"zone": "a"}, "annotations": null},
            "spec": {"unschedulable": null, "podCIDR": null,
                     "taints": [{"key": "k", "value": null, "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                       "capacity": {"cpu": "4"},
                       "conditions": [{"type": "Ready", "status": "True", "reason": null}],
                       "images": [{"names": ["i:1"], "sizeBytes": 100}]}
        }));
        decodes_as_typed::<model::Service, Service>(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "s", "namespace": "ns"},
            "spec": {"selector": {"app": "web"}, "clusterIP": null,
                     "ports": [{"port": 80, "targetPort": "http"}]}
        }));
        decodes_as_typed::<model::SelectorWorkload, ReplicaSet>(json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "rs", "namespace": "ns"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"},
                     "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}]},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": []}}}
        }));
        decodes_as_typed::<model::ReplicationController, ReplicationController>(json!({
            "apiVersion": "v1", "kind": "ReplicationController",
            "metadata": {"name": "rc", "namespace": "ns"},
            "spec": {"selector": {"app": "web"}, "template": null}
        }));
        decodes_as_typed::<model::PersistentVolume, PersistentVolume>(json!({
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": "pv", "labels": {"topology.kubernetes.io/zone": "a"}},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "storageClassName": "fast", "claimRef": null,
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "zone", "operator": "In", "values": ["a"]}]}]}}},
            "status": {"phase": "Available"}
        }));
        decodes_as_typed::<model::PersistentVolumeClaim, PersistentVolumeClaim>(json!({
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "c", "namespace": "ns"},
            "spec": {"storageClassName": "fast", "volumeName": null, "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"phase": "Pending"}
        }));
        decodes_as_typed::<model::StorageClass, StorageClass>(json!({
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "fast"}, "provisioner": "p",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}]
        }));
    }
}
