//! The garbage collector loop: an owner graph over the kinds the controllers watch (pods,
//! ReplicaSets, ReplicationControllers, Deployments, StatefulSets, DaemonSets, Jobs) and the
//! ControllerRevisions of StatefulSets and DaemonSets. Dependents
//! whose owners are gone are deleted (background), dependents of an owner deleted in the
//! foreground go first and then its `foregroundDeletion` finalizer, dependents of an owner
//! deleted with orphaning lose their reference to it and then its `orphan` finalizer goes.

use super::{
    decide, foreground_blockers, Action, Dependent, Dependents, Owner, OwnerRef, Propagation,
    FOREGROUND, ORPHAN,
};
use crate::informers::{wait, Informers};
use berth_informers::Informer;
use k8s_openapi::api::apps::v1::{
    ControllerRevision, DaemonSet, Deployment, ReplicaSet, StatefulSet,
};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, ReplicationController};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions, PropagationPolicy};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// How long the collector pauses after a pass, per unit of time its scan took: a scan
/// takes at most about 1/(1 + this) of a core (a few µs in a small cluster, about a
/// millisecond with 10,000 pods, so owners go within a tenth of a second there).
const PAUSE_PER_SCAN: u32 = 50;

/// The kinds the collector knows how to reach, by `(apiVersion, kind)`: the resource name.
const KINDS: &[(&str, &str, &str)] = &[
    ("v1", "Pod", "pods"),
    ("v1", "ReplicationController", "replicationcontrollers"),
    ("v1", "ConfigMap", "configmaps"),
    ("v1", "Secret", "secrets"),
    ("v1", "Service", "services"),
    ("v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
    ("apps/v1", "ReplicaSet", "replicasets"),
    ("apps/v1", "Deployment", "deployments"),
    ("apps/v1", "StatefulSet", "statefulsets"),
    ("apps/v1", "DaemonSet", "daemonsets"),
    ("apps/v1", "ControllerRevision", "controllerrevisions"),
    ("batch/v1", "Job", "jobs"),
    ("batch/v1", "CronJob", "cronjobs"),
];

/// The resource of `(apiVersion, kind)`, when the collector knows it.
pub fn resource(api_version: &str, kind: &str) -> Option<ApiResource> {
    let (_, _, plural) = KINDS
        .iter()
        .find(|(v, k, _)| *v == api_version && *k == kind)?;
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    Some(ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(group, version, kind),
        plural,
    ))
}

/// One object of the graph, borrowed from the informers' snapshots.
struct Node<'a> {
    resource: &'a ApiResource,
    meta: &'a ObjectMeta,
}

impl Node<'_> {
    fn api(&self, client: &kube::Client) -> Api<DynamicObject> {
        match &self.meta.namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, self.resource),
            None => Api::all_with(client.clone(), self.resource),
        }
    }

    fn name(&self) -> &str {
        self.meta.name.as_deref().unwrap_or("")
    }

    fn uid(&self) -> &str {
        self.meta.uid.as_deref().unwrap_or("")
    }

    fn finalizers(&self) -> Vec<String> {
        self.meta.finalizers.clone().unwrap_or_default()
    }

    fn deleting(&self) -> bool {
        self.meta.deletion_timestamp.is_some()
    }

    /// Deleted in the foreground: waiting for its blocking dependents.
    fn deleting_dependents(&self) -> bool {
        self.deleting() && self.finalizers().iter().any(|f| f == FOREGROUND)
    }

    fn has_owners(&self) -> bool {
        self.meta
            .owner_references
            .as_ref()
            .is_some_and(|r| !r.is_empty())
    }
}

/// A snapshot of `informer`'s objects.
fn snapshot<K>(informer: &Informer<K>) -> (ApiResource, Vec<Arc<K>>)
where
    K: kube::Resource<DynamicType = ()>,
{
    (ApiResource::erase::<K>(&()), informer.store.state())
}

