//! Between stored bytes, request bodies and the objects handlers work on.

use crate::error::{ApiError, ApiResult};
use crate::event_view;
use crate::hpa_view;
use crate::path::Target;
use crate::request::content_type;
use crate::strict::{self, FieldValidation};
use axum::http::HeaderMap;
use berth_api::registry::ResourceType;
use berth_store::KeyValue;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::BTreeMap;

/// Decodes a stored object, stamping its resourceVersion and the apiVersion asked for.
pub fn decode(kv: &KeyValue, target: &Target) -> ApiResult<Value> {
    let mut v: Value = serde_json::from_slice(&kv.value)
        .map_err(|e| ApiError::Internal(format!("stored object {} is corrupt: {e}", kv.key)))?;
    if event_view::is_view(target.rt) {
        event_view::to_view(&mut v);
    } else if hpa_view::is_view(target.rt) {
        hpa_view::to_view(&mut v);
    }
    stamp(&mut v, kv.mod_revision, target);
    Ok(v)
}

/// What [`decode`] gives, as JSON bytes, without building a `Value`: the stored members are
/// copied as they are, with `apiVersion`, `kind` and `metadata.resourceVersion` set. The bytes
/// are those of `serde_json::to_vec(&decode(kv, target)?)`, because objects are stored compact
/// with their keys sorted (see [`encode`]), and a watch sends every event in this form, so
/// this spares it a tree of allocations per event. `None` where that cannot hold (an Event
/// view, or a value not stored in that form): decode it instead.
pub fn stamped_json(kv: &KeyValue, target: &Target) -> Option<Vec<u8>> {
    // A line break can only be whitespace between tokens: not the compact form.
    if event_view::is_view(target.rt) || hpa_view::is_view(target.rt) || kv.value.contains(&b'\n') {
        return None;
    }
    let revision = RawValue::from_string(format!("\"{}\"", kv.mod_revision)).ok()?;
    let api_version = serde_json::value::to_raw_value(&target.rt.api_version()).ok()?;
    let kind = serde_json::value::to_raw_value(target.rt.kind).ok()?;
    let mut members: BTreeMap<String, &RawValue> = serde_json::from_slice(&kv.value).ok()?;
    let mut meta: BTreeMap<String, &RawValue> = match members.get("metadata") {
        Some(meta) => serde_json::from_str(meta.get()).ok()?,
        None => BTreeMap::new(),
    };
    meta.insert("resourceVersion".into(), &revision);
    let meta = RawValue::from_string(serde_json::to_string(&meta).ok()?).ok()?;
    members.insert("apiVersion".into(), &api_version);
    members.insert("kind".into(), &kind);
    members.insert("metadata".into(), &meta);
    serde_json::to_vec(&members).ok()
}

/// Sets `metadata.resourceVersion` and the `apiVersion`/`kind` of the requested version.
pub fn stamp(v: &mut Value, revision: i64, target: &Target) {
    if let Some(obj) = v.as_object_mut() {
        obj.insert("apiVersion".into(), Value::String(target.rt.api_version()));
        obj.insert("kind".into(), Value::String(target.rt.kind.to_string()));
        let meta = obj
            .entry("metadata")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(m) = meta.as_object_mut() {
            m.insert(
                "resourceVersion".into(),
                Value::String(revision.to_string()),
            );
        }
    }
}

/// The bytes stored for an object: everything but its resourceVersion, which is the store's.
pub fn encode(v: &Value) -> bytes::Bytes {
    bytes::Bytes::from(serde_json::to_vec(&Stored(v)).unwrap_or_default())
}

/// The bytes stored for an object of `rt` as the request shows it: an `events.k8s.io` Event
/// is stored as the core Event it is a view of.
pub fn encode_for(v: &Value, rt: &ResourceType) -> bytes::Bytes {
    if event_view::is_view(rt) {
        encode(&event_view::to_core(v))
    } else if hpa_view::is_view(rt) {
        encode(&hpa_view::to_stored(v))
    } else {
        encode(v)
    }
}

/// An object as it is stored: serialized as it is, minus `metadata.resourceVersion`.
struct Stored<'a>(&'a Value);

/// A `metadata` map minus its `resourceVersion`.
struct StoredMeta<'a>(&'a serde_json::Map<String, Value>);

