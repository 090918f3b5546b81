//! Handler tests' harness: a bootstrapped server over a memory store, called in process.

use crate::{ApiServer, Clock};
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::Value;
use tower::ServiceExt;

/// The media type of Kubernetes protobuf bodies.
pub const PROTOBUF: &str = crate::protobuf::MEDIA_TYPE;

/// A bootstrapped API server (namespaces `default`, `kube-system`, ...) and its router.
pub struct TestServer {
    router: axum::Router,
    server: ApiServer,
    loop_health: berth_core::loop_health::LoopHealth,
}

impl TestServer {
    pub async fn new() -> TestServer {
        TestServer::with_store(berth_store::Store::memory()).await
    }

    /// A bootstrapped server over `store` (one with small limits, say).
    pub async fn with_store(store: berth_store::Store) -> TestServer {
        let server = ApiServer::new(store, Clock::system(), "127.0.0.1:6443".into());
        server.bootstrap().await.expect("bootstrap");
        TestServer {
            router: server.in_process_router(),
            loop_health: server.loop_health(),
            server,
        }
    }

    /// The API server behind the router (to run its bootstrap again, as a restart does).
    pub fn server(&self) -> &ApiServer {
        &self.server
    }

    /// The same server, called as the user `name` in `groups` (and `system:authenticated`),
    /// whom RBAC authorizes; their bindings reach the authorizer shortly after they are stored.
    pub fn as_user(&self, name: &str, groups: &[&str]) -> TestServer {
        let mut groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        groups.push(crate::user::SYSTEM_AUTHENTICATED.into());
        let user = crate::user::UserInfo {
            name: name.into(),
            groups,
            ..Default::default()
        };
        TestServer {
            router: self.server.in_process_router_as(user),
            server: self.server.clone(),
            loop_health: self.loop_health.clone(),
        }
    }

    /// The router, for requests `call` cannot express.
    pub fn router(&self) -> axum::Router {
        self.router.clone()
    }

    /// The server's control-loop health, as a supervisor marks it.
    pub fn loop_health(&self) -> berth_core::loop_health::LoopHealth {
        self.loop_health.clone()
    }

    /// Sends one request; returns the response as it comes (a watch's body streams).
    pub async fn send(&self, req: Request<Body>) -> axum::response::Response {
        self.router.clone().oneshot(req).await.expect("infallible")
    }

    /// Sends one request; returns the status and the JSON body (`null` when not JSON).
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> (StatusCode, Value) {
        let req = Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", content_type)
            .body(Body::from(body))
            .expect("request");
        let resp = self.router.clone().oneshot(req).await.expect("infallible");
        let status = resp.status();
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .expect("body");
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    /// Sends a JSON body (`null` sends none).
    pub async fn json(&self, method: Method, path: &str, body: Value) -> (StatusCode, Value) {
        let bytes = if body.is_null() {
            Vec::new()
        } else {
            body.to_string().into_bytes()
        };
        self.call(method, path, "application/json", bytes).await
    }

    /// Sends a merge patch.
    pub async fn merge_patch(&self, path: &str, patch: Value) -> (StatusCode, Value) {
        self.call(
            Method::PATCH,
            path,
            "application/merge-patch+json",
            patch.to_string().into_bytes(),
        )
        .await
    }

    /// Creates an unbound pod `default/<name>`; returns it as stored.
    pub async fn pod(&self, name: &str) -> Value {
        let pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        let (code, body) = self
            .json(Method::POST, "/api/v1/namespaces/default/pods", pod)
            .await;
        assert_eq!(code, StatusCode::CREATED, "{body}");
        body
    }
}

/// JSON trees for property tests: `leaf` values in arrays and in objects keyed by `keys`, up
/// to four members each, nested up to `depth` levels.
pub fn json_tree(
    leaf: proptest::strategy::BoxedStrategy<Value>,
    keys: proptest::strategy::BoxedStrategy<String>,
    depth: u32,
) -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    leaf.prop_recursive(depth, 32, 4, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(keys.clone(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
