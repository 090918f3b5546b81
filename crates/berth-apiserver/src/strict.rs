//! Request body decoding with field validation (`fieldValidation=Strict|Warn|Ignore`).
//!
//! Unknown fields are found by decoding into the typed k8s-openapi struct, encoding it again
//! and comparing key sets: whatever the typed round trip dropped is not part of the schema.
//! Duplicate keys are found while parsing, since `serde_json::Value` keeps only the last.

use crate::error::ApiError;
use serde::de::{DeserializeOwned, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::fmt;

/// How the client asked unknown or duplicate fields to be treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

impl FieldValidation {
    pub fn parse(v: Option<&str>) -> Result<FieldValidation, ApiError> {
        match v {
            None | Some("") | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some(other) => Err(ApiError::BadRequest(format!(
                "fieldValidation must be one of \"Ignore\", \"Warn\" or \"Strict\", got {other:?}"
            ))),
        }
    }
}

/// Parses a JSON body, reporting duplicate keys by their path.
pub fn parse_json(body: &[u8]) -> Result<(Value, Vec<String>), String> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let mut dups = Vec::new();
    let value = DupVisitor {
        path: String::new(),
        dups: &mut dups,
    }
    .deserialize(&mut de)
    .map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok((value, dups))
}

/// Parses a YAML body (one document) into JSON.
pub fn parse_yaml(body: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(body).map_err(|e| e.to_string())?;
    serde_saphyr::from_str::<Value>(text).map_err(|e| e.to_string())
}

struct DupVisitor<'a> {
    path: String,
    dups: &'a mut Vec<String>,
}

impl DupVisitor<'_> {
    fn deserialize<'de, D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

struct Child<'a> {
    path: String,
    dups: &'a mut Vec<String>,
}

impl<'de> serde::de::DeserializeSeed<'de> for Child<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(DupVisitor {
            path: self.path,
            dups: self.dups,
        })
    }
}

impl<'de> Visitor<'de> for DupVisitor<'_> {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        let mut i = 0;
        while let Some(v) = seq.next_element_seed(Child {
            path: format!("{}[{i}]", self.path),
            dups: self.dups,
        })? {
            out.push(v);
            i += 1;
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = if self.path.is_empty() {
                key.clone()
            } else {
                format!("{}.{key}", self.path)
            };
            let v = map.next_value_seed(Child {
                path: path.clone(),
                dups: self.dups,
            })?;
            if out.insert(key, v).is_some() {
                self.dups.push(path);
            }
        }
        Ok(Value::Object(out))
    }
}

