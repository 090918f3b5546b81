//! Subresources with handlers of their own: `pods/binding` (and the older `bindings`),
//! `pods/eviction`, `<parent>/scale` and `serviceaccounts/token`. The router sends them here; `status` is the generic
//! update's (`crate::objects`).

use crate::codec;
use crate::error::{ApiError, ApiResult};
use crate::path::Target;
use crate::request::ApiRequest;
use serde_json::{json, Value};

pub mod binding;
pub mod eviction;
pub mod scale;
pub mod token;

pub(crate) fn success(code: u16) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code})
}

/// Decodes the body of a `binding`/`eviction` request as a `kind` of `group`/`version`: JSON,
/// YAML, or Kubernetes protobuf (what Go clients such as kube-scheduler and `kubectl drain` send).
pub(crate) fn parse_body(
    req: &ApiRequest,
    group: &str,
    version: &str,
    kind: &str,
) -> ApiResult<Value> {
    let validation = req.query.field_validation()?;
    let (v, _warnings) =
        codec::decode_body(&req.body, &req.headers, validation, group, kind, version)?;
    Ok(v)
}

pub(crate) fn pod_request(req: &ApiRequest, name: &str) -> ApiResult<ApiRequest> {
    let rt = berth_api::registry::find("", "v1", "pods").ok_or(ApiError::NoRoute)?;
    Ok(ApiRequest {
        target: Target {
            rt,
            namespace: req.target.namespace.clone(),
            name: Some(name.to_string()),
            subresource: None,
        },
        query: req.query.clone(),
        headers: req.headers.clone(),
        body: bytes::Bytes::new(),
        answer: req.answer,
        user: req.user.clone(),
    })
}

#[cfg(test)]
mod tests;