impl Serialize for Stored<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Value::Object(obj) = self.0 else {
            return self.0.serialize(s);
        };
        let mut map = s.serialize_map(Some(obj.len()))?;
        for (key, value) in obj {
            match (key.as_str(), value) {
                ("metadata", Value::Object(meta)) => map.serialize_entry(key, &StoredMeta(meta))?,
                _ => map.serialize_entry(key, value)?,
            }
        }
        map.end()
    }
}

impl Serialize for StoredMeta<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let len = self.0.len() - usize::from(self.0.contains_key("resourceVersion"));
        let mut map = s.serialize_map(Some(len))?;
        for (key, value) in self.0.iter().filter(|(k, _)| *k != "resourceVersion") {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// Parses a request body (JSON, or YAML by Content-Type) and applies field validation for
/// the kind it claims. Returns the object and any warnings (for `fieldValidation=Warn`).
pub fn decode_body(
    body: &[u8],
    headers: &HeaderMap,
    validation: FieldValidation,
    group: &str,
    kind: &str,
    version: &str,
) -> ApiResult<(Value, Vec<String>)> {
    let ctype = content_type(headers);
    let (value, dups) = match ctype.as_str() {
        "" | "application/json" | "*/*" => strict::parse_json(body).map_err(|e| bad_body(kind, version, &e))?,
        "application/yaml" | "application/x-yaml" | "text/yaml" => {
            (strict::parse_yaml(body).map_err(|e| bad_body(kind, version, &e))?, Vec::new())
        }
        crate::protobuf::MEDIA_TYPE => {
            let api_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
            (crate::protobuf::decode(body, &api_version, kind).map_err(|e| bad_body(kind, version, &e))?, Vec::new())
        }
        other => {
            return Err(ApiError::UnsupportedMediaType(format!(
                "the body of the request was in an unknown format ({other}) - accepted media types include: application/json, application/yaml"
            )))
        }
    };
    if !value.is_object() {
        return Err(bad_body(kind, version, "the body must be a JSON object"));
    }
    // Type errors are refused whatever the validation level; unknown fields depend on it.
    let unknown =
        strict::schema_check(group, kind, &value).map_err(|e| bad_body(kind, version, &e))?;
    // Unknown fields first, then duplicates, as upstream's strict decoder lists them.
    let mut problems: Vec<String> = unknown
        .iter()
        .map(|u| format!("unknown field \"{u}\""))
        .collect();
    problems.extend(dups.iter().map(|d| format!("duplicate field \"{d}\"")));
    if validation == FieldValidation::Strict && !problems.is_empty() {
        return Err(strict::strict_error(kind, version, &problems));
    }
    let mut value = value;
    strict::prune(&mut value, &unknown);
    match validation {
        FieldValidation::Warn => Ok((value, problems)),
        _ => Ok((value, Vec::new())),
    }
}

fn bad_body(kind: &str, version: &str, err: &str) -> ApiError {
    ApiError::BadRequest(format!(
        "{kind} in version \"{version}\" cannot be handled as a {kind}: {err}"
    ))
}

/// `metadata.<field>` as a string, or "".
pub fn meta_str<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// A mutable `metadata` map, created if absent.
pub fn meta_mut(v: &mut Value) -> &mut serde_json::Map<String, Value> {
    // Callers hold objects (bodies and patch results are checked first); should one slip
    // through, it becomes an object rather than a panic.
    if !v.is_object() {
        *v = Value::Object(Default::default());
    }
    if !v.get("metadata").is_some_and(Value::is_object) {
        v["metadata"] = Value::Object(Default::default());
    }
    v["metadata"]
        .as_object_mut()
        .expect("metadata was just made an object")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// The conformance spec's Deployment: one unknown field and one duplicate, reported in
    /// upstream's order (unknown fields, then duplicates).
    #[test]
    fn strict_decoding_lists_unknown_fields_before_duplicates() {
        let body = br#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"unknownField": "foo", "replicas": 2, "replicas": 3,
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": {"metadata": {"labels": {"app": "nginx"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}}"#;
        let err = decode_body(
            body,
            &HeaderMap::new(),
            FieldValidation::Strict,
            "apps",
            "Deployment",
            "v1",
        )
        .unwrap_err();
        assert!(
            err.message().contains(
                r#"strict decoding error: unknown field "spec.unknownField", duplicate field "spec.replicas""#
            ),
            "{}",
            err.message()
        );
    }

    fn pods() -> Target {
        Target {
            rt: berth_api::registry::find("", "v1", "pods").unwrap(),
            namespace: Some("ns".into()),
            name: None,
            subresource: None,
        }
    }

    fn stored(value: &[u8], revision: i64) -> KeyValue {
        KeyValue {
            key: "/registry/core/pods/ns/p".into(),
            value: bytes::Bytes::copy_from_slice(value),
            create_revision: 1,
            mod_revision: revision,
        }
    }

    /// Any JSON, with strings that need escaping and numbers of every sort.
    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            // Floats whose shortest digits read back as themselves: serde_json's reader
            // rounds some others, where the copied bytes keep the stored digits.
            any::<f64>()
                .prop_filter("reads back exactly", |f| {
                    serde_json::to_string(f)
                        .ok()
                        .and_then(|s| serde_json::from_str::<f64>(&s).ok())
                        == Some(*f)
                })
                .prop_map(Value::from),
            any::<String>().prop_map(Value::String),
        ];
        let keys = prop_oneof![
            Just("metadata".to_string()),
            Just("resourceVersion".to_string()),
            Just("kind".to_string()),
            Just("apiVersion".to_string()),
            any::<String>(),
        ];
        crate::testing::json_tree(leaf.boxed(), keys.boxed(), 4)
    }

    proptest! {
        /// Whatever is stored, the bytes a watch sends without decoding are those it would
        /// send after decoding, or it decodes.
        #[test]
        fn stamped_bytes_are_the_decoded_objects_bytes(v in json_value(), revision in 1i64..i64::MAX) {
            let kv = stored(&encode(&v), revision);
            let decoded = decode(&kv, &pods()).map(|d| serde_json::to_vec(&d).unwrap());
            if let Some(stamped) = stamped_json(&kv, &pods()) {
                prop_assert_eq!(Ok(stamped), decoded.map_err(|_| ()));
            } else {
                prop_assert!(!v.is_object() || !v.get("metadata").is_none_or(Value::is_object));
            }
        }
    }

    proptest! {
        /// A write answers with the stored bytes stamped: they must be the bytes of the
        /// object it stored, stamped.
        #[test]
        fn stamped_bytes_are_the_written_objects_bytes(v in json_value(), revision in 1i64..i64::MAX) {
            let kv = stored(&encode(&v), revision);
            if let Some(stamped) = stamped_json(&kv, &pods()) {
                let mut written = v.clone();
                stamp(&mut written, revision, &pods());
                prop_assert_eq!(stamped, serde_json::to_vec(&written).unwrap());
            }
        }
    }

    #[test]
    fn bytes_not_in_the_stored_form_are_decoded_instead() {
        let pretty = br#"{
            "metadata": {"name": "p"}
        }"#;
        assert_eq!(stamped_json(&stored(pretty, 3), &pods()), None);
        let meta_not_an_object = br#"{"metadata":"p"}"#;
        assert_eq!(stamped_json(&stored(meta_not_an_object, 3), &pods()), None);
        let pod = br#"{"metadata":{"name":"p","uid":"u"},"spec":{}}"#;
        assert_eq!(
            stamped_json(&stored(pod, 3), &pods()).unwrap(),
            br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","resourceVersion":"3","uid":"u"},"spec":{}}"#
        );
    }

    #[test]
    fn the_stored_bytes_leave_out_only_the_resource_version() {
        let obj = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "resourceVersion": "12", "labels": {"resourceVersion": "x"}},
            "spec": {"resourceVersion": "kept"}});
        let mut expected = obj.clone();
        expected["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("resourceVersion");
        assert_eq!(encode(&obj), serde_json::to_vec(&expected).unwrap());
        let without = expected.clone();
        assert_eq!(encode(&without), serde_json::to_vec(&expected).unwrap());
        assert_eq!(
            encode(&json!("x")),
            serde_json::to_vec(&json!("x")).unwrap()
        );
    }
}
