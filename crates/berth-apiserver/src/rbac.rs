//! The RBAC API (`rbac.authorization.k8s.io/v1` roles and bindings) as stored objects with
//! upstream's defaulting and validation, and the `authorization.k8s.io/v1` self reviews that
//! `kubectl auth can-i` asks.
//!
//! berth does not enforce RBAC: the network listener admits one admin bearer token, and that
//! identity may do everything. So Roles and bindings are kept (for manifests such as
//! `deploy/rbac.yaml` and for tools that read them), and every self review answers "allowed".

use crate::codec::{self, meta_str};
use crate::context::Ctx;
use crate::error::{ApiError, ApiResult, Cause};
use crate::request::ApiRequest;
use crate::response::json_response;
use axum::http::StatusCode;
use axum::response::Response;
use berth_api::registry::ResourceType;
use berth_core::validation::{self as v, names, render_list, FieldError};
use serde_json::{json, Value};

/// The API group of roles and bindings; also the `apiGroup` of `User` and `Group` subjects.
pub const GROUP: &str = "rbac.authorization.k8s.io";

/// Upstream `v1` defaulting of a binding: `roleRef.apiGroup` and the subjects' `apiGroup`.
pub fn default_binding(obj: &mut Value) {
    // `roleRef` is a value in Go: a binding without one has an empty one, defaulted too.
    if let Some(o) = obj.as_object_mut() {
        if !o.get("roleRef").is_some_and(Value::is_object) {
            o.insert("roleRef".into(), json!({}));
        }
    }
    if let Some(role_ref) = obj.get_mut("roleRef").and_then(Value::as_object_mut) {
        if role_ref
            .get("apiGroup")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
        {
            role_ref.insert("apiGroup".into(), json!(GROUP));
        }
    }
    if let Some(subjects) = obj.get_mut("subjects").and_then(Value::as_array_mut) {
        for s in subjects.iter_mut().filter_map(Value::as_object_mut) {
            let kind = s.get("kind").and_then(Value::as_str).unwrap_or("");
            let group = s.get("apiGroup").and_then(Value::as_str).unwrap_or("");
            if group.is_empty() && matches!(kind, "User" | "Group") {
                s.insert("apiGroup".into(), json!(GROUP));
            }
        }
    }
}

/// Upstream `ValidateRole`/`ValidateClusterRole`/`ValidateRoleBinding`/
/// `ValidateClusterRoleBinding` (and the `Update` forms when `old` is given).
pub fn validate(rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = validate_meta(obj, rt.namespaced);
    match rt.kind {
        "Role" | "ClusterRole" => {
            for (i, rule) in list(obj, "rules").iter().enumerate() {
                errs.extend(validate_rule(rule, rt.namespaced, &format!("rules[{i}]")));
            }
        }
        "RoleBinding" | "ClusterRoleBinding" => {
            errs.extend(validate_binding(obj, rt.namespaced));
            if let Some(old) = old {
                if role_ref(old) != role_ref(obj) {
                    let (group, kind, name) = role_ref(obj);
                    errs.push(FieldError::invalid_rendered(
                        "roleRef",
                        &format!(
                            "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}",
                            names::go_quote(group),
                            names::go_quote(kind),
                            names::go_quote(name)
                        ),
                        "cannot change roleRef",
                    ));
                }
            }
        }
        _ => {}
    }
    errs
}

/// Object metadata with RBAC's minimal name rule (a valid path segment, so `system:foo` is
/// fine) instead of the DNS subdomain most kinds use.
fn validate_meta(obj: &Value, namespaced: bool) -> Vec<FieldError> {
    let meta = obj.get("metadata").unwrap_or(&Value::Null);
    let mut errs: Vec<FieldError> = v::validate_object_meta(meta, namespaced, "metadata")
        .into_iter()
        .filter(|e| {
            !(matches!(e.field.as_str(), "metadata.name" | "metadata.generateName")
                && e.kind == v::FieldErrorKind::Invalid)
        })
        .collect();
    for field in ["generateName", "name"] {
        let value = meta.get(field).and_then(Value::as_str).unwrap_or("");
        for m in path_segment_errors(value) {
            errs.push(FieldError::invalid(format!("metadata.{field}"), value, m));
        }
    }
    errs
}

/// Upstream `IsValidPathSegmentName`.
fn path_segment_errors(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    if name == "." || name == ".." {
        out.push(format!("may not be '{name}'"));
    }
    for bad in ["/", "%"] {
        if name.contains(bad) {
            out.push(format!("may not contain '{bad}'"));
        }
    }
    out
}

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    list(v, key)
        .iter()
        .map(|s| s.as_str().unwrap_or("").to_string())
        .collect()
}

