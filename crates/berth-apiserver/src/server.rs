//! The HTTP surface: one dispatcher that routes every request by its path to its handler.
//!
//! Dependencies point down: this router → the handlers (`objects`, `subresources`, `watch`,
//! `rbac` reviews, `node_proxy`) → `deletion` → `strategy` → `admission` → `context`,
//! `response`, `request`, `codec`, `path`, `error`.

use crate::access_log;
use crate::authn;
use crate::authorizer::{Attributes, Authorizer, Decision};
use crate::authz;
use crate::context::Ctx;
use crate::error::{ApiError, ApiResult};
use crate::metrics::RequestLabels;
use crate::overload::{self, RequestKind};
use crate::path::{self, Route};
use crate::request::{negotiate, Answer, ApiRequest, Query};
use crate::response::{self, json_response};
use crate::user::UserInfo;
use crate::{
    health, metrics_api, node_proxy, objects, openapi_endpoint, rbac, subresources, watch,
};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use berth_api::discovery;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use std::sync::Arc;

/// Largest request body accepted (upstream's limit is 3 MiB).
const MAX_BODY: usize = 3 * 1024 * 1024;

/// The request body, refused with upstream's 413 when it is over [`MAX_BODY`]: from its declared
/// length before buffering anything, or once that much has been read.
async fn read_body(headers: &HeaderMap, body: axum::body::Body) -> ApiResult<bytes::Bytes> {
    let too_large = || {
        ApiError::RequestEntityTooLarge(format!("Request entity too large: limit is {MAX_BODY}"))
    };
    let declared = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        discard(body).await;
        return Err(too_large());
    }
    let mut body = body;
    let mut buffered = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| ApiError::BadRequest(format!("request body: {e}")))?;
        if let Ok(data) = frame.into_data() {
            if buffered.len() + data.len() > MAX_BODY {
                discard(body).await;
                return Err(too_large());
            }
            buffered.extend_from_slice(&data);
        }
    }
    Ok(buffered.freeze())
}

/// Reads and drops the rest of a refused body (up to a bound), so that the client, still
/// sending, reads the 413 instead of a connection closed under it.
async fn discard(mut body: axum::body::Body) {
    const DRAIN_LIMIT: usize = 256 * 1024 * 1024;
    let mut drained = 0;
    while let Some(Ok(frame)) = body.frame().await {
        drained += frame.data_ref().map_or(0, |d| d.len());
        if drained > DRAIN_LIMIT {
            break;
        }
    }
}

/// Builds the router over `ctx`. Authentication and authorization apply when `ctx.authn` is
/// set (the network listener); in-process clients act as the identity their router carries,
/// or as the admin.
pub fn router(ctx: Ctx) -> Router {
    Router::new()
        .fallback(dispatch)
        .with_state(ctx)
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(panicked))
}

/// The answer to a request whose handler panicked: upstream's panic recovery answers 500
/// instead of dropping the connection, and the server goes on. No request should get here
/// (the router fuzz test looks for one that does); the panic is logged and counted as a 500.
fn panicked(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let what = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("");
    tracing::error!(panic = what, "a request handler panicked");
    ApiError::Internal(
        "This request caused apiserver to panic. Look in the logs for details.".into(),
    )
    .into_response()
}

