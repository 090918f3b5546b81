//! Informers: one list+watch stream per kind, forwarded to the scheduling loop as [`Update`]s.
//! Pods, the kind that changes with every decision, arrive decoded as the engine's model
//! ([`WatchedPod`]); the other kinds as JSON bytes the cache decodes.

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{
    Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController, Service,
};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::Api;
use kube::runtime::watcher;
use kube::Resource;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::time::Duration;
use tokio::sync::mpsc;

/// Which kind of object an update is about.
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

/// One change seen by an informer: the object as JSON bytes (what the engine's cache reads).
#[derive(Debug)]
pub enum Change {
    Apply(Vec<u8>),
    Delete(Vec<u8>),
    /// The initial list of this kind is complete (sent after every relist, too).
    Synced,
}

/// One pod change, decoded.
#[derive(Debug)]
pub enum PodChange {
    Apply(Box<crate::model::Pod>),
    Delete(Box<crate::model::Pod>),
    /// The initial list of pods is complete (sent after every relist, too).
    Synced,
}

/// What the informers send to the scheduling loop.
#[derive(Debug)]
pub enum Update {
    /// A change of a kind other than pods.
    Object {
        kind: Kind,
        change: Change,
    },
    Pod(PodChange),
}

/// A pod off the watch, decoded straight into the engine's model (no typed Kubernetes pod in
/// between) with the little metadata the watch itself needs (resourceVersion).
#[derive(Debug, Clone)]
pub struct WatchedPod {
    meta: kube::api::ObjectMeta,
    pod: crate::model::Pod,
}

impl k8s_openapi::Resource for WatchedPod {
    const API_VERSION: &'static str = <Pod as k8s_openapi::Resource>::API_VERSION;
    const GROUP: &'static str = <Pod as k8s_openapi::Resource>::GROUP;
    const KIND: &'static str = <Pod as k8s_openapi::Resource>::KIND;
    const VERSION: &'static str = <Pod as k8s_openapi::Resource>::VERSION;
    const URL_PATH_SEGMENT: &'static str = <Pod as k8s_openapi::Resource>::URL_PATH_SEGMENT;
    type Scope = k8s_openapi::NamespaceResourceScope;
}

impl k8s_openapi::Metadata for WatchedPod {
    type Ty = kube::api::ObjectMeta;
    fn metadata(&self) -> &kube::api::ObjectMeta {
        &self.meta
    }
    fn metadata_mut(&mut self) -> &mut kube::api::ObjectMeta {
        &mut self.meta
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

impl<'de> serde::Deserialize<'de> for WatchedPod {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<WatchedPod, D::Error> {
        use serde::de::Error;
        let mut v = serde_json::Value::deserialize(d)?;
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
        let pod = serde_json::from_value(v).map_err(D::Error::custom)?;
        Ok(WatchedPod { meta, pod })
    }
}

fn spawn_pods(client: kube::Client, tx: mpsc::UnboundedSender<Update>) {
    tokio::spawn(async move {
        let api: Api<WatchedPod> = Api::all(client);
        let mut stream = watcher(api, watcher::Config::default()).boxed();
        while let Some(ev) = stream.next().await {
            let change = match ev {
                Ok(watcher::Event::Apply(o)) | Ok(watcher::Event::InitApply(o)) => {
                    PodChange::Apply(Box::new(o.pod))
                }
                Ok(watcher::Event::Delete(o)) => PodChange::Delete(Box::new(o.pod)),
                Ok(watcher::Event::InitDone) => PodChange::Synced,
                Ok(watcher::Event::Init) => continue,
                Err(e) => {
                    tracing::warn!(kind = ?Kind::Pod, error = %e, "watch failed; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            if tx.send(Update::Pod(change)).is_err() {
                return;
            }
        }
    });
}

fn spawn_one<K>(client: kube::Client, kind: Kind, tx: mpsc::UnboundedSender<Update>)
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + serde::Serialize + 'static,
    K::DynamicType: Default,
{
    tokio::spawn(async move {
        let api: Api<K> = Api::all(client);
        let mut stream = watcher(api, watcher::Config::default()).boxed();
        while let Some(ev) = stream.next().await {
            let change = match ev {
                Ok(watcher::Event::Apply(o)) | Ok(watcher::Event::InitApply(o)) => {
                    serde_json::to_vec(&o).ok().map(Change::Apply)
                }
                Ok(watcher::Event::Delete(o)) => serde_json::to_vec(&o).ok().map(Change::Delete),
                Ok(watcher::Event::InitDone) => Some(Change::Synced),
                Ok(watcher::Event::Init) => None,
                Err(e) => {
                    tracing::warn!(?kind, error = %e, "watch failed; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    None
                }
            };
            if let Some(change) = change {
                if tx.send(Update::Object { kind, change }).is_err() {
                    return;
                }
            }
        }
    });
}

/// How many kinds [`spawn_all`] watches (each reports [`Change::Synced`] once listed).
pub const KINDS: usize = 9;

/// Starts an informer for every kind the engine reads.
pub fn spawn_all(client: &kube::Client, tx: &mpsc::UnboundedSender<Update>) {
    spawn_one::<Node>(client.clone(), Kind::Node, tx.clone());
    spawn_pods(client.clone(), tx.clone());
    spawn_one::<Service>(client.clone(), Kind::Service, tx.clone());
    spawn_one::<ReplicationController>(client.clone(), Kind::ReplicationController, tx.clone());
    spawn_one::<ReplicaSet>(client.clone(), Kind::ReplicaSet, tx.clone());
    spawn_one::<StatefulSet>(client.clone(), Kind::StatefulSet, tx.clone());
    spawn_one::<PersistentVolume>(client.clone(), Kind::PersistentVolume, tx.clone());
    spawn_one::<PersistentVolumeClaim>(client.clone(), Kind::PersistentVolumeClaim, tx.clone());
    spawn_one::<StorageClass>(client.clone(), Kind::StorageClass, tx.clone());
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
        assert_eq!(watched.pod, before);
        // And from the bytes of a watch line, as kube decodes them.
        let line =
            serde_json::to_vec(&serde_json::json!({"object": typed, "type": "ADDED"})).unwrap();
        let event: kube::core::WatchEvent<WatchedPod> = serde_json::from_slice(&line).unwrap();
        match event {
            kube::core::WatchEvent::Added(p) => assert_eq!(p.pod, before),
            other => panic!("{other:?}"),
        }
    }
}
