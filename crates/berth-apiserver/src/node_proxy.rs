//! `GET /api/v1/nodes/NODE/proxy/stats/summary`: berth's simulated kubelets publish their stats
//! summary in the ConfigMap `kube-node-lease/berth-stats-NODE` (key `summary`); this route
//! returns it, so `kubectl get --raw .../proxy/stats/summary` works as against a real node.

use crate::context::{read, Ctx};
use crate::error::{ApiError, ApiResult};
use crate::request::{Answer, ApiRequest, Query};
use crate::response::json_response;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::Value;

/// The node named by a summary path, if `path` is one.
pub fn summary_node(path: &str) -> Option<&str> {
    let node = path
        .strip_prefix("/api/v1/nodes/")?
        .strip_suffix("/proxy/stats/summary")?;
    (!node.is_empty() && !node.contains('/')).then_some(node)
}

/// The summary the node's kubelet last published.
pub fn summary(ctx: &Ctx, node: &str) -> ApiResult<Response> {
    let target = crate::path::parse(&format!(
        "/api/v1/namespaces/kube-node-lease/configmaps/berth-stats-{node}"
    ))
    .ok_or(ApiError::NoRoute)?;
    let req = ApiRequest {
        target,
        query: Query::parse(None),
        headers: HeaderMap::new(),
        body: bytes::Bytes::new(),
        answer: Answer::Json,
    };
    let not_found = || ApiError::NotFound {
        resource: "nodes".into(),
        name: node.to_string(),
    };
    let (cm, _) = read(ctx, &req).map_err(|_| not_found())?;
    let summary: Value = cm["data"]["summary"]
        .as_str()
        .and_then(|s| serde_json::from_str(s).ok())
        .ok_or_else(not_found)?;
    Ok(json_response(StatusCode::OK, &summary))
}
