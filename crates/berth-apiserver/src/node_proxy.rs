//! Requests the API server forwards to a node's kubelet, as upstream does:
//! `nodes/NAME/proxy/PATH` (for instance `stats/summary`, `metrics/resource`, `healthz`) and
//! `pods/NAME/log` (the kubelet's `containerLogs`). The kubelet is found from the Node object:
//! `status.daemonEndpoints.kubeletEndpoint.Port` at its first address of the preferred types,
//! with the node's name in the `Host` header (berth's simulated kubelets share one listener and
//! tell their nodes apart by it). `pods/NAME/exec`, `attach` and `portforward` are refused with
//! a Status that says why: simulated nodes run no processes.

use crate::context::{read, Ctx};
use crate::error::{ApiError, ApiResult};
use crate::request::{Answer, ApiRequest, Query};
use crate::response::json_response;
use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use std::time::Duration;

/// The address types tried for a kubelet, in order. Upstream's default starts with `Hostname`;
/// berth's simulated nodes carry unroutable InternalIPs and hostnames, and publish where their
/// endpoints really answer as `InternalDNS`.
pub const PREFERRED_ADDRESS_TYPES: [&str; 5] = [
    "InternalDNS",
    "InternalIP",
    "ExternalDNS",
    "ExternalIP",
    "Hostname",
];

/// How long connecting to a kubelet may take.
const DIAL_TIMEOUT: Duration = Duration::from_secs(5);

/// A request this module answers.
#[derive(Debug, PartialEq, Eq)]
pub enum Target<'a> {
    /// `nodes/NODE/proxy/PATH` (`path` starts with `/`).
    Node { node: &'a str, path: &'a str },
    /// `namespaces/NS/pods/POD/log`.
    Log { namespace: &'a str, pod: &'a str },
    /// `namespaces/NS/pods/POD/{exec,attach,portforward}`.
    Exec {
        namespace: &'a str,
        pod: &'a str,
        what: &'a str,
    },
}

impl<'a> Target<'a> {
    /// The target a request path names, if it is one of ours.
    pub fn of(path: &'a str) -> Option<Target<'a>> {
        if let Some(rest) = path.strip_prefix("/api/v1/nodes/") {
            let (node, rest) = rest.split_once('/')?;
            // `nodes/NAME:PORT/proxy` names the kubelet's port too; berth's has one.
            let node = node.split_once(':').map_or(node, |(n, _)| n);
            let path = match rest.strip_prefix("proxy") {
                Some("") => "/",
                Some(p) if p.starts_with('/') => p,
                _ => return None,
            };
            return (!node.is_empty()).then_some(Target::Node { node, path });
        }
        let rest = path.strip_prefix("/api/v1/namespaces/")?;
        let mut parts = rest.split('/');
        let (namespace, pods, pod, sub) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if pods != "pods" || parts.next().is_some() || namespace.is_empty() || pod.is_empty() {
            return None;
        }
        match sub {
            "log" => Some(Target::Log { namespace, pod }),
            "exec" | "attach" | "portforward" => Some(Target::Exec {
                namespace,
                pod,
                what: sub,
            }),
            _ => None,
        }
    }
}

/// Answers a request for `target`.
pub async fn handle(
    ctx: &Ctx,
    target: Target<'_>,
    method: Method,
    query: Option<&str>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    match target {
        Target::Node { node, path } => {
            let kubelet = kubelet_of(ctx, node)?;
            let uri = match query {
                Some(q) => format!("{path}?{q}"),
                None => path.to_string(),
            };
            forward(&kubelet, method, &uri, &headers, body).await
        }
        Target::Log { namespace, pod } => {
            if method != Method::GET {
                return Err(method_not_allowed());
            }
            let p = get(ctx, &format!("/api/v1/namespaces/{namespace}/pods/{pod}"), "pods", pod)?;
            let q = Query::parse(query);
            let container = log_container(&p, q.get("container"))?;
            let node = p["spec"]["nodeName"].as_str().unwrap_or_default();
            if node.is_empty() {
                return Err(ApiError::BadRequest(format!(
                    "container \"{container}\" in pod \"{pod}\" is waiting to start: pod is not scheduled"
                )));
            }
            let kubelet = kubelet_of(ctx, node)?;
            let options: String = form_urlencoded::Serializer::new(String::new())
                .extend_pairs(
                    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
                        .filter(|(k, _)| k != "container"),
                )
                .finish();
            let uri = format!("/containerLogs/{namespace}/{pod}/{container}?{options}");
            let resp = forward(&kubelet, Method::GET, &uri, &HeaderMap::new(), Body::empty()).await?;
            // The kubelet's refusal (no previous run, ...) becomes a Status, as upstream's
            // response checker makes it.
            if resp.status() == StatusCode::BAD_REQUEST {
                let body = axum::body::to_bytes(resp.into_body(), 64 << 10)
                    .await
                    .unwrap_or_default();
                return Err(ApiError::BadRequest(
                    String::from_utf8_lossy(&body).trim().to_string(),
                ));
            }
            Ok(resp)
        }
        Target::Exec { pod, what, .. } => Err(ApiError::BadRequest(format!(
            "{what} is not supported on simulated nodes: pod {pod} runs no processes (berth simulates containers)"
        ))),
    }
}

fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed(
        "the server does not allow this method on the requested resource".into(),
    )
}

