//! `/healthz`, `/livez` and `/readyz` as upstream's healthz package answers them: `ok` when every
//! check passes, `?verbose` lists each named check (`[+]etcd ok`), `?exclude=NAME` skips one,
//! and `/readyz/NAME` runs a single check.

use crate::context::Ctx;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// The readiness check that fails while any in-process control loop is down.
pub const CONTROL_LOOPS: &str = "poststarthook/berth-control-loops";

/// One named check: its name and whether it passes.
pub(crate) type Check = (&'static str, bool);

/// The checks of an endpoint (`healthz`, `livez`, `readyz`).
pub(crate) fn checks(ctx: &Ctx, endpoint: &str) -> Vec<Check> {
    // The store answers a read (the embedded engine, or the etcd mirror).
    let store = ctx.store.get("/registry/health").is_ok();
    let mut out = vec![
        ("ping", true),
        ("log", true),
        ("etcd", store),
        ("poststarthook/rbac/bootstrap-roles", true),
    ];
    if endpoint == "readyz" {
        out.insert(3, ("etcd-readiness", store));
        out.insert(4, ("informer-sync", true));
        // Fails while a supervised control loop is down (crashed, waiting to restart).
        out.push((CONTROL_LOOPS, ctx.loop_health.healthy()));
        out.push(("shutdown", true));
    }
    out
}

/// The answer for `path` (`/readyz`, `/readyz/etcd`, ...) with its query, or `None` when the
/// path is not a health endpoint.
pub fn respond(ctx: &Ctx, path: &str, query: Option<&str>) -> Option<Response> {
    let path = path.trim_end_matches('/');
    let (endpoint, single) = match path.trim_start_matches('/').split_once('/') {
        Some((e, name)) => (e, Some(name)),
        None => (path.trim_start_matches('/'), None),
    };
    if !matches!(endpoint, "healthz" | "livez" | "readyz") {
        return None;
    }
    let all = checks(ctx, endpoint);
    if let Some(name) = single {
        let check = all.iter().find(|(n, _)| *n == name)?;
        return Some(if check.1 {
            (StatusCode::OK, "ok").into_response()
        } else {
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("internal server error: {name} check failed"),
            )
                .into_response()
        });
    }
    let params: Vec<(String, String)> = query
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    let verbose = params.iter().any(|(k, _)| k == "verbose");
    let excluded = |name: &str| params.iter().any(|(k, v)| k == "exclude" && v == name);
    let mut lines = Vec::new();
    let mut failed = Vec::new();
    for (name, ok) in &all {
        if excluded(name) {
            lines.push(format!("[+]{name} excluded: ok"));
        } else if *ok {
            lines.push(format!("[+]{name} ok"));
        } else {
            lines.push(format!("[-]{name} failed: reason withheld"));
            failed.push(*name);
        }
    }
    if !failed.is_empty() {
        lines.push(format!("{endpoint} check failed"));
        return Some((StatusCode::INTERNAL_SERVER_ERROR, lines.join("\n") + "\n").into_response());
    }
    if !verbose {
        return Some((StatusCode::OK, "ok").into_response());
    }
    lines.push(format!("{endpoint} check passed"));
    Some((StatusCode::OK, lines.join("\n") + "\n").into_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Method;

    async fn readyz(server: &crate::testing::TestServer) -> (StatusCode, String) {
        let req = axum::http::Request::builder()
            .method(Method::GET)
            .uri("/readyz?verbose")
            .body(axum::body::Body::empty())
            .expect("request");
        let resp = tower::ServiceExt::oneshot(server.router(), req)
            .await
            .expect("infallible");
        let status = resp.status();
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .expect("body");
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    #[tokio::test]
    async fn readyz_fails_while_a_control_loop_is_down() {
        let server = crate::testing::TestServer::new().await;
        let health = server.loop_health();
        let (code, body) = readyz(&server).await;
        assert_eq!(code, StatusCode::OK, "{body}");
        assert!(
            body.contains("[+]poststarthook/berth-control-loops ok"),
            "{body}"
        );
        health.down("taint-manager");
        let (code, body) = readyz(&server).await;
        assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
        assert!(
            body.contains("[-]poststarthook/berth-control-loops failed: reason withheld"),
            "{body}"
        );
        health.up("taint-manager");
        assert_eq!(readyz(&server).await.0, StatusCode::OK);
    }
}
