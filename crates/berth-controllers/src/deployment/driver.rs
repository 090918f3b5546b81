//! The Deployment loop: on Deployment or ReplicaSet changes, sync every Deployment; create,
//! scale and delete its ReplicaSets, and write its revision and status.

use super::conditions::Condition;
use super::hash::template_hash;
use super::rolling::{default_max_surge, default_max_unavailable, IntOrPercent};
use super::sync::{
    sync, DeploymentView, Plan, SetView, StatusView, Strategy, REVISION, TEMPLATE_HASH,
};
use crate::claim::{claim, Candidate, Claim};
use crate::create_backoff::{self, CreateBackoff};
use crate::informers::{wait, Informers};
use crate::model::{to_chrono, to_time};
use crate::model::{EventRecord, Involved};
use crate::recorder::Recorder;
use crate::replicaset::workload::{controller_uid, label_of, Owner};
use crate::Clock;
use berth_core::labels::Selector;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The reason of a refused ReplicaSet create (upstream `FailedRSCreateReason`).
const FAILED_RS_CREATE: &str = "ReplicaSetCreateError";

/// Upstream's default `progressDeadlineSeconds`.
const DEFAULT_PROGRESS_DEADLINE: i64 = 600;

pub async fn run(
    client: kube::Client,
    mut informers: Informers,
    clock: Clock,
    metrics: crate::metrics::ControllerMetrics,
) {
    let queue = metrics.queue("deployment", &clock);
    let ready = [
        informers.deployments.synced().await,
        informers.replica_sets.synced().await,
    ];
    if ready.contains(&false) {
        return;
    }
    let mut backoff = CreateBackoff::default();
    let recorder = Recorder::new(client.clone(), clock.clone());
    loop {
        let deployments: Vec<Arc<Deployment>> = informers.deployments.store.state();
        let sets: Vec<Arc<ReplicaSet>> = informers.replica_sets.store.state();
        let mut by_owner: BTreeMap<String, Vec<&ReplicaSet>> = BTreeMap::new();
        // Orphans by namespace: few, and each a candidate for adoption.
        let mut orphans: BTreeMap<&str, Vec<&ReplicaSet>> = BTreeMap::new();
        for rs in &sets {
            match controller_uid(rs.metadata.owner_references.as_deref()) {
                Some(uid) => by_owner.entry(uid).or_default().push(rs),
                None => orphans
                    .entry(rs.metadata.namespace.as_deref().unwrap_or(""))
                    .or_default()
                    .push(rs),
            }
        }
        let mut recheck = None;
        backoff.retain(|uid| {
            deployments
                .iter()
                .any(|d| d.metadata.uid.as_deref() == Some(uid))
        });
        let mut pass = queue.pass(deployments.len());
        for d in &deployments {
            let work = pass.take();
            if d.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let uid = d.metadata.uid.clone().unwrap_or_default();
            let owned = by_owner.get(&uid).map(Vec::as_slice).unwrap_or(&[]);
            let ns = d.metadata.namespace.as_deref().unwrap_or("");
            let orphans = orphans.get(ns).map(Vec::as_slice).unwrap_or(&[]);
            let owned = claim_sets(&client, d, owned, orphans).await;
            let Some((view, sets, template)) = views(d, &owned) else {
                continue;
            };
            let plan = sync(&view, &sets, clock.now());
            if let Some(at) = plan.recheck_at {
                recheck = Some(recheck.map_or(at, |r: chrono::DateTime<chrono::Utc>| r.min(at)));
            }
            // A Deployment whose ReplicaSet create was refused waits out its back-off.
            let version = d.metadata.resource_version.as_deref();
            if plan.create.is_some() && !backoff.may_create(&uid, version, clock.now()) {
                continue;
            }
            let creates = plan.create.is_some();
            let was: BTreeMap<String, i32> =
                sets.iter().map(|s| (s.name.clone(), s.replicas)).collect();
            let scaled = Scaled {
                recorder: &recorder,
                was: &was,
            };
            match carry_out(&client, d, &view, template, plan, scaled).await {
                Err(refused) => {
                    work.retry();
                    backoff.failed(&uid, version, clock.now());
                    report_refused(&client, &recorder, d, &view, refused, clock.now()).await;
                }
                Ok(()) if creates => backoff.forget(&uid),
                Ok(()) => {}
            }
        }
        drop(pass);
        let until = [recheck, backoff.next_retry()]
            .into_iter()
            .flatten()
            .min()
            .map(|at| clock.instant_at(at));
        let i = &mut informers;
        wait(
            &mut [&mut i.deployments.changed, &mut i.replica_sets.changed],
            until,
        )
        .await;
    }
}

