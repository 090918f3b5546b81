//! Shared watches: one list+watch per kind folded into a read-only store, with two ways to
//! follow it: a change signal (level-triggered loops wait on it and read the store) and a
//! stream of the changes themselves (event-driven loops react to the object that changed).

use futures::future::{select_all, BoxFuture};
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{
    Container, Node, Pod, PodCondition, PodSpec, PodStatus, ReplicationController,
    ResourceRequirements, Toleration,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use kube::runtime::{watcher, WatchStreamExt};
use kube::Resource;
use serde::de::DeserializeOwned;
use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::{broadcast, watch};
use tokio::time::Instant;

/// How many changes a subscriber may fall behind before it is told to resynchronise.
const CHANGES_BUFFERED: usize = 4096;

/// One change of one object, as an event-driven loop sees it.
#[derive(Debug, Clone)]
pub enum Change<K> {
    /// Added or modified; the object as it is now.
    Applied(Arc<K>),
    /// Deleted; the object as it was last.
    Deleted(Arc<K>),
    /// The watch listed everything again (at start, or after it lost its place): changes may
    /// have been missed, read the store.
    Relisted,
}

/// The store's writer went away (the process is shutting down).
#[derive(Debug, Clone, Copy)]
pub struct StoreClosed;

/// The objects of one kind as last listed and watched, by namespace and name. Readers cannot
/// write.
#[derive(Clone)]
pub struct Store<K> {
    objects: Arc<RwLock<HashMap<String, Arc<K>>>>,
    ready: watch::Receiver<bool>,
}

impl<K> Store<K> {
    /// Every object.
    pub fn state(&self) -> Vec<Arc<K>> {
        self.read().values().cloned().collect()
    }

    /// The objects `predicate` accepts.
    pub fn state_filter(&self, predicate: impl Fn(&K) -> bool) -> Vec<Arc<K>> {
        self.read()
            .values()
            .filter(|o| predicate(o))
            .cloned()
            .collect()
    }

    /// Waits for the first complete list.
    pub async fn wait_until_ready(&self) -> Result<(), StoreClosed> {
        let mut ready = self.ready.clone();
        ready
            .wait_for(|r| *r)
            .await
            .map(|_| ())
            .map_err(|_| StoreClosed)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Arc<K>>> {
        self.objects.read().unwrap_or_else(|e| e.into_inner())
    }
}

/// A read-only store of one kind, its change signal and its change stream.
#[derive(Clone)]
pub struct Informer<K: Resource<DynamicType = ()> + 'static> {
    pub store: Store<K>,
    pub changed: watch::Receiver<()>,
    changes: broadcast::Sender<Change<K>>,
}

impl<K: Resource<DynamicType = ()> + 'static> Informer<K> {
    /// The changes from now on. Subscribe before reading the store: a change that lands in
    /// between is then seen twice, never missed. A subscriber that falls behind by more than
    /// [`CHANGES_BUFFERED`] gets `RecvError::Lagged` and must read the store again.
    pub fn subscribe(&self) -> broadcast::Receiver<Change<K>> {
        self.changes.subscribe()
    }

    /// Waits until the store holds a complete first list; false if the watch has ended.
    ///
    /// The store's own signal, not kube-runtime's `Store::wait_until_ready`: that one wakes
    /// only the last task that polled it, so of several loops waiting on one store the others
    /// could wait forever.
    pub async fn synced(&self) -> bool {
        self.store.wait_until_ready().await.is_ok()
    }
}

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
        Informers {
            nodes: informer(Api::all(client.clone())),
            pods: informer_via::<PodView, Pod>(Api::all(client.clone())),
            leases: informer(Api::namespaced(client.clone(), "kube-node-lease")),
            pdbs: informer(Api::all(client.clone())),
            replica_sets: informer(Api::all(client.clone())),
            replication_controllers: informer(Api::all(client.clone())),
            deployments: informer(Api::all(client.clone())),
            stateful_sets: informer(Api::all(client.clone())),
            daemon_sets: informer(Api::all(client.clone())),
        }
    }
}

fn key<K: Resource>(o: &K) -> String {
    let meta = o.meta();
    format!(
        "{}/{}",
        meta.namespace.as_deref().unwrap_or(""),
        meta.name.as_deref().unwrap_or("")
    )
}

fn informer<K>(api: Api<K>) -> Informer<K>
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
{
    informer_via::<K, K>(api)
}

/// A watch of `W`s (what is decoded off the wire) kept as `K`s (what the loops read).
fn informer_via<W, K>(api: Api<W>) -> Informer<K>
where
    W: Resource<DynamicType = ()> + Into<K> + Clone + Debug + DeserializeOwned + Send + 'static,
    K: Resource<DynamicType = ()> + Clone + Debug + Send + Sync + 'static,
{
    let objects: Arc<RwLock<HashMap<String, Arc<K>>>> = Default::default();
    let (ready_tx, ready) = watch::channel(false);
    let (tx, changed) = watch::channel(());
    let (changes, _) = broadcast::channel(CHANGES_BUFFERED);
    let store = Store {
        objects: objects.clone(),
        ready,
    };
    let out = changes.clone();
    tokio::spawn(async move {
        let mut events = watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        // Objects of a list in progress; they replace the store when it completes.
        let mut listing: Option<HashMap<String, Arc<K>>> = None;
        let write = || objects.write().unwrap_or_else(|e| e.into_inner());
        while let Some(event) = events.next().await {
            let change = match event {
                Ok(watcher::Event::Apply(o)) => {
                    let o: Arc<K> = Arc::new(o.into());
                    write().insert(key(o.as_ref()), o.clone());
                    Some(Change::Applied(o))
                }
                Ok(watcher::Event::Delete(o)) => {
                    let o: Arc<K> = Arc::new(o.into());
                    write().remove(&key(o.as_ref()));
                    Some(Change::Deleted(o))
                }
                Ok(watcher::Event::Init) => {
                    listing = Some(HashMap::new());
                    None
                }
                Ok(watcher::Event::InitApply(o)) => {
                    let o: K = o.into();
                    listing
                        .get_or_insert_with(HashMap::new)
                        .insert(key(&o), Arc::new(o));
                    None
                }
                Ok(watcher::Event::InitDone) => {
                    *write() = listing.take().unwrap_or_default();
                    ready_tx.send_replace(true);
                    Some(Change::Relisted)
                }
                Err(e) => {
                    tracing::debug!(kind = %K::kind(&()), error = %e, "watch failed; backing off");
                    None
                }
            };
            if let Some(change) = change {
                tx.send_replace(());
                if out.receiver_count() > 0 {
                    let _ = out.send(change);
                }
            }
        }
    });
    Informer {
        store,
        changed,
        changes,
    }
}

/// Waits until one of the signals fires or `until` passes; then marks all signals seen.
/// A short pause afterwards lets a burst of changes arrive as one pass.
pub async fn wait(signals: &mut [&mut watch::Receiver<()>], until: Option<Instant>) {
    {
        let changes: Vec<BoxFuture<'_, ()>> = signals
            .iter_mut()
            .map(|rx| {
                async move {
                    if rx.changed().await.is_err() {
                        futures::future::pending::<()>().await;
                    }
                }
                .boxed()
            })
            .collect();
        let deadline = async {
            match until {
                Some(at) => tokio::time::sleep_until(at).await,
                None => futures::future::pending().await,
            }
        };
        tokio::select! {
            _ = select_all(changes) => {}
            _ = deadline => {}
        }
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    for rx in signals.iter_mut() {
        rx.borrow_and_update();
    }
}

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
