//! Overload protection for the network listener's requests, as kube-apiserver's
//! `WithMaxInFlightLimit` and `WithTimeoutForNonLongRunningRequests` filters.
//!
//! - **In-flight limits** (`--max-requests-inflight`, `--max-mutating-requests-inflight`):
//!   beyond them a request gets upstream's 429 with `Retry-After: 1`. The check runs after
//!   authentication and impersonation and before authorization, as in upstream's handler chain.
//!   Long-running requests (watches, exec, attach, port-forward, logs, proxy) are not counted;
//!   `system:masters` take a seat when one is free and are served anyway when none is; health
//!   probes are never refused; berth's in-process components (the in-process routers) have no
//!   limiter at all.
//! - **Request timeout** (`--request-timeout`): a request that is not long-running and has not
//!   been answered within it gets upstream's 504. The handler runs on as upstream's does (it
//!   is not cancelled half-way through a write); its answer is dropped.

use crate::request::Answer;
use crate::user::UserInfo;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Upstream's `--max-requests-inflight` default: read-only requests served at once.
pub const DEFAULT_MAX_REQUESTS_INFLIGHT: usize = 400;

/// Upstream's `--max-mutating-requests-inflight` default: mutating requests served at once.
pub const DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT: usize = 200;

/// Upstream's `--request-timeout` default: how long a request that is not long-running may
/// take before the client gets a 504.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The seconds a refused client is asked to wait (upstream's `retryAfter`, a constant "1").
const RETRY_AFTER_SECONDS: u32 = 1;

/// What upstream's handler chain must know of a request before routing it: whether it is
/// long-running, and otherwise whether it only reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestKind {
    /// `get`, `list`: counted against `--max-requests-inflight`.
    ReadOnly,
    /// Everything else that is not long-running: counted against
    /// `--max-mutating-requests-inflight`.
    Mutating,
    /// Watches, `proxy`, and the `attach`, `exec`, `log`, `portforward` and `proxy`
    /// subresources (upstream's `BasicLongRunningRequestCheck` for kube-apiserver): neither
    /// counted nor timed out.
    LongRunning,
}

impl RequestKind {
    /// Classifies a request as upstream's `RequestInfoFactory` and long-running check do,
    /// from its method, path and query alone.
    pub fn of(method: &Method, path: &str, query: Option<&str>) -> RequestKind {
        let read_only = matches!(*method, Method::GET | Method::HEAD);
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        let rest: &[&str] = match segments.as_slice() {
            ["api", _version, rest @ ..] => rest,
            ["apis", _group, _version, rest @ ..] => rest,
            _ => &[],
        };
        // `/api/v1/watch/...` and `/api/v1/proxy/...` are verbs in upstream's RequestInfo.
        if let Some(first) = rest.first() {
            if (*first == "watch" && read_only) || *first == "proxy" {
                return RequestKind::LongRunning;
            }
        }
        let in_namespace = match rest {
            ["namespaces", _ns, inner @ ..] if !inner.is_empty() => inner,
            other => other,
        };
        if let [_resource, _name, subresource, ..] = in_namespace {
            if matches!(
                *subresource,
                "attach" | "exec" | "log" | "portforward" | "proxy"
            ) {
                return RequestKind::LongRunning;
            }
        }
        let watch = query.is_some_and(|q| {
            form_urlencoded::parse(q.as_bytes())
                .any(|(k, v)| k == "watch" && matches!(v.as_ref(), "true" | "1"))
        });
        match (read_only, watch && !rest.is_empty()) {
            (true, true) => RequestKind::LongRunning,
            (true, false) => RequestKind::ReadOnly,
            (false, _) => RequestKind::Mutating,
        }
    }
}

/// The limits of one server (`--max-requests-inflight`, `--max-mutating-requests-inflight`,
/// `--request-timeout`); 0 turns an in-flight limit off, as upstream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestLimits {
    pub max_requests_inflight: usize,
    pub max_mutating_requests_inflight: usize,
    /// `None`: no timeout.
    pub request_timeout: Option<Duration>,
}

