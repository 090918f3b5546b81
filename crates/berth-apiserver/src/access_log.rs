//! The access log: one line per request at info level under the target `berth::access`, with
//! what kube-apiserver's httplog prints (`"HTTP" verb=… URI=… latency=… userAgent=… resp=…`)
//! and the user, with the credential's id when it has one (a ServiceAccount token's `JTI=…`,
//! as upstream's audit records it), so that a token's replacement shows. Nothing is copied from a request while the log is off.

use std::time::Duration;

use axum::extract::Request;
use axum::http::{header, Method, Uri};

/// What the log line needs from the request, taken before the request is consumed.
pub struct Entry {
    method: Method,
    uri: Uri,
    user_agent: String,
}

impl Entry {
    /// The request's part of the line, or `None` when the access log is off.
    pub fn begin(req: &Request) -> Option<Entry> {
        if !tracing::enabled!(target: "berth::access", tracing::Level::INFO) {
            return None;
        }
        let user_agent = req
            .headers()
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        Some(Entry {
            method: req.method().clone(),
            uri: req.uri().clone(),
            user_agent,
        })
    }

    /// Writes the line once the response is known.
    pub fn finish(self, user: &str, credential: Option<&str>, code: u16, took: Duration) {
        // The path and query, as upstream logs them (HTTP/2 requests carry an absolute URI).
        let uri = self
            .uri
            .path_and_query()
            .map_or(self.uri.path(), |pq| pq.as_str());
        let uri = uri.strip_suffix('?').unwrap_or(uri);
        tracing::info!(
            target: "berth::access",
            verb = %self.method,
            URI = %uri,
            user = %user,
            credential = credential.unwrap_or(""),
            latency = ?took,
            userAgent = %self.user_agent,
            resp = code,
            "HTTP"
        );
    }
}
