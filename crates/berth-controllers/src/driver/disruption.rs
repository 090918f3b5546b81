//! The disruption controller loop: a budget is synced when a pod, budget or workload of its
//! namespace changed, and when an entry of its `disruptedPods` expires; only the statuses that
//! changed are written. A change elsewhere costs a set insertion; with no budget, nothing.

use super::recorder::Recorder;
use crate::disruption::{reconcile, Workload, Workloads};
use crate::informers::Informers;
use crate::Clock;
use berth_informers::Event;
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use kube::Resource;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::{self, error::TryRecvError};

const COMPONENT: &str = "controllermanager";

/// How long the loop lets a burst of changes gather before it syncs.
const GATHER: Duration = Duration::from_millis(20);

/// The namespaces whose budgets need syncing.
#[derive(Debug)]
enum Dirty {
    All,
    Namespaces(BTreeSet<String>),
}

impl Dirty {
    fn none() -> Dirty {
        Dirty::Namespaces(BTreeSet::new())
    }

    fn contains(&self, ns: &str) -> bool {
        match self {
            Dirty::All => true,
            Dirty::Namespaces(set) => set.contains(ns),
        }
    }

    fn insert(&mut self, ns: &str) {
        if let Dirty::Namespaces(set) = self {
            if !set.contains(ns) {
                set.insert(ns.to_string());
            }
        }
    }

    /// Notes one event received; `false` once the watches are gone.
    fn note<K: Resource>(&mut self, event: Option<Event<K>>) -> bool {
        match event {
            Some(Event::Synced) => *self = Dirty::All,
            Some(e) => {
                if let Some(o) = e.object() {
                    self.insert(o.meta().namespace.as_deref().unwrap_or(""))
                }
            }
            None => return false,
        }
        true
    }

    /// Notes every event already waiting; `false` once the watches are gone.
    fn drain<K: Resource>(&mut self, rx: &mut mpsc::UnboundedReceiver<Event<K>>) -> bool {
        loop {
            let event = match rx.try_recv() {
                Ok(e) => Some(e),
                Err(TryRecvError::Empty) => return true,
                Err(TryRecvError::Disconnected) => None,
            };
            if !self.note(event) {
                return false;
            }
        }
    }
}

