//! Shared watches: one reflector per kind, each with a change signal the loops wait on.

use futures::future::{select_all, BoxFuture};
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod, ReplicationController};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::Resource;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// A read-only store of one kind, its change signal and whether its first list is in.
#[derive(Clone)]
pub struct Informer<K: Resource<DynamicType = ()> + 'static> {
    pub store: Store<K>,
    pub changed: watch::Receiver<()>,
    listed: watch::Receiver<bool>,
}

impl<K: Resource<DynamicType = ()> + 'static> Informer<K> {
    /// Waits until the store holds a complete first list; false if the watch has ended.
    ///
    /// Not `Store::wait_until_ready`: kube-runtime's readiness signal wakes only the last task
    /// that polled it, so of several loops waiting on one store the others could wait forever.
    pub async fn synced(&self) -> bool {
        self.listed.clone().wait_for(|listed| *listed).await.is_ok()
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

fn informer<K>(api: Api<K>) -> Informer<K>
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
{
    let (store, writer) = reflector::store();
    let (tx, changed) = watch::channel(());
    let (listed_tx, listed) = watch::channel(false);
    tokio::spawn(async move {
        let mut events = watcher(api, watcher::Config::default())
            .default_backoff()
            .reflect(writer)
            .boxed();
        while let Some(event) = events.next().await {
            match event {
                Ok(event) => {
                    if matches!(event, watcher::Event::InitDone) {
                        listed_tx.send_replace(true);
                    }
                    tx.send_replace(());
                }
                Err(e) => {
                    tracing::debug!(kind = %K::kind(&()), error = %e, "watch failed; backing off")
                }
            }
        }
    });
    Informer {
        store,
        changed,
        listed,
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