/// The objects the pass must look at: those with owners, those being deleted, and the owners
/// some object names. Every other object (most pods) has nothing for the collector to do, so a
/// pass costs a scan of pointers, not a copy of every object.
fn graph<'a>(kinds: &'a [(ApiResource, Vec<&'a ObjectMeta>)]) -> Vec<Node<'a>> {
    let named: HashSet<&str> = kinds
        .iter()
        .flat_map(|(_, metas)| metas.iter())
        .flat_map(|m| m.owner_references.iter().flatten())
        .map(|r| r.uid.as_str())
        .collect();
    let mut nodes = Vec::new();
    for (resource, metas) in kinds {
        for meta in metas {
            let node = Node { resource, meta };
            if node.has_owners() || node.deleting() || named.contains(node.uid()) {
                nodes.push(node);
            }
        }
    }
    nodes
}

pub async fn run(
    client: kube::Client,
    mut informers: Informers,
    clock: crate::Clock,
    metrics: crate::metrics::ControllerMetrics,
) {
    // Upstream's two queues: objects whose owners may be gone (or that delete in the
    // foreground), and owners deleted with the orphan finalizer.
    let queues = Queues {
        delete: metrics.queue("garbage_collector_attempt_to_delete", &clock),
        orphan: metrics.queue("garbage_collector_attempt_to_orphan", &clock),
    };
    let mut jobs: Informer<Job> = informers.shared();
    let mut revisions: Informer<ControllerRevision> = informers.shared();
    // Claims: a StatefulSet's retention policy makes the set or a pod their owner.
    let mut claims: Informer<PersistentVolumeClaim> = informers.shared();
    let ready = [
        informers.pods.synced().await,
        informers.replica_sets.synced().await,
        informers.replication_controllers.synced().await,
        informers.deployments.synced().await,
        informers.stateful_sets.synced().await,
        informers.daemon_sets.synced().await,
    ];
    if ready.contains(&false) {
        return;
    }
    loop {
        let scan = berth_core::clock::Stopwatch::start();
        let (pod_r, pods) = snapshot::<Pod>(&informers.pods);
        let (rs_r, rss) = snapshot::<ReplicaSet>(&informers.replica_sets);
        let (rc_r, rcs) = snapshot::<ReplicationController>(&informers.replication_controllers);
        let (deploy_r, deploys) = snapshot::<Deployment>(&informers.deployments);
        let (sts_r, stss) = snapshot::<StatefulSet>(&informers.stateful_sets);
        let (ds_r, dss) = snapshot::<DaemonSet>(&informers.daemon_sets);
        let (job_r, all_jobs) = snapshot::<Job>(&jobs);
        let (rev_r, revs) = snapshot::<ControllerRevision>(&revisions);
        let (pvc_r, pvcs) = snapshot::<PersistentVolumeClaim>(&claims);
        let kinds = [
            (pod_r, pods.iter().map(|o| &o.metadata).collect()),
            (rs_r, rss.iter().map(|o| &o.metadata).collect()),
            (rc_r, rcs.iter().map(|o| &o.metadata).collect()),
            (deploy_r, deploys.iter().map(|o| &o.metadata).collect()),
            (sts_r, stss.iter().map(|o| &o.metadata).collect()),
            (ds_r, dss.iter().map(|o| &o.metadata).collect()),
            (job_r, all_jobs.iter().map(|o| &o.metadata).collect()),
            (rev_r, revs.iter().map(|o| &o.metadata).collect()),
            (pvc_r, pvcs.iter().map(|o| &o.metadata).collect()),
        ];
        let nodes = graph(&kinds);
        let built = scan.elapsed();
        collect(&client, &nodes, &queues).await;
        // Every pass scans every object, and with thousands of pods changing the changes
        // never stop: pausing in proportion keeps the scans to a small share of a core. The
        // scan's cost is real CPU time, so the pause is real time, not cluster time.
        tokio::time::sleep(built * PAUSE_PER_SCAN).await;
        let i = &mut informers;
        wait(
            &mut [
                &mut i.pods.changed,
                &mut i.replica_sets.changed,
                &mut i.replication_controllers.changed,
                &mut i.deployments.changed,
                &mut i.stateful_sets.changed,
                &mut i.daemon_sets.changed,
                &mut jobs.changed,
                &mut revisions.changed,
                &mut claims.changed,
            ],
            None,
        )
        .await;
    }
}

/// The collector's work queues.
struct Queues {
    delete: crate::workqueue::Queue,
    orphan: crate::workqueue::Queue,
}

/// One pass over the graph. Each node with something to decide is one item of a work queue:
/// an owner deleted with the orphan finalizer of `orphan`, any other deleted node or node with
/// owners of `delete`.
async fn collect(client: &kube::Client, nodes: &[Node<'_>], queues: &Queues) {
    let orphaning = |n: &Node| n.deleting() && n.finalizers().iter().any(|f| f == ORPHAN);
    let to_orphan = nodes.iter().filter(|n| orphaning(n)).count();
    let to_delete = nodes
        .iter()
        .filter(|n| !orphaning(n) && (n.deleting() || n.has_owners()))
        .count();
    let mut orphan_pass = queues.orphan.pass(to_orphan);
    let mut delete_pass = queues.delete.pass(to_delete);
    let by_uid: HashMap<&str, &Node> = nodes.iter().map(|n| (n.uid(), n)).collect();
    let mut dependents: HashMap<&str, Vec<&Node>> = HashMap::new();
    for n in nodes {
        for r in n.meta.owner_references.iter().flatten() {
            dependents.entry(r.uid.as_str()).or_default().push(n);
        }
    }
    for n in nodes {
        let _work = if orphaning(n) {
            orphan_pass.take()
        } else if n.deleting() || n.has_owners() {
            delete_pass.take()
        } else {
            continue;
        };
        let finalizers = n.finalizers();
        let mine = dependents.get(n.uid()).map(Vec::as_slice).unwrap_or(&[]);
        if n.deleting() {
            if finalizers.iter().any(|f| f == ORPHAN) {
                orphan(client, n, mine).await;
            } else if finalizers.iter().any(|f| f == FOREGROUND) {
                let deps: Vec<Dependent> = mine
                    .iter()
                    .map(|d| Dependent {
                        name: d.name().to_string(),
                        blocks: d
                            .meta
                            .owner_references
                            .iter()
                            .flatten()
                            .any(|r| r.uid == n.uid() && r.block_owner_deletion == Some(true)),
                        deleting: d.deleting(),
                    })
                    .collect();
                if foreground_blockers(&deps).is_none() {
                    remove_finalizer(client, n, FOREGROUND).await;
                }
            }
            continue;
        }
        let Some(refs) = n.meta.owner_references.as_ref().filter(|r| !r.is_empty()) else {
            continue;
        };
        let mut owners = Vec::with_capacity(refs.len());
        for r in refs {
            owners.push(find_owner(client, n, r, &by_uid).await);
        }
        let refs_view: Vec<OwnerRef> = refs
            .iter()
            .map(|r| OwnerRef {
                uid: r.uid.clone(),
                block_owner_deletion: r.block_owner_deletion == Some(true),
            })
            .collect();
        let dependents = if mine.is_empty() {
            Dependents::None
        } else if mine.iter().any(|d| d.deleting_dependents()) {
            Dependents::SomeDeletingDependents
        } else {
            Dependents::Some
        };
        match decide(&refs_view, &owners, &finalizers, dependents) {
            Action::Keep => {}
            Action::RemoveOwnerRefs(gone) => {
                let keep: Vec<_> = refs.iter().filter(|r| !gone.contains(&r.uid)).collect();
                let patch = json!({"metadata": {"ownerReferences": keep,
                                                "resourceVersion": n.meta.resource_version}});
                report(
                    n,
                    "removing owner references",
                    n.api(client)
                        .patch(n.name(), &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                        .map(|_| ()),
                );
            }
            Action::UnblockOwnersThenDeleteForeground => {
                let unblocked: Vec<_> = refs
                    .iter()
                    .map(|r| {
                        let mut r = r.clone();
                        if r.block_owner_deletion == Some(true) {
                            r.block_owner_deletion = Some(false);
                        }
                        r
                    })
                    .collect();
                let patch = json!({"metadata": {"ownerReferences": unblocked,
                                                "resourceVersion": n.meta.resource_version}});
                let r = n
                    .api(client)
                    .patch(n.name(), &PatchParams::default(), &Patch::Merge(&patch))
                    .await;
                let unblocked = r.is_ok();
                report(n, "unblocking its owners", r.map(|_| ()));
                if unblocked {
                    delete(client, n, Propagation::Foreground).await;
                }
            }
            Action::Delete(policy) => delete(client, n, policy).await,
        }
    }
}

/// Deletes `n` (its uid as precondition) with `policy`.
async fn delete(client: &kube::Client, n: &Node<'_>, policy: Propagation) {
    let params = DeleteParams {
        propagation_policy: Some(match policy {
            Propagation::Background => PropagationPolicy::Background,
            Propagation::Foreground => PropagationPolicy::Foreground,
            Propagation::Orphan => PropagationPolicy::Orphan,
        }),
        preconditions: Some(Preconditions {
            uid: n.meta.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    tracing::info!(kind = %n.resource.kind, name = %n.name(), "garbage collecting");
    report(
        n,
        "deleting",
        n.api(client).delete(n.name(), &params).await.map(|_| ()),
    );
}

/// The owner a reference names: from the graph by uid, else asked of the API server (the watch
/// may not have brought a new owner yet). An owner of a kind the collector cannot reach counts
/// as present: nothing is deleted on a guess.
async fn find_owner(
    client: &kube::Client,
    n: &Node<'_>,
    r: &k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference,
    by_uid: &HashMap<&str, &Node<'_>>,
) -> Owner {
    let present = |meta: &ObjectMeta| Owner::Present {
        uid: meta.uid.clone().unwrap_or_default(),
        deleting: meta.deletion_timestamp.is_some(),
        finalizers: meta.finalizers.clone().unwrap_or_default(),
    };
    if let Some(owner) = by_uid.get(r.uid.as_str()) {
        return present(owner.meta);
    }
    let Some(ar) = resource(&r.api_version, &r.kind) else {
        return Owner::Present {
            uid: r.uid.clone(),
            deleting: false,
            finalizers: Vec::new(),
        };
    };
    let api: Api<DynamicObject> = match &n.meta.namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    };
    match api.get_opt(&r.name).await {
        Ok(Some(owner)) => present(&owner.metadata),
        Ok(None) => Owner::Absent,
        // Unsure: keep the dependent for now.
        Err(_) => Owner::Present {
            uid: r.uid.clone(),
            deleting: false,
            finalizers: Vec::new(),
        },
    }
}

/// Removes the references to `owner` from its dependents, then its `orphan` finalizer.
async fn orphan(client: &kube::Client, owner: &Node<'_>, dependents: &[&Node<'_>]) {
    let mut all_done = true;
    for d in dependents {
        let keep: Vec<_> = d
            .meta
            .owner_references
            .iter()
            .flatten()
            .filter(|r| r.uid != owner.uid())
            .collect();
        let patch = json!({"metadata": {"ownerReferences": keep,
                                        "resourceVersion": d.meta.resource_version}});
        let r = d
            .api(client)
            .patch(d.name(), &PatchParams::default(), &Patch::Merge(&patch))
            .await;
        all_done &= r.is_ok();
        report(d, "orphaning", r.map(|_| ()));
    }
    if all_done {
        remove_finalizer(client, owner, ORPHAN).await;
    }
}

async fn remove_finalizer(client: &kube::Client, n: &Node<'_>, finalizer: &str) {
    let rest: Vec<String> = n
        .finalizers()
        .into_iter()
        .filter(|f| f != finalizer)
        .collect();
    let patch =
        json!({"metadata": {"finalizers": rest, "resourceVersion": n.meta.resource_version}});
    let r = n
        .api(client)
        .patch(n.name(), &PatchParams::default(), &Patch::Merge(&patch))
        .await;
    report(n, "removing finalizer", r.map(|_| ()));
}

/// Conflicts and absences are expected (the watch brings the newer object); the rest is logged.
fn report(n: &Node<'_>, what: &str, r: Result<(), kube::Error>) {
    match r {
        Ok(()) => {}
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
        Err(e) => {
            tracing::warn!(kind = %n.resource.kind, name = %n.name(), error = %e, "garbage collector: {what} failed")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_collector_reaches_the_workload_kinds() {
        let rs = resource("apps/v1", "ReplicaSet").unwrap();
        assert_eq!(
            (rs.group.as_str(), rs.plural.as_str()),
            ("apps", "replicasets")
        );
        let pod = resource("v1", "Pod").unwrap();
        assert_eq!((pod.group.as_str(), pod.version.as_str()), ("", "v1"));
        assert!(resource("example.com/v1", "Widget").is_none());
    }
}
