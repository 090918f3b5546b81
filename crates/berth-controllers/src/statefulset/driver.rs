//! The StatefulSet controller loop: on StatefulSet, pod or revision changes, sync every
//! StatefulSet — keep its ControllerRevisions, create and delete its pods, write its status.
//! Pods have fixed names, so a create the watch has not shown yet fails with 409 on the next
//! pass and changes nothing.

use super::{sync, Revision};
use crate::controller_revision::{self, revision_template, REVISION_HASH_LABEL};
use crate::owned_pods::{controlled_by, Owner};
use crate::wait::wait;
use berth_informers::Informer;
use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::watcher;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

pub(crate) async fn run(
    client: kube::Client,
    mut sets: Informer<StatefulSet>,
    mut pods: Informer<Pod>,
) {
    let mut revisions: Informer<ControllerRevision> =
        Informer::start(Api::all(client.clone()), watcher::Config::default());
    if !(sets.synced().await && pods.synced().await && revisions.synced().await) {
        return;
    }
    loop {
        let all_sets: Vec<Arc<StatefulSet>> = sets.store.state();
        let all_pods: Vec<Arc<Pod>> = if all_sets.is_empty() {
            Vec::new()
        } else {
            pods.store.state()
        };
        let all_revisions: Vec<Arc<ControllerRevision>> = revisions.store.state();
        for set in all_sets
            .iter()
            .filter(|s| s.metadata.deletion_timestamp.is_none())
        {
            let uid = set.metadata.uid.clone().unwrap_or_default();
            let ns = set.metadata.namespace.as_deref();
            let mine: Vec<&Pod> = all_pods
                .iter()
                .map(|p| p.as_ref())
                .filter(|p| p.metadata.namespace.as_deref() == ns && controlled_by(p, &uid))
                .collect();
            let owned: Vec<&ControllerRevision> = all_revisions
                .iter()
                .map(|r| r.as_ref())
                .filter(|r| {
                    r.metadata.namespace.as_deref() == ns
                        && r.metadata
                            .owner_references
                            .iter()
                            .flatten()
                            .any(|o| o.uid == uid)
                })
                .collect();
            sync_set(&client, set, &mine, &owned).await;
        }
        wait(
            &mut [&mut sets.changed, &mut pods.changed, &mut revisions.changed],
            None,
        )
        .await;
    }
}

async fn sync_set(
    client: &kube::Client,
    set: &StatefulSet,
    pods: &[&Pod],
    revisions: &[&ControllerRevision],
) {
    let ns = set.metadata.namespace.clone().unwrap_or_default();
    let name = set.metadata.name.clone().unwrap_or_default();
    let uid = set.metadata.uid.clone().unwrap_or_default();
    let spec = set.spec.clone().unwrap_or_default();
    let template = serde_json::to_value(&spec.template).unwrap_or_default();
    let labels: BTreeMap<String, String> = spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    let in_use: BTreeSet<String> = pods
        .iter()
        .filter_map(|p| {
            p.metadata
                .labels
                .as_ref()?
                .get(REVISION_HASH_LABEL)
                .cloned()
        })
        .chain(set.status.as_ref().and_then(|s| s.current_revision.clone()))
        .collect();
    let owner = Owner {
        api_version: "apps/v1",
        kind: "StatefulSet",
        name: &name,
        uid: &uid,
    };
    let plan = controller_revision::plan(
        &owner,
        &ns,
        &template,
        &labels,
        revisions,
        spec.revision_history_limit.unwrap_or(10).into(),
        &in_use,
    );
    if !apply_revisions(client, &ns, &plan).await {
        return;
    }
    let update = Revision {
        name: plan.name.clone(),
        template: template.clone(),
    };
    let current = set
        .status
        .as_ref()
        .and_then(|s| s.current_revision.as_deref())
        .filter(|c| *c != update.name)
        .and_then(|c| {
            revisions
                .iter()
                .find(|r| r.metadata.name.as_deref() == Some(c))
        })
        .and_then(|r| {
            Some(Revision {
                name: r.metadata.name.clone()?,
                template: revision_template(r)?,
            })
        })
        .unwrap_or_else(|| update.clone());
    let s = sync(set, pods, &current, &update);
    let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
    for pod in s.create {
        let pod: Pod = match serde_json::from_value(pod) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(statefulset = %name, error = %e, "pod template unusable");
                break;
            }
        };
        match api.create(&PostParams::default(), &pod).await {
            Ok(p) => tracing::info!(statefulset = %name, pod = ?p.metadata.name, "created pod"),
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => tracing::warn!(statefulset = %name, error = %e, "creating pod failed"),
        }
    }
    for pod in s.delete {
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(pod.uid.clone()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(&pod.name, &params).await {
            Ok(_) => tracing::info!(statefulset = %name, pod = %pod.name, "deleted pod"),
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
            Err(e) => tracing::warn!(statefulset = %name, error = %e, "deleting pod failed"),
        }
    }
    if let Some(status) = s.status {
        let sets: Api<StatefulSet> = Api::namespaced(client.clone(), &ns);
        let patch = json!({"metadata": {"resourceVersion": set.metadata.resource_version},
                           "status": status});
        match crate::update::update_status(&sets, &name, &patch).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => {}
            Err(e) => tracing::warn!(statefulset = %name, error = %e, "updating status failed"),
        }
    }
}

/// Writes a revision plan; `false` when the update revision could not be made (the next pass
/// tries again).
pub(crate) async fn apply_revisions(
    client: &kube::Client,
    ns: &str,
    plan: &controller_revision::RevisionPlan,
) -> bool {
    let api: Api<ControllerRevision> = Api::namespaced(client.clone(), ns);
    if let Some(revision) = &plan.create {
        let Ok(revision) = serde_json::from_value::<ControllerRevision>(revision.clone()) else {
            return false;
        };
        match api.create(&PostParams::default(), &revision).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => {
                tracing::warn!(revision = %plan.name, error = %e, "creating controller revision failed");
                return false;
            }
        }
    }
    if let Some((name, number)) = &plan.renumber {
        let patch = json!({"revision": number});
        if let Err(e) = api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::warn!(revision = %name, error = %e, "renumbering controller revision failed");
        }
    }
    for name in &plan.delete {
        let _ = api.delete(name, &DeleteParams::default()).await;
    }
    true
}
