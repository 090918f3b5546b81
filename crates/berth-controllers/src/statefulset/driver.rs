//! The StatefulSet controller loop: on StatefulSet, pod, revision or claim changes, sync every
//! StatefulSet — keep its ControllerRevisions, keep its claims' owners as its retention policy
//! says, create each pod's claims and then the pod, delete pods, write its status.
//! Pods have fixed names, so a create the watch has not shown yet fails with 409 on the next
//! pass and changes nothing. A refused create (403, 422, quota) is recorded as a
//! `FailedCreate` event and retried after the set's back-off ([`crate::create_backoff`]).

use super::claims::{self, ClaimPod};
use super::{ordinal, sync, Revision};
use crate::controller_revision::{self, revision_template, REVISION_HASH_LABEL};
use crate::create_backoff::{self, CreateBackoff};
use crate::events;
use crate::model::Involved;
use crate::owned_pods::{controlled_by, Owner};
use crate::recorder::Recorder;

/// The component StatefulSet events are recorded as.
const COMPONENT: &str = "statefulset-controller";
use crate::wait::wait;
use crate::Clock;
use berth_informers::Informer;
use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Claims and revisions come from the process's shared watches (the controller manager's reads).
pub(crate) async fn run(
    client: kube::Client,
    informers: crate::informers::Informers,
    clock: Clock,
    metrics: crate::metrics::ControllerMetrics,
) {
    let queue = metrics.queue("statefulset", &clock);
    let mut sets: Informer<StatefulSet> = informers.stateful_sets.clone();
    let mut pods: Informer<Pod> = informers.pods.clone();
    let mut revisions: Informer<ControllerRevision> = informers.shared();
    let mut claims: Informer<PersistentVolumeClaim> = informers.shared();
    if !(sets.synced().await
        && pods.synced().await
        && revisions.synced().await
        && claims.synced().await)
    {
        return;
    }
    let mut retry = Retry {
        backoff: CreateBackoff::default(),
        recorder: Recorder::new(client.clone(), clock.clone()),
        now: clock.now(),
    };
    loop {
        retry.now = clock.now();
        let all_sets: Vec<Arc<StatefulSet>> = sets.store.state();
        retry.backoff.retain(|uid| {
            all_sets
                .iter()
                .any(|s| s.metadata.uid.as_deref() == Some(uid))
        });
        let all_pods: Vec<Arc<Pod>> = if all_sets.is_empty() {
            Vec::new()
        } else {
            pods.store.state()
        };
        let all_revisions: Vec<Arc<ControllerRevision>> = revisions.store.state();
        let all_claims: Vec<Arc<PersistentVolumeClaim>> = claims.store.state();
        let mut pass = queue.pass(all_sets.len());
        for set in all_sets.iter() {
            let work = pass.take();
            if set.metadata.deletion_timestamp.is_some() {
                continue;
            }
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
            let claims_of: BTreeMap<&str, &PersistentVolumeClaim> = all_claims
                .iter()
                .filter(|c| c.metadata.namespace.as_deref() == ns)
                .filter_map(|c| Some((c.metadata.name.as_deref()?, c.as_ref())))
                .collect();
            if !keep_claim_owners(&client, set, &mine, &claims_of).await {
                continue;
            }
            let failures = retry.backoff.failures(&uid);
            sync_set(&client, set, &mine, &owned, &claims_of, &mut retry).await;
            if retry.backoff.failures(&uid) > failures {
                work.retry();
            }
        }
        drop(pass);
        let until = retry.backoff.next_retry().map(|at| clock.instant_at(at));
        wait(
            &mut [
                &mut sets.changed,
                &mut pods.changed,
                &mut revisions.changed,
                &mut claims.changed,
            ],
            until,
        )
        .await;
    }
}

/// The per-set create back-off and how refusals are reported.
struct Retry {
    backoff: CreateBackoff,
    recorder: Recorder,
    now: chrono::DateTime<chrono::Utc>,
}

