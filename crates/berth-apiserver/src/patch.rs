//! Applying a patch document of one of the three patch media types to an object.

use crate::codec::meta_str;
use crate::error::{ApiError, ApiResult, Cause};
use crate::strict::FieldPath;
use serde_json::Value;

/// Applies a patch of the given media type to `old`.
pub fn apply_patch(ctype: &str, old: &Value, patch: &Value, kind: &str) -> ApiResult<Value> {
    match ctype {
        "application/json-patch+json" => {
            let p: json_patch::Patch = serde_json::from_value(patch.clone())
                .map_err(|e| ApiError::BadRequest(format!("error decoding patch: {e}")))?;
            let mut doc = old.clone();
            json_patch::patch(&mut doc, &p).map_err(|e| ApiError::Invalid {
                kind: kind.into(),
                name: meta_str(old, "name").into(),
                causes: vec![Cause {
                    reason: "FieldValueInvalid".into(),
                    message: e.to_string(),
                    field: String::new(),
                }],
            })?;
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
    for field in ["name", "namespace"] {
        let now = patched["metadata"].get(field).and_then(Value::as_str);
        if now.is_some_and(|now| now != meta_str(old, field)) {
            return Err(invalid(
                &format!("metadata.{field}"),
                format!(
                    "Invalid value: {:?}: field is immutable",
                    now.unwrap_or_default()
                ),
            ));
        }
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
    fn renaming_through_a_patch_is_refused() {
        let err = check(
            JSON,
            json!([{"op": "replace", "path": "/metadata/name", "value": "d"}]),
        )
        .unwrap_err();
        assert_eq!(err.code(), 422);
        assert!(err.message().contains("metadata.name"), "{}", err.message());
        assert!(err.message().contains("field is immutable"));
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
