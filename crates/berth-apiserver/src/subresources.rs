//! `pods/binding` and `pods/eviction`.

use crate::codec::{self, decode, encode, meta_str};
use crate::error::{from_store, ApiError, ApiResult, Cause};
use crate::objects::{read, ApiRequest, DeleteOptions};
use crate::path::{self, Target};
use crate::server::{json_response, Ctx};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

fn success(code: u16) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code})
}

/// Decodes the body of a `binding`/`eviction` request as a `kind` of `group`/`version`: JSON,
/// YAML, or Kubernetes protobuf (what Go clients such as kube-scheduler and `kubectl drain` send).
fn parse_body(req: &ApiRequest, group: &str, version: &str, kind: &str) -> ApiResult<Value> {
    let validation = req.query.field_validation()?;
    let (v, _warnings) =
        codec::decode_body(&req.body, &req.headers, validation, group, kind, version)?;
    Ok(v)
}

fn pod_request(req: &ApiRequest, name: &str) -> ApiResult<ApiRequest> {
    let rt = berth_api::registry::find("", "v1", "pods").ok_or(ApiError::NoRoute)?;
    Ok(ApiRequest {
        target: Target {
            rt,
            namespace: req.target.namespace.clone(),
            name: Some(name.to_string()),
            subresource: None,
        },
        query: req.query.clone(),
        headers: req.headers.clone(),
        body: bytes::Bytes::new(),
        answer: req.answer,
    })
}

/// Binds a pod to a node, once: `spec.nodeName` is set and `PodScheduled` becomes True.
pub async fn bind(ctx: &Ctx, req: &ApiRequest) -> ApiResult<Response> {
    let binding = parse_body(req, "", "v1", "Binding")?;
    let name = match req.target.name.as_deref() {
        Some(n) => n.to_string(),
        None => meta_str(&binding, "name").to_string(),
    };
    let node = binding["target"]["name"].as_str().unwrap_or("").to_string();
    if node.is_empty() {
        return Err(ApiError::Invalid {
            kind: "Binding".into(),
            name: name.clone(),
            causes: vec![Cause {
                reason: "FieldValueRequired".into(),
                message: "Required value".into(),
                field: "target.name".into(),
            }],
        });
    }
    let pod_req = pod_request(req, &name)?;
    let conflict = |message: String| ApiError::Conflict {
        resource: "pods/binding".into(),
        name: name.clone(),
        message: format!("Operation cannot be fulfilled on pods/binding \"{name}\": {message}"),
    };
    for _ in 0..16 {
        let (mut pod, rv) = read(ctx, &pod_req)?;
        if let Some(uid) = binding["metadata"]["uid"]
            .as_str()
            .filter(|u| !u.is_empty())
        {
            if uid != meta_str(&pod, "uid") {
                return Err(conflict(format!("pod {name} has a different UID")));
            }
        }
        let current = pod["spec"]["nodeName"].as_str().unwrap_or("");
        if !current.is_empty() {
            return Err(conflict(format!(
                "pod {name} is already assigned to node \"{current}\""
            )));
        }
        if !meta_str(&pod, "deletionTimestamp").is_empty() {
            return Err(conflict(format!(
                "pod {name} is being deleted, cannot be assigned to a host"
            )));
        }
        pod["spec"]["nodeName"] = json!(node);
        set_condition(
            &mut pod,
            "PodScheduled",
            "True",
            None,
            None,
            &ctx.clock.timestamp(),
        );
        if req.query.dry_run()? {
            return Ok(json_response(StatusCode::CREATED, &success(201)));
        }
        match ctx
            .store
            .update(&pod_req.key(), encode(&pod), Some(rv))
            .await
        {
            Ok(_) => return Ok(json_response(StatusCode::CREATED, &success(201))),
            Err(berth_store::Error::Conflict { .. }) => continue,
            Err(e) => return Err(from_store(e, "pods", &name)),
        }
    }
    Err(conflict("too many concurrent updates".into()))
}

/// Sets (or replaces) a pod condition of `type_`.
pub fn set_condition(
    pod: &mut Value,
    type_: &str,
    status: &str,
    reason: Option<&str>,
    message: Option<&str>,
    now: &str,
) {
    if !pod["status"].is_object() {
        pod["status"] = json!({});
    }
    let mut cond =
        json!({"type": type_, "status": status, "lastProbeTime": null, "lastTransitionTime": now});
    if let Some(r) = reason {
        cond["reason"] = json!(r);
    }
    if let Some(m) = message {
        cond["message"] = json!(m);
    }
    let conds = pod["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut out: Vec<Value> = Vec::new();
    let mut replaced = false;
    for c in conds {
        if c["type"] == type_ {
            if c["status"] == status {
                cond["lastTransitionTime"] = c["lastTransitionTime"].clone();
            }
            out.push(cond.clone());
            replaced = true;
        } else {
            out.push(c);
        }
    }
    if !replaced {
        out.push(cond);
    }
    pod["status"]["conditions"] = Value::Array(out);
}

/// Evicts a pod unless a disruption budget forbids it (429).
pub async fn evict(ctx: &Ctx, req: &ApiRequest) -> ApiResult<Response> {
    let eviction = parse_body(req, "policy", "v1", "Eviction")?;
    let name = req.name().to_string();
    let pod_req = pod_request(req, &name)?;
    let (pod, rv) = read(ctx, &pod_req)?;
    let namespace = req.target.namespace.clone().unwrap_or_default();
    let options = DeleteOptions::from_value(&eviction["deleteOptions"], &req.query)?;
    let running = pod["status"]["phase"] == "Running";
    if running && meta_str(&pod, "deletionTimestamp").is_empty() {
        check_budgets(ctx, &namespace, &pod, options.dry_run).await?;
    }
    if options.dry_run {
        return Ok(json_response(StatusCode::CREATED, &success(201)));
    }
    crate::deletion::delete_object(ctx, &pod_req, pod, rv, &options).await?;
    Ok(json_response(StatusCode::CREATED, &success(201)))
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

#[cfg(test)]
mod tests;
