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

/// Why a ClusterRole write with an aggregation rule is refused (upstream's words).
pub const AGGREGATION_RULE_NEEDS_FULL_AUTHORITY: &str =
    "must have cluster-admin privileges to use the aggregationRule";

/// A write of a Role, ClusterRole, RoleBinding or ClusterRoleBinding `obj` of type `rt` by
/// `user`: refused (403) when it would grant rules the user does not hold and the user has
/// neither `escalate` (roles) nor `bind` (bindings) on the role. `name` is the request's
/// object name (empty on create, as upstream authorizes `escalate`); `old` the stored object
/// an update replaces.
///
/// A ClusterRole whose new or old object has an aggregation rule needs full authority (`*` on
/// `*.*` and on every URL): the rule gathers whatever roles its selectors match, now or later,
/// so it grants anything (upstream's clusterrole policy-based storage).
pub fn check(
    ctx: &Ctx,
    user: &UserInfo,
    rt: &ResourceType,
    name: &str,
    obj: &Value,
    old: Option<&Value>,
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
    let held_rules = held.iter().flat_map(|rules| rules.iter());
    let denied = |reason: String| ApiError::Denied {
        group: RBAC.into(),
        resource: rt.plural.into(),
        name: obj["metadata"]["name"].as_str().unwrap_or("").into(),
        reason,
    };
    let missing_rules = missing(held_rules.clone(), &wanted);
    if !missing_rules.is_empty() {
        return Err(denied(not_held(user, &missing_rules)));
    }
    let aggregates = rt.kind == "ClusterRole"
        && (has_aggregation_rule(obj) || old.is_some_and(has_aggregation_rule));
    if aggregates && !missing(held_rules, &full_authority()).is_empty() {
        return Err(denied(AGGREGATION_RULE_NEEDS_FULL_AUTHORITY.into()));
    }
    Ok(())
}

/// Whether a ClusterRole aggregates: an `aggregationRule` with at least one selector (an empty
/// one gathers nothing, as upstream's `hasAggregationRule`).
fn has_aggregation_rule(role: &Value) -> bool {
    role["aggregationRule"]["clusterRoleSelectors"]
        .as_array()
        .is_some_and(|selectors| !selectors.is_empty())
}

/// `*` on every group, resource and URL (upstream's `fullAuthority`).
fn full_authority() -> [Rule; 2] {
    let star = || vec!["*".to_string()];
    [
        Rule {
            verbs: star(),
            api_groups: star(),
            resources: star(),
            ..Rule::default()
        },
        Rule {
            verbs: star(),
            non_resource_urls: star(),
            ..Rule::default()
        },
    ]
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
