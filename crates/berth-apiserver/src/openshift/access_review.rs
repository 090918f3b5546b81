//! `authorization.openshift.io/v1` ResourceAccessReview and LocalResourceAccessReview: which
//! users and groups may do an action (`oc adm policy who-can VERB RESOURCE`), answered from the
//! RBAC index as a `ResourceAccessReviewResponse`. The action's fields are inline in the review
//! (`verb`, `resource`, `resourceAPIGroup`, `resourceName`, `namespace`), as OpenShift's API has
//! them; a local review's namespace is the request's.

use crate::authorizer::Attributes;
use crate::codec;
use crate::context::Ctx;
use crate::error::{ApiError, ApiResult, Cause};
use crate::request::ApiRequest;
use crate::response::respond;
use crate::user::UserInfo;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

pub fn review(ctx: &Ctx, req: &ApiRequest) -> ApiResult<Response> {
    let rt = req.target.rt;
    if req.target.name.is_some() {
        return Err(ApiError::NoRoute);
    }
    let (review, _) = codec::decode_body(
        &req.body,
        &req.headers,
        req.query.field_validation()?,
        rt.group,
        rt.kind,
        rt.version,
    )?;
    let field = |k: &str| review.get(k).and_then(Value::as_str).unwrap_or("");
    let namespace = match &req.target.namespace {
        Some(ns) => ns.clone(),
        None => field("namespace").to_string(),
    };
    let verb = field("verb");
    if verb.is_empty() {
        return Err(ApiError::Invalid {
            kind: rt.kind.to_string(),
            name: String::new(),
            causes: vec![Cause {
                reason: "FieldValueRequired".into(),
                message: "Required value".into(),
                field: "verb".into(),
            }],
        });
    }
    let non_resource = review.get("isNonResourceURL") == Some(&Value::Bool(true));
    let (resource, subresource) = field("resource")
        .split_once('/')
        .unwrap_or((field("resource"), ""));
    let nobody = UserInfo::default();
    let action = Attributes {
        user: &nobody,
        verb,
        api_group: field("resourceAPIGroup"),
        resource,
        subresource,
        namespace: &namespace,
        name: field("resourceName"),
        path: if non_resource { field("path") } else { "" },
        field_selector: "",
    };
    let (users, groups) = ctx.rbac.who_can(&namespace, |rule| rule.allows(&action));
    let mut answer = json!({
        "kind": "ResourceAccessReviewResponse",
        "apiVersion": "authorization.openshift.io/v1",
        "users": users,
        "groups": groups,
        // Spelled as OpenShift's API spells it.
        "evalutionError": "",
    });
    if !namespace.is_empty() {
        answer["namespace"] = json!(namespace);
    }
    Ok(respond(ctx, req, StatusCode::CREATED, answer))
}
