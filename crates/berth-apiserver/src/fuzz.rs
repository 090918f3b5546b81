//! The router under random requests: every verb, content type and patch type, bodies that are
//! random JSON, mutated objects with extreme numbers, or random bytes. No request may panic a
//! handler, answer 500, or answer an error that is not a `Status` of its own code.
//!
//! `FUZZ_CASES` requests run in `cargo test` (CI); set `BERTH_FUZZ_CASES` for a longer hunt.
//! Whatever a hunt finds goes into `fuzz-corpus/` (one JSON file per request: `method`,
//! `path`, `content_type`, `body`), which every test run replays.

use crate::testing::TestServer;
use axum::http::{Method, StatusCode};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{json, Value};

/// Requests one `cargo test` sends (a few seconds of CI time).
const FUZZ_CASES: u32 = 1_500;

/// One request: method, path (with query), content type, body.
#[derive(Clone, Debug)]
struct FuzzRequest {
    method: Method,
    path: String,
    content_type: String,
    body: Vec<u8>,
}

const COLLECTIONS: &[&str] = &[
    "/api/v1/namespaces/default/pods",
    "/api/v1/namespaces/default/configmaps",
    "/api/v1/namespaces/default/services",
    "/api/v1/namespaces/default/serviceaccounts",
    "/api/v1/namespaces/default/events",
    "/api/v1/namespaces",
    "/api/v1/nodes",
    "/api/v1/persistentvolumes",
    "/apis/apps/v1/namespaces/default/deployments",
    "/apis/apps/v1/namespaces/default/daemonsets",
    "/apis/apps/v1/namespaces/default/statefulsets",
    "/apis/batch/v1/namespaces/default/jobs",
    "/apis/batch/v1/namespaces/default/cronjobs",
    "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
    "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
    "/apis/scheduling.k8s.io/v1/priorityclasses",
    "/apis/coordination.k8s.io/v1/namespaces/default/leases",
    "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
];

const NAMES: &[&str] = &["p", "d", "x", "default", "node-1", "", "a%2Fb", ".."];

const SUBRESOURCES: &[&str] = &[
    "",
    "/status",
    "/binding",
    "/eviction",
    "/scale",
    "/log",
    "/exec",
    "/finalize",
    "/token",
    "/ephemeralcontainers",
    "/",
];

const QUERIES: &[&str] = &[
    "",
    "?dryRun=All",
    "?fieldManager=fuzz&force=true",
    "?fieldValidation=Strict",
    "?fieldValidation=Warn",
    "?gracePeriodSeconds=9223372036854775807",
    "?gracePeriodSeconds=-9223372036854775808",
    "?gracePeriodSeconds=abc",
    "?propagationPolicy=Foreground",
    "?resourceVersion=abc",
    "?resourceVersion=99999999999999999999",
    "?resourceVersionMatch=Exact&resourceVersion=1",
    "?limit=-1",
    "?limit=1&continue=eyJydiI6MX0=",
    "?labelSelector=a+in+(",
    "?fieldSelector=metadata.name%3Dp",
    "?fieldSelector=spec.nodeName%3D",
    "?as=Table",
    "?tailLines=9223372036854775807",
];

const CONTENT_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "application/vnd.kubernetes.protobuf",
    "text/plain",
];

