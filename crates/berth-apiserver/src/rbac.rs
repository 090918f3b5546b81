//! The RBAC API (`rbac.authorization.k8s.io/v1` roles and bindings) as stored objects with
//! upstream's defaulting and validation, and the reviews answered by the authorizer and the
//! authenticator: `kubectl auth can-i` (SelfSubjectAccessReview, `--list`:
//! SelfSubjectRulesReview), SubjectAccessReview, `kubectl auth whoami` (SelfSubjectReview) and
//! TokenReview. Enforcement itself is `crate::authz`.

pub mod escalation;

use crate::authorizer::{Attributes, Authorizer, Decision};
use crate::authz::rule::Rule;
use crate::codec::{self, meta_str};
use crate::context::Ctx;
use crate::error::{ApiError, ApiResult, Cause};
use crate::request::ApiRequest;
use crate::response::answer;
use crate::user::{UserInfo, SYSTEM_MASTERS};
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

/// The `spec.resourceAttributes` / `nonResourceAttributes` of an access review: 422 unless
/// exactly one is given.
fn access_attributes<'a>(
    review: &Value,
    spec: &'a Value,
    qualified: &str,
) -> ApiResult<(Option<&'a Value>, Option<&'a Value>)> {
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
            kind: qualified.to_string(),
            name: meta_str(review, "name").to_string(),
            causes: vec![Cause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: {rendered}: {detail}"),
                field: field.into(),
            }],
        });
    }
    Ok((resource, non_resource))
}

/// Asks the authorizer what an access review's attributes ask, for `user`.
fn access_status(
    ctx: &Ctx,
    user: &UserInfo,
    resource: Option<&Value>,
    non_resource: Option<&Value>,
) -> Value {
    let field = |v: Option<&Value>, k: &str| -> String {
        v.and_then(|v| v.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let (verb, group, res, sub, ns, name, path) = match non_resource {
        Some(n) => (
            field(Some(n), "verb"),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            field(Some(n), "path"),
        ),
        None => (
            field(resource, "verb"),
            field(resource, "group"),
            field(resource, "resource"),
            field(resource, "subresource"),
            field(resource, "namespace"),
            field(resource, "name"),
            String::new(),
        ),
    };
    let attributes = Attributes {
        user,
        verb: &verb,
        api_group: &group,
        resource: &res,
        subresource: &sub,
        namespace: &ns,
        name: &name,
        path: &path,
        field_selector: "",
    };
    match ctx.rbac.authorize(&attributes) {
        Decision::Allow => json!({"allowed": true}),
        Decision::Deny(_) => json!({"allowed": false}),
    }
}

/// The rules `user` has in `namespace`, as a SelfSubjectRulesReview's status.
fn rules_status(ctx: &Ctx, user: &UserInfo, namespace: &str) -> Value {
    let mut rules: Vec<Rule> = Vec::new();
    if user.in_group(SYSTEM_MASTERS) {
        // The privileged group is allowed everything before RBAC is asked.
        rules.push(Rule {
            verbs: vec!["*".into()],
            api_groups: vec!["*".into()],
            resources: vec!["*".into()],
            ..Rule::default()
        });
        rules.push(Rule {
            verbs: vec!["*".into()],
            non_resource_urls: vec!["*".into()],
            ..Rule::default()
        });
    }
    for list in ctx.rbac.rules_for(user, namespace) {
        rules.extend(list.iter().cloned());
    }
    let (urls, resources): (Vec<Rule>, Vec<Rule>) = rules
        .into_iter()
        .partition(|r| !r.non_resource_urls.is_empty());
    json!({
        "resourceRules": resources.iter().map(Rule::to_json).collect::<Vec<_>>(),
        "nonResourceRules": urls.iter().map(Rule::to_json).collect::<Vec<_>>(),
        "incomplete": false,
    })
}

/// A user as a review's `userInfo` (`username`, `uid`, `groups`, `extra`).
fn user_info_json(user: &UserInfo) -> Value {
    let mut v = json!({"username": user.name, "groups": user.groups});
    if !user.uid.is_empty() {
        v["uid"] = json!(user.uid);
    }
    if !user.extra.is_empty() {
        v["extra"] = json!(user.extra);
    }
    v
}

/// The user a SubjectAccessReview's spec names (`user`, `uid`, `groups`, `extra`).
fn spec_user(spec: &Value) -> UserInfo {
    let s = |k: &str| {
        spec.get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    UserInfo {
        name: s("user"),
        uid: s("uid"),
        groups: strings(spec, "groups"),
        extra: spec
            .get("extra")
            .and_then(|e| serde_json::from_value(e.clone()).ok())
            .unwrap_or_default(),
    }
}

/// `POST` of a review (`selfsubjectaccessreviews`, `subjectaccessreviews`,
/// `selfsubjectrulesreviews`, `selfsubjectreviews`, `tokenreviews`): the review comes back with
/// its status filled in by the authorizer or authenticator; nothing is stored.
pub async fn review(ctx: &Ctx, req: &ApiRequest) -> ApiResult<Response> {
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
    review["status"] = match rt.kind {
        "SelfSubjectAccessReview" => {
            let (resource, non_resource) = access_attributes(&review, &spec, &qualified)?;
            access_status(ctx, &req.user, resource, non_resource)
        }
        "SubjectAccessReview" => {
            let (resource, non_resource) = access_attributes(&review, &spec, &qualified)?;
            access_status(ctx, &spec_user(&spec), resource, non_resource)
        }
        "SelfSubjectRulesReview" => {
            let namespace = spec.get("namespace").and_then(Value::as_str).unwrap_or("");
            rules_status(ctx, &req.user, namespace)
        }
        "SelfSubjectReview" => json!({"userInfo": user_info_json(&req.user)}),
        "TokenReview" => {
            let token = spec.get("token").and_then(Value::as_str).unwrap_or("");
            let requested: Vec<String> = spec
                .get("audiences")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|a| a.as_str().map(str::to_string))
                .collect();
            let answer = ctx
                .authn
                .as_ref()
                .and_then(|a| a.review(token, &requested, &ctx.api_audiences));
            match answer {
                Some((u, audiences)) => json!({"authenticated": true,
                                               "user": user_info_json(&u),
                                               "audiences": audiences}),
                None => json!({"authenticated": false, "error": "invalid bearer token"}),
            }
        }
        _ => return Err(ApiError::NoRoute),
    };
    review["apiVersion"] = json!(rt.api_version());
    review["kind"] = json!(rt.kind);
    codec::meta_mut(&mut review)
        .entry("creationTimestamp")
        .or_insert(Value::Null);
    Ok(answer(req.answer, StatusCode::CREATED, &review))
}

/// Whether `rt` is a review that is answered, never stored.
pub fn is_review(rt: &ResourceType) -> bool {
    rt.group == "authorization.k8s.io" || rt.group == "authentication.k8s.io"
}

#[cfg(test)]
mod tests;
