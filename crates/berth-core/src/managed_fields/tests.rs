use super::*;
use serde_json::{json, Value};

const NOW: &str = "2026-01-01T00:00:00Z";
const LATER: &str = "2026-01-01T00:01:00Z";

fn w<'a>(manager: &'a str, now: &'a str) -> Writer<'a> {
    Writer {
        kind: "Deployment",
        manager,
        api_version: "apps/v1",
        subresource: "",
        now,
    }
}

fn deploy(replicas: i64, labels: Value, image: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ns", "uid": "u", "labels": labels},
        "spec": {"replicas": replicas, "template": {"spec": {"containers": [
            {"name": "c", "image": image, "env": [{"name": "A", "value": "1"}]}]}}}})
}

fn merge(live: &Value, config: &Value) -> Value {
    crate::patch::strategic_merge(live, config, "Deployment").unwrap()
}

fn apply_as(
    entries: Vec<Entry>,
    live: &Value,
    config: &Value,
    manager: &str,
    force: bool,
) -> Result<(Value, Vec<Entry>), Conflicts> {
    apply(
        entries,
        live,
        config,
        merge(live, config),
        &w(manager, NOW),
        force,
    )
}

#[test]
fn fields_v1_has_upstream_shape() {
    let set = field_set(&deploy(1, json!({"app": "x"}), "i"), "Deployment");
    assert_eq!(
        set.to_fields_v1(),
        json!({"f:metadata": {"f:labels": {"f:app": {}}},
               "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                   "k:{\"name\":\"c\"}": {".": {}, "f:env": {"k:{\"name\":\"A\"}": {".": {}, "f:name": {}, "f:value": {}}},
                                          "f:image": {}, "f:name": {}}}}}}})
    );
    assert_eq!(FieldSet::from_fields_v1(&set.to_fields_v1()).unwrap(), set);
}

#[test]
fn set_lists_and_atomic_lists() {
    let obj =
        json!({"metadata": {"finalizers": ["a", "b"]}, "spec": {"tolerations": [{"key": "k"}]}});
    let set = field_set(&obj, "Pod");
    assert_eq!(
        set.to_fields_v1(),
        json!({"f:metadata": {"f:finalizers": {"v:\"a\"": {}, "v:\"b\"": {}}}, "f:spec": {"f:tolerations": {}}})
    );
}

#[test]
fn malformed_fields_v1_is_refused() {
    for bad in [
        json!([1]),
        json!({"x:y": {}}),
        json!({"k:notjson": {}}),
        json!({"f:a": 1}),
    ] {
        assert!(FieldSet::from_fields_v1(&bad).is_err(), "{bad}");
    }
    assert!(
        decode(&json!([{"manager": "m", "operation": "Bogus", "fieldsType": "FieldsV1"}])).is_err()
    );
    assert!(
        decode(&json!([{"manager": "m", "operation": "Update", "fieldsType": "FieldsV2"}]))
            .is_err()
    );
    assert!(decode(&json!("x")).is_err());
    let ok = json!([{"manager": "m", "operation": "Update", "apiVersion": "v1", "time": NOW,
                     "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]);
    assert_eq!(encode(&decode(&ok).unwrap()), ok);
}

#[test]
fn path_strings_are_upstreams() {
    let set = field_set(&deploy(1, json!({}), "i"), "Deployment");
    let paths: Vec<String> = set.paths().iter().map(|p| path_string(p)).collect();
    assert!(
        paths.contains(&".spec.template.spec.containers[name=\"c\"].image".to_string()),
        "{paths:?}"
    );
    assert!(paths.contains(&".spec.replicas".to_string()));
}

#[test]
fn first_apply_records_before_first_apply_and_conflicts_on_a_change() {
    let live = deploy(1, json!({"app": "x"}), "i");
    let config = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 3}});
    let err = apply_as(Vec::new(), &live, &config, "a", false).unwrap_err();
    assert_eq!(
        err.message(),
        "Apply failed with 1 conflict: conflict with \"before-first-apply\" using apps/v1: .spec.replicas"
    );
    // The same value is shared, no conflict.
    let same = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 1}});
    let (obj, entries) = apply_as(Vec::new(), &live, &same, "a", false).unwrap();
    assert_eq!(obj, live);
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].operation, Operation::Apply);
    assert!(entries[1].fields.to_fields_v1()["f:spec"]["f:replicas"].is_object());
}

#[test]
fn two_appliers_conflict_share_and_force() {
    let live = deploy(1, json!({}), "i");
    let ca = json!({"spec": {"replicas": 2}});
    let (live, entries) = apply_as(Vec::new(), &live, &ca, "a", true).unwrap();
    let cb = json!({"spec": {"replicas": 5}});
    let err = apply_as(entries.clone(), &live, &cb, "b", false).unwrap_err();
    assert_eq!(
        err.message(),
        "Apply failed with 1 conflict: conflict with \"a\": .spec.replicas"
    );
    let (_, shared) = apply_as(entries.clone(), &live, &ca, "b", false).unwrap();
    let owners = shared
        .iter()
        .filter(|e| e.fields.to_fields_v1()["f:spec"]["f:replicas"].is_object())
        .count();
    assert_eq!(owners, 2);
    let (obj, forced) = apply_as(entries, &live, &cb, "b", true).unwrap();
    assert_eq!(obj["spec"]["replicas"], 5);
    assert!(forced.iter().all(|e| e.manager == "b"
        || e.fields.to_fields_v1()["f:spec"]
            .get("f:replicas")
            .is_none()));
}

