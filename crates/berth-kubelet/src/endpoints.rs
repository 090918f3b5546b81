//! The simulated kubelets' HTTP endpoints, as a real kubelet serves them on its port 10250:
//! `/healthz`, `/stats/summary`, `/metrics/resource`, `/configz` and
//! `/containerLogs/{ns}/{pod}/{container}`.
//!
//! One listener serves every simulated node of the process; a request names its node in the
//! `Host` header (the API server's node proxy sends the node's name there), so a node's
//! endpoint is `(listener address, node name)`, published in the Node's
//! `status.daemonEndpoints.kubeletEndpoint.Port` and `status.addresses`.
//!
//! The listener speaks plain HTTP and binds the loopback address by default: its only client is
//! the API server, which authenticates and authorizes the user before it proxies. Answers are
//! computed from the node's model on each request, so nothing is written into the API.

use crate::logs;
use crate::sim::Sim;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::sync::Arc;

/// The node a `Host` header names: its host part, without a port.
pub fn node_of_host(host: &str) -> Option<&str> {
    let name = match host.rsplit_once(':') {
        Some((name, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    };
    (!name.is_empty()).then_some(name)
}

/// Serves the endpoints of every node of `sim` on `listener` until the process ends.
pub async fn serve(listener: tokio::net::TcpListener, sim: Arc<Sim>) {
    if let Err(e) = axum::serve(listener, router(sim)).await {
        tracing::error!(error = %e, "the kubelet endpoints stopped");
    }
}

/// The endpoints' routes.
pub fn router(sim: Arc<Sim>) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/stats/summary", get(stats_summary))
        .route("/configz", get(configz))
        .route("/metrics/resource", get(metrics_resource))
        .route(
            "/containerLogs/{namespace}/{pod}/{container}",
            get(container_logs),
        )
        .fallback(not_found)
        .with_state(sim)
}

fn text(code: StatusCode, body: String) -> Response {
    (
        code,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}

fn not_found() -> std::future::Ready<Response> {
    std::future::ready(text(StatusCode::NOT_FOUND, "404 page not found\n".into()))
}

/// The node a request addresses, or the answer for a request that addresses none of ours.
// The error is the response itself, built once per request: boxing it buys nothing here.
#[allow(clippy::result_large_err)]
fn node(sim: &Sim, headers: &HeaderMap) -> Result<String, Response> {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    match node_of_host(host) {
        // A stopped or partitioned node does not answer (as a dead or cut-off machine).
        Some(n) if sim.has_node(n) && !sim.mode(n).reaches_api() => Err(text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "node {n} does not answer ({}={})\n",
                crate::simulate::SIMULATE_ANNOTATION,
                sim.mode(n)
            ),
        )),
        Some(n) if sim.has_node(n) => Ok(n.to_string()),
        _ => Err(text(
            StatusCode::NOT_FOUND,
            format!("no simulated node named {host:?} here (the Host header names the node)\n"),
        )),
    }
}

async fn healthz(State(sim): State<Arc<Sim>>, headers: HeaderMap) -> Response {
    match node(&sim, &headers) {
        Ok(_) => text(StatusCode::OK, "ok".into()),
        Err(r) => r,
    }
}

async fn stats_summary(State(sim): State<Arc<Sim>>, headers: HeaderMap) -> Response {
    match node(&sim, &headers).map(|n| sim.summary(&n)) {
        Ok(Some(s)) => axum::Json(s).into_response(),
        Ok(None) => not_found().await,
        Err(r) => r,
    }
}

async fn configz(State(sim): State<Arc<Sim>>, headers: HeaderMap) -> Response {
    match node(&sim, &headers).map(|n| sim.configz(&n)) {
        Ok(Some(c)) => axum::Json(c).into_response(),
        Ok(None) => not_found().await,
        Err(r) => r,
    }
}

