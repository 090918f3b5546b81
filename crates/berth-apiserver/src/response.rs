//! Building responses: JSON bodies, objects in the representation the client accepted (JSON,
//! a Table or protobuf), errors as Status objects, warning headers and streamed bodies.

use crate::codec;
use crate::context::Ctx;
use crate::error::ApiError;
use crate::path::Target;
use crate::protobuf;
use crate::request::{Answer, ApiRequest, Query};
use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use berth_api::tables::{self, IncludeObject};
use berth_store::KeyValue;
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
    answer(req.answer, code, &v)
}

/// The answer to a write of `v`, stored as `kv`: for a JSON client, the stored bytes with the
/// version stamped in (see [`codec::stamped_json`]), the same bytes serializing `v` would give
/// without walking its tree again; else `v` stamped, as [`respond`].
pub fn respond_written(
    ctx: &Ctx,
    req: &ApiRequest,
    code: StatusCode,
    kv: &KeyValue,
    target: &Target,
    mut v: Value,
) -> Response {
    if req.answer == Answer::Json {
        if let Some(body) = codec::stamped_json(kv, target) {
            return (code, [(header::CONTENT_TYPE, "application/json")], body).into_response();
        }
    }
    codec::stamp(&mut v, kv.mod_revision, target);
    respond(ctx, req, code, v)
}

/// `v` (an object with its `apiVersion` and `kind`) in protobuf if the client asked for it and
/// the kind has a protobuf form, else in JSON (or 406 when the client takes protobuf only).
pub fn answer(answer: Answer, code: StatusCode, v: &Value) -> Response {
    if answer.is_protobuf() {
        let (api_version, kind) = (
            v["apiVersion"].as_str().unwrap_or(""),
            v["kind"].as_str().unwrap_or(""),
        );
        if protobuf::supports(api_version, kind) {
            return protobuf_or_json(answer, code, protobuf::encode(v), v);
        }
        if answer == Answer::ProtobufOnly {
            return not_acceptable();
        }
    }
    // Straight to bytes: `json_response` formats through `Display`, which is slower.
    let body = serde_json::to_vec(v).unwrap_or_default();
    (code, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// A list `{"kind": "<Kind>List", "metadata", "items"}` of `item_kind` objects, as [`answer`].
pub fn answer_list(answer: Answer, item_kind: &str, list: &Value) -> Response {
    if answer.is_protobuf() {
        let api_version = list["apiVersion"].as_str().unwrap_or("");
        if protobuf::supports(api_version, item_kind) {
            let encoded = protobuf::encode_list(list, item_kind);
            return protobuf_or_json(answer, StatusCode::OK, encoded, list);
        }
        if answer == Answer::ProtobufOnly {
            return not_acceptable();
        }
    }
    json_response(StatusCode::OK, list)
}

/// The encoded answer; if the stored JSON does not fit the schema (it should), JSON when the
/// client takes it, else a 500 Status it can read.
fn protobuf_or_json(
    answer: Answer,
    code: StatusCode,
    encoded: Result<Vec<u8>, String>,
    v: &Value,
) -> Response {
    match encoded {
        Ok(body) => protobuf_response(code, body),
        Err(_) if answer == Answer::Protobuf => json_response(code, v),
        Err(e) => error(
            answer,
            ApiError::Internal(format!("encoding the answer in protobuf: {e}")),
        ),
    }
}

fn protobuf_response(code: StatusCode, body: Vec<u8>) -> Response {
    (code, [(header::CONTENT_TYPE, protobuf::MEDIA_TYPE)], body).into_response()
}

/// An error as the Status object the client reads: protobuf if it asked for protobuf (a Status
/// always has a protobuf form), with the JSON answer's code and headers (`Retry-After`).
pub fn error(answer: Answer, e: ApiError) -> Response {
    if !answer.is_protobuf() {
        return e.into_response();
    }
    let status = e.status();
    let mut resp = e.into_response();
    if let Ok(body) = protobuf::encode(&status) {
        *resp.body_mut() = Body::from(body);
        let headers = resp.headers_mut();
        headers.remove(header::CONTENT_LENGTH);
        headers.insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static(protobuf::MEDIA_TYPE),
        );
    }
    resp
}

/// Upstream's answer when nothing the client accepts can carry the object (a kind without a
/// protobuf form asked for in protobuf only): 406, its Status in JSON, as upstream writes it
/// when negotiation fails.
pub fn not_acceptable() -> Response {
    json_response(
        StatusCode::NOT_ACCEPTABLE,
        &json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "only the following media types are accepted: application/json, application/yaml",
            "reason": "NotAcceptable",
            "code": 406,
        }),
    )
}

/// Characters of warning text one answer carries before its warnings are truncated (upstream's
/// warning recorder): one request naming 2,000 unknown fields got 2,000 headers.
pub const WARNINGS_TOTAL_CHARS: usize = 4 * 1024;
/// Characters each warning keeps once an answer's warnings are truncated.
pub const WARNING_TRUNCATED_CHARS: usize = 256;

