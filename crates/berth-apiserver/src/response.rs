//! Building responses: JSON bodies, objects in the representation the client accepted, warning
//! headers and streamed bodies.

use crate::context::Ctx;
use crate::request::{Answer, ApiRequest, Query};
use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use berth_api::tables::{self, IncludeObject};
use serde_json::{json, Value};

/// A JSON response with the given status.
pub fn json_response(code: StatusCode, v: &Value) -> Response {
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        v.to_string(),
    )
        .into_response()
}

/// How much of each object a server-side Table carries (`includeObject`).
pub fn include_object(q: &Query) -> IncludeObject {
    match q.get("includeObject") {
        Some("None") => IncludeObject::None,
        Some("Object") => IncludeObject::Object,
        _ => IncludeObject::Metadata,
    }
}

/// An object or list in the representation the client accepted.
pub fn respond(ctx: &Ctx, req: &ApiRequest, code: StatusCode, v: Value) -> Response {
    if req.answer == Answer::Table && req.target.subresource.is_none() {
        let list_meta = json!({"resourceVersion": v["metadata"]["resourceVersion"]});
        let t = tables::table(
            req.target.rt,
            &[v],
            list_meta,
            include_object(&req.query),
            ctx.clock.now(),
            true,
        );
        return json_response(code, &t);
    }
    // Straight to bytes: `json_response` formats through `Display`, which is slower.
    let body = serde_json::to_vec(&v).unwrap_or_default();
    (code, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Adds `Warning: 299 - "..."` headers, as upstream does for `fieldValidation=Warn`.
pub fn with_warnings(mut resp: Response, warnings: &[String]) -> Response {
    for w in warnings {
        // Quoted as an RFC 7234 warn-text, so kubectl prints the text as upstream's.
        let text = w.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(v) = axum::http::HeaderValue::from_str(&format!("299 - \"{text}\"")) {
            resp.headers_mut().append("warning", v);
        }
    }
    resp
}

/// A chunked response body fed by a stream of lines.
pub fn streaming(
    stream: impl futures::Stream<Item = Result<bytes::Bytes, std::io::Error>> + Send + 'static,
) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CACHE_CONTROL, "no-cache, private")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}
