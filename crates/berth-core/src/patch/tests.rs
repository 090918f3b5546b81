use super::*;
use proptest::prelude::*;
use serde_json::json;

fn smp(orig: Value, patch: Value, kind: &str) -> Value {
    strategic_merge(&orig, &patch, kind).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn kubectl_apply_with_set_element_order() {
    let live = json!({
        "metadata": {"name": "p1", "labels": {"app": "x"}, "annotations": {"other": "1"}},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.25", "ports": [{"containerPort": 80}]}],
                 "nodeName": "n1"}
    });
    let patch = json!({"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}\n"},"labels":{"tier":"web"}},"spec":{"$setElementOrder/containers":[{"name":"c"}],"containers":[{"image":"nginx:1.27","name":"c"}]}});
    let out = smp(live, patch, "Pod");
    assert_eq!(
        out,
        json!({
            "metadata": {"name": "p1", "labels": {"app": "x", "tier": "web"},
                         "annotations": {"other": "1", "kubectl.kubernetes.io/last-applied-configuration": "{}\n"}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}],
                     "nodeName": "n1"}
        })
    );
}

#[test]
fn set_element_order_reorders_and_keeps_server_only_items() {
    let live = json!({"spec": {"containers": [{"name": "a"}, {"name": "s"}, {"name": "b"}]}});
    let patch = json!({"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}, {"name": "n"}],
                                "containers": [{"name": "n", "image": "x"}]}});
    let out = smp(live, patch, "Pod");
    let names: Vec<&str> = out["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    // Upstream mergeSortedSlice: server-only "s" precedes "b" in the live list, so it goes first.
    assert_eq!(names, vec!["s", "b", "a", "n"]);
    // Order list only: a pure reorder.
    let live = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
    let out = smp(
        live,
        json!({"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}}),
        "Pod",
    );
    assert_eq!(
        out,
        json!({"spec": {"containers": [{"name": "b"}, {"name": "a"}]}})
    );
}

#[test]
fn kubectl_taint_bodies() {
    let node = json!({"metadata": {"name": "n1"}, "spec": {"taints": [
        {"key": "k", "value": "v", "effect": "NoSchedule"},
        {"key": "other", "effect": "NoExecute"}]}});
    // Removing k:NoSchedule sends the remaining list: taints are atomic.
    let out = smp(
        node.clone(),
        json!({"spec":{"taints":[{"effect":"NoExecute","key":"other"}]}}),
        "Node",
    );
    assert_eq!(
        out["spec"]["taints"],
        json!([{"effect": "NoExecute", "key": "other"}])
    );
    // Adding sends the full new list.
    let out = smp(
        json!({"spec": {}}),
        json!({"spec":{"taints":[{"effect":"NoSchedule","key":"k","value":"v"}]}}),
        "Node",
    );
    assert_eq!(
        out["spec"]["taints"],
        json!([{"effect": "NoSchedule", "key": "k", "value": "v"}])
    );
    // Removing the only taint.
    let out = smp(node, json!({"spec":{"taints":null}}), "Node");
    assert_eq!(out, json!({"metadata": {"name": "n1"}, "spec": {}}));
}

#[test]
fn cordon_uncordon_and_labels() {
    let node = json!({"metadata": {"name": "n1", "labels": {"zone": "a"}}, "spec": {}});
    let cordoned = smp(node.clone(), json!({"spec":{"unschedulable":true}}), "Node");
    assert_eq!(cordoned["spec"], json!({"unschedulable": true}));
    let uncordoned = smp(cordoned, json!({"spec":{"unschedulable":null}}), "Node");
    assert_eq!(uncordoned, node);
    let labelled = smp(
        node.clone(),
        json!({"metadata":{"labels":{"disk":"ssd"}}}),
        "Node",
    );
    assert_eq!(
        labelled["metadata"]["labels"],
        json!({"zone": "a", "disk": "ssd"})
    );
    let unlabelled = smp(
        labelled,
        json!({"metadata":{"labels":{"zone":null,"disk":null}}}),
        "Node",
    );
    assert_eq!(unlabelled["metadata"]["labels"], json!({}));
    // The same label bodies as JSON merge patch.
    assert_eq!(
        json_merge(&node, &json!({"metadata":{"labels":{"zone":null}}}))["metadata"]["labels"],
        json!({})
    );
}

#[test]
fn lists_merge_by_key_per_kind() {
    let dep = json!({"spec": {"replicas": 1, "template": {"spec": {"containers": [
        {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}]},
        {"name": "b", "image": "b:1"}]}}}});
    let patch = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "a", "env": [{"name": "Y", "value": "2"}]}]}}}});
    let out = smp(dep.clone(), patch.clone(), "Deployment");
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"],
        json!([{"name": "a", "image": "a:1", "env": [{"name": "Y", "value": "2"}, {"name": "X", "value": "1"}]},
               {"name": "b", "image": "b:1"}])
    );
    // An unknown kind replaces lists.
    let out = smp(dep, patch, "Widget");
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"],
        json!([{"name": "a", "env": [{"name": "Y", "value": "2"}]}])
    );
    // Service ports merge by port.
    let svc = json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}});
    let out = smp(
        svc,
        json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}, {"port": 53}]}}),
        "Service",
    );
    assert_eq!(
        out["spec"]["ports"],
        json!([{"port": 80, "targetPort": 9090}, {"port": 53}, {"port": 443}])
    );
    // Tolerations are atomic.
    let pod = json!({"spec": {"tolerations": [{"key": "a", "operator": "Exists"}]}});
    let out = smp(
        pod,
        json!({"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}}),
        "Pod",
    );
    assert_eq!(
        out["spec"]["tolerations"],
        json!([{"key": "b", "operator": "Exists"}])
    );
    // Node conditions merge by type.
    let node = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "MemoryPressure", "status": "False"}]}});
    let out = smp(
        node,
        json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}),
        "Node",
    );
    assert_eq!(
        out["status"]["conditions"][0],
        json!({"type": "Ready", "status": "False"})
    );
    assert_eq!(out["status"]["conditions"][1]["type"], "MemoryPressure");
}

