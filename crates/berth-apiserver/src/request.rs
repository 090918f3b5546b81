//! What a request asks for: the resource it addresses, query parameters and content
//! negotiation.

use crate::error::ApiError;
use crate::path::{self, Target};
use crate::strict::FieldValidation;
use axum::http::HeaderMap;
use std::collections::HashMap;

/// A request addressed to a resource, with everything the handlers need.
pub struct ApiRequest {
    pub target: Target,
    pub query: Query,
    pub headers: HeaderMap,
    pub body: bytes::Bytes,
    pub answer: Answer,
    /// Who asks (authentication's answer).
    pub user: std::sync::Arc<crate::user::UserInfo>,
}

impl ApiRequest {
    pub fn resource(&self) -> String {
        path::qualified_resource(self.target.rt)
    }
    pub fn name(&self) -> &str {
        self.target.name.as_deref().unwrap_or("")
    }
    pub fn key(&self) -> String {
        path::key(
            self.target.rt,
            self.target.namespace.as_deref(),
            self.name(),
        )
    }
    pub fn not_found(&self) -> ApiError {
        ApiError::NotFound {
            resource: self.resource(),
            name: self.name().to_string(),
        }
    }
}

/// Query parameters of a Kubernetes API request.
#[derive(Debug, Default, Clone)]
pub struct Query {
    params: HashMap<String, String>,
}

impl Query {
    pub fn parse(raw: Option<&str>) -> Query {
        let params = raw
            .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
            .unwrap_or_default();
        Query { params }
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.params.get(name).map(String::as_str)
    }

    pub fn flag(&self, name: &str) -> bool {
        matches!(self.get(name), Some("true") | Some("1"))
    }

    pub fn int(&self, name: &str) -> Result<Option<i64>, ApiError> {
        match self.get(name) {
            None | Some("") => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| {
                ApiError::BadRequest(format!("invalid value for {name}: {v:?} is not an integer"))
            }),
        }
    }

    pub fn dry_run(&self) -> Result<bool, ApiError> {
        match self.get("dryRun") {
            None | Some("") => Ok(false),
            Some("All") => Ok(true),
            Some(other) => Err(ApiError::BadRequest(format!(
                "dryRun: Unsupported value: \"{other}\": supported values: \"All\""
            ))),
        }
    }

    pub fn field_validation(&self) -> Result<FieldValidation, ApiError> {
        FieldValidation::parse(self.get("fieldValidation"))
    }
}

/// The media type a client accepts for the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Json,
    Table,
    AggregatedDiscovery,
}

/// Picks the representation from the Accept header: the first supported entry wins.
pub fn negotiate(headers: &HeaderMap) -> Answer {
    let accept = headers
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    for entry in accept.split(',') {
        let entry = entry.trim();
        let params: Vec<&str> = entry.split(';').map(str::trim).collect();
        let has = |p: &str| params.iter().any(|x| x.replace(' ', "") == p);
        if has("as=Table") && has("g=meta.k8s.io") {
            return Answer::Table;
        }
        if has("as=APIGroupDiscoveryList") && has("g=apidiscovery.k8s.io") && has("v=v2") {
            return Answer::AggregatedDiscovery;
        }
        if params.first().is_some_and(|t| {
            *t == "application/json" || *t == "*/*" || t.is_empty() || *t == "application/*"
        }) {
            return Answer::Json;
        }
    }
    Answer::Json
}

/// The request body's media type, without parameters.
pub fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn accept(v: &'static str) -> Answer {
        let mut h = HeaderMap::new();
        h.insert("accept", HeaderValue::from_static(v));
        negotiate(&h)
    }

    #[test]
    fn kubectl_accept_headers() {
        assert_eq!(accept("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"), Answer::Table);
        assert_eq!(accept("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"), Answer::AggregatedDiscovery);
        assert_eq!(
            accept("application/vnd.kubernetes.protobuf,application/json"),
            Answer::Json
        );
        assert_eq!(accept("application/json, */*"), Answer::Json);
    }
}