/// Adopts the orphans `d` selects and releases the sets it owns but no longer selects; the
/// sets it owns after that.
async fn claim_sets<'a>(
    client: &kube::Client,
    d: &Deployment,
    owned: &[&'a ReplicaSet],
    orphans: &[&'a ReplicaSet],
) -> Vec<&'a ReplicaSet> {
    let uid = d.metadata.uid.as_deref().unwrap_or("");
    let deleting = d.metadata.deletion_timestamp.is_some();
    let selector = d
        .spec
        .as_ref()
        .and_then(|s| serde_json::to_value(&s.selector).ok())
        .and_then(|s| Selector::from_label_selector(&s).ok());
    let Some(selector) = selector else {
        return owned.to_vec();
    };
    let owner = Owner {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        name: d.metadata.name.clone().unwrap_or_default(),
        uid: uid.to_string(),
    };
    let mut claimed = Vec::with_capacity(owned.len());
    for &rs in owned.iter().chain(orphans) {
        let labels = rs.metadata.labels.clone().unwrap_or_default();
        let controller = controller_uid(rs.metadata.owner_references.as_deref());
        let candidate = Candidate {
            controller_uid: controller.as_deref(),
            selected: !labels.is_empty() && selector.matches_fn(label_of(&labels)),
            deleting: rs.metadata.deletion_timestamp.is_some(),
        };
        let refs = rs.metadata.owner_references.iter().flatten();
        match claim(uid, deleting, candidate) {
            Claim::Owned => claimed.push(rs),
            Claim::Ignore => {}
            Claim::Adopt => {
                let mut refs: Vec<Value> =
                    refs.filter_map(|r| serde_json::to_value(r).ok()).collect();
                refs.push(owner.controller_ref());
                if patch_owner_refs(client, rs, refs).await {
                    claimed.push(rs);
                }
            }
            Claim::Release => {
                let refs: Vec<Value> = refs
                    .filter(|r| r.uid != uid)
                    .filter_map(|r| serde_json::to_value(r).ok())
                    .collect();
                if !patch_owner_refs(client, rs, refs).await {
                    claimed.push(rs);
                }
            }
        }
    }
    claimed
}

/// Writes `rs`'s owner references (conditional on its resourceVersion); whether it did.
async fn patch_owner_refs(client: &kube::Client, rs: &ReplicaSet, refs: Vec<Value>) -> bool {
    let name = rs.metadata.name.clone().unwrap_or_default();
    let ns = rs.metadata.namespace.clone().unwrap_or_default();
    let api: Api<ReplicaSet> = Api::namespaced(client.clone(), &ns);
    let patch = json!({"metadata": {"ownerReferences": refs,
                                    "resourceVersion": rs.metadata.resource_version}});
    match api
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => true,
        // Changed meanwhile: the watch brings it, and the next pass claims it again.
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => false,
        Err(e) => {
            tracing::warn!(replicaset = %name, error = %e, "updating owner references failed");
            false
        }
    }
}

fn int_or_percent(v: Option<&IntOrString>, default: IntOrPercent) -> IntOrPercent {
    match v {
        None => default,
        Some(IntOrString::Int(i)) => IntOrPercent::Int(*i),
        Some(IntOrString::String(s)) => {
            IntOrPercent::parse(&Value::String(s.clone())).unwrap_or(default)
        }
    }
}

