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

/// A kind the fuzzer writes: its collection, a valid object of it (the seeded one has its
/// name), and the subresources it serves.
struct Kind {
    collection: &'static str,
    object: fn() -> Value,
    subresources: &'static [&'static str],
}

const KINDS: &[Kind] = &[
    Kind {
        collection: "/api/v1/namespaces/default/pods",
        object: pod,
        subresources: &[
            "/status",
            "/binding",
            "/eviction",
            "/log",
            "/exec",
            "/ephemeralcontainers",
        ],
    },
    Kind {
        collection: "/apis/apps/v1/namespaces/default/deployments",
        object: deployment,
        subresources: &["/status", "/scale"],
    },
    Kind {
        collection: "/apis/batch/v1/namespaces/default/jobs",
        object: job,
        subresources: &["/status"],
    },
    Kind {
        collection: "/apis/batch/v1/namespaces/default/cronjobs",
        object: cron_job,
        subresources: &["/status"],
    },
    Kind {
        collection: "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        object: cluster_role,
        subresources: &[],
    },
    Kind {
        collection: "/api/v1/namespaces/default/configmaps",
        object: config_map,
        subresources: &[],
    },
    Kind {
        collection: "/api/v1/nodes",
        object: node,
        subresources: &["/status", "/proxy/healthz"],
    },
    Kind {
        collection: "/api/v1/namespaces",
        object: namespace,
        subresources: &["/status", "/finalize"],
    },
    Kind {
        collection: "/api/v1/namespaces/default/services",
        object: service,
        subresources: &["/status"],
    },
    Kind {
        collection: "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
        object: pdb,
        subresources: &["/status"],
    },
    Kind {
        collection: "/apis/scheduling.k8s.io/v1/priorityclasses",
        object: priority_class,
        subresources: &[],
    },
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

/// Every JSON pointer of `v` (objects' members and arrays' items, `""` for the root).
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            for (k, child) in o {
                let escaped = k.replace('~', "~0").replace('/', "~1");
                pointers(child, format!("{at}/{escaped}"), out);
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                pointers(child, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

/// `base` with a few members replaced by random values (or given new random members).
fn mutated(base: Value) -> impl Strategy<Value = Value> {
    let mut all = Vec::new();
    pointers(&base, String::new(), &mut all);
    let edit = (
        prop::sample::select(all),
        any::<bool>(),
        key(),
        crate::testing::json_tree(leaf(), key(), 2),
    );
    prop::collection::vec(edit, 1..4).prop_map(move |edits| {
        let mut obj = base.clone();
        for (pointer, add, key, value) in edits {
            let Some(at) = obj.pointer_mut(&pointer) else {
                continue;
            };
            match at {
                Value::Object(o) if add => drop(o.insert(key, value)),
                _ => *at = value,
            }
        }
        obj
    })
}

/// A body for `kind`: its object mutated (most often), random JSON, a JSON patch, or bytes.
fn body(kind: &'static Kind) -> impl Strategy<Value = Vec<u8>> {
    let tree = crate::testing::json_tree(leaf(), key(), 4);
    let json_patch = prop::collection::vec(
        (
            prop::sample::select(vec!["add", "remove", "replace", "move", "copy", "test"]),
            prop::sample::select(vec![
                "",
                "/",
                "/metadata",
                "/metadata/name",
                "/data",
                "/data/a",
                "/spec",
                "/spec/containers/0",
                "/spec/containers/-",
                "/nope",
                "/metadata/labels/x",
                "/spec/tolerations/0/tolerationSeconds",
                "/spec/activeDeadlineSeconds",
                "/spec/replicas",
                "/metadata/finalizers/-",
                "/status",
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
        6 => mutated((kind.object)()).prop_map(|v| v.to_string().into_bytes()),
        1 => Just((kind.object)().to_string().into_bytes()),
        2 => tree.prop_map(|v| v.to_string().into_bytes()),
        2 => json_patch.prop_map(|v| v.to_string().into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..64),
    ]
}

fn request() -> impl Strategy<Value = FuzzRequest> {
    (0..KINDS.len()).prop_flat_map(|i| {
        let kind = &KINDS[i];
        let name = (kind.object)()["metadata"]["name"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let names = prop_oneof![
            6 => Just(name),
            1 => prop::sample::select(vec!["x", "", "a%2Fb", ".."]).prop_map(str::to_string),
        ];
        let mut subresources = vec![""; 4];
        subresources.extend(kind.subresources);
        subresources.push("/");
        let method = prop::sample::select(vec![
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
            Method::OPTIONS,
        ]);
        (
            method,
            any::<bool>(),
            names,
            prop::sample::select(subresources),
            prop::sample::select(QUERIES),
            prop::sample::select(CONTENT_TYPES),
            body(kind),
        )
            .prop_map(move |(method, named, name, sub, query, ctype, body)| {
                let named = (named && method != Method::POST) || method == Method::PATCH;
                let path = if named {
                    format!("{}/{name}{sub}{query}", kind.collection)
                } else {
                    format!("{}{query}", kind.collection)
                };
                // Writes mostly in the media types their verb takes, so that bodies reach the
                // handlers' decoding and validation instead of a 415.
                let content_type = match (&method, ctype) {
                    (&Method::POST | &Method::PUT, c) if c.contains("patch") => "application/json",
                    (&Method::PATCH, c) if !c.contains("patch") => {
                        "application/strategic-merge-patch+json"
                    }
                    (_, c) => c,
                };
                FuzzRequest {
                    method,
                    path,
                    content_type: content_type.into(),
                    body,
                }
            })
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

fn cron_job() -> Value {
    json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "x"},
        "spec": {"schedule": "*/1 * * * *", "startingDeadlineSeconds": 10,
            "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox"}]}}}}}})
}

fn config_map() -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
        "data": {"a": "b"}})
}

fn node() -> Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"},
        "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
        "status": {"capacity": {"cpu": "2", "memory": "4Gi", "pods": "110"},
            "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}})
}

fn namespace() -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
}

fn service() -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"selector": {"a": "b"}, "ports": [{"port": 80, "targetPort": 8080}]}})
}

fn pdb() -> Value {
    json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "x"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"a": "b"}}}})
}

fn priority_class() -> Value {
    json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": "x"}, "value": 1000})
}

fn cluster_role() -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "x"}, "rules": [{"apiGroups": [""], "resources": ["pods"],
            "verbs": ["get"]}]})
}

/// A server with one object of each kind the fuzzer writes, for the requests that name them.
async fn seeded() -> TestServer {
    let server = TestServer::new().await;
    for kind in KINDS {
        let (code, body) = server
            .json(Method::POST, kind.collection, (kind.object)())
            .await;
        assert_eq!(code, StatusCode::CREATED, "{}: {body}", kind.collection);
    }
    server
}

/// Sends `req`; an error unless the answer is a success, or a Status of its own code that is
/// not a 500.
async fn check(server: &TestServer, req: &FuzzRequest) -> Result<u16, String> {
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
    Ok(code.as_u16())
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
    let codes = std::cell::RefCell::new(std::collections::BTreeMap::<u16, usize>::new());
    let outcome = runner.run(&request(), |req| {
        let code = runtime
            .block_on(check(&server, &req))
            .map_err(|e| TestCaseError::fail(format!("{e}\nrequest: {}", describe(&req))))?;
        *codes.borrow_mut().entry(code).or_default() += 1;
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
    // What the requests were answered (`--nocapture` shows it): a hunt that only ever reaches
    // 404s and 415s tests nothing.
    println!("answers by status code: {:?}", codes.borrow());
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