async fn dispatch(State(ctx): State<Ctx>, req: Request) -> Response {
    let started = berth_core::clock::Stopwatch::now();
    let access = access_log::Entry::begin(&req);
    let answer = negotiate(req.headers());
    let refused = |e: ApiError, access: Option<access_log::Entry>| {
        let response = response::error(answer, e);
        if let Some(entry) = access {
            entry.finish("", None, response.status().as_u16(), started.elapsed());
        }
        response
    };
    let user = match &ctx.authn {
        // In process: the component's own identity if its router carries one.
        None => match req.extensions().get::<authn::CertificateUser>() {
            Some(authn::CertificateUser(user)) => authn::authenticated(user.clone()),
            None => UserInfo::admin(),
        },
        Some(authn) => match authn.authenticate(
            req.headers(),
            req.extensions().get::<authn::CertificateUser>(),
        ) {
            Ok(user) => user,
            Err(e) => return refused(e, access),
        },
    };
    let user = if authn::impersonation::requested(req.headers()) {
        match authn::impersonation::impersonate(&user, req.headers(), |a| authorize(&ctx, a)) {
            Ok(as_user) => as_user,
            Err(e) => return refused(e, access),
        }
    } else {
        user
    };
    let user = Arc::new(user);
    // Upstream's order: authentication, impersonation, the in-flight limit, authorization.
    let kind = RequestKind::of(req.method(), req.uri().path(), req.uri().query());
    let seat = match &ctx.inflight {
        None => None,
        Some(limiter) => match limiter.admit(kind, req.uri().path(), &user) {
            Some(seat) => Some(seat),
            None => {
                let response = overload::too_many_requests(answer);
                let labels = RequestLabels::non_resource(req.method());
                ctx.metrics.observe(labels, 429, started.elapsed());
                if let Some(entry) = access {
                    entry.finish(&user.name, None, 429, started.elapsed());
                }
                return response;
            }
        },
    };
    // API Priority and Fairness: a seat of the request's priority level, at once or after
    // waiting its turn in the level's fair queues, or 429 (long-running requests are not
    // counted, as with the in-flight limits).
    let permit = match (&ctx.flow_control, kind) {
        (Some(flow), RequestKind::ReadOnly | RequestKind::Mutating) => {
            let (method, uri) = (req.method().clone(), req.uri().clone());
            match admit_flow(flow, &method, &uri, &user).await {
                Ok(permit) => Some(permit),
                Err(rejected) => {
                    let mut response = overload::too_many_requests(answer);
                    set_flow_headers(&mut response, &rejected.classification);
                    if let Ok(v) = HeaderValue::from_str(&rejected.retry_after.to_string()) {
                        response.headers_mut().insert(header::RETRY_AFTER, v);
                    }
                    let labels = RequestLabels::non_resource(req.method());
                    ctx.metrics.observe(labels, 429, started.elapsed());
                    if let Some(entry) = access {
                        entry.finish(&user.name, None, 429, started.elapsed());
                    }
                    return response;
                }
            }
        }
        _ => None,
    };
    let classification = permit.as_ref().map(|p| p.classification().clone());
    let (mut response, labels) =
        handle(ctx.clone(), req, answer, user.clone(), kind, seat, permit).await;
    if let Some(classification) = &classification {
        set_flow_headers(&mut response, classification);
    }
    let code = response.status().as_u16();
    ctx.metrics.observe(labels, code, started.elapsed());
    if let Some(entry) = access {
        let credential = user
            .extra
            .get(authn::service_account::EXTRA_CREDENTIAL_ID)
            .and_then(|ids| ids.first());
        entry.finish(
            &user.name,
            credential.map(String::as_str),
            code,
            started.elapsed(),
        );
    }
    response
}

/// A network client's request being served, counted for a shutdown's drain until dropped.
struct NetworkRequest(Arc<std::sync::atomic::AtomicUsize>);

impl NetworkRequest {
    fn begin(count: Arc<std::sync::atomic::AtomicUsize>) -> NetworkRequest {
        count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        NetworkRequest(count)
    }
}