/// The template without its `pod-template-hash` label, as JSON.
fn template_without_hash(t: Option<&k8s_openapi::api::core::v1::PodTemplateSpec>) -> Value {
    let mut v = t
        .and_then(|t| serde_json::to_value(t).ok())
        .unwrap_or(Value::Null);
    if let Some(labels) = v
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        labels.remove(TEMPLATE_HASH);
        if labels.is_empty() {
            if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("labels");
            }
        }
    }
    v
}

fn views(d: &Deployment, owned: &[&ReplicaSet]) -> Option<(DeploymentView, Vec<SetView>, Value)> {
    let spec = d.spec.as_ref()?;
    let status = d.status.clone().unwrap_or_default();
    let template = serde_json::to_value(&spec.template).ok()?;
    let hash = template_hash(&template, status.collision_count);
    let strategy = match spec.strategy.as_ref().and_then(|s| s.type_.as_deref()) {
        Some("Recreate") => Strategy::Recreate,
        _ => {
            let rolling = spec
                .strategy
                .as_ref()
                .and_then(|s| s.rolling_update.as_ref());
            Strategy::RollingUpdate {
                max_surge: int_or_percent(
                    rolling.and_then(|r| r.max_surge.as_ref()),
                    default_max_surge(),
                ),
                max_unavailable: int_or_percent(
                    rolling.and_then(|r| r.max_unavailable.as_ref()),
                    default_max_unavailable(),
                ),
            }
        }
    };
    let conditions = status
        .conditions
        .iter()
        .flatten()
        .map(|c| {
            let update = c
                .last_update_time
                .as_ref()
                .map(to_chrono)
                .unwrap_or_default();
            Condition {
                type_: c.type_.clone(),
                status: c.status.clone(),
                reason: c.reason.clone().unwrap_or_default(),
                message: c.message.clone().unwrap_or_default(),
                last_update: update,
                last_transition: c
                    .last_transition_time
                    .as_ref()
                    .map(to_chrono)
                    .unwrap_or(update),
            }
        })
        .collect();
    let view = DeploymentView {
        name: d.metadata.name.clone()?,
        replicas: spec.replicas.unwrap_or(1),
        generation: d.metadata.generation.unwrap_or(0),
        paused: spec.paused == Some(true),
        strategy,
        progress_deadline: match spec.progress_deadline_seconds {
            Some(s) if s == i32::MAX => None,
            Some(s) => Some(i64::from(s)),
            None => Some(DEFAULT_PROGRESS_DEADLINE),
        },
        revision_history_limit: spec.revision_history_limit.unwrap_or(10),
        template_hash: hash.clone(),
        annotations: d.metadata.annotations.clone().unwrap_or_default(),
        status: StatusView {
            observed_generation: status.observed_generation.unwrap_or(0),
            replicas: status.replicas.unwrap_or(0),
            updated_replicas: status.updated_replicas.unwrap_or(0),
            ready_replicas: status.ready_replicas.unwrap_or(0),
            available_replicas: status.available_replicas.unwrap_or(0),
            unavailable_replicas: status.unavailable_replicas.unwrap_or(0),
            conditions,
        },
    };
    let plain = template_without_hash(Some(&spec.template));
    let sets = owned
        .iter()
        .map(|rs| {
            let rs_spec = rs.spec.as_ref();
            let rs_status = rs.status.as_ref();
            let labels = rs.metadata.labels.clone().unwrap_or_default();
            let annotations = rs.metadata.annotations.clone().unwrap_or_default();
            let current = labels.get(TEMPLATE_HASH) == Some(&hash)
                || template_without_hash(rs_spec.and_then(|s| s.template.as_ref())) == plain;
            SetView {
                name: rs.metadata.name.clone().unwrap_or_default(),
                current,
                revision: annotations
                    .get(REVISION)
                    .and_then(|r| r.parse().ok())
                    .unwrap_or(0),
                replicas: rs_spec.and_then(|s| s.replicas).unwrap_or(1),
                status_replicas: rs_status.map_or(0, |s| s.replicas),
                ready: rs_status.and_then(|s| s.ready_replicas).unwrap_or(0),
                available: rs_status.and_then(|s| s.available_replicas).unwrap_or(0),
                created: rs.metadata.creation_timestamp.as_ref().map(to_chrono),
                deleting: rs.metadata.deletion_timestamp.is_some(),
                annotations,
            }
        })
        .collect();
    Some((view, sets, template))
}