/// The stored object at `path`, or NotFound naming `resource`/`name`.
fn get(ctx: &Ctx, path: &str, resource: &str, name: &str) -> ApiResult<Value> {
    let not_found = || ApiError::NotFound {
        resource: resource.into(),
        name: name.to_string(),
    };
    let target = crate::path::parse(path).ok_or_else(not_found)?;
    let req = ApiRequest {
        target,
        query: Query::parse(None),
        headers: HeaderMap::new(),
        body: bytes::Bytes::new(),
        answer: Answer::Json,
        user: std::sync::Arc::new(crate::user::UserInfo::admin()),
    };
    read(ctx, &req).map(|(v, _)| v)
}

/// The container whose log is asked for: the one named, or the pod's only container.
pub fn log_container(pod: &Value, named: Option<&str>) -> ApiResult<String> {
    let name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let names: Vec<&str> = ["containers", "initContainers"]
        .iter()
        .flat_map(|k| pod["spec"][k].as_array().into_iter().flatten())
        .filter_map(|c| c["name"].as_str())
        .collect();
    match named {
        Some(c) if names.contains(&c) => Ok(c.to_string()),
        Some(c) => Err(ApiError::BadRequest(format!(
            "container {c} is not valid for pod {name}"
        ))),
        None if pod["spec"]["containers"].as_array().map(Vec::len) == Some(1) => {
            Ok(names[0].to_string())
        }
        None => Err(ApiError::BadRequest(format!(
            "a container name must be specified for pod {name}, choose one of: [{}]",
            names.join(" ")
        ))),
    }
}

/// Where a node's kubelet answers.
#[derive(Debug, PartialEq, Eq)]
pub struct Kubelet {
    pub node: String,
    pub host: String,
    pub port: u16,
}

/// The kubelet of a Node object, from its status.
pub fn kubelet_location(node: &Value) -> Option<Kubelet> {
    let status = &node["status"];
    let port = status["daemonEndpoints"]["kubeletEndpoint"]["Port"]
        .as_u64()
        .and_then(|p| u16::try_from(p).ok())
        .filter(|p| *p > 0)?;
    let addresses = status["addresses"].as_array()?;
    let host = PREFERRED_ADDRESS_TYPES.iter().find_map(|t| {
        addresses
            .iter()
            .find(|a| a["type"] == *t)
            .and_then(|a| a["address"].as_str())
            .filter(|a| !a.is_empty())
    })?;
    Some(Kubelet {
        node: node["metadata"]["name"].as_str()?.to_string(),
        host: host.to_string(),
        port,
    })
}

fn kubelet_of(ctx: &Ctx, node: &str) -> ApiResult<Kubelet> {
    let n = get(ctx, &format!("/api/v1/nodes/{node}"), "nodes", node)?;
    kubelet_location(&n)
        .ok_or_else(|| ApiError::BadRequest(format!("node {node} publishes no kubelet endpoint")))
}

/// A kubelet's `/stats/summary`, or `None` when it does not answer with one.
pub async fn kubelet_summary(kubelet: &Kubelet) -> Option<Value> {
    let resp = forward(
        kubelet,
        Method::GET,
        "/stats/summary",
        &HeaderMap::new(),
        Body::empty(),
    )
    .await
    .ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let body = axum::body::to_bytes(resp.into_body(), 64 << 20)
        .await
        .ok()?;
    serde_json::from_slice(&body).ok()
}

