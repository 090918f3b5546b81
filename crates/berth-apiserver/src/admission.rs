//! The admission chain: defaulting, the admission plugins berth runs, and validation.
//!
//! Order on create: namespace lifecycle → kind defaults → Priority → DefaultTolerationSeconds
//! → validation (422 with every field error).

use crate::codec::meta_str;
use crate::error::{ApiError, ApiResult, Cause};
use crate::path;
use crate::server::Ctx;
use berth_api::registry::ResourceType;
use cache::NamespaceState;
use serde_json::{json, Value};

mod cache;
mod pod;
mod priority;

pub use cache::AdmissionCache;

pub use priority::{SYSTEM_CLUSTER_CRITICAL, SYSTEM_NODE_CRITICAL};

/// Admission on create: may mutate `obj`, or refuse it.
pub async fn admit_create(ctx: &Ctx, rt: &'static ResourceType, obj: &mut Value) -> ApiResult<()> {
    if rt.namespaced {
        check_namespace(ctx, rt, obj)?;
    }
    match rt.kind {
        "Pod" => {
            pod::default_pod(obj);
            priority::admit_pod(ctx, obj)?;
            pod::default_tolerations(obj);
            pod::set_qos(obj);
        }
        "Namespace" => {
            if obj["spec"]["finalizers"].is_null() {
                obj["spec"]["finalizers"] = json!(["kubernetes"]);
            }
            obj["status"] = json!({"phase": "Active"});
        }
        "Node" => {
            if !obj["spec"].is_object() {
                obj["spec"] = json!({});
            }
        }
        "PriorityClass" => priority::admit_class_create(ctx, obj)?,
        "RoleBinding" | "ClusterRoleBinding" => crate::rbac::default_binding(obj),
        _ => {}
    }
    Ok(())
}

/// Admission on update.
pub async fn admit_update(
    ctx: &Ctx,
    rt: &'static ResourceType,
    old: &Value,
    new: &mut Value,
) -> ApiResult<()> {
    match rt.kind {
        "Pod" => pod::admit_update(old, new),
        "PriorityClass" => priority::admit_class_update(ctx, old, new),
        "RoleBinding" | "ClusterRoleBinding" => {
            crate::rbac::default_binding(new);
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Objects may be created only in a namespace that exists and is not terminating.
fn check_namespace(ctx: &Ctx, rt: &ResourceType, obj: &Value) -> ApiResult<()> {
    let ns = meta_str(obj, "namespace");
    match ctx.caches.admission.namespace(&ctx.store, ns)? {
        NamespaceState::Missing => Err(ApiError::NotFound {
            resource: "namespaces".into(),
            name: ns.to_string(),
        }),
        NamespaceState::Terminating if rt.kind != "Event" => Err(ApiError::Forbidden(format!(
            "{} \"{}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
            path::qualified_resource(rt),
            meta_str(obj, "name")
        ))),
        NamespaceState::Terminating | NamespaceState::Active => Ok(()),
    }
}

/// Validates an object (and, on update, its change), refusing with 422 and every field error.
pub fn validate(rt: &ResourceType, obj: &Value, old: Option<&Value>) -> ApiResult<()> {
    use berth_core::validation as v;
    let mut errors = match rt.kind {
        "Pod" => v::validate_pod(obj),
        "Node" => v::validate_node(obj),
        "Namespace" => v::validate_namespace(obj),
        _ if crate::rbac::is_rbac(rt) => crate::rbac::validate(rt, obj, old),
        _ => v::validate_generic(obj, rt.namespaced),
    };
    if let Some(old) = old {
        errors.extend(immutable_changes(rt, old, obj));
    }
    let mut causes: Vec<Cause> = errors
        .iter()
        .map(|e| {
            let full = e.message();
            let prefix = format!("{}: ", e.field);
            Cause {
                reason: e.reason().to_string(),
                message: full.strip_prefix(&prefix).unwrap_or(&full).to_string(),
                field: e.field.clone(),
            }
        })
        .collect();
    causes.extend(priority::validate(rt, obj));
    if causes.is_empty() {
        return Ok(());
    }
    Err(ApiError::Invalid {
        kind: rt.kind.to_string(),
        name: meta_str(obj, "name").to_string(),
        causes,
    })
}

/// Field errors for changes an update may not make.
fn immutable_changes(
    rt: &ResourceType,
    old: &Value,
    new: &Value,
) -> Vec<berth_core::validation::FieldError> {
    use berth_core::validation::{FieldError, FieldErrorKind};
    let mut out = Vec::new();
    if rt.kind == "Pod" {
        let old_node = old["spec"]["nodeName"].as_str().unwrap_or("");
        let new_node = new["spec"]["nodeName"].as_str().unwrap_or("");
        if !old_node.is_empty() && old_node != new_node {
            out.push(FieldError {
                field: "spec.nodeName".into(),
                kind: FieldErrorKind::Forbidden,
                value: None,
                detail: "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)".into(),
            });
        }
    }
    out
}
