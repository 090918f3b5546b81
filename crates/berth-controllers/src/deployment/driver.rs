//! The Deployment loop: on Deployment or ReplicaSet changes, sync every Deployment; create,
//! scale and delete its ReplicaSets, and write its revision and status.

use super::conditions::Condition;
use super::hash::template_hash;
use super::rolling::{default_max_surge, default_max_unavailable, IntOrPercent};
use super::sync::{
    sync, DeploymentView, Plan, SetView, StatusView, Strategy, REVISION, TEMPLATE_HASH,
};
use crate::informers::{wait, Informers};
use crate::model::{to_chrono, to_time};
use crate::replicaset::workload::{controller_uid, Owner};
use crate::Clock;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Upstream's default `progressDeadlineSeconds`.
const DEFAULT_PROGRESS_DEADLINE: i64 = 600;

pub async fn run(client: kube::Client, mut informers: Informers, clock: Clock) {
    let ready = [
        informers.deployments.synced().await,
        informers.replica_sets.synced().await,
    ];
    if ready.contains(&false) {
        return;
    }
    loop {
        let deployments: Vec<Arc<Deployment>> = informers.deployments.store.state();
        let sets: Vec<Arc<ReplicaSet>> = informers.replica_sets.store.state();
        let mut by_owner: BTreeMap<String, Vec<&ReplicaSet>> = BTreeMap::new();
        for rs in &sets {
            if let Some(uid) = controller_uid(rs.metadata.owner_references.as_deref()) {
                by_owner.entry(uid).or_default().push(rs);
            }
        }
        let mut recheck = None;
        for d in &deployments {
            if d.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let uid = d.metadata.uid.clone().unwrap_or_default();
            let owned = by_owner.get(&uid).map(Vec::as_slice).unwrap_or(&[]);
            let Some((view, sets, template)) = views(d, owned) else {
                continue;
            };
            let plan = sync(&view, &sets, clock.now());
            if let Some(at) = plan.recheck_at {
                recheck = Some(recheck.map_or(at, |r: chrono::DateTime<chrono::Utc>| r.min(at)));
            }
            carry_out(&client, d, &view, template, plan).await;
        }
        let until = recheck.map(|at| clock.instant_at(at));
        let i = &mut informers;
        wait(
            &mut [&mut i.deployments.changed, &mut i.replica_sets.changed],
            until,
        )
        .await;
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

async fn carry_out(
    client: &kube::Client,
    d: &Deployment,
    view: &DeploymentView,
    template: Value,
    plan: Plan,
) {
    let ns = d.metadata.namespace.clone().unwrap_or_default();
    let name = &view.name;
    let sets: Api<ReplicaSet> = Api::namespaced(client.clone(), &ns);
    if let Some(new) = &plan.create {
        let rs = new_replica_set(d, view, template, new);
        match serde_json::from_value::<ReplicaSet>(rs) {
            Ok(rs) => match sets.create(&PostParams::default(), &rs).await {
                Ok(_) => {}
                // Created in an earlier pass the watch has not brought yet.
                Err(kube::Error::Api(e)) if e.code == 409 => {}
                Err(e) => {
                    tracing::warn!(deployment = %name, error = %e, "creating replicaset failed")
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
            Ok(_) => {}
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
}