fn validate_rule(rule: &Value, namespaced: bool, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if list(rule, "verbs").is_empty() {
        errs.push(FieldError::required(
            format!("{path}.verbs"),
            "verbs must contain at least one value",
        ));
    }
    let urls = strings(rule, "nonResourceURLs");
    if !urls.is_empty() {
        let rendered = render_list(&urls);
        if namespaced {
            errs.push(FieldError::invalid_rendered(
                format!("{path}.nonResourceURLs"),
                &rendered,
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if ["apiGroups", "resources", "resourceNames"]
            .iter()
            .any(|k| !list(rule, k).is_empty())
        {
            errs.push(FieldError::invalid_rendered(
                format!("{path}.nonResourceURLs"),
                &rendered,
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return errs;
    }
    if list(rule, "apiGroups").is_empty() {
        errs.push(FieldError::required(
            format!("{path}.apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if list(rule, "resources").is_empty() {
        errs.push(FieldError::required(
            format!("{path}.resources"),
            "resource rules must supply at least one resource",
        ));
    }
    errs
}

fn role_ref(obj: &Value) -> (&str, &str, &str) {
    let r = &obj["roleRef"];
    let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
    (s("apiGroup"), s("kind"), s("name"))
}

fn validate_binding(obj: &Value, namespaced: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let (group, kind, name) = role_ref(obj);
    if group != GROUP {
        errs.push(FieldError::not_supported(
            "roleRef.apiGroup",
            group,
            &[GROUP],
        ));
    }
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&kind) {
        errs.push(FieldError::not_supported("roleRef.kind", kind, kinds));
    }
    if name.is_empty() {
        errs.push(FieldError::required("roleRef.name", ""));
    } else {
        for m in path_segment_errors(name) {
            errs.push(FieldError::invalid("roleRef.name", name, m));
        }
    }
    for (i, subject) in list(obj, "subjects").iter().enumerate() {
        errs.extend(validate_subject(
            subject,
            namespaced,
            &format!("subjects[{i}]"),
        ));
    }
    errs
}

fn validate_subject(subject: &Value, namespaced: bool, path: &str) -> Vec<FieldError> {
    let s = |k: &str| subject.get(k).and_then(Value::as_str).unwrap_or("");
    let (kind, name, group) = (s("kind"), s("name"), s("apiGroup"));
    let mut errs = Vec::new();
    if name.is_empty() {
        errs.push(FieldError::required(format!("{path}.name"), ""));
    }
    match kind {
        "ServiceAccount" => {
            if !name.is_empty() {
                for m in names::dns1123_subdomain(name) {
                    errs.push(FieldError::invalid(format!("{path}.name"), name, m));
                }
            }
            if !group.is_empty() {
                errs.push(FieldError::not_supported(
                    format!("{path}.apiGroup"),
                    group,
                    &[""],
                ));
            }
            if !namespaced && s("namespace").is_empty() {
                errs.push(FieldError::required(format!("{path}.namespace"), ""));
            }
        }
        "User" | "Group" => {
            if group != GROUP {
                errs.push(FieldError::not_supported(
                    format!("{path}.apiGroup"),
                    group,
                    &[GROUP],
                ));
            }
        }
        other => errs.push(FieldError::not_supported(
            format!("{path}.kind"),
            other,
            &["ServiceAccount", "User", "Group"],
        )),
    }
    errs
}

/// `POST selfsubjectaccessreviews` and `selfsubjectrulesreviews`: the review comes back with its
/// status filled in; nothing is stored. The one identity berth knows may do everything.
pub async fn review(_ctx: &Ctx, req: &ApiRequest) -> ApiResult<Response> {
    let rt = req.target.rt;
    let (mut review, _) = codec::decode_body(
        &req.body,
        &req.headers,
        req.query.field_validation()?,
        rt.group,
        rt.kind,
        rt.version,
    )?;
    let qualified = format!("{}.{}", rt.kind, rt.group);
    let spec = review.get("spec").cloned().unwrap_or(Value::Null);
    match rt.kind {
        "SelfSubjectAccessReview" => {
            let resource = spec.get("resourceAttributes").filter(|v| !v.is_null());
            let non_resource = spec.get("nonResourceAttributes").filter(|v| !v.is_null());
            let problem = match (resource, non_resource) {
                (Some(_), Some(n)) => Some((
                    "spec.nonResourceAttributes",
                    n,
                    "cannot be specified in combination with resourceAttributes",
                )),
                (None, None) => Some((
                    "spec.resourceAttributes",
                    &Value::Null,
                    "exactly one of nonResourceAttributes or resourceAttributes must be specified",
                )),
                _ => None,
            };
            if let Some((field, value, detail)) = problem {
                let rendered = if value.is_null() {
                    "null".to_string()
                } else {
                    value.to_string()
                };
                return Err(ApiError::Invalid {
                    kind: qualified,
                    name: meta_str(&review, "name").to_string(),
                    causes: vec![Cause {
                        reason: "FieldValueInvalid".into(),
                        message: format!("Invalid value: {rendered}: {detail}"),
                        field: field.into(),
                    }],
                });
            }
            review["status"] = json!({
                "allowed": true,
                "reason": "berth admits one admin identity, which may do everything (RBAC is stored, not enforced)",
            });
        }
        _ => {
            review["status"] = json!({
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                "incomplete": false,
            });
        }
    }
    review["apiVersion"] = json!(rt.api_version());
    review["kind"] = json!(rt.kind);
    codec::meta_mut(&mut review)
        .entry("creationTimestamp")
        .or_insert(Value::Null);
    Ok(json_response(StatusCode::CREATED, &review))
}

/// Whether `rt` is a review that is answered, never stored.
pub fn is_review(rt: &ResourceType) -> bool {
    rt.group == "authorization.k8s.io"
}

#[cfg(test)]
mod tests;