/// Upstream's `mergeSlice` always ends in `normalizeElementOrder`: the patch's items in the
/// patch's order, the live-only items in the live order, merged so that a live item goes first
/// only when both are live and it came first; an item new to the list goes before the rest.
#[test]
fn merged_lists_take_upstreams_order() {
    let cases = [
        (
            "a new finalizer goes first",
            json!({"metadata": {"finalizers": ["a"]}}),
            json!({"metadata": {"finalizers": ["b"]}}),
            json!({"metadata": {"finalizers": ["b", "a"]}}),
        ),
        (
            "a finalizer already there keeps its place",
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"finalizers": ["b"]}}),
            json!({"metadata": {"finalizers": ["a", "b"]}}),
        ),
        (
            "a new container goes first",
            json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}),
            json!({"spec": {"containers": [{"name": "c"}]}}),
            json!({"spec": {"containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}]}}),
        ),
        (
            "patched items follow the patch; a live-only item goes before one it preceded live",
            json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}}),
            json!({"spec": {"containers": [{"name": "c", "image": "x"}, {"name": "a"}]}}),
            json!({"spec": {"containers": [{"name": "b"}, {"name": "c", "image": "x"}, {"name": "a"}]}}),
        ),
    ];
    for (name, orig, patch, want) in cases {
        assert_eq!(smp(orig, patch, "Pod"), want, "{name}");
    }
}