impl Drop for NetworkRequest {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Classifies the request as API Priority and Fairness sees it (upstream's RequestInfo: a
/// resource request's verb, group, resource, namespace and name, or a path) and waits for a
/// seat of its priority level.
async fn admit_flow(
    flow: &crate::flowcontrol::FlowControl,
    method: &Method,
    uri: &axum::http::Uri,
    user: &UserInfo,
) -> Result<crate::flowcontrol::Permit, crate::flowcontrol::Rejected> {
    let uri_path = uri.path();
    let query = Query::parse(uri.query());
    let target = path::parse(uri_path);
    let non_resource_verb = method.as_str().to_ascii_lowercase();
    let attributes = match &target {
        Some(t) => Attributes {
            user,
            verb: resource_verb(method, t.name.is_some(), query.flag("watch")),
            api_group: t.rt.group,
            resource: t.rt.plural,
            subresource: t.subresource.as_deref().unwrap_or(""),
            namespace: t.namespace.as_deref().unwrap_or(""),
            name: t.name.as_deref().unwrap_or(""),
            path: "",
            field_selector: "",
        },
        None => Attributes {
            user,
            verb: &non_resource_verb,
            api_group: "",
            resource: "",
            subresource: "",
            namespace: "",
            name: "",
            path: uri_path,
            field_selector: "",
        },
    };
    flow.admit(&attributes).await
}

/// The `X-Kubernetes-PF-FlowSchema-UID` and `X-Kubernetes-PF-PriorityLevel-UID` headers of
/// an answer, as upstream's filter sets them.
fn set_flow_headers(response: &mut Response, c: &crate::flowcontrol::Classification) {
    for (name, value) in [
        ("x-kubernetes-pf-flowschema-uid", &c.flow_schema_uid),
        ("x-kubernetes-pf-prioritylevel-uid", &c.priority_level_uid),
    ] {
        if let Ok(v) = HeaderValue::from_str(value) {
            response.headers_mut().insert(name, v);
        }
    }
}

/// Routes and answers one admitted request holding its `seat`, within `--request-timeout`
/// unless it is long-running; returns the answer and what the request was, for the metrics.
///
/// A timed request runs as a task of its own: past the timeout the client gets upstream's
/// 504 while the handler finishes what it started (a write is not cut in half), as upstream's
/// timeout filter lets it; a handler that panics is answered 500 instead of dropping the
/// connection.
async fn handle(
    ctx: Ctx,
    req: Request,
    answer: Answer,
    user: Arc<UserInfo>,
    kind: RequestKind,
    seat: Option<overload::Seat>,
    permit: Option<crate::flowcontrol::Permit>,
) -> (Response, RequestLabels) {
    let labels = RequestLabels::non_resource(req.method());
    let timeout = match kind {
        RequestKind::LongRunning => None,
        RequestKind::ReadOnly | RequestKind::Mutating => ctx.request_timeout,
    };
    let counted = match (kind, &ctx.network_requests) {
        (RequestKind::LongRunning, _) | (_, None) => None,
        (_, Some(count)) => Some(NetworkRequest::begin(count.clone())),
    };
    let serve = async move {
        let _seat = seat;
        let _permit = permit;
        let _counted = counted;
        let _in_flight = ctx.metrics.start(kind);
        let mut labels = labels;
        let response = match route(&ctx, req, answer, user, &mut labels).await {
            Ok(r) => r,
            Err(e) => response::error(answer, e),
        };
        (response, labels)
    };
    let Some(timeout) = timeout else {
        return serve.await;
    };
    match tokio::time::timeout(timeout, tokio::spawn(serve)).await {
        Ok(Ok(done)) => done,
        Ok(Err(e)) => {
            tracing::error!(error = %e, "a request handler panicked");
            (overload::panicked(answer), labels)
        }
        Err(_) => (overload::timed_out(answer), labels),
    }
}

/// Refuses (403, upstream's words) what the authorizer does not allow.
fn authorize(ctx: &Ctx, a: &Attributes<'_>) -> ApiResult<()> {
    match ctx.rbac.authorize(a) {
        Decision::Allow => Ok(()),
        Decision::Deny(why) => {
            let mut reason = authz::forbidden_message(a);
            if !why.is_empty() {
                reason = format!("{reason}: {why}");
            }
            Err(ApiError::Denied {
                group: a.api_group.to_string(),
                resource: a.resource.to_string(),
                name: a.name.to_string(),
                reason,
            })
        }
    }
}

/// A non-resource request (`/healthz`, `/api`, ...): the verb is the method, lowercased.
fn authorize_path(ctx: &Ctx, user: &UserInfo, method: &Method, path: &str) -> ApiResult<()> {
    let verb = method.as_str().to_ascii_lowercase();
    authorize(
        ctx,
        &Attributes {
            user,
            verb: &verb,
            api_group: "",
            resource: "",
            subresource: "",
            namespace: "",
            name: "",
            path,
            field_selector: "",
        },
    )
}

/// The RBAC verb of a resource request (upstream's `RequestInfo` verbs).
fn resource_verb(method: &Method, named: bool, watch: bool) -> &'static str {
    match *method {
        Method::GET | Method::HEAD if watch => "watch",
        Method::GET | Method::HEAD if named => "get",
        Method::GET | Method::HEAD => "list",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE if named => "delete",
        Method::DELETE => "deletecollection",
        _ => "",
    }
}

/// The verb of a resource request in `apiserver_request_total` (upstream's `CleanVerb`).
fn metrics_verb(
    method: &Method,
    named: bool,
    watch: bool,
    headers: &axum::http::HeaderMap,
) -> &'static str {
    let apply = || {
        headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/apply-patch"))
    };
    match *method {
        Method::GET | Method::HEAD if watch => "WATCH",
        Method::GET | Method::HEAD if named => "GET",
        Method::GET | Method::HEAD => "LIST",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH if apply() => "APPLY",
        Method::PATCH => "PATCH",
        Method::DELETE if named => "DELETE",
        Method::DELETE => "DELETECOLLECTION",
        _ => "CONNECT",
    }
}