/// Fields of `input` that the typed round trip `output` dropped, as dotted paths.
fn unknown_fields(input: &Value, output: &Value, path: &str, out: &mut Vec<String>) {
    match (input, output) {
        (Value::Object(i), Value::Object(o)) => {
            for (k, v) in i {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match o.get(k) {
                    Some(ov) => unknown_fields(v, ov, &p, out),
                    // A null or an empty value may legitimately be dropped by the encoder.
                    None if is_empty(v) => {}
                    None => out.push(p),
                }
            }
        }
        (Value::Array(i), Value::Array(o)) => {
            for (n, (iv, ov)) in i.iter().zip(o.iter()).enumerate() {
                unknown_fields(iv, ov, &format!("{path}[{n}]"), out);
            }
        }
        _ => {}
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.values().all(is_empty),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

fn roundtrip<T: DeserializeOwned + serde::Serialize>(v: &Value) -> Result<Value, String> {
    // A type error names the field it is in, as upstream's decoder does.
    let typed: T = serde_path_to_error::deserialize(v.clone()).map_err(|e| {
        let path = e.path().to_string();
        match path.as_str() {
            "." => e.into_inner().to_string(),
            _ => format!("{path}: {}", e.into_inner()),
        }
    })?;
    serde_json::to_value(typed).map_err(|e| e.to_string())
}

/// Decodes `v` as the typed object of (`group`, `kind`) and returns the fields the schema does
/// not know. `Err` carries a type error (e.g. a string where a number belongs).
pub fn schema_check(group: &str, kind: &str, v: &Value) -> Result<Vec<String>, String> {
    use k8s_openapi::api as a;
    // The typed structs are of one version; other served versions of a kind (e.g.
    // scheduling.k8s.io/v1beta1 PriorityClass) share its schema, so the version is not checked here.
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("apiVersion");
    }
    let v = &v;
    let typed = match (group, kind) {
        ("", "Pod") => roundtrip::<a::core::v1::Pod>(v),
        ("", "Node") => roundtrip::<a::core::v1::Node>(v),
        ("", "Namespace") => roundtrip::<a::core::v1::Namespace>(v),
        ("", "Event") => roundtrip::<a::core::v1::Event>(v),
        ("", "ConfigMap") => roundtrip::<a::core::v1::ConfigMap>(v),
        ("", "Secret") => roundtrip::<a::core::v1::Secret>(v),
        ("", "Service") => roundtrip::<a::core::v1::Service>(v),
        ("", "ServiceAccount") => roundtrip::<a::core::v1::ServiceAccount>(v),
        ("", "ReplicationController") => roundtrip::<a::core::v1::ReplicationController>(v),
        ("", "PersistentVolume") => roundtrip::<a::core::v1::PersistentVolume>(v),
        ("", "PersistentVolumeClaim") => roundtrip::<a::core::v1::PersistentVolumeClaim>(v),
        ("", "Binding") => roundtrip::<a::core::v1::Binding>(v),
        ("apps", "Deployment") => roundtrip::<a::apps::v1::Deployment>(v),
        ("apps", "ReplicaSet") => roundtrip::<a::apps::v1::ReplicaSet>(v),
        ("apps", "DaemonSet") => roundtrip::<a::apps::v1::DaemonSet>(v),
        ("apps", "StatefulSet") => roundtrip::<a::apps::v1::StatefulSet>(v),
        ("batch", "Job") => roundtrip::<a::batch::v1::Job>(v),
        ("policy", "PodDisruptionBudget") => roundtrip::<a::policy::v1::PodDisruptionBudget>(v),
        ("policy", "Eviction") => roundtrip::<a::policy::v1::Eviction>(v),
        ("scheduling.k8s.io", "PriorityClass") => roundtrip::<a::scheduling::v1::PriorityClass>(v),
        ("coordination.k8s.io", "Lease") => roundtrip::<a::coordination::v1::Lease>(v),
        ("storage.k8s.io", "StorageClass") => roundtrip::<a::storage::v1::StorageClass>(v),
        _ => return Ok(Vec::new()),
    }?;
    let mut out = Vec::new();
    unknown_fields(v, &typed, "", &mut out);
    Ok(out)
}

/// The strict-decoding error message upstream gives.
pub fn strict_error(kind: &str, version: &str, problems: &[String]) -> ApiError {
    ApiError::BadRequest(format!(
        "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
        problems.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_are_reported_with_their_path() {
        let (v, dups) =
            parse_json(br#"{"metadata":{"name":"a","name":"b"},"spec":{"x":[{"k":1,"k":2}]}}"#)
                .unwrap();
        assert_eq!(v["metadata"]["name"], "b");
        assert_eq!(dups, vec!["metadata.name", "spec.x[0].k"]);
    }

    #[test]
    fn unknown_pod_fields_are_found() {
        let pod = serde_json::json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","creationTimestamp":null},
            "spec":{"foo":1,"containers":[{"name":"c","image":"i","bogus":true}]}});
        let unknown = schema_check("", "Pod", &pod).unwrap();
        assert_eq!(unknown, vec!["spec.containers[0].bogus", "spec.foo"]);
    }

    #[test]
    fn type_errors_are_errors_naming_the_field() {
        let pod = serde_json::json!({"kind":"Pod","metadata":{"name":5}});
        let err = schema_check("", "Pod", &pod).unwrap_err();
        assert!(err.starts_with("metadata.name: invalid type"), "{err}");
        let pod = serde_json::json!({"kind":"Pod","spec":{"containers":[{"name":"c","ports":[{"containerPort":"eighty"}]}]}});
        let err = schema_check("", "Pod", &pod).unwrap_err();
        assert!(
            err.starts_with("spec.containers[0].ports[0].containerPort: invalid type"),
            "{err}"
        );
    }
}