/// Field names bodies are made of: the ones handlers and strategies read.
const KEYS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "namespace",
    "labels",
    "annotations",
    "finalizers",
    "ownerReferences",
    "resourceVersion",
    "uid",
    "generateName",
    "deletionTimestamp",
    "spec",
    "status",
    "containers",
    "initContainers",
    "image",
    "resources",
    "requests",
    "limits",
    "cpu",
    "memory",
    "ports",
    "containerPort",
    "hostPort",
    "protocol",
    "tolerations",
    "key",
    "operator",
    "effect",
    "tolerationSeconds",
    "value",
    "nodeName",
    "nodeSelector",
    "affinity",
    "activeDeadlineSeconds",
    "terminationGracePeriodSeconds",
    "gracePeriodSeconds",
    "replicas",
    "selector",
    "matchLabels",
    "matchExpressions",
    "values",
    "template",
    "strategy",
    "rollingUpdate",
    "maxSurge",
    "maxUnavailable",
    "backoffLimit",
    "completions",
    "parallelism",
    "schedule",
    "startingDeadlineSeconds",
    "ttlSecondsAfterFinished",
    "rules",
    "verbs",
    "apiGroups",
    "aggregationRule",
    "clusterRoleSelectors",
    "roleRef",
    "subjects",
    "priority",
    "priorityClassName",
    "preemptionPolicy",
    "data",
    "binaryData",
    "target",
    "deleteOptions",
    "preconditions",
    "taints",
    "unschedulable",
    "capacity",
    "allocatable",
    "conditions",
    "type",
    "phase",
    "minAvailable",
    "op",
    "path",
    "from",
    "$patch",
    "$retainKeys",
    "$setElementOrder/containers",
    "$deleteFromPrimitiveList/finalizers",
];

fn leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        Just(json!(i64::MAX)),
        Just(json!(i64::MIN)),
        Just(json!(u64::MAX)),
        Just(json!(1e308)),
        Just(json!(-0.5)),
        Just(json!("")),
        Just(json!("100m")),
        Just(json!("9223372036854775807")),
        Just(json!("1e400")),
        Just(json!("/metadata/name")),
        Just(json!("NoExecute")),
        Just(json!("Exists")),
        "[a-z0-9./-]{0,12}".prop_map(Value::from),
    ]
    .boxed()
}

fn key() -> BoxedStrategy<String> {
    prop::sample::select(KEYS).prop_map(str::to_string).boxed()
}

/// A body: random JSON, a known-good object with one member replaced, a JSON patch, or bytes.
fn body() -> impl Strategy<Value = Vec<u8>> {
    let tree = crate::testing::json_tree(leaf(), key(), 4);
    let mutated = (
        prop::sample::select(vec![pod(), deployment(), job(), cluster_role()]),
        prop::collection::vec(key(), 1..4),
        crate::testing::json_tree(leaf(), key(), 2),
    )
        .prop_map(|(mut obj, path, value)| {
            let mut at = &mut obj;
            for k in &path[..path.len() - 1] {
                if !at.get(k).is_some_and(Value::is_object) {
                    at[k.as_str()] = json!({});
                }
                at = &mut at[k.as_str()];
            }
            at[path[path.len() - 1].as_str()] = value;
            obj
        });
    let json_patch = prop::collection::vec(
        (
            prop::sample::select(vec!["add", "remove", "replace", "move", "copy", "test"]),
            prop::sample::select(vec![
                "", "/", "/metadata", "/metadata/name", "/data", "/data/a", "/spec",
                "/spec/containers/0", "/spec/containers/-", "/nope", "/metadata/labels/x",
            ]),
            prop::sample::select(vec!["/metadata", "/data", "/data/a", "/spec", "/nope", ""]),
            crate::testing::json_tree(leaf(), key(), 2),
        )
            .prop_map(|(op, path, from, value)| {
                json!({"op": op, "path": path, "from": from, "value": value})
            }),
        0..6,
    )
    .prop_map(Value::Array);
    prop_oneof![
        3 => tree.prop_map(|v| v.to_string().into_bytes()),
        4 => mutated.prop_map(|v| v.to_string().into_bytes()),
        3 => json_patch.prop_map(|v| v.to_string().into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..64),
    ]
}

