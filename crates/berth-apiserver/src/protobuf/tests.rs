//! Bodies built with a tiny encoder (field numbers as in Kubernetes' generated.proto), and one
//! body captured from `kubectl create deployment -v=9`.

use super::*;
use serde_json::json;

/// A protobuf message under construction.
#[derive(Default, Clone)]
pub(crate) struct Enc(pub(crate) Vec<u8>);

fn varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

impl Enc {
    pub(crate) fn new() -> Self {
        Enc::default()
    }
    pub(crate) fn int(mut self, tag: u64, v: i64) -> Self {
        varint(&mut self.0, tag << 3);
        varint(&mut self.0, v as u64);
        self
    }
    pub(crate) fn bytes(mut self, tag: u64, b: &[u8]) -> Self {
        varint(&mut self.0, tag << 3 | 2);
        varint(&mut self.0, b.len() as u64);
        self.0.extend_from_slice(b);
        self
    }
    pub(crate) fn str(self, tag: u64, s: &str) -> Self {
        self.bytes(tag, s.as_bytes())
    }
    pub(crate) fn msg(self, tag: u64, m: Enc) -> Self {
        self.bytes(tag, &m.0)
    }
    pub(crate) fn entry(self, tag: u64, key: &str, value: &str) -> Self {
        self.msg(tag, Enc::new().str(1, key).str(2, value))
    }
    pub(crate) fn entry_msg(self, tag: u64, key: &str, value: Enc) -> Self {
        self.msg(tag, Enc::new().str(1, key).msg(2, value))
    }
}

/// `k8s\0` + runtime.Unknown{TypeMeta, raw}.
pub(crate) fn envelope(api_version: &str, kind: &str, raw: Enc) -> Vec<u8> {
    let unknown = Enc::new()
        .msg(1, Enc::new().str(1, api_version).str(2, kind))
        .msg(2, raw);
    [MAGIC, &unknown.0].concat()
}

/// ObjectMeta as Go writes it: every value field present, zero when unset.
pub(crate) fn meta(name: &str) -> Enc {
    Enc::new()
        .str(1, name)
        .str(2, "")
        .str(3, "")
        .str(4, "")
        .str(5, "")
        .str(6, "")
        .int(7, 0)
        .msg(8, Enc::new())
}

fn quantity(s: &str) -> Enc {
    Enc::new().str(1, s)
}

#[test]
fn priority_class() {
    let raw = Enc::new()
        .msg(1, meta("hp"))
        .int(2, 1000)
        .int(3, 0)
        .str(4, "for important pods")
        .str(5, "Never");
    let v = decode(
        &envelope("scheduling.k8s.io/v1", "PriorityClass", raw),
        "",
        "",
    )
    .unwrap();
    assert_eq!(
        v,
        json!({
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "hp"},
            "value": 1000,
            "description": "for important pods",
            "preemptionPolicy": "Never",
        })
    );
}

#[test]
fn priority_class_value_zero_and_negative_are_kept() {
    let raw = Enc::new().msg(1, meta("low")).int(2, -5).int(3, 1);
    let v = decode(
        &envelope("scheduling.k8s.io/v1", "PriorityClass", raw),
        "",
        "",
    )
    .unwrap();
    assert_eq!(v["value"], json!(-5));
    assert_eq!(v["globalDefault"], json!(true));
    let raw = Enc::new().msg(1, meta("zero")).int(2, 0);
    let v = decode(
        &envelope("scheduling.k8s.io/v1", "PriorityClass", raw),
        "",
        "",
    )
    .unwrap();
    assert_eq!(
        v["value"],
        json!(0),
        "a required field is written even when zero"
    );
}

#[test]
fn namespace() {
    let raw = Enc::new()
        .msg(1, meta("team-a").entry(11, "env", "prod"))
        .msg(2, Enc::new())
        .msg(3, Enc::new().str(1, ""));
    let v = decode(&envelope("v1", "Namespace", raw), "v1", "Namespace").unwrap();
    assert_eq!(
        v,
        json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "team-a", "labels": {"env": "prod"}},
            "spec": {},
            "status": {},
        })
    );
}