/// The name a field selector requires exactly (`metadata.name=X` or `==X`, alone or among
/// other terms), when it is one a path could carry; else "".
fn exact_name(field_selector: &str) -> &str {
    field_selector
        .split(',')
        .filter_map(|term| {
            let term = term.trim();
            let value = term
                .strip_prefix("metadata.name==")
                .or_else(|| term.strip_prefix("metadata.name="))?;
            let valid =
                !value.is_empty() && value != "." && value != ".." && !value.contains(['/', '%']);
            valid.then_some(value)
        })
        .next()
        .unwrap_or("")
}

/// Authorizes a request for a node's or a pod's proxy, log or exec.
fn authorize_proxy(
    ctx: &Ctx,
    user: &UserInfo,
    method: &Method,
    target: &node_proxy::Target<'_>,
) -> ApiResult<()> {
    let verb = resource_verb(method, true, false);
    let (resource, subresource, namespace, name) = match target {
        node_proxy::Target::Node { node, .. } => ("nodes", "proxy", "", *node),
        node_proxy::Target::Log { namespace, pod } => ("pods", "log", *namespace, *pod),
        node_proxy::Target::Exec {
            namespace,
            pod,
            what,
        } => ("pods", *what, *namespace, *pod),
    };
    authorize(
        ctx,
        &Attributes {
            user,
            verb,
            api_group: "",
            resource,
            subresource,
            namespace,
            name,
            path: "",
            field_selector: "",
        },
    )
}

/// Authorizes a read of `metrics.k8s.io` node or pod metrics (what `kubectl top` asks).
fn authorize_metrics(
    ctx: &Ctx,
    user: &UserInfo,
    method: &Method,
    target: &metrics_api::Target<'_>,
) -> ApiResult<()> {
    let (resource, namespace, name) = match target {
        metrics_api::Target::Nodes { name } => ("nodes", None, *name),
        metrics_api::Target::Pods { namespace, name } => ("pods", *namespace, *name),
    };
    authorize(
        ctx,
        &Attributes {
            user,
            verb: resource_verb(method, name.is_some(), false),
            api_group: "metrics.k8s.io",
            resource,
            subresource: "",
            namespace: namespace.unwrap_or(""),
            name: name.unwrap_or(""),
            path: "",
            field_selector: "",
        },
    )
}

