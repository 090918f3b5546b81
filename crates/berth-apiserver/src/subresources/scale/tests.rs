//! The Scale view of each parent kind, and GET/PUT/PATCH on `/scale` through the router.

use super::*;
use crate::protobuf::tests::{envelope, meta as pb_meta, Enc};
use crate::testing::{TestServer, PROTOBUF};

#[test]
fn scale_of_a_deployment() {
    let d = json!({
        "kind": "Deployment", "apiVersion": "apps/v1",
        "metadata": {"name": "web", "namespace": "ns", "uid": "u1",
                     "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"a": "b"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"tier": "web", "app": "x"},
                 "matchExpressions": [{"key": "env", "operator": "In", "values": ["b", "a"]}]}},
        "status": {"replicas": 2},
    });
    assert_eq!(
        scale_of(&d, 42),
        json!({
            "kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {"name": "web", "namespace": "ns", "uid": "u1",
                         "creationTimestamp": "2026-01-01T00:00:00Z", "resourceVersion": "42"},
            "spec": {"replicas": 3},
            "status": {"replicas": 2, "selector": "app=x,env in (a,b),tier=web"},
        })
    );
}

#[test]
fn scale_of_a_replication_controller_and_defaults() {
    let rc = json!({
        "kind": "ReplicationController",
        "metadata": {"name": "rc"},
        "spec": {"selector": {"b": "2", "a": "1"}},
    });
    let s = scale_of(&rc, 7);
    assert_eq!(s["spec"], json!({"replicas": 1}));
    assert_eq!(s["status"], json!({"replicas": 0, "selector": "a=1,b=2"}));
    let zero = json!({"kind": "StatefulSet", "metadata": {"name": "s"}, "spec": {"replicas": 0}});
    let s = scale_of(&zero, 1);
    assert_eq!(s["spec"], json!({}));
    assert_eq!(s["status"], json!({"replicas": 0}));
}

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";

async fn deployment(s: &TestServer, name: &str, replicas: i64) -> Value {
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    let (code, body) = s.json(Method::POST, DEPLOYMENTS, d).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    body
}

async fn get(s: &TestServer, path: &str) -> Value {
    let (code, body) = s.json(Method::GET, path, Value::Null).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    body
}

#[tokio::test]
async fn get_patch_and_put_a_deployment_scale() {
    let s = TestServer::new().await;
    let d = deployment(&s, "web", 1).await;
    let path = format!("{DEPLOYMENTS}/web/scale");
    let scale = get(&s, &path).await;
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(
        scale["metadata"]["resourceVersion"],
        d["metadata"]["resourceVersion"]
    );
    assert_eq!(scale["metadata"]["uid"], d["metadata"]["uid"]);
    assert_eq!(scale["spec"], json!({"replicas": 1}));
    assert_eq!(
        scale["status"],
        json!({"replicas": 0, "selector": "app=web"})
    );

    // What `kubectl scale --replicas=3` sends.
    let (code, scaled) = s.merge_patch(&path, json!({"spec": {"replicas": 3}})).await;
    assert_eq!(code, StatusCode::OK, "{scaled}");
    assert_eq!(scaled["spec"]["replicas"], 3);
    let d2 = get(&s, &format!("{DEPLOYMENTS}/web")).await;
    assert_eq!(d2["spec"]["replicas"], 3);
    assert_eq!(d2["metadata"]["generation"], 2);
    assert_eq!(
        d2["metadata"]["resourceVersion"],
        scaled["metadata"]["resourceVersion"]
    );

    // A stale resourceVersion is a precondition that fails: 409, nothing changes.
    let mut stale = scale.clone();
    stale["spec"]["replicas"] = json!(5);
    let (code, status) = s.json(Method::PUT, &path, stale.clone()).await;
    assert_eq!(code, StatusCode::CONFLICT, "{status}");
    assert_eq!(status["reason"], "Conflict");
    let (code, status) = s
        .merge_patch(&path, json!({"metadata": {"resourceVersion": scale["metadata"]["resourceVersion"]}, "spec": {"replicas": 5}}))
        .await;
    assert_eq!(code, StatusCode::CONFLICT, "{status}");
    assert_eq!(
        get(&s, &format!("{DEPLOYMENTS}/web")).await["spec"]["replicas"],
        3
    );

    // The current resourceVersion, or none, goes through.
    let mut fresh = stale;
    fresh["metadata"]["resourceVersion"] = scaled["metadata"]["resourceVersion"].clone();
    let (code, body) = s.json(Method::PUT, &path, fresh).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let (code, body) = s
        .json(Method::PUT, &path, json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web"}, "spec": {"replicas": 0}}))
        .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(
        get(&s, &format!("{DEPLOYMENTS}/web")).await["spec"]["replicas"],
        0
    );
}

#[tokio::test]
async fn bad_scales_are_refused_with_a_status() {
    let s = TestServer::new().await;
    deployment(&s, "web", 2).await;
    let path = format!("{DEPLOYMENTS}/web/scale");
    let (code, status) = s
        .merge_patch(&path, json!({"spec": {"replicas": -1}}))
        .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{status}");
    assert_eq!(
        status["message"],
        "Scale \"web\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
    );
    let (code, status) = s
        .merge_patch(&path, json!({"spec": {"replicas": "three"}}))
        .await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{status}");
    let (code, status) = s
        .json(Method::PUT, &path, json!({"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": {"name": "other"}, "spec": {"replicas": 1}}))
        .await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{status}");
    let (code, status) = s
        .json(Method::PUT, &path, json!({"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": {"uid": "nope"}, "spec": {"replicas": 1}}))
        .await;
    assert_eq!(code, StatusCode::CONFLICT, "{status}");
    let (code, status) = s.json(Method::POST, &path, json!({})).await;
    assert_eq!(code, StatusCode::METHOD_NOT_ALLOWED, "{status}");
    let (code, status) = s
        .json(
            Method::GET,
            &format!("{DEPLOYMENTS}/nope/scale"),
            Value::Null,
        )
        .await;
    assert_eq!(code, StatusCode::NOT_FOUND, "{status}");
    assert_eq!(status["message"], "deployments.apps \"nope\" not found");
    // DaemonSets have no scale subresource.
    let (code, _) = s
        .json(
            Method::GET,
            "/apis/apps/v1/namespaces/default/daemonsets/x/scale",
            Value::Null,
        )
        .await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    assert_eq!(
        get(&s, &format!("{DEPLOYMENTS}/web")).await["spec"]["replicas"],
        2
    );
}

#[tokio::test]
async fn replication_controller_scale_takes_protobuf() {
    let s = TestServer::new().await;
    let rc = json!({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc"},
        "spec": {"replicas": 1, "selector": {"app": "rc"},
                 "template": {"metadata": {"labels": {"app": "rc"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    let rcs = "/api/v1/namespaces/default/replicationcontrollers";
    let (code, body) = s.json(Method::POST, rcs, rc).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    let path = format!("{rcs}/rc/scale");
    assert_eq!(get(&s, &path).await["status"]["selector"], "app=rc");
    // autoscaling.v1.Scale{ObjectMeta{name}, ScaleSpec{replicas: 4}}
    let raw = Enc::new()
        .msg(1, pb_meta("rc"))
        .msg(2, Enc::new().int(1, 4));
    let (code, body) = s
        .call(
            Method::PUT,
            &path,
            PROTOBUF,
            envelope("autoscaling/v1", "Scale", raw),
        )
        .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body["spec"]["replicas"], 4);
    assert_eq!(get(&s, &format!("{rcs}/rc")).await["spec"]["replicas"], 4);
}