#[test]
fn deployment_with_container_and_resources() {
    let container = Enc::new()
        .str(1, "web")
        .str(2, "nginx:1.27")
        .str(3, "nginx")
        .str(4, "-g")
        .str(4, "daemon off;")
        .str(5, "")
        .msg(6, Enc::new().int(2, 0).int(3, 80).str(4, "TCP"))
        .msg(7, Enc::new().str(1, "MODE").str(2, "fast"))
        .msg(
            8,
            Enc::new()
                .entry_msg(1, "cpu", quantity("500m"))
                .entry_msg(1, "memory", quantity("128Mi"))
                .entry_msg(2, "cpu", quantity("100m")),
        )
        .str(14, "IfNotPresent")
        .int(16, 0)
        .int(17, 0)
        .int(18, 0);
    let labels = || Enc::new().entry(1, "app", "web");
    let raw = Enc::new()
        .msg(1, meta("web").entry(11, "app", "web"))
        .msg(
            2,
            Enc::new()
                .int(1, 3)
                .msg(2, labels())
                .msg(
                    3,
                    Enc::new()
                        .msg(1, meta("").entry(11, "app", "web"))
                        .msg(2, Enc::new().msg(2, container).str(3, "")),
                )
                .msg(
                    4,
                    Enc::new().str(1, "RollingUpdate").msg(
                        2,
                        Enc::new()
                            .msg(1, Enc::new().int(1, 1).int(2, 0).str(3, "25%"))
                            .msg(2, Enc::new().int(1, 0).int(2, 2).str(3, "")),
                    ),
                )
                .int(5, 0)
                .int(6, 10)
                .int(7, 0),
        )
        .msg(3, Enc::new().int(1, 0).int(2, 0));
    let v = decode(
        &envelope("apps/v1", "Deployment", raw),
        "apps/v1",
        "Deployment",
    )
    .unwrap();
    assert_eq!(
        v,
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{
                        "name": "web",
                        "image": "nginx:1.27",
                        "command": ["nginx"],
                        "args": ["-g", "daemon off;"],
                        "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        "env": [{"name": "MODE", "value": "fast"}],
                        "resources": {
                            "limits": {"cpu": "500m", "memory": "128Mi"},
                            "requests": {"cpu": "100m"},
                        },
                        "imagePullPolicy": "IfNotPresent",
                    }]},
                },
                "strategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 2},
                },
                "revisionHistoryLimit": 10,
            },
            "status": {},
        })
    );
}

/// `kubectl create deployment d --image=nginx --replicas=0`, as kubectl 1.32 sent it.
#[test]
fn deployment_captured_from_kubectl() {
    let hex = concat!(
        "6b3873000a150a07617070732f7631120a4465706c6f796d656e7412a3010a1b",
        "0a016412001a0022002a003200380042005a080a036170701201641276080012",
        "0a0a080a036170701201641a5e0a1a0a0012001a0022002a003200380042005a",
        "080a03617070120164124012220a056e67696e7812056e67696e782a0042006a",
        "007200800100880100900100a201001a00320042004a00520058006000680082",
        "01008a01009a0100c2010022020a00280038001a0c0800100018002000280038",
        "001a002200",
    );
    let hex: String = hex.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    let body: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    let v = decode(&body, "apps/v1", "Deployment").unwrap();
    assert_eq!(
        v,
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"app": "d"}},
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": {"app": "d"}},
                "template": {
                    "metadata": {"labels": {"app": "d"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}]},
                },
                "strategy": {},
            },
            "status": {},
        })
    );
}

