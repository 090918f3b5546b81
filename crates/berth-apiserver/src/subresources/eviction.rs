//! `pods/eviction`: deleting a pod unless a disruption budget forbids it.

use super::{parse_body, pod_request, success};
use crate::codec::{decode, encode, meta_str};
use crate::context::{read, Ctx};
use crate::deletion::{delete_object, DeleteOptions};
use crate::error::{from_store, ApiError, ApiResult, Cause};
use crate::path::{self, Target};
use crate::request::ApiRequest;
use crate::response::answer;
use crate::strategy;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

/// Evicts a pod unless a disruption budget forbids it (429).
pub async fn evict(ctx: &Ctx, req: &ApiRequest) -> ApiResult<Response> {
    let eviction = parse_body(req, "policy", "v1", "Eviction")?;
    let name = req.name().to_string();
    let pod_req = pod_request(req, &name)?;
    let (pod, rv) = read(ctx, &pod_req)?;
    ctx.admission
        .admit_eviction(&req.user, pod_req.target.rt, &pod)?;
    let namespace = req.target.namespace.clone().unwrap_or_default();
    let options = DeleteOptions::from_value(&eviction["deleteOptions"], &req.query)?;
    let running = pod["status"]["phase"] == "Running";
    if running && meta_str(&pod, "deletionTimestamp").is_empty() {
        check_budgets(ctx, &namespace, &pod, options.dry_run).await?;
    }
    if options.dry_run {
        return Ok(answer(req.answer, StatusCode::CREATED, &success(201)));
    }
    let mut pod = pod;
    if !matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    ) && meta_str(&pod, "deletionTimestamp").is_empty()
    {
        mark_disruption_target(&mut pod, &ctx.clock.timestamp());
    }
    let strategy = strategy::for_type(pod_req.target.rt);
    delete_object(ctx, &pod_req, strategy, pod, rv, &options).await?;
    Ok(answer(req.answer, StatusCode::CREATED, &success(201)))
}

/// Adds upstream's `DisruptionTarget` condition (the eviction API's reason and message), which
/// the pod keeps while it terminates; a Job's podFailurePolicy reads it.
fn mark_disruption_target(pod: &mut Value, now: &str) {
    let condition = json!({"type": "DisruptionTarget", "status": "True", "lastProbeTime": null,
                           "lastTransitionTime": now, "reason": "EvictionByEvictionAPI",
                           "message": "Eviction API: evicting"});
    if !pod["status"].is_object() {
        pod["status"] = json!({});
    }
    let conditions = &mut pod["status"]["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    if let Some(list) = conditions.as_array_mut() {
        list.retain(|c| c["type"] != "DisruptionTarget");
        list.push(condition);
    }
}

/// Finds the budgets covering `pod`; takes one disruption from the one that does, or refuses.
async fn check_budgets(ctx: &Ctx, namespace: &str, pod: &Value, dry_run: bool) -> ApiResult<()> {
    let Some(rt) = berth_api::registry::find("policy", "v1", "poddisruptionbudgets") else {
        return Ok(());
    };
    let target = Target {
        rt,
        namespace: Some(namespace.to_string()),
        name: None,
        subresource: None,
    };
    let r = ctx
        .store
        .range(&path::collection_prefix(rt, Some(namespace)), None, 0, None)
        .map_err(|e| from_store(e, "poddisruptionbudgets.policy", ""))?;
    let empty = serde_json::Map::new();
    let labels = pod["metadata"]["labels"].as_object().unwrap_or(&empty);
    let mut matching = Vec::new();
    for kv in &r.kvs {
        let pdb = decode(kv, &target)?;
        let Ok(sel) = berth_core::labels::Selector::from_label_selector(&pdb["spec"]["selector"])
        else {
            continue;
        };
        if pdb["spec"]["selector"].is_object() && sel.matches(labels) {
            matching.push((pdb, kv.mod_revision, kv.key.clone()));
        }
    }
    if matching.len() > 1 {
        return Err(ApiError::Internal("This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.".into()));
    }
    let Some((mut pdb, rv, key)) = matching.pop() else {
        return Ok(());
    };
    let allowed = pdb["status"]["disruptionsAllowed"].as_i64().unwrap_or(0);
    if allowed <= 0 {
        let pdb_name = meta_str(&pdb, "name");
        let desired = pdb["status"]["desiredHealthy"].as_i64().unwrap_or(0);
        let current = pdb["status"]["currentHealthy"].as_i64().unwrap_or(0);
        return Err(ApiError::TooManyRequests {
            message: "Cannot evict pod as it would violate the pod's disruption budget.".into(),
            causes: vec![Cause {
                reason: "DisruptionBudget".into(),
                message: format!("The disruption budget {pdb_name} needs {desired} healthy pods and has {current} currently"),
                field: String::new(),
            }],
        });
    }
    if dry_run {
        return Ok(());
    }
    pdb["status"]["disruptionsAllowed"] = json!(allowed - 1);
    let pod_name = meta_str(pod, "name").to_string();
    if !pdb["status"]["disruptedPods"].is_object() {
        pdb["status"]["disruptedPods"] = json!({});
    }
    pdb["status"]["disruptedPods"][pod_name] = json!(ctx.clock.timestamp());
    ctx.store
        .update(&key, encode(&pdb), Some(rv))
        .await
        .map_err(|e| match e {
            berth_store::Error::Conflict { .. } => ApiError::TooManyRequests {
                message: "Cannot evict pod as the disruption budget changed; try again.".into(),
                causes: vec![],
            },
            e => from_store(e, "poddisruptionbudgets.policy", meta_str(&pdb, "name")),
        })?;
    Ok(())
}
