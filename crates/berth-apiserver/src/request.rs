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
    /// `application/vnd.kubernetes.protobuf` first, with JSON acceptable after it (client-go
    /// configured for protobuf): protobuf when the kind has a protobuf form, else JSON.
    Protobuf,
    /// Protobuf and nothing else: a kind without a protobuf form is upstream's 406.
    ProtobufOnly,
}

impl Answer {
    pub fn is_protobuf(self) -> bool {
        matches!(self, Answer::Protobuf | Answer::ProtobufOnly)
    }
}

/// Picks the representation from the Accept header: the first supported entry wins.
///
/// A plain header check, done on every request: JSON clients pay for a few comparisons.
pub fn negotiate(headers: &HeaderMap) -> Answer {
    let accept = headers
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let mut entries = accept.split(',');
    while let Some(entry) = entries.next() {
        let entry = entry.trim();
        let params: Vec<&str> = entry.split(';').map(str::trim).collect();
        let has = |p: &str| params.iter().any(|x| x.replace(' ', "") == p);
        if has("as=Table") && has("g=meta.k8s.io") {
            return Answer::Table;
        }
        if has("as=APIGroupDiscoveryList") && has("g=apidiscovery.k8s.io") && has("v=v2") {
            return Answer::AggregatedDiscovery;
        }
        let media_type = params.first().copied().unwrap_or("");
        if media_type.eq_ignore_ascii_case(crate::protobuf::MEDIA_TYPE)
            // Other representations (`as=...`) in protobuf are not served: skip the entry.
            && !params.iter().any(|p| p.starts_with("as="))
        {
            // `;stream=watch` (what watches ask for) names the same encoding.
            return if entries.any(|rest| accepts_json(rest.split(';').next().unwrap_or(""))) {
                Answer::Protobuf
            } else {
                Answer::ProtobufOnly
            };
        }
        if accepts_json(media_type) {
            return Answer::Json;
        }
    }
    Answer::Json
}

/// Whether an Accept entry's media type admits a JSON answer.
fn accepts_json(media_type: &str) -> bool {
    let t = media_type.trim();
    t == "application/json" || t == "*/*" || t.is_empty() || t == "application/*"
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
        assert_eq!(accept("application/json, */*"), Answer::Json);
        assert_eq!(accept(""), Answer::Json);
        assert_eq!(accept("application/yaml"), Answer::Json);
    }

    #[test]
    fn client_go_protobuf_accept_headers() {
        // client-go with ContentType protobuf: protobuf, JSON as a fallback.
        assert_eq!(
            accept("application/vnd.kubernetes.protobuf, application/json"),
            Answer::Protobuf
        );
        assert_eq!(
            accept("application/vnd.kubernetes.protobuf;stream=watch, */*"),
            Answer::Protobuf
        );
        // Protobuf only (no JSON fallback configured).
        assert_eq!(
            accept("application/vnd.kubernetes.protobuf"),
            Answer::ProtobufOnly
        );
        assert_eq!(
            accept("application/vnd.kubernetes.protobuf;stream=watch"),
            Answer::ProtobufOnly
        );
        assert_eq!(
            accept("application/vnd.kubernetes.protobuf, application/yaml"),
            Answer::ProtobufOnly
        );
        // The first supported entry wins.
        assert_eq!(
            accept("application/json, application/vnd.kubernetes.protobuf"),
            Answer::Json
        );
        // A Table is served in JSON, whatever encoding the entry names.
        assert_eq!(
            accept(
                "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json"
            ),
            Answer::Table
        );
    }
}