/// The warnings an answer carries, as upstream's recorder keeps them: each text once; past
/// [`WARNINGS_TOTAL_CHARS`] in all, every warning is cut to [`WARNING_TRUNCATED_CHARS`]
/// characters, and once the cut ones reach the total too, the rest are dropped.
pub fn bounded_warnings(warnings: &[String]) -> Vec<String> {
    let cut = |w: &str| w.chars().take(WARNING_TRUNCATED_CHARS).collect::<String>();
    let mut seen = std::collections::HashSet::new();
    let unique: Vec<&str> = warnings
        .iter()
        .map(String::as_str)
        .filter(|w| !w.is_empty() && seen.insert(*w))
        .collect();
    let total: usize = unique.iter().map(|w| w.chars().count()).sum();
    if total <= WARNINGS_TOTAL_CHARS {
        return unique.into_iter().map(str::to_string).collect();
    }
    let mut written = 0;
    let mut out = Vec::new();
    for w in unique {
        if written >= WARNINGS_TOTAL_CHARS {
            break;
        }
        let w = cut(w);
        written += w.chars().count();
        out.push(w);
    }
    out
}

/// Adds `Warning: 299 - "..."` headers, as upstream does for `fieldValidation=Warn`, bounded as
/// [`bounded_warnings`] says.
pub fn with_warnings(mut resp: Response, warnings: &[String]) -> Response {
    for w in &bounded_warnings(warnings) {
        // Quoted as an RFC 7234 warn-text, so kubectl prints the text as upstream's.
        let text = w.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(v) = axum::http::HeaderValue::from_str(&format!("299 - \"{text}\"")) {
            resp.headers_mut().append("warning", v);
        }
    }
    resp
}

/// A chunked response body of type `content_type` fed by a stream of lines or frames.
pub fn streaming(
    content_type: &'static str,
    stream: impl futures::Stream<Item = Result<bytes::Bytes, std::io::Error>> + Send + 'static,
) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, content_type)
        .header(header::CACHE_CONTROL, "no-cache, private")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

#[cfg(test)]
mod tests {
    #[test]
    fn warnings_are_deduplicated_then_truncated_then_dropped_as_upstream() {
        let few = vec!["a".to_string(), "b".to_string(), "a".to_string()];
        assert_eq!(super::bounded_warnings(&few), vec!["a", "b"]);
        // 2,000 distinct warnings of 300 characters: cut to 256 each, 16 of them fill 4 KiB.
        let many: Vec<String> = (0..2000).map(|i| format!("{i:0>300}")).collect();
        let kept = super::bounded_warnings(&many);
        assert_eq!(kept.len(), 16);
        assert!(kept.iter().all(|w| w.chars().count() == 256));
        assert_eq!(kept[0], many[0][..256]);
        // Under the total, nothing is cut.
        let fit: Vec<String> = (0..10).map(|i| format!("{i:0>300}")).collect();
        assert_eq!(super::bounded_warnings(&fit), fit);
    }

    use super::*;

    fn content_type(r: &Response) -> &str {
        r.headers()[header::CONTENT_TYPE].to_str().unwrap()
    }

    #[test]
    fn protobuf_answers_and_their_fallbacks() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}});
        let crd = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab"});
        for a in [Answer::Protobuf, Answer::ProtobufOnly] {
            let r = answer(a, StatusCode::OK, &pod);
            assert_eq!(content_type(&r), protobuf::MEDIA_TYPE);
        }
        assert_eq!(
            content_type(&answer(Answer::Json, StatusCode::OK, &pod)),
            "application/json"
        );
        // A kind without a protobuf form: JSON for a client that takes it, else 406.
        let r = answer(Answer::Protobuf, StatusCode::OK, &crd);
        assert_eq!(content_type(&r), "application/json");
        let r = answer(Answer::ProtobufOnly, StatusCode::OK, &crd);
        assert_eq!(r.status(), StatusCode::NOT_ACCEPTABLE);
        let list =
            json!({"apiVersion": "stable.example.com/v1", "kind": "CronTabList", "items": []});
        let r = answer_list(Answer::ProtobufOnly, "CronTab", &list);
        assert_eq!(r.status(), StatusCode::NOT_ACCEPTABLE);
        // `kubectl auth whoami` (protobuf, JSON fallback) reads status.userInfo, which the
        // table's SelfSubjectReview lacks: JSON.
        let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview",
            "status": {"userInfo": {"username": "alice"}}});
        let r = answer(Answer::Protobuf, StatusCode::CREATED, &review);
        assert_eq!(content_type(&r), "application/json");
    }

    #[test]
    fn errors_keep_their_code_and_headers_in_protobuf() {
        let e = || ApiError::TooManyRequests {
            message: "slow down".into(),
            causes: vec![],
        };
        let r = error(Answer::ProtobufOnly, e());
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(content_type(&r), protobuf::MEDIA_TYPE);
        assert_eq!(r.headers()["retry-after"], "5");
        let r = error(Answer::Json, e());
        assert_eq!(content_type(&r), "application/json");
    }
}