/// upstream's answer when the kubelet cannot be reached.
fn unreachable(kubelet: &Kubelet, error: impl std::fmt::Display) -> Response {
    json_response(
        StatusCode::SERVICE_UNAVAILABLE,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": format!("error trying to reach service: dial tcp {}:{}: {error}", kubelet.host, kubelet.port),
                "reason": "ServiceUnavailable", "code": 503}),
    )
}

async fn forward(
    kubelet: &Kubelet,
    method: Method,
    uri: &str,
    headers: &HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let uri: Uri = uri
        .parse()
        .map_err(|e| ApiError::BadRequest(format!("proxy path: {e}")))?;
    let dial = tokio::net::TcpStream::connect((kubelet.host.as_str(), kubelet.port));
    let stream = match tokio::time::timeout(DIAL_TIMEOUT, dial).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Ok(unreachable(kubelet, e)),
        Err(_) => return Ok(unreachable(kubelet, "i/o timeout")),
    };
    let (mut sender, conn) = match hyper::client::conn::http1::handshake(TokioIo::new(stream)).await
    {
        Ok(c) => c,
        Err(e) => return Ok(unreachable(kubelet, e)),
    };
    // The connection is driven until the (possibly followed) response body ends.
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "kubelet connection ended");
        }
    });
    let mut req = hyper::Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        if k == header::ACCEPT || k == header::CONTENT_TYPE {
            req = req.header(k, v);
        }
    }
    let host = HeaderValue::from_str(&kubelet.node)
        .map_err(|_| ApiError::BadRequest(format!("node name {:?}", kubelet.node)))?;
    let req = req
        .header(header::HOST, host)
        .body(body)
        .map_err(|e| ApiError::Internal(format!("building the kubelet request: {e}")))?;
    match sender.send_request(req).await {
        Ok(resp) => Ok(resp.map(Body::new).into_response()),
        Err(e) => Ok(unreachable(kubelet, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_paths() {
        assert_eq!(
            Target::of("/api/v1/nodes/n1/proxy/stats/summary"),
            Some(Target::Node {
                node: "n1",
                path: "/stats/summary"
            })
        );
        assert_eq!(
            Target::of("/api/v1/nodes/n1:10250/proxy"),
            Some(Target::Node {
                node: "n1",
                path: "/"
            })
        );
        assert_eq!(Target::of("/api/v1/nodes/n1/proxyx"), None);
        assert_eq!(Target::of("/api/v1/nodes/n1/status"), None);
        assert_eq!(
            Target::of("/api/v1/namespaces/d/pods/p/log"),
            Some(Target::Log {
                namespace: "d",
                pod: "p"
            })
        );
        assert_eq!(
            Target::of("/api/v1/namespaces/d/pods/p/exec"),
            Some(Target::Exec {
                namespace: "d",
                pod: "p",
                what: "exec"
            })
        );
        assert_eq!(Target::of("/api/v1/namespaces/d/pods/p/status"), None);
        assert_eq!(Target::of("/api/v1/namespaces/d/pods/p/log/x"), None);
    }

    #[test]
    fn kubelet_at_the_preferred_address() {
        let node = json!({"metadata": {"name": "n1"}, "status": {
            "addresses": [{"type": "Hostname", "address": "n1"}, {"type": "InternalIP", "address": "10.0.0.2"},
                          {"type": "InternalDNS", "address": "127.0.0.1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 4321}}}});
        assert_eq!(
            kubelet_location(&node),
            Some(Kubelet {
                node: "n1".into(),
                host: "127.0.0.1".into(),
                port: 4321
            })
        );
        assert_eq!(kubelet_location(&json!({"metadata": {"name": "n"}})), None);
    }

    #[test]
    fn the_log_container_is_named_or_the_only_one() {
        let one = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}});
        assert_eq!(log_container(&one, None).ok(), Some("c".into()));
        assert!(log_container(&one, Some("x")).is_err());
        let two = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        let e = log_container(&two, None).err().map(|e| e.message());
        assert_eq!(
            e.as_deref(),
            Some("a container name must be specified for pod p, choose one of: [a b]")
        );
    }
}