/// Routes and answers one request; `labels` learns what it was, for the metrics.
async fn route(
    ctx: &Ctx,
    req: Request,
    answer: Answer,
    user: Arc<UserInfo>,
    labels: &mut RequestLabels,
) -> ApiResult<Response> {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    let query = Query::parse(parts.uri.query());
    let headers = parts.headers;
    let method = parts.method;

    if method == Method::GET {
        if let Some(r) = health::respond(ctx, &path, parts.uri.query()) {
            authorize_path(ctx, &user, &method, &path)?;
            return Ok(r);
        }
        if let Some(r) = crate::apiextensions::openapi::respond(&ctx.custom, &path) {
            authorize_path(ctx, &user, &method, &path)?;
            return Ok(r);
        }
        if let Some(r) = openapi_endpoint::respond(&path, parts.uri.query(), &headers, &ctx.custom)
        {
            authorize_path(ctx, &user, &method, &path)?;
            return Ok(r);
        }
        if let Some(r) = fixed_route(ctx, &path, &headers) {
            authorize_path(ctx, &user, &method, &path)?;
            return Ok(r);
        }
    }
    // A group version a remote APIService serves goes to its backend, as upstream's
    // aggregator routes it, natively served or not.
    if let Some(registered) = ctx.apiservices.route(&path) {
        return aggregated(ctx, &registered, &method, &parts.uri, headers, body, &user).await;
    }
    if let Some(target) = node_proxy::Target::of(&path) {
        labels.verb("CONNECT");
        authorize_proxy(ctx, &user, &method, &target)?;
        return node_proxy::handle(ctx, target, method, parts.uri.query(), headers, body).await;
    }
    if let Some(target) = metrics_api::Target::of(&path) {
        authorize_metrics(ctx, &user, &method, &target)?;
        return metrics_api::handle(ctx, target, method).await;
    }
    if let Some(route) = path::discovery_route(&path) {
        authorize_path(ctx, &user, &method, &path)?;
        if method != Method::GET {
            return Err(ApiError::MethodNotAllowed(
                "the server does not allow this method on the requested resource".to_string(),
            ));
        }
        return discovery_response(ctx, route, answer);
    }
    // POST namespaces/{ns}/bindings is the older form of pods/{name}/binding.
    let Some(target) = path::parse_with(&path, |g, v, p| ctx.custom.resource_type(g, v, p)) else {
        // Upstream authorizes before routing: a path nobody may get is 403, not 404.
        authorize_path(ctx, &user, &method, &path)?;
        return Err(ApiError::NoRoute);
    };
    let namespace = crate::openshift::authorization_namespace(
        target.rt.group,
        target.rt.plural,
        target.name.as_deref(),
    )
    .or(target.namespace.as_deref())
    .unwrap_or("");
    labels.resource(
        target.rt,
        target.subresource.as_deref(),
        target.namespace.as_deref(),
        target.name.is_some(),
    );
    labels.verb(metrics_verb(
        &method,
        target.name.is_some(),
        query.flag("watch"),
        &headers,
    ));
    authorize(
        ctx,
        &Attributes {
            user: &user,
            verb: resource_verb(&method, target.name.is_some(), query.flag("watch")),
            api_group: target.rt.group,
            resource: target.rt.plural,
            subresource: target.subresource.as_deref().unwrap_or(""),
            namespace,
            name: match (&target.name, &method) {
                (Some(name), _) => name,
                // A list or watch of one name is authorized as that name, so a `resourceNames`
                // rule allows it (upstream's RequestInfo).
                (None, &Method::GET) => exact_name(query.get("fieldSelector").unwrap_or("")),
                (None, _) => "",
            },
            path: "",
            field_selector: query.get("fieldSelector").unwrap_or(""),
        },
    )?;
    let body = read_body(&headers, body).await?;
    let req = ApiRequest {
        target,
        query,
        headers,
        body,
        answer,
        user,
    };
    // Subresources with handlers of their own.
    let rt = req.target.rt;
    match (rt.plural, req.target.subresource.as_deref(), &method) {
        (_, Some("scale"), _) => return subresources::scale::handle(ctx, &req, &method).await,
        ("pods", Some("binding"), &Method::POST) => {
            return subresources::binding::bind(ctx, &req).await
        }
        ("pods", Some("eviction"), &Method::POST) => {
            return subresources::eviction::evict(ctx, &req).await
        }
        ("serviceaccounts", Some("token"), &Method::POST) => {
            return subresources::token::create(ctx, &req).await
        }
        // A namespace's `finalize` is written (PUT) and nothing else, as upstream routes it.
        ("namespaces", Some("finalize"), m) if *m != Method::PUT => {
            return Err(ApiError::MethodNotAllowed(
                "the server does not allow this method on the requested resource".to_string(),
            ))
        }
        _ => {}
    }
    // Kinds with handlers of their own.
    if req.target.subresource.is_none() {
        check_verb(&req, &method)?;
        if rbac::is_review(rt) && req.target.name.is_none() {
            // A review has no object metadata, so no Table form (upstream has no
            // TableConvertor for it and fails negotiation).
            if req.answer == crate::request::Answer::Table {
                return Ok(crate::response::not_acceptable());
            }
            return rbac::review(ctx, &req).await;
        }
        if let Some(answer) = crate::openshift::route(ctx, &req, &method).await {
            return answer;
        }
        if rt.plural == "bindings" && method == Method::POST {
            return subresources::binding::bind(ctx, &req).await;
        }
    }
    if crate::apiextensions::is_definitions(rt) && method != Method::GET {
        return crate::crd_lifecycle::handle_definition_write(ctx, &req, &method).await;
    }
    match method {
        Method::GET if req.target.name.is_some() => objects::get(ctx, &req).await,
        Method::GET if req.query.flag("watch") => watch::watch(ctx, &req).await,
        Method::GET => objects::list(ctx, &req).await,
        Method::POST => objects::create(ctx, &req).await,
        // A collection is neither replaced nor patched as a whole (upstream routes neither).
        Method::PUT | Method::PATCH if req.target.name.is_none() => {
            Err(ApiError::MethodNotAllowed(
                "the server does not allow this method on the requested resource".to_string(),
            ))
        }
        Method::PUT => objects::update(ctx, &req).await,
        Method::PATCH => objects::patch(ctx, &req).await,
        Method::DELETE if req.target.name.is_some() => objects::delete(ctx, &req).await,
        Method::DELETE => objects::delete_collection(ctx, &req).await,
        _ => Err(ApiError::MethodNotAllowed(
            "the server does not allow this method on the requested resource".to_string(),
        )),
    }
}

