//! Shared watches: one list+watch per kind folded into a read-only store, with two ways to
//! follow it: a change signal (level-triggered loops wait on it and read the store) and a
//! stream of the changes themselves (event-driven loops react to the object that changed).

use futures::future::{select_all, BoxFuture};
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod, ReplicationController};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
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
            pods: informer(Api::all(client.clone())),
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
                    let o = Arc::new(o);
                    write().insert(key(o.as_ref()), o.clone());
                    Some(Change::Applied(o))
                }
                Ok(watcher::Event::Delete(o)) => {
                    let o = Arc::new(o);
                    write().remove(&key(o.as_ref()));
                    Some(Change::Deleted(o))
                }
                Ok(watcher::Event::Init) => {
                    listing = Some(HashMap::new());
                    None
                }
                Ok(watcher::Event::InitApply(o)) => {
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
