//! `GET /apis/user.openshift.io/v1/users/~`: the caller as a User (`oc whoami`), with the groups
//! their credentials carry and those OpenShift Groups list them in.

use crate::context::Ctx;
use crate::error::ApiResult;
use crate::request::ApiRequest;
use crate::response::respond;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::json;

pub fn me(ctx: &Ctx, req: &ApiRequest) -> ApiResult<Response> {
    let with_groups = ctx.rbac.with_groups(&req.user);
    let user = with_groups.as_ref().unwrap_or(&req.user);
    let mut me = json!({
        "kind": "User",
        "apiVersion": "user.openshift.io/v1",
        "metadata": {"name": user.name},
        "identities": [],
        "groups": user.groups,
    });
    if !user.uid.is_empty() {
        me["metadata"]["uid"] = json!(user.uid);
    }
    Ok(respond(ctx, req, StatusCode::OK, me))
}