impl Default for RequestLimits {
    fn default() -> Self {
        RequestLimits {
            max_requests_inflight: DEFAULT_MAX_REQUESTS_INFLIGHT,
            max_mutating_requests_inflight: DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT,
            request_timeout: Some(DEFAULT_REQUEST_TIMEOUT),
        }
    }
}

/// The seats of the network listener's requests: one per server, shared by its routers.
#[derive(Debug)]
pub struct InflightLimiter {
    read_only: Option<Arc<Semaphore>>,
    mutating: Option<Arc<Semaphore>>,
}

/// A request's seat, given back when dropped (`None`: the request took none).
pub struct Seat(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

impl InflightLimiter {
    /// Seats for `limits`.
    pub fn new(limits: &RequestLimits) -> InflightLimiter {
        let pool = |n: usize| (n > 0).then(|| Arc::new(Semaphore::new(n)));
        InflightLimiter {
            read_only: pool(limits.max_requests_inflight),
            mutating: pool(limits.max_mutating_requests_inflight),
        }
    }

    /// A seat for a request of `kind` to `path` by `user`, or `None` when it must be refused
    /// with [`too_many_requests`].
    pub fn admit(&self, kind: RequestKind, path: &str, user: &UserInfo) -> Option<Seat> {
        let pool = match kind {
            RequestKind::LongRunning => return Some(Seat(None)),
            RequestKind::ReadOnly => &self.read_only,
            RequestKind::Mutating => &self.mutating,
        };
        let Some(pool) = pool else {
            return Some(Seat(None));
        };
        if let Ok(permit) = pool.clone().try_acquire_owned() {
            return Some(Seat(Some(permit)));
        }
        // Upstream: "A system:master is so powerful that they should always get an answer."
        // Health probes are answered too, so that a busy server is not restarted as dead.
        if user.in_group(crate::user::SYSTEM_MASTERS) || is_health_probe(path) {
            return Some(Seat(None));
        }
        None
    }
}

/// `/healthz`, `/livez`, `/readyz` and their named checks.
fn is_health_probe(path: &str) -> bool {
    ["/healthz", "/livez", "/readyz"].iter().any(|probe| {
        path.strip_prefix(probe)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    })
}

/// Upstream's answer beyond the in-flight limits: 429, `Retry-After: 1`.
pub fn too_many_requests(answer: Answer) -> Response {
    let status = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Too many requests, please try again later.",
        "reason": "TooManyRequests",
        "details": {"retryAfterSeconds": RETRY_AFTER_SECONDS},
        "code": 429,
    });
    let mut response = status_response(answer, StatusCode::TOO_MANY_REQUESTS, &status);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
    response
}

/// Upstream's answer to a request not done within `--request-timeout` (`NewTimeoutError`).
pub fn timed_out(answer: Answer) -> Response {
    let status = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Timeout: request did not complete within the allotted timeout",
        "reason": "Timeout",
        "details": {},
        "code": 504,
    });
    status_response(answer, StatusCode::GATEWAY_TIMEOUT, &status)
}

/// Upstream's answer when a handler panicked (its panic-recovery filter); the panic is
/// logged by the caller.
pub fn panicked(answer: Answer) -> Response {
    let status = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "This request caused apiserver to panic. Look in the logs for details.",
        "reason": "InternalError",
        "code": 500,
    });
    status_response(answer, StatusCode::INTERNAL_SERVER_ERROR, &status)
}