#[test]
fn directives() {
    let pod = json!({"metadata": {"finalizers": ["a", "b"], "labels": {"x": "1", "y": "2"}},
                     "spec": {"containers": [{"name": "a"}, {"name": "b"}],
                              "volumes": [{"name": "v", "emptyDir": {}}]}});
    // $patch: delete in a list element.
    let out = smp(
        pod.clone(),
        json!({"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}),
        "Pod",
    );
    assert_eq!(out["spec"]["containers"], json!([{"name": "b"}]));
    // $patch: replace in a list.
    let out = smp(
        pod.clone(),
        json!({"spec": {"containers": [{"name": "z"}, {"$patch": "replace"}]}}),
        "Pod",
    );
    assert_eq!(out["spec"]["containers"], json!([{"name": "z"}]));
    // $patch: replace in a map.
    let out = smp(
        pod.clone(),
        json!({"metadata": {"labels": {"$patch": "replace", "z": "3"}}}),
        "Pod",
    );
    assert_eq!(out["metadata"]["labels"], json!({"z": "3"}));
    // $patch: delete in a map.
    let out = smp(
        pod.clone(),
        json!({"metadata": {"labels": {"$patch": "delete"}}}),
        "Pod",
    );
    assert_eq!(out["metadata"]["labels"], json!({}));
    // $patch: merge in a map is the default behaviour.
    let out = smp(
        pod.clone(),
        json!({"metadata": {"labels": {"$patch": "merge", "z": "3"}}}),
        "Pod",
    );
    assert_eq!(
        out["metadata"]["labels"],
        json!({"x": "1", "y": "2", "z": "3"})
    );
    // finalizers: primitive set merge and $deleteFromPrimitiveList.
    let out = smp(
        pod.clone(),
        json!({"metadata": {"finalizers": ["b", "c"]}}),
        "Pod",
    );
    assert_eq!(out["metadata"]["finalizers"], json!(["a", "b", "c"]));
    let out = smp(
        pod.clone(),
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
        "Pod",
    );
    assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
    // $retainKeys on a volume switches its source.
    let out = smp(
        pod.clone(),
        json!({"spec": {"volumes": [{"name": "v", "$retainKeys": ["name", "hostPath"], "hostPath": {"path": "/x"}}]}}),
        "Pod",
    );
    assert_eq!(
        out["spec"]["volumes"],
        json!([{"name": "v", "hostPath": {"path": "/x"}}])
    );
    // New elements lose directives and nulls.
    let out = smp(
        json!({}),
        json!({"spec": {"containers": [{"name": "n", "image": null}]}}),
        "Pod",
    );
    assert_eq!(out, json!({"spec": {"containers": [{"name": "n"}]}}));
}

#[test]
fn errors() {
    let pod = json!({"spec": {"containers": [{"name": "a"}]}});
    let cases = [
        json!({"$foo": 1}),
        json!({"spec": {"$bogus/containers": []}}),
        json!({"metadata": {"$patch": "explode"}}),
        json!({"spec": {"containers": [{"image": "x"}]}}),
        json!({"spec": {"containers": [{"name": "a", "$patch": "merge"}]}}),
        json!({"spec": {"containers": [{"name": "a", "$patch": "bogus"}]}}),
        json!({"spec": {"volumes": [{"name": "v", "$retainKeys": ["name"], "hostPath": {}}]}}),
        json!({"spec": {"volumes": [{"name": "v", "$retainKeys": "name"}]}}),
        json!({"spec": {"$setElementOrder/containers": [{"name": "b"}], "containers": [{"name": "a"}]}}),
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}}),
    ];
    for p in cases {
        assert!(strategic_merge(&pod, &p, "Pod").is_err(), "{p}");
    }
    assert_eq!(
        strategic_merge(
            &pod,
            &json!({"spec": {"containers": [{"image": "x"}]}}),
            "Pod"
        )
        .unwrap_err()
        .to_string(),
        "map: {\"image\":\"x\"} does not contain declared merge key: name"
    );
    assert!(strategic_merge(&pod, &json!([1]), "Pod").is_err());
    assert!(strategic_merge(&json!(1), &json!({}), "Pod").is_err());
}

/// The two-way diff kubectl computes for label maps: changed keys, and `null` for removed ones.
fn diff_labels(old: &Map<String, Value>, new: &Map<String, Value>) -> Value {
    let mut p = Map::new();
    for (k, v) in new {
        if old.get(k) != Some(v) {
            p.insert(k.clone(), v.clone());
        }
    }
    for k in old.keys() {
        if !new.contains_key(k) {
            p.insert(k.clone(), Value::Null);
        }
    }
    json!({"metadata": {"labels": p}})
}

proptest! {
    #[test]
    fn apply_of_diff_gives_modified(
        old in prop::collection::btree_map("[a-d]", "[x-z]", 0..4),
        new in prop::collection::btree_map("[a-d]", "[x-z]", 0..4),
    ) {
        let to_map = |m: std::collections::BTreeMap<String, String>| -> Map<String, Value> {
            m.into_iter().map(|(k, v)| (k, Value::String(v))).collect()
        };
        let (old, new) = (to_map(old), to_map(new));
        let original = json!({"metadata": {"labels": old.clone()}});
        let out = strategic_merge(&original, &diff_labels(&old, &new), "Pod").unwrap();
        prop_assert_eq!(out, json!({"metadata": {"labels": new}}));
    }

    #[test]
    fn never_panics(orig in arb_json(), patch in arb_json(), kind in prop::sample::select(vec!["Pod", "Node", "Deployment", "Service", "X"])) {
        let _ = strategic_merge(&json!({"spec": orig}), &json!({"spec": patch}), kind);
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        "[a-c]".prop_map(Value::String),
        prop::sample::select(vec!["replace", "delete", "merge"])
            .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "name",
                    "containers",
                    "$patch",
                    "$retainKeys",
                    "$setElementOrder/containers",
                    "$deleteFromPrimitiveList/x",
                    "x",
                    "taints"
                ])
                .prop_map(str::to_string),
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
