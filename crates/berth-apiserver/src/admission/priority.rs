//! The Priority admission plugin and PriorityClass rules (control-loops §4.1).

use crate::codec::meta_str;
use crate::error::{ApiError, ApiResult, Cause};
use crate::server::Ctx;
use berth_api::registry::ResourceType;
use serde_json::{json, Value};
use std::sync::Arc;

/// The highest value a user-defined class may have.
pub const HIGHEST_USER_DEFINABLE_PRIORITY: i64 = 1_000_000_000;
/// Built-in class names and values.
pub const SYSTEM_CLUSTER_CRITICAL: (&str, i64) = ("system-cluster-critical", 2_000_000_000);
pub const SYSTEM_NODE_CRITICAL: (&str, i64) = ("system-node-critical", 2_000_001_000);

fn classes(ctx: &Ctx) -> ApiResult<Arc<Vec<Value>>> {
    ctx.caches.admission.priority_classes(&ctx.store)
}

fn forbidden_pod(pod: &Value, why: String) -> ApiError {
    ApiError::Forbidden(format!(
        "pods \"{}\" is forbidden: {why}",
        meta_str(pod, "name")
    ))
}

/// Resolves `priorityClassName` into `spec.priority` on pod create.
pub fn admit_pod(ctx: &Ctx, pod: &mut Value) -> ApiResult<()> {
    if ctx
        .priority_disabled
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        return match pod["spec"]["priorityClassName"].as_str() {
            Some(name) if !name.is_empty() => Err(forbidden_pod(
                pod,
                "spec.priorityClassName: pod priority is disabled on this cluster".into(),
            )),
            _ => Ok(()),
        };
    }
    let mut class_name = pod["spec"]["priorityClassName"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let critical_annotation = pod["metadata"]["annotations"]
        .get("scheduler.alpha.kubernetes.io/critical-pod")
        .is_some();
    if class_name.is_empty() && critical_annotation && meta_str(pod, "namespace") == "kube-system" {
        class_name = SYSTEM_CLUSTER_CRITICAL.0.to_string();
    }
    let all = classes(ctx)?;
    let (value, policy) = if class_name.is_empty() {
        let default = all
            .iter()
            .filter(|c| c["globalDefault"] == true)
            .min_by_key(|c| c["value"].as_i64().unwrap_or(0));
        match default {
            Some(c) => {
                class_name = meta_str(c, "name").to_string();
                (
                    c["value"].as_i64().unwrap_or(0),
                    c["preemptionPolicy"].as_str().map(str::to_string),
                )
            }
            None => (0, None),
        }
    } else {
        let c = all
            .iter()
            .find(|c| meta_str(c, "name") == class_name)
            .ok_or_else(|| {
                forbidden_pod(
                    pod,
                    format!("no PriorityClass with name {class_name} was found"),
                )
            })?;
        (
            c["value"].as_i64().unwrap_or(0),
            c["preemptionPolicy"].as_str().map(str::to_string),
        )
    };
    if let Some(given) = pod["spec"]["priority"].as_i64() {
        if given != value {
            return Err(forbidden_pod(pod, format!(
                "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name"
            )));
        }
    }
    pod["spec"]["priority"] = json!(value);
    if !class_name.is_empty() {
        pod["spec"]["priorityClassName"] = json!(class_name);
        if let Some(p) = policy {
            pod["spec"]["preemptionPolicy"] = json!(p);
        }
    }
    Ok(())
}

fn class_forbidden(why: String) -> ApiError {
    ApiError::Forbidden(why)
}

/// Only one class may be the global default.
fn check_single_default(ctx: &Ctx, class: &Value) -> ApiResult<()> {
    if class["globalDefault"] != true {
        return Ok(());
    }
    let name = meta_str(class, "name");
    if let Some(other) = classes(ctx)?
        .iter()
        .find(|c| c["globalDefault"] == true && meta_str(c, "name") != name)
    {
        return Err(class_forbidden(format!(
            "PriorityClass {} is already marked as default. Only one default can exist",
            meta_str(other, "name")
        )));
    }
    Ok(())
}

pub fn admit_class_create(ctx: &Ctx, class: &mut Value) -> ApiResult<()> {
    check_single_default(ctx, class)
}

pub fn admit_class_update(ctx: &Ctx, old: &Value, new: &mut Value) -> ApiResult<()> {
    if old["value"] != new["value"] {
        return Err(ApiError::Invalid {
            kind: "PriorityClass".into(),
            name: meta_str(old, "name").into(),
            causes: vec![Cause {
                reason: "FieldValueForbidden".into(),
                message: "Forbidden: may not be changed in an update.".into(),
                field: "value".into(),
            }],
        });
    }
    if meta_str(old, "name").starts_with("system-") && old["globalDefault"] != new["globalDefault"]
    {
        return Err(class_forbidden(format!(
            "priorityclasses \"{}\" is forbidden: system priority classes may not be changed",
            meta_str(old, "name")
        )));
    }
    check_single_default(ctx, new)
}

/// PriorityClass validation: reserved `system-` names and the user value ceiling.
pub fn validate(rt: &ResourceType, class: &Value) -> Vec<Cause> {
    if rt.kind != "PriorityClass" {
        return Vec::new();
    }
    let name = meta_str(class, "name");
    let value = class["value"].as_i64();
    let mut causes = Vec::new();
    if name.starts_with("system-") {
        let known = [SYSTEM_CLUSTER_CRITICAL, SYSTEM_NODE_CRITICAL];
        let detail = match known.iter().find(|(n, _)| *n == name) {
            None => Some(format!("{name} is not a known system priority class")),
            Some((_, v)) if value != Some(*v) => {
                Some(format!("value of {name} PriorityClass must be {v}"))
            }
            Some(_) if class["globalDefault"] == true => Some(format!(
                "globalDefault of {name} PriorityClass must be false"
            )),
            Some(_) => None,
        };
        if let Some(d) = detail {
            causes.push(Cause {
                reason: "FieldValueForbidden".into(),
                message: format!("Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: {d}"),
                field: "metadata.name".into(),
            });
        }
    } else if value.is_some_and(|v| v > HIGHEST_USER_DEFINABLE_PRIORITY) {
        causes.push(Cause {
            reason: "FieldValueForbidden".into(),
            message: format!("Forbidden: maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"),
            field: "value".into(),
        });
    }
    if value.is_none() {
        causes.push(Cause {
            reason: "FieldValueRequired".into(),
            message: "Required value".into(),
            field: "value".into(),
        });
    }
    causes
}