#[test]
fn secret_bytes_are_base64_and_times_are_rfc3339() {
    let raw = Enc::new()
        .msg(
            1,
            meta("s").msg(9, Enc::new().int(1, 1_700_000_000).int(2, 5)),
        )
        .msg(
            2,
            Enc::new().str(1, "password").bytes(2, b"hunter2\x00\xff"),
        )
        .str(3, "Opaque");
    let v = decode(&envelope("v1", "Secret", raw), "", "").unwrap();
    assert_eq!(v["data"], json!({"password": "aHVudGVyMgD/"}));
    assert_eq!(v["type"], json!("Opaque"));
    assert_eq!(
        v["metadata"]["deletionTimestamp"],
        json!("2023-11-14T22:13:20Z")
    );
    assert!(v["metadata"].get("creationTimestamp").is_none());
}

#[test]
fn lease_micro_times() {
    let t = Enc::new().int(1, 1_700_000_000).int(2, 123_456_789);
    let raw = Enc::new()
        .msg(1, meta("l"))
        .msg(2, Enc::new().str(1, "me").int(2, 15).msg(4, t).int(5, 0));
    let v = decode(&envelope("coordination.k8s.io/v1", "Lease", raw), "", "").unwrap();
    assert_eq!(
        v["spec"],
        json!({
            "holderIdentity": "me",
            "leaseDurationSeconds": 15,
            "renewTime": "2023-11-14T22:13:20.123456Z",
            "leaseTransitions": 0,
        })
    );
}

#[test]
fn inline_structs_are_flattened() {
    // Volume{name, VolumeSource{configMap{LocalObjectReference{name}, defaultMode}}}, and a
    // readiness probe whose ProbeHandler is inline.
    let volume = Enc::new().str(1, "conf").msg(
        2,
        Enc::new().msg(19, Enc::new().msg(1, Enc::new().str(1, "cm")).int(3, 420)),
    );
    let probe = Enc::new()
        .msg(
            1,
            Enc::new().msg(3, Enc::new().msg(1, Enc::new().int(1, 0).int(2, 8080))),
        )
        .int(2, 0)
        .int(3, 1);
    let container = Enc::new().str(1, "c").str(2, "busybox").msg(11, probe);
    let raw = Enc::new()
        .msg(1, meta("p"))
        .msg(2, Enc::new().msg(1, volume).msg(2, container));
    let v = decode(&envelope("v1", "Pod", raw), "", "").unwrap();
    assert_eq!(
        v["spec"]["volumes"],
        json!([{"name": "conf", "configMap": {"name": "cm", "defaultMode": 420}}])
    );
    assert_eq!(
        v["spec"]["containers"][0]["readinessProbe"],
        json!({"tcpSocket": {"port": 8080}, "timeoutSeconds": 1})
    );
}

#[test]
fn delete_options_in_any_group_version() {
    let raw = Enc::new()
        .int(1, 0)
        .str(4, "Foreground")
        .msg(2, Enc::new().str(1, "uid-1"));
    let v = decode(&envelope("apps/v1", "DeleteOptions", raw), "", "").unwrap();
    assert_eq!(
        v,
        json!({
            "apiVersion": "apps/v1",
            "kind": "DeleteOptions",
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": "uid-1"},
            "propagationPolicy": "Foreground",
        })
    );
}

#[test]
fn eviction_and_binding() {
    let raw = Enc::new()
        .msg(1, meta("p").str(3, "ns"))
        .msg(2, Enc::new().int(1, 30));
    let v = decode(&envelope("policy/v1", "Eviction", raw), "", "").unwrap();
    assert_eq!(v["metadata"], json!({"name": "p", "namespace": "ns"}));
    assert_eq!(v["deleteOptions"], json!({"gracePeriodSeconds": 30}));
    let raw = Enc::new()
        .msg(1, meta("p"))
        .msg(2, Enc::new().str(1, "Node").str(3, "node-1"));
    let v = decode(&envelope("v1", "Binding", raw), "", "").unwrap();
    assert_eq!(v["target"], json!({"kind": "Node", "name": "node-1"}));
}

#[test]
fn envelope_without_type_meta_uses_the_expected_kind() {
    let unknown = Enc::new().msg(2, Enc::new().msg(1, meta("x")));
    let body = [MAGIC, &unknown.0].concat();
    let v = decode(&body, "v1", "ConfigMap").unwrap();
    assert_eq!(
        v,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    );
}

