//! The escalation and bind checks on writes of roles and bindings (upstream's RBAC REST
//! storage): the requester's rules must cover what the write grants, unless they may
//! `escalate` (roles) or `bind` (bindings). The arithmetic is [`crate::authz::escalation`].

use crate::authorizer::{Attributes, Authorizer};
use crate::authz::escalation::{missing, not_held};
use crate::authz::rule::Rule;
use crate::context::Ctx;
use crate::error::{ApiError, ApiResult};
use crate::user::{UserInfo, SYSTEM_MASTERS};
use berth_api::registry::ResourceType;
use serde_json::Value;

const RBAC: &str = super::GROUP;

/// A write of a Role, ClusterRole, RoleBinding or ClusterRoleBinding `obj` of type `rt` by
/// `user`: refused (403) when it would grant rules the user does not hold and the user has
/// neither `escalate` (roles) nor `bind` (bindings) on the role. `name` is the request's
/// object name (empty on create, as upstream authorizes `escalate`).
pub fn check(
    ctx: &Ctx,
    user: &UserInfo,
    rt: &ResourceType,
    name: &str,
    obj: &Value,
) -> ApiResult<()> {
    if rt.group != RBAC || user.in_group(SYSTEM_MASTERS) {
        return Ok(());
    }
    let namespace = if rt.namespaced {
        obj["metadata"]["namespace"].as_str().unwrap_or("")
    } else {
        ""
    };
    let allowed = |verb: &str, resource: &str, name: &str| {
        ctx.rbac
            .authorize(&Attributes {
                user,
                verb,
                api_group: RBAC,
                resource,
                subresource: "",
                namespace,
                name,
                path: "",
                field_selector: "",
            })
            .allowed()
    };
    let wanted = match rt.kind {
        "Role" | "ClusterRole" => {
            if allowed("escalate", rt.plural, name) {
                return Ok(());
            }
            Rule::all_of(obj)
        }
        "RoleBinding" | "ClusterRoleBinding" => {
            let role_ref = &obj["roleRef"];
            let role = role_ref["name"].as_str().unwrap_or("");
            let (plural, role_namespace) = match role_ref["kind"].as_str() {
                Some("Role") => ("roles", Some(namespace)),
                _ => ("clusterroles", None),
            };
            if allowed("bind", plural, role) {
                return Ok(());
            }
            role_rules(ctx, plural, role_namespace, role)?
        }
        _ => return Ok(()),
    };
    let held = ctx.rbac.rules_for(user, namespace);
    let missing = missing(held.iter().flat_map(|rules| rules.iter()), &wanted);
    if missing.is_empty() {
        return Ok(());
    }
    Err(ApiError::Denied {
        group: RBAC.into(),
        resource: rt.plural.into(),
        name: obj["metadata"]["name"].as_str().unwrap_or("").into(),
        reason: not_held(user, &missing),
    })
}

/// The rules of the role a binding refers to, read from the store (a role written a moment
/// ago may not be in the authorizer's index yet); a missing role is 404, as upstream.
fn role_rules(
    ctx: &Ctx,
    plural: &str,
    namespace: Option<&str>,
    name: &str,
) -> ApiResult<Vec<Rule>> {
    let rt = berth_api::registry::find(RBAC, "v1", plural).ok_or(ApiError::NoRoute)?;
    let not_found = || ApiError::NotFound {
        resource: format!("{plural}.{RBAC}"),
        name: name.into(),
    };
    let kv = ctx
        .store
        .get(&crate::path::key(rt, namespace, name))
        .map_err(|e| ApiError::Internal(e.to_string()))?
        .ok_or_else(not_found)?;
    let role: Value =
        serde_json::from_slice(&kv.value).map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(Rule::all_of(&role))
}