/// Forwards a request to a remote APIService's backend, once the caller is authorized here
/// as upstream's handler chain authorizes it (the backend authorizes again, as it sees fit);
/// 503 `service unavailable` while the APIService is not available or has no endpoint.
async fn aggregated(
    ctx: &Ctx,
    registered: &crate::apiregistration::Registered,
    method: &Method,
    uri: &axum::http::Uri,
    headers: HeaderMap,
    body: axum::body::Body,
    user: &UserInfo,
) -> ApiResult<Response> {
    use crate::apiregistration::{proxy, RequestInfo};
    let path = uri.path();
    let query = Query::parse(uri.query());
    match RequestInfo::of(path) {
        Some(info) => authorize(
            ctx,
            &Attributes {
                user,
                verb: resource_verb(method, !info.name.is_empty(), query.flag("watch")),
                api_group: &registered.group,
                resource: info.resource,
                subresource: info.subresource,
                namespace: info.namespace,
                name: info.name,
                path: "",
                field_selector: query.get("fieldSelector").unwrap_or(""),
            },
        )?,
        None => authorize_path(ctx, user, method, path)?,
    }
    let unavailable = || proxy::plain_error(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
    let Some(svc) = registered.service.as_ref().filter(|_| registered.available) else {
        return Ok(unavailable());
    };
    let endpoint = match proxy::resolve(&ctx.store, svc) {
        Ok(e) => e,
        Err(e) => {
            tracing::warn!(apiservice = %registered.name, error = %e, "no endpoint to proxy to");
            return Ok(unavailable());
        }
    };
    let body = read_body(&headers, body).await?;
    let path_and_query = uri.path_and_query().map_or(path, |p| p.as_str());
    Ok(proxy::forward(
        registered,
        &endpoint,
        method.clone(),
        path_and_query,
        &headers,
        axum::body::Body::from(body),
        user,
    )
    .await)
}

/// Refuses (405) a verb the resource does not serve, e.g. listing `bindings` or getting a
/// `selfsubjectaccessreview`, as upstream does.
fn check_verb(req: &ApiRequest, method: &Method) -> ApiResult<()> {
    let named = req.target.name.is_some();
    let verb = match *method {
        Method::GET if named => "get",
        Method::GET if req.query.flag("watch") => "watch",
        Method::GET => "list",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE if named => "delete",
        Method::DELETE => "deletecollection",
        _ => return Ok(()),
    };
    if req.target.rt.allows(verb) {
        return Ok(());
    }
    Err(ApiError::MethodNotAllowed(
        "the server does not allow this method on the requested resource".into(),
    ))
}

/// `/version`, `/metrics`, the paths index `/` and the service-account issuer's OIDC discovery.
/// `/metrics` is Prometheus text unless the scraper's `Accept` asks for OpenMetrics.
fn fixed_route(ctx: &Ctx, path: &str, headers: &axum::http::HeaderMap) -> Option<Response> {
    let r = match path {
        "/metrics" => {
            let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
            let format = berth_core::exposition::Format::negotiate(accept);
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, format.content_type())],
                format.write(ctx.metrics.render(&ctx.store)),
            )
                .into_response()
        }
        "/version" | "/version/" => json_response(StatusCode::OK, &version()),
        "/" => json_response(StatusCode::OK, &crate::root_paths::index(ctx)),
        _ => return crate::oidc::respond(ctx, path),
    };
    Some(r)
}