#[test]
fn unknown_fields_are_skipped() {
    let raw = Enc::new()
        .msg(1, meta("hp"))
        .int(2, 7)
        .int(99, 1)
        .str(100, "future")
        .msg(101, Enc::new().int(1, 1));
    let v = decode(
        &envelope("scheduling.k8s.io/v1", "PriorityClass", raw),
        "",
        "",
    )
    .unwrap();
    assert_eq!(v["value"], json!(7));
}

#[test]
fn malformed_bodies_are_errors() {
    let good = envelope(
        "scheduling.k8s.io/v1",
        "PriorityClass",
        Enc::new().int(2, 1),
    );
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"{\"kind\":\"Pod\"}".to_vec(), "prefix"),
        (good[..good.len() - 1].to_vec(), "truncated"),
        (
            [MAGIC, &[0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f][..]].concat(),
            "truncated",
        ),
        ([MAGIC, &[0x08][..], &[0xff; 11][..]].concat(), "varint"),
        ([MAGIC, &[0x00][..]].concat(), "field number"),
        ([MAGIC, &[0x0b][..]].concat(), "wire type"),
        (envelope("v1", "Pod", Enc::new().int(1, 5)), "wire type"),
        (
            envelope("v1", "Pod", Enc::new().msg(1, Enc::new().bytes(1, b"\xff"))),
            "UTF-8",
        ),
        (
            envelope("example.com/v1", "Widget", Enc::new()),
            "not supported",
        ),
        (
            envelope(
                "v1",
                "Pod",
                Enc::new().msg(1, Enc::new().msg(8, Enc::new().int(1, i64::MAX))),
            ),
            "out of range",
        ),
    ];
    for (body, want) in cases {
        let err = decode(&body, "v1", "Pod").unwrap_err();
        assert!(err.contains(want), "{err:?} does not mention {want:?}");
    }
}

#[test]
fn deep_nesting_is_refused_without_overflowing_the_stack() {
    // No served kind is recursive, so the guard is exercised directly.
    let mut out = Map::new();
    let err = decode_fields(&[], 0, MAX_DEPTH + 1, &mut out).unwrap_err();
    assert!(err.contains("nested too deeply"));
}

#[test]
fn arbitrary_bytes_never_panic() {
    // A small deterministic fuzz: mutate a real body byte by byte and truncate it everywhere.
    let base = envelope(
        "v1",
        "Pod",
        Enc::new().msg(1, meta("p").entry(11, "a", "b")).msg(
            2,
            Enc::new().msg(2, Enc::new().str(1, "c").str(2, "img").msg(8, Enc::new())),
        ),
    );
    for i in 0..base.len() {
        let _ = decode(&base[..i], "v1", "Pod");
        for b in [0x00, 0x02, 0x08, 0x7f, 0x80, 0xff] {
            let mut body = base.clone();
            body[i] = b;
            let _ = decode(&body, "v1", "Pod");
        }
    }
}

#[test]
fn go_durations() {
    assert_eq!(go_duration(0), "0s");
    assert_eq!(go_duration(1_500), "1.5µs");
    assert_eq!(go_duration(1_500_000), "1.5ms");
    assert_eq!(go_duration(90_000_000_000), "1m30s");
    assert_eq!(go_duration(3_600_000_000_000), "1h0m0s");
    assert_eq!(go_duration(-2_500_000_000), "-2.5s");
}

#[test]
fn every_root_and_message_reference_is_in_range() {
    for (_, _, index) in schema::ROOTS {
        assert!(*index < schema::MESSAGES.len());
    }
    for m in schema::MESSAGES {
        for f in m.2 {
            if let Ty::One(Scalar::Msg(i)) | Ty::Many(Scalar::Msg(i)) | Ty::Map(Scalar::Msg(i)) =
                f.2
            {
                assert!(i < schema::MESSAGES.len(), "{}.{}", m.0, f.1);
            }
            assert!(f.3 & INLINE == 0 || matches!(f.2, Ty::One(Scalar::Msg(_))));
        }
    }
}