#[test]
fn dropped_fields_are_removed_unless_someone_else_owns_them() {
    let live = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {}});
    let c1 = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}, {"name": "s", "image": "j"}]}}}});
    let (live, entries) = apply_as(Vec::new(), &live, &c1, "a", false).unwrap();
    let c2 = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    let (obj, _) = apply_as(entries.clone(), &live, &c2, "a", false).unwrap();
    assert_eq!(obj["metadata"]["labels"], json!({"a": "1"}));
    assert_eq!(
        obj["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // b also applies label b: it stays when a drops it.
    let (live2, entries2) = apply_as(
        entries,
        &live,
        &json!({"metadata": {"labels": {"b": "2"}}}),
        "b",
        false,
    )
    .unwrap();
    let (obj, _) = apply_as(entries2, &live2, &c2, "a", false).unwrap();
    assert_eq!(obj["metadata"]["labels"], json!({"a": "1", "b": "2"}));
}

#[test]
fn updates_move_fields_to_the_writer() {
    let live = deploy(1, json!({}), "i");
    let (live, entries) = apply_as(
        Vec::new(),
        &live,
        &json!({"spec": {"replicas": 2}}),
        "a",
        true,
    )
    .unwrap();
    let mut scaled = live.clone();
    scaled["spec"]["replicas"] = json!(4);
    let sw = Writer {
        subresource: "scale",
        manager: "kubectl-scale",
        ..w("", LATER)
    };
    let entries = update(entries, &live, &scaled, &sw);
    let scale = entries
        .iter()
        .find(|e| e.manager == "kubectl-scale")
        .unwrap();
    assert_eq!(
        scale.fields.to_fields_v1(),
        json!({"f:spec": {"f:replicas": {}}})
    );
    assert_eq!(scale.time.as_deref(), Some(LATER));
    // a's Apply entry lost replicas (and, holding nothing else, is gone).
    assert!(entries.iter().all(|e| e.manager != "a"));
    let err = apply_as(
        entries,
        &scaled,
        &json!({"spec": {"replicas": 2}}),
        "a",
        false,
    )
    .unwrap_err();
    assert_eq!(
        err.0[0].manager,
        "\"kubectl-scale\" with subresource \"scale\" using apps/v1"
    );
    // A write that changes nothing changes no entry.
    let e = update(Vec::new(), &live, &live, &w("x", LATER));
    assert!(e.is_empty());
}

#[test]
fn several_conflicts_are_grouped_by_manager() {
    let c = Conflicts(vec![
        Conflict {
            manager: "\"b\"".into(),
            field: ".x".into(),
        },
        Conflict {
            manager: "\"a\"".into(),
            field: ".y".into(),
        },
    ]);
    assert_eq!(
        c.message(),
        "Apply failed with 2 conflicts: conflicts with \"a\":\n- .y\nconflicts with \"b\":\n- .x"
    );
}

fn arb_obj() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        any::<bool>().prop_map(Value::Bool),
        (0i64..4).prop_map(|n| json!(n)),
        prop::sample::select(vec!["a", "b", "c"]).prop_map(|s| json!(s)),
    ];
    let names = prop::sample::select(vec![
        "name",
        "image",
        "labels",
        "containers",
        "env",
        "value",
        "spec",
        "finalizers",
        "metadata",
    ]);
    leaf.prop_recursive(4, 40, 4, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map(names.clone().prop_map(str::to_string), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
    .prop_map(|v| json!({"spec": {"template": {"spec": v}}, "metadata": {"labels": {"x": "y"}}}))
}

proptest::proptest! {
    /// The set of an object holds the set of the object with any field removed; comparing an
    /// object with itself finds nothing; comparing with the empty object adds its whole set.
    #[test]
    fn sets_and_comparisons_agree(obj in arb_obj()) {
        let whole = field_set(&obj, "Deployment");
        let mut smaller = obj.clone();
        smaller.as_object_mut().unwrap().remove("metadata");
        let part = field_set(&smaller, "Deployment");
        proptest::prop_assert!(part.difference(&whole).is_empty());
        proptest::prop_assert!(compare(&obj, &obj, "Deployment").is_same());
        let c = compare(&json!({}), &obj, "Deployment");
        proptest::prop_assert!(whole.difference(&c.added).is_empty());
        // Removing a set then computing again gives (at most) the difference.
        let mut pruned = obj.as_object().unwrap().clone();
        let remove = whole.difference(&part);
        walk::prune(&mut pruned, &remove, &FieldSet::default(), walk::root("Deployment"));
        let after = field_set(&Value::Object(pruned), "Deployment");
        // ... plus, where a map was emptied, the map itself (an empty map is a leaf).
        let removed_paths = remove.paths();
        for extra in after.difference(&whole.difference(&remove)).paths() {
            proptest::prop_assert!(removed_paths.iter().any(|r| r.starts_with(&extra)), "{extra:?}");
        }
        proptest::prop_assert_eq!(FieldSet::from_fields_v1(&whole.to_fields_v1()).unwrap(), whole);
    }
}
