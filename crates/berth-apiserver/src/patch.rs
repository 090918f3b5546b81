//! Applying a patch document of one of the three patch media types to an object.

use crate::codec::meta_str;
use crate::error::{ApiError, ApiResult, Cause};
use crate::strict::FieldPath;
use serde_json::Value;

/// Most operations one JSON patch may hold (upstream's `maxJSONPatchOperations`): each one
/// costs a walk of the object, so ten thousand bound the work one request can ask for.
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// Most bytes the `copy` operations of one JSON patch may add, counted as the JSON of each
/// copied value (upstream's `JSONPatchMaxCopyBytes`: twice etcd's 1.5 MiB request limit, as a
/// JSON object shrinks when stored). Without it a 2 KB patch of copies doubling a value built
/// a 1 GiB object in memory.
pub const MAX_JSON_PATCH_COPY_BYTES: usize = 3 * 1024 * 1024;

/// Applies a patch of the given media type to `old`.
pub fn apply_patch(ctype: &str, old: &Value, patch: &Value, kind: &str) -> ApiResult<Value> {
    match ctype {
        "application/json-patch+json" => {
            let p: json_patch::Patch = serde_json::from_value(patch.clone())
                .map_err(|e| ApiError::BadRequest(format!("error decoding patch: {e}")))?;
            if p.0.len() > MAX_JSON_PATCH_OPERATIONS {
                return Err(ApiError::RequestEntityTooLarge(format!(
                    "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
                    p.0.len()
                )));
            }
            let invalid = |message: String| ApiError::Invalid {
                kind: kind.into(),
                name: meta_str(old, "name").into(),
                causes: vec![Cause {
                    reason: "FieldValueInvalid".into(),
                    message,
                    field: String::new(),
                }],
            };
            let mut doc = old.clone();
            json_patch_bounded(&mut doc, &p.0, MAX_JSON_PATCH_COPY_BYTES).map_err(invalid)?;
            Ok(doc)
        }
        "application/merge-patch+json" => {
            let mut doc = old.clone();
            json_patch::merge(&mut doc, patch);
            Ok(doc)
        }
        _ => berth_core::patch::strategic_merge(old, patch, kind)
            .map_err(|e| ApiError::BadRequest(e.to_string())),
    }
}

/// Applies `ops` to `doc` one at a time, refusing once the values `copy` operations duplicate
/// add up to more than `copy_limit` bytes of JSON. On error `doc` is left half-patched: the
/// caller patches a copy and drops it. (The crate's all-or-nothing `patch` undoes a failed
/// patch step by step, and panics when an undo cannot be applied, as after a `move` into the
/// moved value's own parent: there is nothing to undo in a copy that is thrown away.)
fn json_patch_bounded(
    doc: &mut Value,
    ops: &[json_patch::PatchOperation],
    copy_limit: usize,
) -> Result<(), String> {
    let mut copied = 0usize;
    for (index, op) in ops.iter().enumerate() {
        if let json_patch::PatchOperation::Copy(copy) = op {
            if let Some(value) = doc.pointer(copy.from.as_str()) {
                copied = copied.saturating_add(json_len_up_to(value, copy_limit - copied + 1));
                if copied > copy_limit {
                    return Err(format!(
                        "Unable to complete the copy, the accumulated size increase of copy is {copied}, exceeding the limit {copy_limit}"
                    ));
                }
            }
        }
        json_patch::patch_unsafe(doc, std::slice::from_ref(op)).map_err(|e| {
            // Applied one at a time, each operation is the patch's `/0`: name its own index.
            format!(
                "operation '/{index}' failed at path '{}': {}",
                e.path, e.kind
            )
        })?;
    }
    Ok(())
}

