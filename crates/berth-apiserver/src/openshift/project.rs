//! `project.openshift.io/v1`: a Project is a view of the Namespace of the same name, as
//! OpenShift's project storage makes it, and a ProjectRequest asks for a new one on one's own
//! (`oc new-project`).
//!
//! - `GET projects` lists the projects the caller may see: all of them for someone who may list
//!   namespaces, else those in which they may `get` the namespace (a RoleBinding of `view`,
//!   `edit` or `admin` there), as OpenShift's project cache filters them.
//! - `GET`/`DELETE projects/NAME` read and delete the namespace; the request was authorized in
//!   the project's own namespace (see [`super::authorization_namespace`]).
//! - `POST projects` (`oc adm new-project NAME --node-selector=...`, for cluster
//!   administrators) creates the namespace with the project's annotations.
//! - `POST projectrequests` creates the namespace annotated with its requester, display name
//!   and description, and a RoleBinding `admin` giving the requester the `admin` ClusterRole in
//!   it, as OpenShift's default project template. Who may request is RBAC's answer: the
//!   `self-provisioner` ClusterRole, bound to `system:authenticated` by default.
//!
//! The namespace and the binding are written through the ordinary handlers (defaults, admission,
//! validation, storage) by the server itself, as OpenShift's loopback client does.

use crate::authorizer::{Attributes, Authorizer, Decision};
use crate::codec;
use crate::context::Ctx;
use crate::error::{from_store, ApiError, ApiResult};
use crate::objects;
use crate::path::{self, Target};
use crate::request::{Answer, ApiRequest};
use crate::response::{json_response, respond};
use crate::user::UserInfo;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use berth_api::registry::{self, ResourceType};
use serde_json::{json, Value};
use std::sync::Arc;

/// The annotations OpenShift keeps a project's description in.
const DISPLAY_NAME: &str = "openshift.io/display-name";
const DESCRIPTION: &str = "openshift.io/description";
const REQUESTER: &str = "openshift.io/requester";

/// Prefixes a project request may not use (OpenShift's: they are the platform's own).
const RESERVED_PREFIXES: &[&str] = &["openshift-", "kube-"];

/// The largest answer of an inner namespace or binding write read back: one object.
const INNER_ANSWER_BYTES: usize = 4 * 1024 * 1024;

fn served(group: &str, plural: &str) -> &'static ResourceType {
    registry::find(group, "v1", plural).expect("berth serves namespaces and role bindings")
}

/// The Project a stored Namespace is.
fn as_project(namespace: Value) -> Value {
    let mut metadata = namespace.get("metadata").cloned().unwrap_or(json!({}));
    if let Some(m) = metadata.as_object_mut() {
        m.remove("managedFields");
    }
    json!({
        "kind": "Project",
        "apiVersion": "project.openshift.io/v1",
        "metadata": metadata,
        "spec": {"finalizers": namespace.pointer("/spec/finalizers").cloned().unwrap_or(json!([]))},
        "status": {"phase": namespace.pointer("/status/phase").cloned().unwrap_or(json!("Active"))},
    })
}

/// A request for the namespace (or, with `namespace`, a role binding) behind `outer`, made by
/// the server itself.
fn inner(
    outer: &ApiRequest,
    rt: &'static ResourceType,
    namespace: Option<&str>,
    name: Option<&str>,
    body: Option<&Value>,
) -> ApiRequest {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    ApiRequest {
        target: Target {
            rt,
            namespace: namespace.map(str::to_string),
            name: name.map(str::to_string),
            subresource: None,
        },
        query: outer.query.clone(),
        headers,
        body: body
            .map(|b| bytes::Bytes::from(serde_json::to_vec(b).unwrap_or_default()))
            .unwrap_or_default(),
        answer: Answer::Json,
        user: Arc::new(UserInfo::admin()),
    }
}

/// The JSON object an inner handler answered with.
async fn answered(response: Response) -> ApiResult<Value> {
    let body = axum::body::to_bytes(response.into_body(), INNER_ANSWER_BYTES)
        .await
        .map_err(|e| ApiError::Internal(format!("reading the namespace: {e}")))?;
    serde_json::from_slice(&body).map_err(|e| ApiError::Internal(format!("the namespace: {e}")))
}

/// A namespace error, as a project's (`projects.project.openshift.io "x" not found`).
fn as_project_error(e: ApiError) -> ApiError {
    let resource = "projects.project.openshift.io".to_string();
    match e {
        ApiError::NotFound { name, .. } => ApiError::NotFound { resource, name },
        ApiError::AlreadyExists { name, .. } => ApiError::AlreadyExists { resource, name },
        other => other,
    }
}

