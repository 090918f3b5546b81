//! `pods/binding`, `bindings`, `pods/eviction` and DELETE with protobuf bodies, as Go clients
//! (kube-scheduler, `kubectl drain`) send them, built by hand with the protobuf tests' encoder.

use crate::protobuf::tests::{envelope, meta, Enc};
use crate::testing::{TestServer, PROTOBUF};
use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

const PODS: &str = "/api/v1/namespaces/default/pods";

/// `v1.Binding{ObjectMeta{name, namespace, uid}, Target: ObjectReference{kind: Node, name}}`.
fn binding(pod: &str, uid: &str, node: &str) -> Vec<u8> {
    let raw = Enc::new()
        .msg(1, meta(pod).str(3, "default").str(5, uid))
        .msg(2, Enc::new().str(1, "Node").str(3, node));
    envelope("v1", "Binding", raw)
}

async fn node_of(s: &TestServer, pod: &str) -> Value {
    let (code, p) = s
        .json(Method::GET, &format!("{PODS}/{pod}"), Value::Null)
        .await;
    assert_eq!(code, StatusCode::OK, "{p}");
    p["spec"]["nodeName"].clone()
}

#[tokio::test]
async fn binding_subresource_takes_protobuf() {
    let s = TestServer::new().await;
    let pod = s.pod("p").await;
    let uid = pod["metadata"]["uid"].as_str().unwrap();
    let (code, status) = s
        .call(
            Method::POST,
            &format!("{PODS}/p/binding"),
            PROTOBUF,
            binding("p", uid, "node-1"),
        )
        .await;
    assert_eq!(code, StatusCode::CREATED, "{status}");
    assert_eq!(status["status"], "Success");
    assert_eq!(node_of(&s, "p").await, "node-1");
    // Bound once: a second binding is a conflict, not a silent move.
    let (code, status) = s
        .call(
            Method::POST,
            &format!("{PODS}/p/binding"),
            PROTOBUF,
            binding("p", uid, "node-2"),
        )
        .await;
    assert_eq!(code, StatusCode::CONFLICT, "{status}");
    assert_eq!(node_of(&s, "p").await, "node-1");
}

#[tokio::test]
async fn bindings_collection_takes_protobuf_and_checks_the_uid() {
    let s = TestServer::new().await;
    s.pod("q").await;
    let (code, status) = s
        .call(
            Method::POST,
            "/api/v1/namespaces/default/bindings",
            PROTOBUF,
            binding("q", "not-the-uid", "node-1"),
        )
        .await;
    assert_eq!(code, StatusCode::CONFLICT, "{status}");
    let (code, status) = s
        .call(
            Method::POST,
            "/api/v1/namespaces/default/bindings",
            PROTOBUF,
            binding("q", "", "node-1"),
        )
        .await;
    assert_eq!(code, StatusCode::CREATED, "{status}");
    assert_eq!(node_of(&s, "q").await, "node-1");
}

#[tokio::test]
async fn malformed_protobuf_binding_is_a_bad_request() {
    let s = TestServer::new().await;
    s.pod("r").await;
    let (code, status) = s
        .call(
            Method::POST,
            &format!("{PODS}/r/binding"),
            PROTOBUF,
            b"k8s\0\x12\xff\xff\x03".to_vec(),
        )
        .await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{status}");
    assert_eq!(status["kind"], "Status");
    assert_eq!(node_of(&s, "r").await, Value::Null);
}