fn request() -> impl Strategy<Value = FuzzRequest> {
    (
        prop::sample::select(vec![
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
            Method::OPTIONS,
        ]),
        prop::sample::select(COLLECTIONS),
        prop::option::of((
            prop::sample::select(NAMES),
            prop::sample::select(SUBRESOURCES),
        )),
        prop::sample::select(QUERIES),
        prop::sample::select(CONTENT_TYPES),
        body(),
    )
        .prop_map(|(method, collection, one, query, content_type, body)| {
            let path = match one {
                Some((name, sub)) => format!("{collection}/{name}{sub}{query}"),
                None => format!("{collection}{query}"),
            };
            FuzzRequest {
                method,
                path,
                content_type: content_type.into(),
                body,
            }
        })
}

fn pod() -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}},
        "spec": {"containers": [{"name": "c", "image": "nginx",
            "resources": {"requests": {"cpu": "100m"}}}],
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute",
                "tolerationSeconds": 30}]}})
}

fn deployment() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
}

fn job() -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x"},
        "spec": {"activeDeadlineSeconds": 100, "template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}}})
}

fn cluster_role() -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "x"}, "rules": [{"apiGroups": [""], "resources": ["pods"],
            "verbs": ["get"]}]})
}

/// A server with a pod `p`, a deployment `d`, a job and a ClusterRole `x`, for the requests
/// that name them.
async fn seeded() -> TestServer {
    let server = TestServer::new().await;
    for (path, obj) in [
        ("/api/v1/namespaces/default/pods", pod()),
        ("/apis/apps/v1/namespaces/default/deployments", deployment()),
        ("/apis/batch/v1/namespaces/default/jobs", job()),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            cluster_role(),
        ),
        (
            "/api/v1/namespaces/default/configmaps",
            json!({"metadata": {"name": "x"}, "data": {"a": "b"}}),
        ),
    ] {
        let (code, body) = server.json(Method::POST, path, obj).await;
        assert_eq!(code, StatusCode::CREATED, "{path}: {body}");
    }
    server
}

/// Sends `req`; an error unless the answer is a success, or a Status of its own code that is
/// not a 500.
async fn check(server: &TestServer, req: &FuzzRequest) -> Result<(), String> {
    let (code, body) = server
        .call(
            req.method.clone(),
            &req.path,
            &req.content_type,
            req.body.clone(),
        )
        .await;
    if code == StatusCode::INTERNAL_SERVER_ERROR {
        return Err(format!("500: {body}"));
    }
    if code.is_client_error() && !(body["kind"] == "Status" && body["code"] == code.as_u16()) {
        return Err(format!("{code} answered without its Status: {body}"));
    }
    Ok(())
}

fn describe(req: &FuzzRequest) -> String {
    json!({"method": req.method.as_str(), "path": req.path, "content_type": req.content_type,
        "body": String::from_utf8_lossy(&req.body)})
    .to_string()
}

#[test]
fn random_requests_never_panic_a_handler_nor_answer_500() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let server = runtime.block_on(seeded());
    let cases = std::env::var("BERTH_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(FUZZ_CASES);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let outcome = runner.run(&request(), |req| {
        runtime
            .block_on(check(&server, &req))
            .map_err(|e| TestCaseError::fail(format!("{e}\nrequest: {}", describe(&req))))
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
}

#[tokio::test]
async fn the_corpus_of_requests_found_so_far_is_answered_well() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz-corpus");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("fuzz-corpus/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "the corpus is empty");
    let server = seeded().await;
    for file in files {
        let case: Value =
            serde_json::from_slice(&std::fs::read(&file).expect("read")).expect("corpus JSON");
        let req = FuzzRequest {
            method: case["method"]
                .as_str()
                .unwrap_or("GET")
                .parse()
                .expect("method"),
            path: case["path"].as_str().unwrap_or("/").into(),
            content_type: case["content_type"].as_str().unwrap_or("").into(),
            body: match &case["body"] {
                Value::String(s) => s.clone().into_bytes(),
                other => other.to_string().into_bytes(),
            },
        };
        if let Err(e) = check(&server, &req).await {
            panic!("{}: {e}", file.display());
        }
    }
}