pub async fn projects(ctx: &Ctx, req: &ApiRequest, method: &Method) -> ApiResult<Response> {
    let namespaces = served("", "namespaces");
    match (method, req.target.name.as_deref()) {
        (&Method::GET, Some(name)) => {
            let answer = objects::get(ctx, &inner(req, namespaces, None, Some(name), None))
                .await
                .map_err(as_project_error)?;
            let project = as_project(answered(answer).await?);
            Ok(respond(ctx, req, StatusCode::OK, project))
        }
        (&Method::GET, None) => list(ctx, req, namespaces),
        (&Method::POST, None) => {
            let (project, _) = objects::body_object(req)?;
            let name = codec::meta_str(&project, "name").to_string();
            let mut metadata = json!({"name": name});
            for field in ["labels", "annotations"] {
                if let Some(v) = project["metadata"].get(field) {
                    metadata[field] = v.clone();
                }
            }
            let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": metadata});
            let created =
                objects::create(ctx, &inner(req, namespaces, None, None, Some(&namespace)))
                    .await
                    .map_err(as_project_error)?;
            let project = as_project(answered(created).await?);
            Ok(respond(ctx, req, StatusCode::CREATED, project))
        }
        (&Method::DELETE, Some(name)) => {
            objects::delete(ctx, &inner(req, namespaces, None, Some(name), None))
                .await
                .map_err(as_project_error)?;
            // OpenShift answers a project's delete with a plain success.
            Ok(json_response(
                StatusCode::OK,
                &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                        "details": {"name": name, "group": "project.openshift.io", "kind": "projects"}}),
            ))
        }
        _ => Err(ApiError::MethodNotAllowed(
            "the server does not allow this method on the requested resource".into(),
        )),
    }
}

/// Whether `user` may `get` the namespace `name` (see it as a project).
fn may_see(ctx: &Ctx, user: &UserInfo, name: &str) -> bool {
    let a = Attributes {
        user,
        verb: "get",
        api_group: "",
        resource: "namespaces",
        subresource: "",
        namespace: name,
        name,
        path: "",
        field_selector: "",
    };
    ctx.rbac.authorize(&a) == Decision::Allow
}

fn list(ctx: &Ctx, req: &ApiRequest, namespaces: &'static ResourceType) -> ApiResult<Response> {
    let all = ctx.rbac.authorize(&Attributes {
        user: &req.user,
        verb: "list",
        api_group: "",
        resource: "namespaces",
        subresource: "",
        namespace: "",
        name: "",
        path: "",
        field_selector: "",
    }) == Decision::Allow;
    let target = Target {
        rt: namespaces,
        namespace: None,
        name: None,
        subresource: None,
    };
    let listed = ctx
        .store
        .range(&path::collection_prefix(namespaces, None), None, 0, None)
        .map_err(|e| from_store(e, "namespaces", ""))?;
    let mut items = Vec::new();
    for kv in &listed.kvs {
        let namespace = codec::decode(kv, &target)?;
        if all || may_see(ctx, &req.user, codec::meta_str(&namespace, "name")) {
            items.push(as_project(namespace));
        }
    }
    let rt = req.target.rt;
    let meta = json!({"resourceVersion": listed.revision.to_string()});
    if req.answer == Answer::Table {
        let table = berth_api::tables::table(
            rt,
            &items,
            meta,
            crate::response::include_object(&req.query),
            ctx.clock.now(),
            true,
        );
        return Ok(json_response(StatusCode::OK, &table));
    }
    let list = json!({"kind": "ProjectList", "apiVersion": rt.api_version(), "metadata": meta, "items": items});
    Ok(crate::response::answer(req.answer, StatusCode::OK, &list))
}

pub async fn request(ctx: &Ctx, req: &ApiRequest, method: &Method) -> ApiResult<Response> {
    if method == Method::GET && req.target.name.is_none() {
        // `oc` lists project requests to learn whether it may make one: authorization said yes.
        return Ok(json_response(
            StatusCode::OK,
            &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}),
        ));
    }
    if method != Method::POST || req.target.name.is_some() {
        return Err(ApiError::MethodNotAllowed(
            "the server does not allow this method on the requested resource".into(),
        ));
    }
    let (request, _) = objects::body_object(req)?;
    let name = codec::meta_str(&request, "name").to_string();
    if let Some(prefix) = RESERVED_PREFIXES.iter().find(|p| name.starts_with(*p)) {
        return Err(ApiError::Denied {
            group: "project.openshift.io".into(),
            resource: "projectrequests".into(),
            name,
            reason: format!("cannot request a project starting with {prefix:?}"),
        });
    }
    let text = |field: &str| request.get(field).and_then(Value::as_str).unwrap_or("");
    let mut annotations = json!({REQUESTER: req.user.name});
    for (annotation, field) in [(DISPLAY_NAME, "displayName"), (DESCRIPTION, "description")] {
        if !text(field).is_empty() {
            annotations[annotation] = json!(text(field));
        }
    }
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"name": name, "annotations": annotations}});
    let created = objects::create(
        ctx,
        &inner(req, served("", "namespaces"), None, None, Some(&namespace)),
    )
    .await
    .map_err(as_project_error)?;
    let project = as_project(answered(created).await?);
    if !req.query.dry_run()? {
        let binding = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "admin", "namespace": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": req.user.name}],
        });
        let rolebindings = served("rbac.authorization.k8s.io", "rolebindings");
        objects::create(
            ctx,
            &inner(req, rolebindings, Some(&name), None, Some(&binding)),
        )
        .await?;
    }
    Ok(respond(ctx, req, StatusCode::CREATED, project))
}