#[tokio::test]
async fn eviction_takes_protobuf_with_its_delete_options() {
    let s = TestServer::new().await;
    s.pod("e").await;
    // A dry run (deleteOptions.dryRun = ["All"]) leaves the pod.
    let dry = Enc::new()
        .msg(1, meta("e").str(3, "default"))
        .msg(2, Enc::new().int(1, 0).str(5, "All"));
    let (code, status) = s
        .call(
            Method::POST,
            &format!("{PODS}/e/eviction"),
            PROTOBUF,
            envelope("policy/v1", "Eviction", dry),
        )
        .await;
    assert_eq!(code, StatusCode::CREATED, "{status}");
    assert_eq!(
        s.json(Method::GET, &format!("{PODS}/e"), Value::Null)
            .await
            .0,
        StatusCode::OK
    );
    let raw = Enc::new()
        .msg(1, meta("e").str(3, "default"))
        .msg(2, Enc::new().int(1, 0));
    let (code, status) = s
        .call(
            Method::POST,
            &format!("{PODS}/e/eviction"),
            PROTOBUF,
            envelope("policy/v1", "Eviction", raw),
        )
        .await;
    assert_eq!(code, StatusCode::CREATED, "{status}");
    assert_eq!(
        status,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
    );
    let (code, _) = s.json(Method::GET, &format!("{PODS}/e"), Value::Null).await;
    assert_eq!(code, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn delete_takes_protobuf_delete_options() {
    let s = TestServer::new().await;
    let pod = s.pod("d").await;
    let uid = pod["metadata"]["uid"].as_str().unwrap().to_string();
    // client-go writes DeleteOptions under the client's own group version.
    let options = |uid: &str| {
        envelope(
            "v1",
            "DeleteOptions",
            Enc::new().int(1, 0).msg(2, Enc::new().str(1, uid)),
        )
    };
    let (code, status) = s
        .call(
            Method::DELETE,
            &format!("{PODS}/d"),
            PROTOBUF,
            options("someone-else"),
        )
        .await;
    assert_eq!(code, StatusCode::CONFLICT, "{status}");
    assert!(status["message"]
        .as_str()
        .unwrap()
        .contains("Precondition failed: UID"));
    let dry = envelope("v1", "DeleteOptions", Enc::new().str(5, "All"));
    let (code, _) = s
        .call(Method::DELETE, &format!("{PODS}/d"), PROTOBUF, dry)
        .await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(
        s.json(Method::GET, &format!("{PODS}/d"), Value::Null)
            .await
            .0,
        StatusCode::OK
    );
    let (code, status) = s
        .call(
            Method::DELETE,
            &format!("{PODS}/d"),
            PROTOBUF,
            options(&uid),
        )
        .await;
    assert_eq!(code, StatusCode::OK, "{status}");
    let (code, _) = s.json(Method::GET, &format!("{PODS}/d"), Value::Null).await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    // A body that is not protobuf at all is a 400 Status, and changes nothing.
    s.pod("d2").await;
    let (code, status) = s
        .call(
            Method::DELETE,
            &format!("{PODS}/d2"),
            PROTOBUF,
            b"not protobuf".to_vec(),
        )
        .await;
    assert_eq!(
        (code, status["reason"].clone()),
        (StatusCode::BAD_REQUEST, json!("BadRequest"))
    );
    assert_eq!(
        s.json(Method::GET, &format!("{PODS}/d2"), Value::Null)
            .await
            .0,
        StatusCode::OK
    );
}

/// A gated pod says so on creation and cannot be bound until its last gate is removed
/// (upstream's `applySchedulingGatedCondition` and "Reject binding to a scheduling un-ready
/// Pod").
#[tokio::test]
async fn a_gated_pod_is_marked_and_cannot_be_bound_until_its_gates_are_removed() {
    let s = TestServer::new().await;
    let (code, pod) = s
        .json(
            Method::POST,
            PODS,
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "g"},
                   "spec": {"schedulingGates": [{"name": "example.com/wait"}],
                            "containers": [{"name": "c", "image": "nginx"}]}}),
        )
        .await;
    assert_eq!(code, StatusCode::CREATED, "{pod}");
    let cond = &pod["status"]["conditions"][0];
    assert_eq!(cond["type"], "PodScheduled");
    assert_eq!(cond["status"], "False");
    assert_eq!(cond["reason"], "SchedulingGated");
    assert_eq!(
        cond["message"],
        "Scheduling is blocked due to non-empty scheduling gates"
    );
    let bind = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "g"},
                      "target": {"kind": "Node", "name": "node-1"}});
    let (code, status) = s
        .json(Method::POST, &format!("{PODS}/g/binding"), bind.clone())
        .await;
    assert_eq!(code, StatusCode::CONFLICT, "{status}");
    assert_eq!(
        status["message"],
        "Operation cannot be fulfilled on pods/binding \"g\": pod g has non-empty .spec.schedulingGates"
    );
    assert_eq!(node_of(&s, "g").await, Value::Null);
    let (code, out) = s
        .merge_patch(
            &format!("{PODS}/g"),
            json!({"spec": {"schedulingGates": null}}),
        )
        .await;
    assert_eq!(code, StatusCode::OK, "{out}");
    let (code, status) = s
        .json(Method::POST, &format!("{PODS}/g/binding"), bind)
        .await;
    assert_eq!(code, StatusCode::CREATED, "{status}");
    assert_eq!(node_of(&s, "g").await, "node-1");
}