/// The length of `value`'s JSON, counted up to `cap` bytes (a value's JSON is not built in
/// memory to be measured).
fn json_len_up_to(value: &Value, cap: usize) -> usize {
    struct Counter {
        len: usize,
        cap: usize,
    }
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.len += buf.len();
            if self.len >= self.cap {
                return Err(std::io::Error::other("over the cap"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter { len: 0, cap };
    let _ = serde_json::to_writer(&mut counter, value);
    counter.len.min(cap)
}

/// The top-level fields of the object a patch document may change, or `None` when it may change
/// anything (a root path, a directive, a document that is not an object).
pub fn touched_fields(ctype: &str, patch: &Value) -> Option<Vec<String>> {
    let mut fields = Vec::new();
    match ctype {
        "application/json-patch+json" => {
            for op in patch.as_array()? {
                for at in ["path", "from"] {
                    if let Some(path) = op.get(at).and_then(Value::as_str) {
                        let first = path.strip_prefix('/')?.split('/').next()?;
                        fields.push(first.replace("~1", "/").replace("~0", "~"));
                    }
                }
            }
        }
        _ => {
            for key in patch.as_object()?.keys() {
                if key.starts_with('$') {
                    return None;
                }
                fields.push(key.clone());
            }
        }
    }
    Some(fields)
}

/// Checks that a patched object still names the object the URL names (upstream's `checkName`,
/// 400 otherwise): a patch that removes the name (`{"metadata":null}`, a `move` of
/// `/metadata/name`, a strategic `$patch: delete`) or changes it or the namespace is refused.
fn check_name(patched: &Value, name: &str, namespace: &str) -> ApiResult<()> {
    let meta = &patched["metadata"];
    let patched_name = meta["name"].as_str().unwrap_or("");
    if patched_name.is_empty() {
        return Err(ApiError::BadRequest(format!(
            "the name of the object ({name} based on URL) was undeterminable: name must be provided"
        )));
    }
    if patched_name != name {
        return Err(ApiError::BadRequest(format!(
            "the name of the object ({patched_name}) does not match the name on the URL ({name})"
        )));
    }
    let patched_namespace = meta["namespace"].as_str().unwrap_or("");
    if !namespace.is_empty() && !patched_namespace.is_empty() && patched_namespace != namespace {
        return Err(ApiError::BadRequest(format!(
            "the namespace of the object ({patched_namespace}) does not match the namespace on the request ({namespace})"
        )));
    }
    Ok(())
}

/// Checks that a patch left an object its kind can hold: a JSON object, the same name and
/// namespace, and (in the fields the patch touched: the rest is as stored, so the check costs
/// what the patch touched) values of the schema's types. Upstream decodes the patched object
/// into its type and answers 422 Invalid on the `patch` field when that fails. Returns the
/// fields the schema does not know, for field validation.
pub fn check_patched(
    group: &str,
    kind: &str,
    old: &Value,
    patched: &Value,
    touched: Option<&[String]>,
) -> ApiResult<Vec<FieldPath>> {
    let name = meta_str(old, "name");
    let invalid = |field: &str, message: String| ApiError::Invalid {
        kind: kind.into(),
        name: name.into(),
        causes: vec![Cause {
            reason: "FieldValueInvalid".into(),
            message,
            field: field.into(),
        }],
    };
    if !patched.is_object() {
        return Err(invalid(
            "patch",
            format!("Invalid value: {patched}: the patched {kind} is not a JSON object"),
        ));
    }
    check_name(patched, name, meta_str(old, "namespace"))?;
    // A uid in the patch must be the object's (upstream's immutable-field check); controllers
    // put it there so a patch cannot land on a same-named replacement.
    let uid = meta_str(patched, "uid");
    if !uid.is_empty() && uid != meta_str(old, "uid") {
        return Err(invalid(
            "metadata.uid",
            format!(
                "Invalid value: {}: field is immutable",
                berth_core::validation::names::go_quote(uid)
            ),
        ));
    }
    let projection = match touched {
        None => patched.clone(),
        Some(fields) => {
            let mut p = serde_json::Map::new();
            for f in fields
                .iter()
                .map(String::as_str)
                .chain(["apiVersion", "kind"])
            {
                if let Some(v) = patched.get(f) {
                    p.insert(f.to_string(), v.clone());
                }
            }
            Value::Object(p)
        }
    };
    crate::strict::schema_check(group, kind, &projection)
        .map_err(|e| invalid("patch", format!("Invalid value: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cm() -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "c", "namespace": "ns"}, "data": {"a": "b"}})
    }

    fn check(ctype: &str, patch: Value) -> ApiResult<Value> {
        let old = cm();
        let patched = apply_patch(ctype, &old, &patch, "ConfigMap")?;
        let touched = touched_fields(ctype, &patch);
        check_patched("", "ConfigMap", &old, &patched, touched.as_deref())?;
        Ok(patched)
    }

    const MERGE: &str = "application/merge-patch+json";
    const JSON: &str = "application/json-patch+json";
    const STRATEGIC: &str = "application/strategic-merge-patch+json";

    #[test]
    fn a_patch_that_breaks_the_schema_is_invalid() {
        for (ctype, patch) in [
            (STRATEGIC, json!({"data": "str"})),
            (MERGE, json!({"data": "str"})),
            (MERGE, json!([1])),
            (MERGE, json!(1)),
            (
                JSON,
                json!([{"op": "replace", "path": "/data", "value": 5}]),
            ),
            (JSON, json!([{"op": "replace", "path": "", "value": [1]}])),
        ] {
            let err = check(ctype, patch.clone()).unwrap_err();
            assert_eq!(err.code(), 422, "{ctype} {patch}: {}", err.message());
        }
    }

    #[test]
    fn a_patch_that_renames_or_unnames_the_object_is_a_bad_request() {
        let unnamed =
            "the name of the object (c based on URL) was undeterminable: name must be provided";
        for (ctype, patch, message) in [
            (
                JSON,
                json!([{"op": "replace", "path": "/metadata/name", "value": "d"}]),
                "the name of the object (d) does not match the name on the URL (c)",
            ),
            (
                JSON,
                json!([{"op": "move", "from": "/metadata/name", "path": "/data/n"}]),
                unnamed,
            ),
            (MERGE, json!({"metadata": null}), unnamed),
            (STRATEGIC, json!({"$patch": "delete"}), unnamed),
            (
                MERGE,
                json!({"metadata": {"namespace": "other"}}),
                "the namespace of the object (other) does not match the namespace on the request (ns)",
            ),
        ] {
            let err = check(ctype, patch.clone()).unwrap_err();
            assert_eq!(err.code(), 400, "{ctype} {patch}: {}", err.message());
            assert_eq!(err.message(), message, "{ctype} {patch}");
        }
    }

    #[test]
    fn a_failing_patch_after_a_move_into_its_parent_is_invalid_not_a_panic() {
        let err = check(
            JSON,
            json!([{"op": "move", "from": "/data/a", "path": "/data"},
                   {"op": "test", "path": "/nope", "value": 1}]),
        )
        .unwrap_err();
        assert_eq!(err.code(), 422, "{}", err.message());
        assert!(
            err.message().contains("operation '/1' failed"),
            "{}",
            err.message()
        );
    }

    #[test]
    fn more_operations_than_upstream_allows_are_too_large() {
        let ops = vec![json!({"op": "test", "path": "/data/a", "value": "b"}); 10_001];
        let err = check(JSON, Value::Array(ops)).unwrap_err();
        assert_eq!(err.code(), 413);
        assert_eq!(
            err.message(),
            "The allowed maximum operations in a JSON patch is 10000, got 10001"
        );
        let ops = vec![json!({"op": "test", "path": "/data/a", "value": "b"}); 10_000];
        check(JSON, Value::Array(ops)).unwrap();
    }

    #[test]
    fn copies_that_add_up_past_the_limit_are_refused() {
        // Each copy doubles the value: 2 KB of patch would build 2^30 bytes.
        let mut ops = vec![json!({"op": "add", "path": "/data/a", "value": "x".repeat(1000)})];
        for i in 0..21 {
            ops.push(json!({"op": "add", "path": format!("/data/l{i}"), "value": []}));
            ops.push(json!({"op": "copy", "from": "/data", "path": format!("/data/l{i}/-")}));
        }
        let err = check(JSON, Value::Array(ops)).unwrap_err();
        assert_eq!(err.code(), 422, "{}", err.message());
        assert!(
            err.message()
                .contains("Unable to complete the copy, the accumulated size increase of copy is")
                && err.message().contains("exceeding the limit 3145728"),
            "{}",
            err.message()
        );
        // Copies under the limit are fine.
        check(
            JSON,
            json!([{"op": "copy", "from": "/data/a", "path": "/data/b"}]),
        )
        .unwrap();
    }

    #[test]
    fn the_copy_size_is_the_json_of_the_copied_value() {
        assert_eq!(json_len_up_to(&json!("AAAA"), 100), 6);
        assert_eq!(json_len_up_to(&json!({"a": [1, 2]}), 100), 11);
        assert_eq!(json_len_up_to(&json!("x".repeat(1000)), 10), 10);
    }

    #[test]
    fn good_patches_pass() {
        assert_eq!(
            check(MERGE, json!({"data": {"x": "y"}})).unwrap()["data"]["x"],
            "y"
        );
        check(
            JSON,
            json!([{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]),
        )
        .unwrap();
        check(STRATEGIC, json!({"metadata": {"labels": {"a": "b"}}})).unwrap();
    }

    #[test]
    fn the_touched_fields_are_the_top_level_ones_the_patch_names() {
        assert_eq!(
            touched_fields(MERGE, &json!({"status": {"phase": "Running"}})),
            Some(vec!["status".to_string()])
        );
        assert_eq!(
            touched_fields(
                JSON,
                &json!([{"op": "move", "from": "/a", "path": "/b~1c/d"}])
            ),
            Some(vec!["b/c".to_string(), "a".to_string()])
        );
        assert_eq!(
            touched_fields(JSON, &json!([{"op": "add", "path": "", "value": {}}])),
            None
        );
        assert_eq!(
            touched_fields(STRATEGIC, &json!({"$patch": "replace"})),
            None
        );
        assert_eq!(touched_fields(MERGE, &json!([1])), None);
    }

    fn arb_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            prop::sample::select(vec![
                "",
                "/",
                "/data",
                "/metadata/name",
                "/data/a",
                "add",
                "remove",
                "replace",
                "move",
                "copy",
                "test"
            ])
            .prop_map(|s| Value::String(s.into())),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(
                    prop::sample::select(vec![
                        "op",
                        "path",
                        "from",
                        "value",
                        "data",
                        "metadata",
                        "name",
                        "$patch",
                        "kind",
                        "apiVersion",
                        "binaryData",
                        "labels",
                    ])
                    .prop_map(str::to_string),
                    inner,
                    0..4
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        /// Any patch document of any patch type gives a patched, checked object or an error
        /// with a 4xx code; never a panic.
        #[test]
        fn any_patch_document_is_answered(patch in arb_json(), ctype in proptest::sample::select(vec![MERGE, JSON, STRATEGIC])) {
            if let Err(e) = check(ctype, patch) {
                proptest::prop_assert!((400..500).contains(&e.code()), "{}", e.message());
            }
        }
    }
}