async fn metrics_resource(State(sim): State<Arc<Sim>>, headers: HeaderMap) -> Response {
    match node(&sim, &headers).map(|n| sim.summary(&n)) {
        Ok(Some(s)) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
            crate::summary::resource_metrics(&s, sim.clock().now().timestamp_millis()),
        )
            .into_response(),
        Ok(None) => not_found().await,
        Err(r) => r,
    }
}

async fn container_logs(
    State(sim): State<Arc<Sim>>,
    headers: HeaderMap,
    Path((namespace, pod, container)): Path<(String, String, String)>,
    RawQuery(query): RawQuery,
) -> Response {
    let node = match node(&sim, &headers) {
        Ok(n) => n,
        Err(r) => return r,
    };
    let options = logs::Options::parse(query.as_deref());
    let key = format!("{namespace}/{pod}");
    match sim.container_log(&node, &key, &container, &options) {
        Ok(log) if options.follow && !options.previous => {
            follow(sim, node, key, container, options, log)
        }
        Ok(log) => text(StatusCode::OK, log),
        // As the kubelet: a missing pod is not found, a wrong container or no previous run
        // is a bad request (the API server turns it into a Status).
        Err(e @ logs::LogError::NoPod(_)) => text(StatusCode::NOT_FOUND, format!("{e}\n")),
        Err(e) => text(StatusCode::BAD_REQUEST, format!("{e}\n")),
    }
}

/// How often a followed log is looked at again.
const FOLLOW_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// `kubectl logs -f`: the log so far, then each new line as the container's life goes on,
/// until the pod is gone from the node or has ended.
fn follow(
    sim: Arc<Sim>,
    node: String,
    key: String,
    container: String,
    options: logs::Options,
    first: String,
) -> Response {
    // Lines are compared without timestamps: a usage line keeps its text while its time moves.
    let plain = logs::Options {
        timestamps: false,
        tail_lines: None,
        follow: false,
        previous: false,
    };
    let seen = sim
        .container_log(&node, &key, &container, &plain)
        .map(|l| l.lines().map(String::from).collect::<Vec<_>>())
        .unwrap_or_default();
    let start = futures::stream::once(async move { Ok::<_, std::io::Error>(first) });
    let rest = futures::stream::unfold(Some(seen), move |seen| {
        let (sim, node, key, container, options, plain) = (
            sim.clone(),
            node.clone(),
            key.clone(),
            container.clone(),
            options.clone(),
            plain.clone(),
        );
        async move {
            let mut seen = seen?;
            loop {
                tokio::time::sleep(FOLLOW_EVERY).await;
                let Ok(now) = sim.container_log(&node, &key, &container, &plain) else {
                    return None;
                };
                let ended = sim.pod_ended(&node, &key);
                let lines: Vec<String> = now.lines().map(String::from).collect();
                // New lines: those past what was sent, or a changed last line (usage moved).
                let common = seen.iter().zip(&lines).take_while(|(a, b)| a == b).count();
                if common == lines.len() && !ended {
                    continue;
                }
                let with_time = logs::Options {
                    tail_lines: None,
                    ..options
                };
                let out: String = sim
                    .container_log(&node, &key, &container, &with_time)
                    .unwrap_or_default()
                    .lines()
                    .skip(common)
                    .map(|l| format!("{l}\n"))
                    .collect();
                seen = lines;
                let next = (!ended).then_some(seen);
                return Some((Ok::<_, std::io::Error>(out), next));
            }
        }
    });
    use futures::StreamExt;
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        axum::body::Body::from_stream(start.chain(rest)),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn host_names_the_node() {
        assert_eq!(node_of_host("node-1"), Some("node-1"));
        assert_eq!(node_of_host("node-1:10250"), Some("node-1"));
        assert_eq!(node_of_host(""), None);
        assert_eq!(node_of_host(":10250"), None);
        assert_eq!(node_of_host("node-1:"), Some("node-1:"));
    }

    proptest! {
        #[test]
        fn any_host_is_answered_without_panic(host in ".*") {
            if let Some(n) = node_of_host(&host) {
                prop_assert!(!n.is_empty());
                prop_assert!(host.starts_with(n));
            }
        }
    }
}