async fn sync_set(
    client: &kube::Client,
    set: &StatefulSet,
    pods: &[&Pod],
    revisions: &[&ControllerRevision],
    existing_claims: &BTreeMap<&str, &PersistentVolumeClaim>,
    retry: &mut Retry,
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
    let mut s = sync(set, pods, &current, &update);
    let version = set.metadata.resource_version.as_deref();
    let backing_off = !retry.backoff.may_create(&uid, version, retry.now);
    if backing_off {
        s.create.clear();
    }
    let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let mut refused = false;
    for pod in s.create {
        let n = pod["metadata"]["name"].as_str().unwrap_or("").to_string();
        let i = n
            .strip_prefix(name.as_str())
            .and_then(|r| r.strip_prefix('-'))
            .and_then(|r| r.parse::<i32>().ok())
            .unwrap_or(-1);
        // Upstream creates the pod's claims first, and makes no pod while one cannot be made.
        if !create_claims(client, set, i, existing_claims).await {
            break;
        }
        let pod: Pod = match serde_json::from_value(pod) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(statefulset = %name, error = %e, "pod template unusable");
                break;
            }
        };
        match api.create(&PostParams::default(), &pod).await {
            Ok(p) => {
                tracing::info!(statefulset = %name, pod = ?p.metadata.name, "created pod");
                let e = events::stateful_pod(&involved(set), "Create", &n, &name);
                retry.recorder.record(COMPONENT, &e);
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => {
                tracing::warn!(statefulset = %name, error = %e, "creating pod failed");
                failed_create(&retry.recorder, set, &n, &e);
                retry.backoff.failed(&uid, version, retry.now);
                refused = true;
                // Upstream stops the pass at a pod it could not make, ordered or not.
                break;
            }
        }
    }
    if !refused && !backing_off {
        retry.backoff.forget(&uid);
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
            Ok(_) => {
                tracing::info!(statefulset = %name, pod = %pod.name, "deleted pod");
                let e = events::stateful_pod(&involved(set), "Delete", &pod.name, &name);
                retry.recorder.record(COMPONENT, &e);
            }
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
            Err(e) => {
                tracing::warn!(statefulset = %name, error = %e, "deleting pod failed");
                let message = create_backoff::api_message(&e);
                let e = events::stateful_pod_failed(
                    &involved(set),
                    "Delete",
                    &pod.name,
                    &name,
                    &message,
                );
                retry.recorder.record(COMPONENT, &e);
            }
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

/// Records upstream's `FailedCreate` warning on the set, worded as its stateful pod control.
fn failed_create(recorder: &Recorder, set: &StatefulSet, pod: &str, error: &kube::Error) {
    let name = set.metadata.name.clone().unwrap_or_default();
    let message = create_backoff::api_message(error);
    let event = events::stateful_pod_failed(&involved(set), "Create", pod, &name, &message);
    recorder.record(COMPONENT, &event);
}

/// The set as its events name it.
fn involved(set: &StatefulSet) -> Involved {
    Involved::Workload {
        api_version: "apps/v1",
        kind: "StatefulSet",
        namespace: set.metadata.namespace.clone().unwrap_or_default(),
        name: set.metadata.name.clone().unwrap_or_default(),
        uid: set.metadata.uid.clone().unwrap_or_default(),
        resource_version: crate::model::version_of(&set.metadata),
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

/// Creates the claims of the pod of `ordinal` that do not exist yet; false when one could not
/// be made or is still being deleted (the pod then waits, as upstream).
async fn create_claims(
    client: &kube::Client,
    set: &StatefulSet,
    ordinal: i32,
    existing: &BTreeMap<&str, &PersistentVolumeClaim>,
) -> bool {
    let ns = set.metadata.namespace.clone().unwrap_or_default();
    let api: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &ns);
    for mut claim in claims::claims_for(set, ordinal) {
        let claim_name = claim["metadata"]["name"].as_str().unwrap_or("").to_string();
        if let Some(c) = existing.get(claim_name.as_str()) {
            if c.metadata.deletion_timestamp.is_some() {
                tracing::info!(claim = %claim_name, "claim is being deleted; the pod waits");
                return false;
            }
            continue;
        }
        let pod = ClaimPod {
            name: "",
            uid: "",
            scaled_down: false,
        };
        if let Some(refs) = claims::owner_references(set, &pod, &serde_json::Value::Null) {
            claim["metadata"]["ownerReferences"] = refs;
        }
        let claim: PersistentVolumeClaim = match serde_json::from_value(claim) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(claim = %claim_name, error = %e, "claim template unusable");
                return false;
            }
        };
        match api.create(&PostParams::default(), &claim).await {
            Ok(_) => tracing::info!(claim = %claim_name, "created claim"),
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => {
                tracing::warn!(claim = %claim_name, error = %e, "creating claim failed");
                return false;
            }
        }
    }
    true
}

/// Brings the owners of the set's pods' claims in line with its retention policy, before any
/// pod is deleted (so a scaled-down pod owns its claims by the time it goes, as upstream).
/// False when a write failed: the set waits for the next pass.
async fn keep_claim_owners(
    client: &kube::Client,
    set: &StatefulSet,
    pods: &[&Pod],
    existing: &BTreeMap<&str, &PersistentVolumeClaim>,
) -> bool {
    let set_name = set.metadata.name.clone().unwrap_or_default();
    let ns = set.metadata.namespace.clone().unwrap_or_default();
    let replicas = set.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let api: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &ns);
    let mut ok = true;
    for pod in pods {
        let Some(i) = ordinal(&set_name, pod) else {
            continue;
        };
        let owner = ClaimPod {
            name: pod.metadata.name.as_deref().unwrap_or(""),
            uid: pod.metadata.uid.as_deref().unwrap_or(""),
            scaled_down: i >= replicas,
        };
        for wanted in claims::claims_for(set, i) {
            let Some(claim) = wanted["metadata"]["name"]
                .as_str()
                .and_then(|n| existing.get(n))
            else {
                continue;
            };
            if claim.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let refs = serde_json::to_value(&claim.metadata.owner_references).unwrap_or_default();
            let Some(refs) = claims::owner_references(set, &owner, &refs) else {
                continue;
            };
            let patch = json!({"metadata": {"ownerReferences": refs,
                                            "resourceVersion": claim.metadata.resource_version}});
            let claim_name = claim.metadata.name.as_deref().unwrap_or("");
            match api
                .patch(claim_name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => {
                    tracing::warn!(claim = %claim_name, error = %e, "updating claim owners failed");
                    ok = false;
                }
            }
        }
    }
    ok
}
