//! OpenShift's APIs that the `oc` procedures of OpenShift's documentation use, served next to
//! Kubernetes' (upstream OpenShift's `openshift-apiserver`):
//!
//! - `project.openshift.io/v1` ([`project`]): Projects are a view of Namespaces; a
//!   ProjectRequest is self-provisioning (`oc new-project`);
//! - `authorization.openshift.io/v1` ([`access_review`]): who may do something
//!   (`oc adm policy who-can`), answered from the RBAC index;
//! - `user.openshift.io/v1` ([`users`]): `users/~` is the caller (`oc whoami`); Users and
//!   Groups are otherwise stored as any kind, and a Group's users are in it for RBAC
//!   (`crate::authz::user_groups`).
//!
//! Machine config pools, MachineConfigs and KubeletConfigs (`machineconfiguration.openshift.io/v1`)
//! are stored as any kind; [`machine_config`] makes the pools and base configurations every
//! cluster starts with, and the machine config controller (`berth-controllers`) acts on them.

mod access_review;
pub mod machine_config;
mod project;
mod users;

use crate::context::Ctx;
use crate::error::ApiResult;
use crate::request::ApiRequest;
use axum::http::Method;
use axum::response::Response;

/// The handler of a request for one of OpenShift's resources that are not plainly stored, or
/// `None` for the generic handlers. Runs after authorization.
pub async fn route(ctx: &Ctx, req: &ApiRequest, method: &Method) -> Option<ApiResult<Response>> {
    let rt = req.target.rt;
    Some(match (rt.group, rt.plural) {
        ("project.openshift.io", "projects") => project::projects(ctx, req, method).await,
        ("project.openshift.io", "projectrequests") => project::request(ctx, req, method).await,
        ("authorization.openshift.io", _) => access_review::review(ctx, req),
        ("user.openshift.io", "users") if req.name() == "~" && method == Method::GET => {
            users::me(ctx, req)
        }
        _ => return None,
    })
}

/// The namespace a request for OpenShift's `projects/NAME` is authorized in: the project's own,
/// as OpenShift's request-info resolver makes it, so that a RoleBinding in a namespace lets its
/// subjects see (and, as `admin`, delete) that project.
pub fn authorization_namespace<'a>(
    group: &str,
    plural: &str,
    name: Option<&'a str>,
) -> Option<&'a str> {
    match (group, plural) {
        ("project.openshift.io", "projects") => name,
        _ => None,
    }
}