/// The ReplicaSet for the Deployment's current template: `<name>-<hash>`, the hash in its
/// labels, selector and template labels.
fn new_replica_set(
    d: &Deployment,
    view: &DeploymentView,
    template: Value,
    plan_new: &super::sync::NewSet,
) -> Value {
    let spec = d.spec.as_ref();
    let mut template = template;
    template["metadata"]["labels"][TEMPLATE_HASH] = json!(view.template_hash);
    let mut selector = spec
        .and_then(|s| serde_json::to_value(&s.selector).ok())
        .unwrap_or_else(|| json!({}));
    selector["matchLabels"][TEMPLATE_HASH] = json!(view.template_hash);
    let owner = Owner {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        name: view.name.clone(),
        uid: d.metadata.uid.clone().unwrap_or_default(),
    };
    json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {
            "name": format!("{}-{}", view.name, view.template_hash),
            "namespace": d.metadata.namespace,
            "labels": template["metadata"]["labels"],
            "annotations": plan_new.annotations,
            "ownerReferences": [owner.controller_ref()],
        },
        "spec": {
            "replicas": plan_new.replicas,
            "minReadySeconds": spec.and_then(|s| s.min_ready_seconds).unwrap_or(0),
            "selector": selector,
            "template": template,
        },
    })
}

fn conditions_json(cs: &[Condition]) -> Value {
    Value::Array(
        cs.iter()
            .map(|c| {
                json!({"type": c.type_, "status": c.status, "reason": c.reason, "message": c.message,
                       "lastUpdateTime": to_time(c.last_update), "lastTransitionTime": to_time(c.last_transition)})
            })
            .collect(),
    )
}

fn status_json(s: &StatusView) -> Value {
    json!({
        "observedGeneration": s.observed_generation,
        "replicas": s.replicas,
        "updatedReplicas": s.updated_replicas,
        "readyReplicas": s.ready_replicas,
        "availableReplicas": s.available_replicas,
        "unavailableReplicas": s.unavailable_replicas,
        "conditions": conditions_json(&s.conditions),
    })
}

/// A refused create of a Deployment's new ReplicaSet: its name and the API server's error.
struct Refused {
    replica_set: String,
    error: kube::Error,
}

/// What a Deployment's sync needs to record `ScalingReplicaSet`: the recorder and each
/// set's `replicas` before the sync.
struct Scaled<'a> {
    recorder: &'a Recorder,
    was: &'a BTreeMap<String, i32>,
}

impl Scaled<'_> {
    /// Records that `replica_set` is now at `to` (upstream records it after the write).
    fn record(&self, d: &Deployment, view: &DeploymentView, replica_set: &str, to: i32) {
        let from = self.was.get(replica_set).copied().unwrap_or(0);
        let involved = Involved::Workload {
            api_version: "apps/v1",
            kind: "Deployment",
            namespace: d.metadata.namespace.clone().unwrap_or_default(),
            name: view.name.clone(),
            uid: d.metadata.uid.clone().unwrap_or_default(),
            resource_version: crate::model::version_of(&d.metadata),
        };
        if let Some(e) = crate::events::scaled_replica_set(&involved, replica_set, from, to) {
            self.recorder.record("deployment-controller", &e);
        }
    }
}