/// `queue` is upstream's `disruption`: each budget a pass syncs is one key.
pub async fn run(
    client: kube::Client,
    informers: Informers,
    recorder: Recorder,
    clock: Clock,
    queue: crate::workqueue::Queue,
) {
    // Subscribed before the stores are read: nothing falls in between.
    let mut pods = informers.pods.subscribe();
    let mut pdbs = informers.pdbs.subscribe();
    let mut replica_sets = informers.replica_sets.subscribe();
    let mut replication_controllers = informers.replication_controllers.subscribe();
    let mut deployments = informers.deployments.subscribe();
    let mut stateful_sets = informers.stateful_sets.subscribe();
    let ready = [
        informers.pdbs.synced().await,
        informers.pods.synced().await,
        informers.replica_sets.synced().await,
        informers.replication_controllers.synced().await,
        informers.deployments.synced().await,
        informers.stateful_sets.synced().await,
    ];
    if ready.contains(&false) {
        return;
    }
    let mut dirty = Dirty::All;
    // When each namespace's budgets must be synced again (an entry of `disruptedPods` expires).
    let mut resync: BTreeMap<String, DateTime<Utc>> = BTreeMap::new();
    loop {
        let now = clock.now();
        resync.retain(|ns, at| {
            let due = *at + chrono::Duration::seconds(1) <= now;
            if due {
                dirty.insert(ns);
            }
            !due
        });
        sync(
            &client,
            &informers,
            &recorder,
            &dirty,
            &mut resync,
            now,
            &queue,
        )
        .await;
        dirty = Dirty::none();

        let until = resync
            .values()
            .min()
            .map(|at| clock.instant_at(*at + chrono::Duration::seconds(1)));
        let deadline = async {
            match until {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let open = tokio::select! {
            c = pods.recv() => dirty.note(c),
            c = pdbs.recv() => dirty.note(c),
            c = replica_sets.recv() => dirty.note(c),
            c = replication_controllers.recv() => dirty.note(c),
            c = deployments.recv() => dirty.note(c),
            c = stateful_sets.recv() => dirty.note(c),
            _ = deadline => true,
        };
        tokio::time::sleep(GATHER).await;
        let open = open
            && dirty.drain(&mut pods)
            && dirty.drain(&mut pdbs)
            && dirty.drain(&mut replica_sets)
            && dirty.drain(&mut replication_controllers)
            && dirty.drain(&mut deployments)
            && dirty.drain(&mut stateful_sets);
        if !open {
            return;
        }
    }
}

/// Syncs the budgets of the dirty namespaces and writes the statuses that changed.
async fn sync(
    client: &kube::Client,
    informers: &Informers,
    recorder: &Recorder,
    dirty: &Dirty,
    resync: &mut BTreeMap<String, DateTime<Utc>>,
    now: DateTime<Utc>,
    queue: &crate::workqueue::Queue,
) {
    let budgets: Vec<Arc<PodDisruptionBudget>> = informers
        .pdbs
        .store
        .state_filter(|b| dirty.contains(b.metadata.namespace.as_deref().unwrap_or("")));
    if budgets.is_empty() {
        return;
    }
    let namespaces: BTreeSet<&str> = budgets
        .iter()
        .map(|b| b.metadata.namespace.as_deref().unwrap_or(""))
        .collect();
    let pods = informers
        .pods
        .store
        .state_filter(|p| namespaces.contains(p.metadata.namespace.as_deref().unwrap_or("")));
    let mut by_namespace: BTreeMap<&str, Vec<&Pod>> = BTreeMap::new();
    for p in &pods {
        by_namespace
            .entry(p.metadata.namespace.as_deref().unwrap_or(""))
            .or_default()
            .push(p);
    }
    for ns in &namespaces {
        resync.remove(*ns);
    }
    let workloads = workloads(informers);
    let mut pass = queue.pass(budgets.len());
    for pdb in budgets {
        let _work = pass.take();
        let ns = pdb.metadata.namespace.clone().unwrap_or_default();
        let in_ns = by_namespace
            .get(ns.as_str())
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let sync = reconcile(&pdb, in_ns, &workloads, now);
        for e in &sync.events {
            recorder.record(COMPONENT, e);
        }
        if let Some(at) = sync.resync_at {
            let next = resync.entry(ns.clone()).or_insert(at);
            *next = (*next).min(at);
        }
        if let Some(status) = sync.status_patch {
            let name = pdb.metadata.name.clone().unwrap_or_default();
            let api: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), &ns);
            let patch = json!({"metadata": {"resourceVersion": pdb.metadata.resource_version}, "status": status});
            match crate::update::update_status(&api, &name, &patch).await {
                Ok(_) => tracing::debug!(pdb = %name, namespace = %ns, "budget status updated"),
                // An eviction (or a spec change) got there first; its watch event brings the next sync.
                Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => {}
                Err(e) => {
                    tracing::warn!(pdb = %name, namespace = %ns, error = %e, "updating budget status failed")
                }
            }
        }
    }
}

fn entry(
    kind: &str,
    meta: &ObjectMeta,
    replicas: Option<i32>,
) -> ((String, String, String), Workload) {
    let controller = meta
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .map(|o| (o.kind.clone(), o.name.clone()));
    (
        (
            kind.to_string(),
            meta.namespace.clone().unwrap_or_default(),
            meta.name.clone().unwrap_or_default(),
        ),
        Workload {
            uid: meta.uid.clone().unwrap_or_default(),
            replicas: replicas.unwrap_or(1),
            controller,
        },
    )
}

/// Every scalable workload, by (kind, namespace, name).
fn workloads(i: &Informers) -> Workloads {
    let mut out = Workloads::new();
    for o in i.replica_sets.store.state() {
        out.extend([entry(
            "ReplicaSet",
            &o.metadata,
            o.spec.as_ref().and_then(|s| s.replicas),
        )]);
    }
    for o in i.replication_controllers.store.state() {
        out.extend([entry(
            "ReplicationController",
            &o.metadata,
            o.spec.as_ref().and_then(|s| s.replicas),
        )]);
    }
    for o in i.deployments.store.state() {
        out.extend([entry(
            "Deployment",
            &o.metadata,
            o.spec.as_ref().and_then(|s| s.replicas),
        )]);
    }
    for o in i.stateful_sets.store.state() {
        out.extend([entry(
            "StatefulSet",
            &o.metadata,
            o.spec.as_ref().and_then(|s| s.replicas),
        )]);
    }
    out
}
