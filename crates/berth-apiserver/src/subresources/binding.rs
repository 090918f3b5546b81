//! `pods/binding` and `bindings`: assigning a pod to a node, once.

use super::{parse_body, pod_request, success};
use crate::codec::{encode, meta_str};
use crate::context::{read, Ctx};
use crate::error::{from_store, ApiError, ApiResult, Cause};
use crate::request::ApiRequest;
use crate::response::answer;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

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
        // Reject binding to a scheduling un-ready pod (upstream's words).
        if pod["spec"]["schedulingGates"]
            .as_array()
            .is_some_and(|g| !g.is_empty())
        {
            return Err(conflict(format!(
                "pod {name} has non-empty .spec.schedulingGates"
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
            return Ok(answer(req.answer, StatusCode::CREATED, &success(201)));
        }
        match ctx
            .store
            .update(&pod_req.key(), encode(&pod), Some(rv))
            .await
        {
            Ok(_) => return Ok(answer(req.answer, StatusCode::CREATED, &success(201))),
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
    // Which generation of the pod the condition was written for (1.35).
    if let Some(g) = pod["metadata"]["generation"].as_i64() {
        cond["observedGeneration"] = json!(g);
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