/// Carries `plan` out. A refused create of the new ReplicaSet stops there: nothing else is
/// written (the plan's status assumed the set exists), and the caller retries with back-off.
async fn carry_out(
    client: &kube::Client,
    d: &Deployment,
    view: &DeploymentView,
    template: Value,
    plan: Plan,
    scaled: Scaled<'_>,
) -> Result<(), Refused> {
    let ns = d.metadata.namespace.clone().unwrap_or_default();
    let name = &view.name;
    let sets: Api<ReplicaSet> = Api::namespaced(client.clone(), &ns);
    if let Some(new) = &plan.create {
        let rs = new_replica_set(d, view, template, new);
        let replica_set = rs["metadata"]["name"].as_str().unwrap_or("").to_string();
        match serde_json::from_value::<ReplicaSet>(rs) {
            Ok(rs) => match sets.create(&PostParams::default(), &rs).await {
                Ok(_) => scaled.record(d, view, &replica_set, new.replicas),
                // Created in an earlier pass the watch has not brought yet.
                Err(kube::Error::Api(e)) if e.code == 409 => {}
                Err(error) => {
                    tracing::warn!(deployment = %name, error = %error, "creating replicaset failed");
                    return Err(Refused { replica_set, error });
                }
            },
            Err(e) => tracing::warn!(deployment = %name, error = %e, "replicaset unusable"),
        }
    }
    for u in &plan.update {
        let patch =
            json!({"metadata": {"annotations": u.annotations}, "spec": {"replicas": u.replicas}});
        match sets
            .patch(&u.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => scaled.record(d, view, &u.name, u.replicas),
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
            Err(e) => {
                tracing::warn!(deployment = %name, replicaset = %u.name, error = %e, "scaling replicaset failed")
            }
        }
    }
    for old in &plan.delete {
        match sets.delete(old, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
            Err(e) => {
                tracing::warn!(deployment = %name, replicaset = %old, error = %e, "deleting old replicaset failed")
            }
        }
    }
    let api: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    if let Some(revision) = &plan.revision {
        let patch = json!({"metadata": {"annotations": {REVISION: revision}}});
        if let Err(e) = crate::update::update(&api, name, &patch).await {
            tracing::debug!(deployment = %name, error = %e, "writing revision failed");
        }
    }
    if plan.status != view.status {
        let patch = json!({"status": status_json(&plan.status)});
        match crate::update::update_status(&api, name, &patch).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
            Err(e) => {
                tracing::warn!(deployment = %name, error = %e, "updating deployment status failed")
            }
        }
    }
    Ok(())
}

/// Upstream's answer to a refused ReplicaSet create: `Progressing` turns `False` with reason
/// `ReplicaSetCreateError` (when the Deployment has a progress deadline) and a warning event.
async fn report_refused(
    client: &kube::Client,
    recorder: &Recorder,
    d: &Deployment,
    view: &DeploymentView,
    refused: Refused,
    now: chrono::DateTime<chrono::Utc>,
) {
    let message = format!(
        "Failed to create new replica set {:?}: {}",
        refused.replica_set,
        create_backoff::api_message(&refused.error)
    );
    if view.progress_deadline.is_some() {
        let mut conditions = view.status.conditions.clone();
        super::conditions::set(
            &mut conditions,
            Condition::new(
                super::conditions::PROGRESSING,
                "False",
                FAILED_RS_CREATE,
                message.clone(),
                now,
            ),
        );
        if conditions != view.status.conditions {
            let ns = d.metadata.namespace.clone().unwrap_or_default();
            let api: Api<Deployment> = Api::namespaced(client.clone(), &ns);
            let patch = json!({"status": {"conditions": conditions_json(&conditions)}});
            if let Err(e) = crate::update::update_status(&api, &view.name, &patch).await {
                tracing::debug!(deployment = %view.name, error = %e, "updating deployment status failed");
            }
        }
    }
    let event = EventRecord {
        involved: Involved::Workload {
            api_version: "apps/v1",
            kind: "Deployment",
            namespace: d.metadata.namespace.clone().unwrap_or_default(),
            name: view.name.clone(),
            uid: d.metadata.uid.clone().unwrap_or_default(),
            resource_version: crate::model::version_of(&d.metadata),
        },
        type_: "Warning",
        reason: FAILED_RS_CREATE,
        message,
    };
    recorder.record("deployment-controller", &event);
}