/// What `/version` says: 1.32, so that the kubectl dispatcher picks kubectl 1.32.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "32",
        "gitVersion": "v1.32.0-berth",
        "gitCommit": "berth",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.23.0",
        "compiler": "berth",
        "platform": "linux/amd64",
    })
}

fn discovery_response(ctx: &Ctx, route: Route, answer: Answer) -> ApiResult<Response> {
    // Discovery is served in JSON only (the protobuf table has no discovery kinds).
    if answer == Answer::ProtobufOnly {
        return Ok(response::not_acceptable());
    }
    let aggregated = |v: Value| {
        (
            StatusCode::OK,
            [(header::CONTENT_TYPE, discovery::AGGREGATED_CONTENT_TYPE)],
            v.to_string(),
        )
            .into_response()
    };
    let custom = ctx.custom.resource_types();
    Ok(match route {
        Route::CoreVersions if answer == Answer::AggregatedDiscovery => {
            aggregated(discovery::aggregated_core())
        }
        Route::Groups if answer == Answer::AggregatedDiscovery => {
            let mut list = discovery::aggregated_groups_with(&custom);
            crate::apiregistration::discovery::merge_aggregated(&ctx.apiservices, &mut list);
            aggregated(list)
        }
        Route::CoreVersions => {
            json_response(StatusCode::OK, &discovery::api_versions(&ctx.address))
        }
        Route::Groups => {
            let mut list = discovery::api_group_list_with(&custom);
            crate::apiregistration::discovery::merge_group_list(&ctx.apiservices, &mut list);
            json_response(StatusCode::OK, &list)
        }
        Route::Group(g) => json_response(
            StatusCode::OK,
            &discovery::api_group_with(&g, &custom)
                .or_else(|| crate::apiregistration::discovery::group(&ctx.apiservices, &g))
                .ok_or(ApiError::NoRoute)?,
        ),
        Route::GroupVersion(g, v) => json_response(
            StatusCode::OK,
            &discovery::api_resource_list_with(&g, &v, &custom).ok_or(ApiError::NoRoute)?,
        ),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_list_of_one_name_is_authorized_as_that_name() {
        for (selector, name) in [
            ("metadata.name=web", "web"),
            ("metadata.name==web", "web"),
            ("status.phase=Running,metadata.name=web", "web"),
            ("metadata.name!=web", ""),
            ("metadata.name=", ""),
            ("metadata.name=a/b", ""),
            ("metadata.name=..", ""),
            ("metadata.namespace=web", ""),
            ("", ""),
        ] {
            assert_eq!(super::exact_name(selector), name, "{selector}");
        }
    }
}
