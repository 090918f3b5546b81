//! Informers: one list+watch stream per kind, forwarded to the scheduling loop as [`Update`]s.

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

/// What the informers send to the scheduling loop.
#[derive(Debug)]
pub struct Update {
    pub kind: Kind,
    pub change: Change,
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
                if tx.send(Update { kind, change }).is_err() {
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
    spawn_one::<Pod>(client.clone(), Kind::Pod, tx.clone());
    spawn_one::<Service>(client.clone(), Kind::Service, tx.clone());
    spawn_one::<ReplicationController>(client.clone(), Kind::ReplicationController, tx.clone());
    spawn_one::<ReplicaSet>(client.clone(), Kind::ReplicaSet, tx.clone());
    spawn_one::<StatefulSet>(client.clone(), Kind::StatefulSet, tx.clone());
    spawn_one::<PersistentVolume>(client.clone(), Kind::PersistentVolume, tx.clone());
    spawn_one::<PersistentVolumeClaim>(client.clone(), Kind::PersistentVolumeClaim, tx.clone());
    spawn_one::<StorageClass>(client.clone(), Kind::StorageClass, tx.clone());
}
