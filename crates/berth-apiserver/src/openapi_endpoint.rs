//! `GET /openapi/v2`, `/openapi/v3` and `/openapi/v3/<group-version>`: the documents of
//! `berth_api::openapi`, with the caching headers kubectl relies on.
//!
//! - v3 documents are addressed by hash (`?hash=H` from the index): the current hash is
//!   answered with `Cache-Control: public, immutable`, another one with a redirect to the
//!   current URL, as upstream does; no hash gets the document uncached.
//! - v2 is JSON unless the client asks for protobuf (kubectl does, and only reads protobuf).
//! - Every document has an `ETag`; a matching `If-None-Match` is answered 304.

use axum::body::Bytes;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use berth_api::openapi::{self, Served};

use crate::apiextensions::CustomKinds;
use crate::error::ApiError;

/// The response to `path`, or `None` when `path` is not an OpenAPI path.
/// `custom` supplies `/openapi/v2` while custom kinds are served.
pub fn respond(
    path: &str,
    query: Option<&str>,
    headers: &HeaderMap,
    custom: &CustomKinds,
) -> Option<Response> {
    if matches!(path, "/openapi/v2" | "/openapi/v2/") {
        if let Some(v2) = crate::apiextensions::openapi::v2(custom) {
            let (form, content_type) = if wants_protobuf(headers) {
                (&v2.protobuf, openapi::OPENAPI_V2_CONTENT_TYPE)
            } else {
                (&v2.json, JSON)
            };
            return Some(answer(
                &form.hash,
                form.body.clone(),
                content_type,
                headers,
                "no-cache, private",
            ));
        }
    }
    let response = match path {
        "/openapi/v2" | "/openapi/v2/" if wants_protobuf(headers) => document(
            openapi::v2_protobuf(),
            openapi::OPENAPI_V2_CONTENT_TYPE,
            headers,
            "no-cache, private",
        ),
        "/openapi/v2" | "/openapi/v2/" => {
            document(openapi::v2(), JSON, headers, "no-cache, private")
        }
        "/openapi/v3" | "/openapi/v3/" => {
            document(openapi::v3_index(), JSON, headers, "no-cache, private")
        }
        p => {
            let gv = p.strip_prefix("/openapi/v3/")?;
            let Some(served) = openapi::v3(gv) else {
                return Some(ApiError::NoRoute.into_response());
            };
            match hash_param(query) {
                Some(h) if h != served.hash => redirect(gv, &served.hash),
                Some(_) => document(served, JSON, headers, "public, immutable"),
                None => document(served, JSON, headers, "no-cache, private"),
            }
        }
    };
    Some(response)
}

const JSON: &str = "application/json";

fn document(
    served: &'static Served,
    content_type: &'static str,
    headers: &HeaderMap,
    cache: &'static str,
) -> Response {
    let body = Bytes::from_static(served.body.as_slice());
    answer(&served.hash, body, content_type, headers, cache)
}

/// A document answered by its hash: 304 to a matching `If-None-Match`, else the body.
fn answer(
    hash: &str,
    body: Bytes,
    content_type: &'static str,
    headers: &HeaderMap,
    cache: &'static str,
) -> Response {
    let etag = format!("\"{hash}\"");
    let not_modified = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    let etag = HeaderValue::from_str(&etag).unwrap_or(HeaderValue::from_static("\"\""));
    let cache = HeaderValue::from_static(cache);
    if not_modified {
        return (
            StatusCode::NOT_MODIFIED,
            [(header::ETAG, etag), (header::CACHE_CONTROL, cache)],
        )
            .into_response();
    }
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (header::ETAG, etag),
            (header::CACHE_CONTROL, cache),
        ],
        body,
    )
        .into_response()
}

fn redirect(gv: &str, hash: &str) -> Response {
    let location = format!("/openapi/v3/{}?hash={hash}", gv.trim_matches('/'));
    match HeaderValue::from_str(&location) {
        Ok(location) => (
            StatusCode::MOVED_PERMANENTLY,
            [
                (header::LOCATION, location),
                (
                    header::CACHE_CONTROL,
                    HeaderValue::from_static("no-cache, private"),
                ),
            ],
        )
            .into_response(),
        Err(_) => ApiError::NoRoute.into_response(),
    }
}

fn hash_param(query: Option<&str>) -> Option<&str> {
    query?.split('&').find_map(|kv| kv.strip_prefix("hash="))
}

/// kubectl's Accept for v2 is `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`;
/// JSON (or no Accept) gets JSON, as upstream.
fn wants_protobuf(headers: &HeaderMap) -> bool {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let first = accept.split(',').next().unwrap_or("").trim();
    first.contains("protobuf")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The answer with no custom kinds served.
    fn respond(path: &str, query: Option<&str>, headers: &HeaderMap) -> Option<Response> {
        super::respond(path, query, headers, &CustomKinds::default())
    }

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn v2_is_json_unless_protobuf_is_asked_for() {
        let json = respond("/openapi/v2", None, &HeaderMap::new()).unwrap();
        assert_eq!(json.status(), StatusCode::OK);
        assert_eq!(json.headers()[header::CONTENT_TYPE], "application/json");
        let kubectl = headers(&[(
            header::ACCEPT,
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
        )]);
        let proto = respond("/openapi/v2", None, &kubectl).unwrap();
        assert_eq!(
            proto.headers()[header::CONTENT_TYPE],
            openapi::OPENAPI_V2_CONTENT_TYPE
        );
    }

    #[test]
    fn v3_documents_by_hash() {
        let hash = openapi::openapi_v3_hash("api/v1").unwrap();
        let current = respond(
            "/openapi/v3/api/v1",
            Some(&format!("hash={hash}")),
            &HeaderMap::new(),
        )
        .unwrap();
        assert_eq!(current.status(), StatusCode::OK);
        assert_eq!(
            current.headers()[header::CACHE_CONTROL],
            "public, immutable"
        );
        let stale = respond(
            "/openapi/v3/api/v1",
            Some("hash=0&timeout=32s"),
            &HeaderMap::new(),
        )
        .unwrap();
        assert_eq!(stale.status(), StatusCode::MOVED_PERMANENTLY);
        assert_eq!(
            stale.headers()[header::LOCATION],
            format!("/openapi/v3/api/v1?hash={hash}").as_str()
        );
        let cached = headers(&[(header::IF_NONE_MATCH, &format!("\"{hash}\""))]);
        let not_modified = respond("/openapi/v3/api/v1", None, &cached).unwrap();
        assert_eq!(not_modified.status(), StatusCode::NOT_MODIFIED);
        let missing = respond("/openapi/v3/apis/nope/v1", None, &HeaderMap::new()).unwrap();
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
        assert!(respond("/api/v1", None, &HeaderMap::new()).is_none());
        assert_eq!(
            respond("/openapi/v3", None, &HeaderMap::new())
                .unwrap()
                .status(),
            StatusCode::OK
        );
    }
}