/// `status` in JSON, or in protobuf for a client that asked for it.
fn status_response(answer: Answer, code: StatusCode, status: &Value) -> Response {
    if answer.is_protobuf() {
        if let Ok(body) = crate::protobuf::encode(status) {
            return (
                code,
                [(header::CONTENT_TYPE, crate::protobuf::MEDIA_TYPE)],
                body,
            )
                .into_response();
        }
    }
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        status.to_string(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_classified_as_upstream_request_info_does() {
        let cases: &[(&str, Method, &str, Option<&str>, RequestKind)] = &[
            (
                "a get of one object reads",
                Method::GET,
                "/api/v1/namespaces/d/pods/p",
                None,
                RequestKind::ReadOnly,
            ),
            (
                "a list reads",
                Method::GET,
                "/apis/apps/v1/deployments",
                None,
                RequestKind::ReadOnly,
            ),
            (
                "discovery reads",
                Method::GET,
                "/apis",
                None,
                RequestKind::ReadOnly,
            ),
            (
                "a health probe reads",
                Method::GET,
                "/readyz",
                None,
                RequestKind::ReadOnly,
            ),
            (
                "a create mutates",
                Method::POST,
                "/api/v1/namespaces/d/pods",
                None,
                RequestKind::Mutating,
            ),
            (
                "a patch mutates",
                Method::PATCH,
                "/api/v1/namespaces/d/pods/p",
                None,
                RequestKind::Mutating,
            ),
            (
                "a delete mutates",
                Method::DELETE,
                "/api/v1/namespaces/d",
                None,
                RequestKind::Mutating,
            ),
            (
                "a watch by query is long-running",
                Method::GET,
                "/api/v1/pods",
                Some("watch=true&resourceVersion=1"),
                RequestKind::LongRunning,
            ),
            (
                "watch=1 counts too",
                Method::GET,
                "/api/v1/namespaces/d/pods",
                Some("watch=1"),
                RequestKind::LongRunning,
            ),
            (
                "watch=false is a list",
                Method::GET,
                "/api/v1/pods",
                Some("watch=false"),
                RequestKind::ReadOnly,
            ),
            (
                "a legacy watch path is long-running",
                Method::GET,
                "/api/v1/watch/namespaces/d/pods",
                None,
                RequestKind::LongRunning,
            ),
            (
                "exec is long-running",
                Method::POST,
                "/api/v1/namespaces/d/pods/p/exec",
                Some("command=ls"),
                RequestKind::LongRunning,
            ),
            (
                "attach is long-running",
                Method::GET,
                "/api/v1/namespaces/d/pods/p/attach",
                None,
                RequestKind::LongRunning,
            ),
            (
                "port-forward is long-running",
                Method::POST,
                "/api/v1/namespaces/d/pods/p/portforward",
                None,
                RequestKind::LongRunning,
            ),
            (
                "logs are long-running, followed or not",
                Method::GET,
                "/api/v1/namespaces/d/pods/p/log",
                None,
                RequestKind::LongRunning,
            ),
            (
                "a node proxy is long-running",
                Method::GET,
                "/api/v1/nodes/n/proxy/stats/summary",
                None,
                RequestKind::LongRunning,
            ),
            (
                "a service proxy is long-running",
                Method::GET,
                "/api/v1/namespaces/d/services/s/proxy/x",
                None,
                RequestKind::LongRunning,
            ),
            (
                "a status update mutates",
                Method::PUT,
                "/api/v1/namespaces/d/pods/p/status",
                None,
                RequestKind::Mutating,
            ),
            (
                "a namespace named exec is not a subresource",
                Method::GET,
                "/api/v1/namespaces/exec",
                None,
                RequestKind::ReadOnly,
            ),
            (
                "finalizing a namespace mutates",
                Method::PUT,
                "/api/v1/namespaces/d/finalize",
                None,
                RequestKind::Mutating,
            ),
        ];
        for (name, method, path, query, want) in cases {
            assert_eq!(RequestKind::of(method, path, *query), *want, "{name}");
        }
    }

    fn user(groups: &[&str]) -> UserInfo {
        UserInfo {
            name: "u".into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..UserInfo::default()
        }
    }

    #[test]
    fn a_full_pool_refuses_all_but_masters_and_health_probes() {
        let limiter = InflightLimiter::new(&RequestLimits {
            max_requests_inflight: 1,
            max_mutating_requests_inflight: 1,
            request_timeout: None,
        });
        let alice = user(&["system:authenticated"]);
        let held = limiter.admit(RequestKind::ReadOnly, "/api/v1/pods", &alice);
        assert!(held.is_some(), "the first read takes the only seat");
        assert!(limiter
            .admit(RequestKind::ReadOnly, "/api/v1/pods", &alice)
            .is_none());
        assert!(
            limiter
                .admit(RequestKind::Mutating, "/api/v1/namespaces/d/pods", &alice)
                .is_some(),
            "mutating requests have seats of their own"
        );
        assert!(limiter
            .admit(RequestKind::LongRunning, "/api/v1/pods", &alice)
            .is_some());
        assert!(limiter
            .admit(
                RequestKind::ReadOnly,
                "/api/v1/pods",
                &user(&["system:masters"])
            )
            .is_some());
        for probe in ["/healthz", "/livez", "/readyz", "/readyz/etcd"] {
            assert!(
                limiter
                    .admit(RequestKind::ReadOnly, probe, &alice)
                    .is_some(),
                "{probe}"
            );
        }
        assert!(limiter
            .admit(RequestKind::ReadOnly, "/healthzz", &alice)
            .is_none());
        drop(held);
        assert!(
            limiter
                .admit(RequestKind::ReadOnly, "/api/v1/pods", &alice)
                .is_some(),
            "a finished request gives its seat back"
        );
    }

    #[test]
    fn a_zero_limit_turns_the_pool_off() {
        let limiter = InflightLimiter::new(&RequestLimits {
            max_requests_inflight: 0,
            max_mutating_requests_inflight: 0,
            request_timeout: None,
        });
        let alice = user(&[]);
        let seats: Vec<_> = (0..1000)
            .map(|_| limiter.admit(RequestKind::Mutating, "/api/v1/pods", &alice))
            .collect();
        assert!(seats.iter().all(Option::is_some));
    }

    /// Requests through the network listener's router, as the admin (`system:masters`) or as
    /// alice (the admin impersonating her), with the body of a held request in the test's hand.
    mod through_the_router {
        use super::*;
        use crate::{ApiServer, Clock};
        use axum::body::Body;
        use axum::http::Request;
        use tower::ServiceExt;

        const TOKEN: &str = "admin-token";

        async fn server(limits: RequestLimits) -> ApiServer {
            let server = ApiServer::new(
                berth_store::Store::memory(),
                Clock::system(),
                "127.0.0.1:6443".into(),
            )
            .with_request_limits(limits)
            // The in-flight limits as such: API Priority and Fairness (on by default) would
            // share their seats among its levels instead.
            .with_priority_and_fairness(false);
            server.bootstrap().await.expect("bootstrap");
            server
        }

        fn limits(read_only: usize, mutating: usize) -> RequestLimits {
            RequestLimits {
                max_requests_inflight: read_only,
                max_mutating_requests_inflight: mutating,
                request_timeout: Some(DEFAULT_REQUEST_TIMEOUT),
            }
        }

        fn request(method: Method, path: &str, as_alice: bool, body: Body) -> Request<Body> {
            let mut req = Request::builder()
                .method(method)
                .uri(path)
                .header("authorization", format!("Bearer {TOKEN}"))
                .header("content-type", "application/json");
            if as_alice {
                req = req.header("impersonate-user", "alice");
            }
            req.body(body).expect("request")
        }

        /// A body that ends (and lets its request go on) when the sender is dropped.
        fn held_body() -> (
            tokio::sync::mpsc::Sender<Result<bytes::Bytes, std::io::Error>>,
            Body,
        ) {
            let (tx, rx) = tokio::sync::mpsc::channel(1);
            (
                tx,
                Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx)),
            )
        }

        async fn answer(
            router: &axum::Router,
            req: Request<Body>,
        ) -> (StatusCode, Option<String>, Value) {
            let resp = router.clone().oneshot(req).await.expect("infallible");
            let status = resp.status();
            let retry_after = resp
                .headers()
                .get(header::RETRY_AFTER)
                .map(|v| v.to_str().unwrap_or("").to_string());
            let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
                .await
                .expect("body");
            (
                status,
                retry_after,
                serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            )
        }

        /// Starts `req` and returns once it holds its seat (the seat is taken on the first poll).
        async fn hold(
            router: &axum::Router,
            req: Request<Body>,
        ) -> std::pin::Pin<
            Box<impl std::future::Future<Output = Result<Response, std::convert::Infallible>>>,
        > {
            let mut held = Box::pin(router.clone().oneshot(req));
            assert!(
                futures::poll!(&mut held).is_pending(),
                "the held request waits for its body"
            );
            held
        }

        #[tokio::test]
        async fn beyond_the_mutating_limit_a_write_gets_429_with_retry_after() {
            let server = server(limits(10, 1)).await;
            let router = server.authenticated_router(TOKEN.into());
            let (tx, body) = held_body();
            let held = hold(
                &router,
                request(
                    Method::POST,
                    "/api/v1/namespaces/default/configmaps",
                    false,
                    body,
                ),
            )
            .await;

            let (code, retry_after, status) = answer(
                &router,
                request(
                    Method::DELETE,
                    "/api/v1/namespaces/default/configmaps/x",
                    true,
                    Body::empty(),
                ),
            )
            .await;
            assert_eq!(code, StatusCode::TOO_MANY_REQUESTS, "{status}");
            assert_eq!(retry_after.as_deref(), Some("1"));
            assert_eq!(status["kind"], "Status");
            assert_eq!(status["reason"], "TooManyRequests");
            assert_eq!(
                status["message"],
                "Too many requests, please try again later."
            );
            assert_eq!(status["details"]["retryAfterSeconds"], 1);
            assert_eq!(status["code"], 429);

            let (code, _, _) = answer(
                &router,
                request(
                    Method::DELETE,
                    "/api/v1/namespaces/default/configmaps/x",
                    false,
                    Body::empty(),
                ),
            )
            .await;
            assert_eq!(
                code,
                StatusCode::NOT_FOUND,
                "system:masters are served beyond the limit"
            );
            let (code, _, _) = answer(
                &router,
                request(
                    Method::GET,
                    "/api/v1/namespaces/default/configmaps",
                    true,
                    Body::empty(),
                ),
            )
            .await;
            assert_ne!(
                code,
                StatusCode::TOO_MANY_REQUESTS,
                "reads have seats of their own"
            );
            let in_process = server.in_process_router();
            let (code, _, status) = answer(
                &in_process,
                request(
                    Method::POST,
                    "/api/v1/namespaces/default/configmaps",
                    false,
                    Body::from(
                        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"mine"}}"#,
                    ),
                ),
            )
            .await;
            assert_eq!(
                code,
                StatusCode::CREATED,
                "berth's own components are never refused: {status}"
            );

            drop(tx);
            let released = held.await.expect("infallible");
            assert_ne!(released.status(), StatusCode::TOO_MANY_REQUESTS);
            let (code, _, _) = answer(
                &router,
                request(
                    Method::DELETE,
                    "/api/v1/namespaces/default/configmaps/x",
                    true,
                    Body::empty(),
                ),
            )
            .await;
            assert_ne!(
                code,
                StatusCode::TOO_MANY_REQUESTS,
                "the seat is free again"
            );
        }

        #[tokio::test]
        async fn beyond_the_read_limit_a_read_gets_429_but_probes_and_watches_do_not() {
            let server = server(limits(1, 10)).await;
            let router = server.authenticated_router(TOKEN.into());
            let (_tx, body) = held_body();
            let _held = hold(
                &router,
                request(
                    Method::GET,
                    "/api/v1/namespaces/default/configmaps",
                    false,
                    body,
                ),
            )
            .await;

            let (code, retry_after, _) = answer(
                &router,
                request(
                    Method::GET,
                    "/api/v1/namespaces/default/pods",
                    true,
                    Body::empty(),
                ),
            )
            .await;
            assert_eq!(code, StatusCode::TOO_MANY_REQUESTS);
            assert_eq!(retry_after.as_deref(), Some("1"));
            for probe in ["/healthz", "/livez", "/readyz"] {
                let (code, _, _) =
                    answer(&router, request(Method::GET, probe, true, Body::empty())).await;
                assert_ne!(code, StatusCode::TOO_MANY_REQUESTS, "{probe}");
            }
            let watch = router.clone().oneshot(request(
                Method::GET,
                "/api/v1/namespaces/default/configmaps?watch=true",
                true,
                Body::empty(),
            ));
            let watch = watch.await.expect("infallible");
            assert_ne!(
                watch.status(),
                StatusCode::TOO_MANY_REQUESTS,
                "watches take no seat"
            );
        }

        #[tokio::test]
        async fn the_inflight_gauge_counts_reads_and_writes_but_not_watches() {
            let server = server(limits(10, 10)).await;
            let router = server.authenticated_router(TOKEN.into());
            let watch = router.clone().oneshot(request(
                Method::GET,
                "/api/v1/namespaces/default/configmaps?watch=true",
                false,
                Body::empty(),
            ));
            let watch = watch.await.expect("infallible");
            assert_eq!(watch.status(), StatusCode::OK);
            let (_tx, body) = held_body();
            let _held = hold(
                &router,
                request(
                    Method::POST,
                    "/api/v1/namespaces/default/configmaps",
                    false,
                    body,
                ),
            )
            .await;
            tokio::task::yield_now().await;
            let resp = router
                .clone()
                .oneshot(request(Method::GET, "/metrics", false, Body::empty()))
                .await
                .expect("infallible");
            let text = String::from_utf8(
                axum::body::to_bytes(resp.into_body(), usize::MAX)
                    .await
                    .expect("body")
                    .to_vec(),
            )
            .expect("utf-8");
            assert!(
                text.contains("apiserver_current_inflight_requests{request_kind=\"readOnly\"} 1"),
                "only the scrape itself: {text}"
            );
            assert!(
                text.contains("apiserver_current_inflight_requests{request_kind=\"mutating\"} 1"),
                "{text}"
            );
            drop(watch);
        }

        #[tokio::test(start_paused = true)]
        async fn a_request_not_done_within_the_request_timeout_gets_504() {
            let server = server(limits(10, 10)).await;
            let router = server.authenticated_router(TOKEN.into());
            let (_tx, body) = held_body();
            let (code, _, status) = answer(
                &router,
                request(
                    Method::POST,
                    "/api/v1/namespaces/default/configmaps",
                    false,
                    body,
                ),
            )
            .await;
            assert_eq!(code, StatusCode::GATEWAY_TIMEOUT, "{status}");
            assert_eq!(status["reason"], "Timeout");
            assert_eq!(
                status["message"],
                "Timeout: request did not complete within the allotted timeout"
            );
            assert_eq!(status["code"], 504);
        }

        #[tokio::test(start_paused = true)]
        async fn a_watch_outlives_the_request_timeout() {
            let server = server(limits(10, 10)).await;
            let router = server.authenticated_router(TOKEN.into());
            let resp = router
                .clone()
                .oneshot(request(
                    Method::GET,
                    "/api/v1/namespaces/default/configmaps?watch=true",
                    false,
                    Body::empty(),
                ))
                .await
                .expect("infallible");
            assert_eq!(resp.status(), StatusCode::OK);
            tokio::time::sleep(DEFAULT_REQUEST_TIMEOUT * 2).await;
            let (code, _, _) = answer(
                &server.in_process_router(),
                request(
                    Method::POST,
                    "/api/v1/namespaces/default/configmaps",
                    false,
                    Body::from(
                        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"late"}}"#,
                    ),
                ),
            )
            .await;
            assert_eq!(code, StatusCode::CREATED);
            let mut body = resp.into_body();
            use http_body_util::BodyExt;
            let frame = body
                .frame()
                .await
                .expect("the watch is still open")
                .expect("a frame");
            let event: Value =
                serde_json::from_slice(frame.data_ref().expect("data")).expect("an event");
            assert_eq!(event["object"]["metadata"]["name"], "late", "{event}");
        }
    }
}
