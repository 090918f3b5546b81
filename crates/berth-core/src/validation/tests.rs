use super::*;
use serde_json::json;

const NAME_PART: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const DNS_LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS_SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

fn messages(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(FieldError::message).collect()
}

fn pod(spec: Value) -> Value {
    json!({"metadata": {"name": "p", "namespace": "default"}, "spec": spec})
}

fn ok_container() -> Value {
    json!({"name": "c", "image": "nginx"})
}

#[test]
fn taints_table() {
    let cases: Vec<(Value, Vec<String>)> = vec![
        (json!([{"key": "k", "value": "v", "effect": "NoSchedule"}]), vec![]),
        (json!([{"key": "example.com/k", "effect": "NoExecute"}]), vec![]),
        (
            json!([{"key": "-bad", "effect": "NoSchedule"}]),
            vec![format!("spec.taints[0].key: Invalid value: \"-bad\": {NAME_PART}")],
        ),
        (json!([{"key": "k"}]), vec!["spec.taints[0].effect: Required value".into()]),
        (
            json!([{"key": "k", "effect": "Bad"}]),
            vec!["spec.taints[0].effect: Unsupported value: \"Bad\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"".into()],
        ),
        (
            json!([{"key": "k", "value": "-v", "effect": "NoSchedule"}]),
            vec![format!("spec.taints[0].value: Invalid value: \"-v\": {LABEL_VALUE}")],
        ),
        (
            json!([{"key": "k", "value": "a", "effect": "NoSchedule"}, {"key": "k", "value": "b", "effect": "NoSchedule"}]),
            vec!["spec.taints[1]: Duplicate value: core.Taint{Key:\"k\", Value:\"b\", Effect:\"NoSchedule\", TimeAdded:(*v1.Time)(nil)}: taints must be unique by key and effect pair".into()],
        ),
        (
            json!([{"key": "", "effect": "NoSchedule"}]),
            vec![
                "spec.taints[0].key: Invalid value: \"\": name part must be non-empty".into(),
                format!("spec.taints[0].key: Invalid value: \"\": {NAME_PART}"),
            ],
        ),
        (json!(null), vec![]),
    ];
    for (taints, want) in cases {
        assert_eq!(
            messages(&validate_taints(&taints, "spec.taints")),
            want,
            "{taints}"
        );
    }
    let e = &validate_taints(&json!([{"key": "k"}]), "spec.taints")[0];
    assert_eq!(e.reason(), "FieldValueRequired");
    assert_eq!(e.body(), "Required value");
}

#[test]
fn tolerations_table() {
    let p = "spec.tolerations";
    let cases: Vec<(Value, Vec<String>)> = vec![
        (json!([{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}]), vec![]),
        (json!([{"operator": "Exists"}]), vec![]),
        (json!([{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}]), vec![]),
        (
            json!([{"operator": "Equal", "value": "v"}]),
            vec!["spec.tolerations[0].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"".into()],
        ),
        (
            json!([{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]),
            vec!["spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set".into()],
        ),
        (
            json!([{"key": "k", "operator": "Exists", "value": "v"}]),
            vec!["spec.tolerations[0].operator: Invalid value: core.Toleration{Key:\"k\", Operator:\"Exists\", Value:\"v\", Effect:\"\", TolerationSeconds:(*int64)(nil)}: value must be empty when `operator` is 'Exists'".into()],
        ),
        (
            json!([{"key": "k", "operator": "Foo"}]),
            vec!["spec.tolerations[0].operator: Unsupported value: \"Foo\": supported values: \"Equal\", \"Exists\"".into()],
        ),
        (
            json!([{"key": "k", "value": "-x"}]),
            vec![format!("spec.tolerations[0].operator: Invalid value: \"-x\": {LABEL_VALUE}")],
        ),
        (
            json!([{"key": "k", "operator": "Exists", "effect": "Sometimes"}]),
            vec!["spec.tolerations[0].effect: Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"".into()],
        ),
        (
            json!([{"key": "a/b/c", "operator": "Exists"}]),
            vec!["spec.tolerations[0].key: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".into()],
        ),
    ];
    for (tols, want) in cases {
        assert_eq!(messages(&validate_tolerations(&tols, p)), want, "{tols}");
    }
}

/// Issue 30: a pod's `activeDeadlineSeconds` is refused outside upstream's 1..=MaxInt32; a
/// toleration's `tolerationSeconds` has no bound upstream (any int64 is accepted and the taint
/// manager's arithmetic saturates).
#[test]
fn time_fields_table() {
    let range = "must be between 1 and 2147483647, inclusive";
    let cases: Vec<(&str, Value, Vec<String>)> = vec![
        (
            "a deadline of one second is valid",
            json!({"activeDeadlineSeconds": 1}),
            vec![],
        ),
        (
            "a deadline of MaxInt32 is valid",
            json!({"activeDeadlineSeconds": 2_147_483_647}),
            vec![],
        ),
        (
            "a deadline of zero is refused",
            json!({"activeDeadlineSeconds": 0}),
            vec![format!(
                "spec.activeDeadlineSeconds: Invalid value: 0: {range}"
            )],
        ),
        (
            "a deadline past MaxInt32 is refused",
            json!({"activeDeadlineSeconds": 2_147_483_648_i64}),
            vec![format!(
                "spec.activeDeadlineSeconds: Invalid value: 2147483648: {range}"
            )],
        ),
        (
            "a deadline of i64::MAX is refused",
            json!({"activeDeadlineSeconds": i64::MAX}),
            vec![format!(
                "spec.activeDeadlineSeconds: Invalid value: 9223372036854775807: {range}"
            )],
        ),
        (
            "a toleration of i64::MAX seconds is valid",
            json!({"tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": i64::MAX}]}),
            vec![],
        ),
        (
            "a grace period of i64::MAX seconds is valid",
            json!({"terminationGracePeriodSeconds": i64::MAX}),
            vec![],
        ),
    ];
    for (name, fields, want) in cases {
        let mut spec = json!({"containers": [ok_container()]});
        for (k, v) in fields.as_object().unwrap() {
            spec[k] = v.clone();
        }
        assert_eq!(messages(&validate_pod(&pod(spec.clone()))), want, "{name}");
        let template = json!({"spec": spec});
        let want: Vec<String> = want.iter().map(|w| format!("spec.template.{w}")).collect();
        assert_eq!(
            messages(&validate_pod_template(&template, "spec.template")),
            want,
            "{name} (template)"
        );
    }
}

#[test]
fn object_meta_table() {
    let cases: Vec<(Value, bool, Vec<String>)> = vec![
        (json!({"name": "a", "namespace": "default"}), true, vec![]),
        (json!({"name": "a"}), false, vec![]),
        (
            json!({}),
            false,
            vec!["metadata.name: Required value: name or generateName is required".into()],
        ),
        (
            json!({"generateName": "web-"}),
            false,
            vec!["metadata.name: Required value: name or generateName is required".into()],
        ),
        (
            json!({"name": "a"}),
            true,
            vec!["metadata.namespace: Required value".into()],
        ),
        (
            json!({"name": "a", "namespace": "x"}),
            false,
            vec!["metadata.namespace: Forbidden: not allowed on this type".into()],
        ),
        (
            json!({"name": "Bad_Name"}),
            false,
            vec![format!(
                "metadata.name: Invalid value: \"Bad_Name\": {DNS_SUBDOMAIN}"
            )],
        ),
        (
            json!({"name": "a", "namespace": "Bad"}),
            true,
            vec![format!(
                "metadata.namespace: Invalid value: \"Bad\": {DNS_LABEL}"
            )],
        ),
        (
            json!({"name": "a", "labels": {"-k": "v", "k": "-v"}}),
            false,
            vec![
                format!("metadata.labels: Invalid value: \"-k\": {NAME_PART}"),
                format!("metadata.labels: Invalid value: \"-v\": {LABEL_VALUE}"),
            ],
        ),
        (
            json!({"name": "a", "annotations": {"Example.com/Key": "x", "-a": "y"}}),
            false,
            vec![format!(
                "metadata.annotations: Invalid value: \"-a\": {NAME_PART}"
            )],
        ),
        (
            json!({"name": "a", "annotations": {"big": "x".repeat(262_144)}}),
            false,
            vec!["metadata.annotations: Too long: may not be more than 262144 bytes".into()],
        ),
        // Upstream's TestValidateObjectMetaOwnerReferences vectors.
        (
            json!({"name": "a", "ownerReferences": [
                {"apiVersion": "customresourceVersion", "kind": "customresourceKind",
                 "name": "name", "uid": "1"}]}),
            false,
            vec![],
        ),
        (
            json!({"name": "a", "ownerReferences": [{"apiVersion": "v1", "kind": "Event",
                                                     "name": "name", "uid": "1"}]}),
            false,
            vec!["metadata.ownerReferences: Invalid value: {\"apiVersion\":\"v1\",\"kind\":\"Event\",\"name\":\"name\",\"uid\":\"1\"}: /v1, Kind=Event is disallowed from being an owner".into()],
        ),
        (
            json!({"name": "a", "ownerReferences": [{"apiVersion": "apps/", "kind": ""}]}),
            false,
            vec![
                "metadata.ownerReferences.apiVersion: Invalid value: \"apps/\": version must not be empty".into(),
                "metadata.ownerReferences.kind: Invalid value: \"\": kind must not be empty".into(),
                "metadata.ownerReferences.name: Invalid value: \"\": name must not be empty".into(),
                "metadata.ownerReferences.uid: Invalid value: \"\": uid must not be empty".into(),
            ],
        ),
        (
            json!({"name": "a", "ownerReferences": [
                {"apiVersion": "v", "kind": "K", "name": "n", "uid": "1", "controller": false},
                {"apiVersion": "v", "kind": "K", "name": "n", "uid": "2", "controller": true},
                {"apiVersion": "v", "kind": "K", "name": "m", "uid": "3", "controller": true},
                {"apiVersion": "v", "kind": "K", "name": "n", "uid": "4"}]}),
            false,
            vec![format!(
                "metadata.ownerReferences: Invalid value: {}: Only one reference can have Controller set to true. Found \"true\" in references for K/n and K/m",
                concat!(
                    r#"[{"apiVersion":"v","kind":"K","name":"n","uid":"1","controller":false},"#,
                    r#"{"apiVersion":"v","kind":"K","name":"n","uid":"2","controller":true},"#,
                    r#"{"apiVersion":"v","kind":"K","name":"m","uid":"3","controller":true},"#,
                    r#"{"apiVersion":"v","kind":"K","name":"n","uid":"4"}]"#
                )
            )],
        ),
    ];
    for (meta, namespaced, want) in cases {
        assert_eq!(
            messages(&validate_object_meta(&meta, namespaced, "metadata")),
            want,
            "{meta}"
        );
    }
    assert_eq!(
        messages(&validate_namespace(&json!({"metadata": {"name": "a.b"}}))),
        vec![format!(
            "metadata.name: Invalid value: \"a.b\": {DNS_LABEL}"
        )]
    );
    assert!(
        validate_generic(&json!({"metadata": {"name": "x", "namespace": "d"}}), true).is_empty()
    );
}

#[test]
fn pod_table() {
    let cases: Vec<(Value, Vec<String>)> = vec![
        (pod(json!({"containers": [ok_container()]})), vec![]),
        (pod(json!({"containers": []})), vec!["spec.containers: Required value".into()]),
        (pod(json!({"containers": [{"name": "c"}]})), vec!["spec.containers[0].image: Required value".into()]),
        (pod(json!({"containers": [{"image": "x"}]})), vec!["spec.containers[0].name: Required value".into()]),
        (
            pod(json!({"containers": [{"name": "C", "image": "x"}]})),
            vec![format!("spec.containers[0].name: Invalid value: \"C\": {DNS_LABEL}")],
        ),
        (
            pod(json!({"containers": [ok_container(), ok_container()]})),
            vec!["spec.containers[1].name: Duplicate value: \"c\"".into()],
        ),
        (
            pod(json!({"containers": [ok_container()], "initContainers": [ok_container()]})),
            vec!["spec.initContainers[0].name: Duplicate value: \"c\"".into()],
        ),
        (
            pod(json!({"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}]})),
            vec!["spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1".into()],
        ),
        (
            pod(json!({"containers": [{"name": "c", "image": "x", "resources": {"requests": {"memory": "1Gi"}, "limits": {"memory": "512Mi"}}}]})),
            vec!["spec.containers[0].resources.requests: Invalid value: \"1Gi\": must be less than or equal to memory limit of 512Mi".into()],
        ),
        (
            pod(json!({"containers": [{"name": "c", "image": "x", "resources": {"limits": {"cpu": "lots"}}}]})),
            vec!["spec.containers[0].resources.limits[cpu]: Invalid value: \"lots\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'".into()],
        ),
        (
            pod(json!({"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "-1"}}}]})),
            vec!["spec.containers[0].resources.requests[cpu]: Invalid value: \"-1\": must be greater than or equal to 0".into()],
        ),
        (
            pod(json!({"containers": [{"name": "c", "image": "x", "resources": {"requests": {"gpu": "1"}}}]})),
            vec!["spec.containers[0].resources.requests[gpu]: Invalid value: \"gpu\": must be a standard resource for containers".into()],
        ),
        (
            pod(json!({"containers": [{"name": "c", "image": "x", "resources": {"requests": {"example.com/gpu": "1"}}}]})),
            vec!["spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources".into()],
        ),
        (
            pod(json!({"containers": [ok_container()], "nodeSelector": {"disk": "-ssd"}})),
            vec![format!("spec.nodeSelector: Invalid value: \"-ssd\": {LABEL_VALUE}")],
        ),
        (
            pod(json!({"containers": [ok_container()], "tolerations": [{"key": "k", "operator": "Foo"}]})),
            vec!["spec.tolerations[0].operator: Unsupported value: \"Foo\": supported values: \"Equal\", \"Exists\"".into()],
        ),
        (
            pod(json!({"containers": [ok_container()], "restartPolicy": "Sometimes"})),
            vec!["spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"".into()],
        ),
    ];
    for (p, want) in cases {
        assert_eq!(messages(&validate_pod(&p)), want, "{p}");
    }
}

#[test]
fn affinity_table() {
    let na = |expr: Value| {
        pod(
            json!({"containers": [ok_container()], "affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}}}}),
        )
    };
    let base = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]";
    let cases: Vec<(Value, Vec<String>)> = vec![
        (na(json!({"key": "zone", "operator": "In", "values": ["a"]})), vec![]),
        (na(json!({"key": "cpus", "operator": "Gt", "values": ["4"]})), vec![]),
        (
            na(json!({"key": "cpus", "operator": "Gt", "values": ["4", "5"]})),
            vec![format!("{base}.values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'")],
        ),
        (
            na(json!({"key": "zone", "operator": "In"})),
            vec![format!("{base}.values: Required value: must be specified when `operator` is 'In' or 'NotIn'")],
        ),
        (
            na(json!({"key": "zone", "operator": "Exists", "values": ["a"]})),
            vec![format!("{base}.values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'")],
        ),
        (
            na(json!({"key": "zone", "operator": "Near"})),
            vec![format!("{base}.operator: Invalid value: \"Near\": not a valid selector operator")],
        ),
        (
            pod(json!({"containers": [ok_container()], "affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []},
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "preference": {}}]}}})),
            vec![
                "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value: must have at least one node selector term".into(),
                "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100".into(),
            ],
        ),
        (
            pod(json!({"containers": [ok_container()], "affinity": {"podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]}, "topologyKey": "kubernetes.io/hostname"}]}}})),
            vec!["spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'".into()],
        ),
        (
            pod(json!({"containers": [ok_container()], "affinity": {"podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {"matchLabels": {"app": "x"}}}]}}})),
            vec![
                "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty".into(),
                "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: \"\": name part must be non-empty".into(),
                format!("spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: \"\": {NAME_PART}"),
            ],
        ),
    ];
    for (p, want) in cases {
        assert_eq!(messages(&validate_pod(&p)), want, "{p}");
    }
}

#[test]
fn node_and_templates() {
    let node =
        json!({"metadata": {"name": "n1"}, "spec": {"taints": [{"key": "k", "effect": "Bad"}]}});
    assert_eq!(
        messages(&validate_node(&node)),
        vec!["spec.taints[0].effect: Unsupported value: \"Bad\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\""]
    );
    let tmpl =
        json!({"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c"}]}});
    assert!(validate_pod_template(&tmpl, "spec.template").is_empty());
    let tmpl = json!({"spec": {"containers": []}});
    assert_eq!(
        messages(&validate_pod_template(&tmpl, "spec.template")),
        vec!["spec.template.spec.containers: Required value"]
    );
}

#[test]
fn status_messages() {
    let errs = validate_pod(
        &json!({"metadata": {"name": "p2", "namespace": "default"}, "spec": {"containers": [{"name": "c"}]}}),
    );
    assert_eq!(
        invalid_message("Pod", "p2", &errs),
        "Pod \"p2\" is invalid: spec.containers[0].image: Required value"
    );
    assert_eq!(errs[0].reason(), "FieldValueRequired");
    let two = [
        FieldError::required("a", ""),
        FieldError::required("b", ""),
        FieldError::required("a", ""),
    ];
    assert_eq!(
        aggregate_message(&two),
        "[a: Required value, b: Required value]"
    );
    assert_eq!(
        render_list(&["a".into(), "b".into()]),
        "[]string{\"a\", \"b\"}"
    );
    assert_eq!(
        FieldError::not_supported("f", "x", &[]).message(),
        "f: Unsupported value: \"x\""
    );
    assert_eq!(
        FieldError::forbidden("f", "no").reason(),
        "FieldValueForbidden"
    );
}
