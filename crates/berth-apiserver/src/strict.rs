//! Request body decoding with field validation (`fieldValidation=Strict|Warn|Ignore`).
//!
//! Unknown fields are found while decoding the parsed body into the typed k8s-openapi struct:
//! the typed decoders skip a field they do not know with `IgnoredAny`, and the deserializer
//! they read from ([`Tracked`]) names every value skipped that way. The typed value is then
//! dropped; handlers keep working on the JSON. Duplicate keys are found while parsing, since
//! `serde_json::Value` keeps only the last. Paths are formatted only for what is reported.

use crate::error::ApiError;
use serde::de::{DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::cell::RefCell;
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
    let dups = RefCell::new(Vec::new());
    let value = DupVisitor {
        path: Path::Root,
        dups: &dups,
    }
    .deserialize(&mut de)
    .map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok((value, dups.into_inner()))
}

/// Parses a YAML body (one document) into JSON.
pub fn parse_yaml(body: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(body).map_err(|e| e.to_string())?;
    serde_saphyr::from_str::<Value>(text).map_err(|e| e.to_string())
}

/// Where a value sits in a body, as the parser or checker descends: a chain of borrowed
/// segments that is formatted (`spec.containers[0].name`) only when something is reported.
#[derive(Clone, Copy)]
enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Path::Root => Ok(()),
            Path::Key(Path::Root, key) => f.write_str(key),
            Path::Key(parent, key) => write!(f, "{parent}.{key}"),
            Path::Index(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}

/// One step of a field's path: a key of an object or an index into an array.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    Key(String),
    Index(usize),
}

/// Where a field sits in a body, displayed as upstream names it (`spec.containers[0].name`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldPath(Vec<Segment>);

impl FieldPath {
    fn of(path: &Path) -> FieldPath {
        fn walk(path: &Path, out: &mut Vec<Segment>) {
            match path {
                Path::Root => {}
                Path::Key(parent, key) => {
                    walk(parent, out);
                    out.push(Segment::Key(key.to_string()));
                }
                Path::Index(parent, i) => {
                    walk(parent, out);
                    out.push(Segment::Index(*i));
                }
            }
        }
        let mut segments = Vec::new();
        walk(path, &mut segments);
        FieldPath(segments)
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        for (n, segment) in self.0.iter().enumerate() {
            match segment {
                Segment::Key(key) if n == 0 => f.write_str(key)?,
                Segment::Key(key) => write!(f, ".{key}")?,
                Segment::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

/// Removes the fields `unknown` names from `v`: decoding into upstream's types drops them, so
/// upstream never stores a field its schema does not have (`fieldValidation=Warn|Ignore`).
pub fn prune(v: &mut Value, unknown: &[FieldPath]) {
    fn remove(v: &mut Value, segments: &[Segment]) {
        match segments {
            [Segment::Key(key)] => {
                if let Some(object) = v.as_object_mut() {
                    object.remove(key);
                }
            }
            [Segment::Key(key), rest @ ..] => {
                if let Some(child) = v.get_mut(key.as_str()) {
                    remove(child, rest);
                }
            }
            [Segment::Index(i), rest @ ..] => {
                if let Some(child) = v.get_mut(*i) {
                    remove(child, rest);
                }
            }
            [] => {}
        }
    }
    if unknown.is_empty() {
        return;
    }
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or_default();
    let fields: Vec<String> = unknown.iter().map(ToString::to_string).collect();
    tracing::debug!(kind, fields = %fields.join(", "), "dropping fields the schema does not know");
    for path in unknown {
        remove(v, &path.0);
    }
}

struct DupVisitor<'a> {
    path: Path<'a>,
    dups: &'a RefCell<Vec<String>>,
}

impl DupVisitor<'_> {
    fn deserialize<'de, D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for DupVisitor<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
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
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(v) = seq.next_element_seed(DupVisitor {
            path: Path::Index(&self.path, out.len()),
            dups: self.dups,
        })? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let v = map.next_value_seed(DupVisitor {
                path: Path::Key(&self.path, &key),
                dups: self.dups,
            })?;
            match out.entry(key) {
                serde_json::map::Entry::Occupied(mut first) => {
                    let path = Path::Key(&self.path, first.key()).to_string();
                    self.dups.borrow_mut().push(path);
                    first.insert(v);
                }
                serde_json::map::Entry::Vacant(slot) => {
                    slot.insert(v);
                }
            }
        }
        Ok(Value::Object(out))
    }
}

/// The message for a body the typed decoder refuses, naming the field as upstream's decoder
/// does (`spec.containers[0].ports[0].containerPort: invalid type...`). Only on that rare path
/// is the body decoded a second time, by a decoder that tracks where it failed.
fn type_error<T: DeserializeOwned>(v: &Value, first: serde_json::Error) -> String {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("apiVersion");
    }
    match serde_path_to_error::deserialize::<_, T>(v) {
        Err(e) => {
            let path = e.path().to_string();
            match path.as_str() {
                "." => e.into_inner().to_string(),
                _ => format!("{path}: {}", e.into_inner()),
            }
        }
        Ok(_) => first.to_string(),
    }
}

/// Decodes `v` as a `T` (skipping its top-level `apiVersion`: other served versions of a kind
/// share its schema) and returns the fields `T` does not know, in document order.
fn typed_check<T: DeserializeOwned>(v: &Value) -> Result<Vec<FieldPath>, String> {
    let unknown = RefCell::new(Vec::new());
    let tracked = Tracked {
        value: v,
        path: Path::Root,
        unknown: &unknown,
    };
    match T::deserialize(tracked) {
        Ok(_) => Ok(unknown.into_inner()),
        Err(e) => Err(type_error::<T>(v, e)),
    }
}

/// A deserializer over a parsed JSON value, exactly as `&serde_json::Value` is one, that also
/// records the path of every value the visitor skips (`deserialize_ignored_any`): for the typed
/// k8s-openapi decoders, those are the fields their schema does not have. Upstream's strict
/// decoder names an unknown field whatever its value, `null` and `{}` included.
struct Tracked<'de, 'p> {
    value: &'de Value,
    path: Path<'p>,
    unknown: &'p RefCell<Vec<FieldPath>>,
}

impl<'de, 'p> Tracked<'de, 'p> {
    fn visit_array<V: Visitor<'de>>(
        self,
        array: &'de [Value],
        visitor: V,
    ) -> Result<V::Value, serde_json::Error> {
        let mut seq = TrackedSeq {
            iter: array.iter(),
            index: 0,
            path: self.path,
            unknown: self.unknown,
        };
        let out = visitor.visit_seq(&mut seq)?;
        if seq.iter.len() == 0 {
            Ok(out)
        } else {
            Err(serde::de::Error::invalid_length(
                array.len(),
                &"fewer elements in array",
            ))
        }
    }

    fn visit_object<V: Visitor<'de>>(
        self,
        object: &'de serde_json::Map<String, Value>,
        visitor: V,
    ) -> Result<V::Value, serde_json::Error> {
        let mut map = TrackedMap {
            iter: object.iter(),
            pending: None,
            skip_api_version: matches!(self.path, Path::Root),
            path: self.path,
            unknown: self.unknown,
        };
        let out = visitor.visit_map(&mut map)?;
        if map.iter.len() == 0 {
            Ok(out)
        } else {
            Err(serde::de::Error::invalid_length(
                object.len(),
                &"fewer elements in map",
            ))
        }
    }
}

/// Scalars have nothing inside to track: `&Value` decodes them (and reports type errors).
macro_rules! delegate {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, serde_json::Error> {
            self.value.$method($($arg,)* visitor)
        }
    )*};
}

impl<'de> Deserializer<'de> for Tracked<'de, '_> {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.value {
            Value::Array(a) => self.visit_array(a, visitor),
            Value::Object(o) => self.visit_object(o, visitor),
            scalar => scalar.deserialize_any(visitor),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.value {
            Value::Array(a) => self.visit_array(a, visitor),
            other => other.deserialize_bytes(visitor),
        }
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.value {
            Value::Array(a) => self.visit_array(a, visitor),
            other => other.deserialize_seq(visitor),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.value {
            Value::Object(o) => self.visit_object(o, visitor),
            other => other.deserialize_map(visitor),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        match self.value {
            Value::Array(a) => self.visit_array(a, visitor),
            Value::Object(o) => self.visit_object(o, visitor),
            other => other.deserialize_struct(name, fields, visitor),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.unknown.borrow_mut().push(FieldPath::of(&self.path));
        visitor.visit_unit()
    }

    delegate! {
        deserialize_bool();
        deserialize_i8();
        deserialize_i16();
        deserialize_i32();
        deserialize_i64();
        deserialize_i128();
        deserialize_u8();
        deserialize_u16();
        deserialize_u32();
        deserialize_u64();
        deserialize_u128();
        deserialize_f32();
        deserialize_f64();
        deserialize_char();
        deserialize_str();
        deserialize_string();
        deserialize_unit();
        deserialize_unit_struct(name: &'static str);
        deserialize_identifier();
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
    }
}

struct TrackedSeq<'de, 'p> {
    iter: std::slice::Iter<'de, Value>,
    index: usize,
    path: Path<'p>,
    unknown: &'p RefCell<Vec<FieldPath>>,
}

impl<'de> SeqAccess<'de> for TrackedSeq<'de, '_> {
    type Error = serde_json::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Self::Error> {
        let Some(value) = self.iter.next() else {
            return Ok(None);
        };
        let index = self.index;
        self.index += 1;
        seed.deserialize(Tracked {
            value,
            path: Path::Index(&self.path, index),
            unknown: self.unknown,
        })
        .map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

struct TrackedMap<'de, 'p> {
    iter: serde_json::map::Iter<'de>,
    /// The entry whose key was handed out and whose value comes next.
    pending: Option<(&'de str, &'de Value)>,
    /// The body's own `apiVersion` is not checked against the typed struct's.
    skip_api_version: bool,
    path: Path<'p>,
    unknown: &'p RefCell<Vec<FieldPath>>,
}

impl<'de> MapAccess<'de> for TrackedMap<'de, '_> {
    type Error = serde_json::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        for (key, value) in self.iter.by_ref() {
            if self.skip_api_version && key == "apiVersion" {
                continue;
            }
            self.pending = Some((key, value));
            let key = serde::de::value::BorrowedStrDeserializer::new(key.as_str());
            return seed.deserialize(key).map(Some);
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        let (key, value) = self
            .pending
            .take()
            .ok_or_else(|| serde::de::Error::custom("value is missing"))?;
        seed.deserialize(Tracked {
            value,
            path: Path::Key(&self.path, key),
            unknown: self.unknown,
        })
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

/// Decodes `v` as the typed object of (`group`, `kind`) and returns the fields the schema does
/// not know. `Err` carries a type error (e.g. a string where a number belongs).
pub fn schema_check(group: &str, kind: &str, v: &Value) -> Result<Vec<FieldPath>, String> {
    use k8s_openapi::api as a;
    // The typed structs are of one version; other served versions of a kind (e.g.
    // scheduling.k8s.io/v1beta1 PriorityClass) share its schema, so the version is not checked here.
    match (group, kind) {
        ("", "Pod") => typed_check::<a::core::v1::Pod>(v),
        ("", "Node") => typed_check::<a::core::v1::Node>(v),
        ("", "Namespace") => typed_check::<a::core::v1::Namespace>(v),
        ("", "Event") => typed_check::<a::core::v1::Event>(v),
        ("", "ConfigMap") => typed_check::<a::core::v1::ConfigMap>(v),
        ("", "Secret") => typed_check::<a::core::v1::Secret>(v),
        ("", "Service") => typed_check::<a::core::v1::Service>(v),
        ("", "ServiceAccount") => typed_check::<a::core::v1::ServiceAccount>(v),
        ("", "ReplicationController") => typed_check::<a::core::v1::ReplicationController>(v),
        ("", "PersistentVolume") => typed_check::<a::core::v1::PersistentVolume>(v),
        ("", "PersistentVolumeClaim") => typed_check::<a::core::v1::PersistentVolumeClaim>(v),
        ("", "Binding") => typed_check::<a::core::v1::Binding>(v),
        ("apps", "Deployment") => typed_check::<a::apps::v1::Deployment>(v),
        ("apps", "ReplicaSet") => typed_check::<a::apps::v1::ReplicaSet>(v),
        ("apps", "DaemonSet") => typed_check::<a::apps::v1::DaemonSet>(v),
        ("apps", "StatefulSet") => typed_check::<a::apps::v1::StatefulSet>(v),
        ("batch", "Job") => typed_check::<a::batch::v1::Job>(v),
        ("policy", "PodDisruptionBudget") => typed_check::<a::policy::v1::PodDisruptionBudget>(v),
        ("policy", "Eviction") => typed_check::<a::policy::v1::Eviction>(v),
        ("scheduling.k8s.io", "PriorityClass") => {
            typed_check::<a::scheduling::v1::PriorityClass>(v)
        }
        ("coordination.k8s.io", "Lease") => typed_check::<a::coordination::v1::Lease>(v),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => {
            typed_check::<a::flowcontrol::v1::FlowSchema>(v)
        }
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => {
            typed_check::<a::flowcontrol::v1::PriorityLevelConfiguration>(v)
        }
        ("storage.k8s.io", "StorageClass") => typed_check::<a::storage::v1::StorageClass>(v),
        ("", "Endpoints") => typed_check::<a::core::v1::Endpoints>(v),
        ("apps", "ControllerRevision") => typed_check::<a::apps::v1::ControllerRevision>(v),
        ("batch", "CronJob") => typed_check::<a::batch::v1::CronJob>(v),
        ("autoscaling", "Scale") => typed_check::<a::autoscaling::v1::Scale>(v),
        ("authentication.k8s.io", "TokenReview") => {
            typed_check::<a::authentication::v1::TokenReview>(v)
        }
        ("authentication.k8s.io", "SelfSubjectReview") => {
            typed_check::<a::authentication::v1::SelfSubjectReview>(v)
        }
        ("authorization.k8s.io", "SubjectAccessReview") => {
            typed_check::<a::authorization::v1::SubjectAccessReview>(v)
        }
        ("authorization.k8s.io", "SelfSubjectAccessReview") => {
            typed_check::<a::authorization::v1::SelfSubjectAccessReview>(v)
        }
        ("authorization.k8s.io", "SelfSubjectRulesReview") => {
            typed_check::<a::authorization::v1::SelfSubjectRulesReview>(v)
        }
        // v1beta1 RBAC has v1's fields.
        ("rbac.authorization.k8s.io", "Role") => typed_check::<a::rbac::v1::Role>(v),
        ("rbac.authorization.k8s.io", "ClusterRole") => typed_check::<a::rbac::v1::ClusterRole>(v),
        ("rbac.authorization.k8s.io", "RoleBinding") => typed_check::<a::rbac::v1::RoleBinding>(v),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => {
            typed_check::<a::rbac::v1::ClusterRoleBinding>(v)
        }
        ("discovery.k8s.io", "EndpointSlice") => typed_check::<a::discovery::v1::EndpointSlice>(v),
        ("storage.k8s.io", "CSINode") => typed_check::<a::storage::v1::CSINode>(v),
        ("storage.k8s.io", "CSIDriver") => typed_check::<a::storage::v1::CSIDriver>(v),
        ("storage.k8s.io", "CSIStorageCapacity") => {
            typed_check::<a::storage::v1::CSIStorageCapacity>(v)
        }
        ("storage.k8s.io", "VolumeAttachment") => {
            typed_check::<a::storage::v1::VolumeAttachment>(v)
        }
        ("", "ResourceQuota") => typed_check::<a::core::v1::ResourceQuota>(v),
        ("", "LimitRange") => typed_check::<a::core::v1::LimitRange>(v),
        ("", "PodTemplate") => typed_check::<a::core::v1::PodTemplate>(v),
        ("networking.k8s.io", "Ingress") => typed_check::<a::networking::v1::Ingress>(v),
        ("networking.k8s.io", "IngressClass") => typed_check::<a::networking::v1::IngressClass>(v),
        ("networking.k8s.io", "NetworkPolicy") => {
            typed_check::<a::networking::v1::NetworkPolicy>(v)
        }
        ("node.k8s.io", "RuntimeClass") => typed_check::<a::node::v1::RuntimeClass>(v),
        ("certificates.k8s.io", "CertificateSigningRequest") => {
            typed_check::<a::certificates::v1::CertificateSigningRequest>(v)
        }
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => {
            typed_check::<a::admissionregistration::v1::ValidatingWebhookConfiguration>(v)
        }
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => {
            typed_check::<a::admissionregistration::v1::MutatingWebhookConfiguration>(v)
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            typed_check::<a::admissionregistration::v1::ValidatingAdmissionPolicy>(v)
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            typed_check::<a::admissionregistration::v1::ValidatingAdmissionPolicyBinding>(v)
        }
        ("meta.k8s.io", "DeleteOptions") => {
            typed_check::<k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions>(v)
        }
        // Not checked: kinds whose typed structs require a time that Go's decoder lets be
        // absent (TokenRequest's status.expirationTimestamp as kubectl sends it,
        // events.k8s.io's eventTime, left to validation's 422), resource.k8s.io (served at
        // v1, newer than the typed structs), and read-only metrics.
        _ => Ok(Vec::new()),
    }
}

/// Field validation of a patched object's unknown fields: `Strict` refuses them with upstream's
/// message; otherwise they are dropped, as decoding into upstream's types drops them, and
/// `Warn` returns the warnings to send.
pub fn settle_unknown(
    rt: &berth_api::registry::ResourceType,
    validation: FieldValidation,
    patched: &mut Value,
    unknown: &[FieldPath],
) -> Result<Vec<String>, ApiError> {
    let problems: Vec<String> = unknown
        .iter()
        .map(|u| format!("unknown field \"{u}\""))
        .collect();
    if validation == FieldValidation::Strict && !problems.is_empty() {
        return Err(strict_error(rt.kind, rt.version, &problems));
    }
    prune(patched, unknown);
    Ok(match validation {
        FieldValidation::Warn => problems,
        _ => Vec::new(),
    })
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

    /// Paths compare with their display form, as the messages show them.
    impl PartialEq<&str> for FieldPath {
        fn eq(&self, other: &&str) -> bool {
            self.to_string().as_str() == *other
        }
    }

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

    #[test]
    fn every_unknown_field_is_found_whatever_its_value() {
        use k8s_openapi::api::core::v1::Pod;
        use k8s_openapi::api::scheduling::v1::PriorityClass;
        let pods = [
            serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p",
                "labels": {"a": "b"}, "annotations": {"x": "y"}, "bogusMeta": "z"},
                "spec": {"containers": [
                    {"name": "a", "image": "i", "resources": {"requests": {"cpu": "1"}},
                     "ports": [{"containerPort": 80, "extra": 1}]},
                    {"name": "b", "image": "i", "unknownNull": null, "unknownEmpty": {},
                     "unknownList": [], "unknownNested": {"a": {"b": 1}}}],
                 "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                    {"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "In",
                     "values": ["v"], "typo": true}]}]}}},
                 "tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 5}],
                 "overhead": {"cpu": "10m"}, "priority": 5},
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True",
                    "nope": "x"}], "what": 1}}),
            serde_json::json!({"kind": "Pod"}),
            serde_json::json!({"apiVersion": "v2", "kind": "Pod", "spec": {"containers": []}}),
            serde_json::json!({"kind": "Pod", "spec": {"containers": [{"name": "c",
                "ports": [{"containerPort": "eighty"}]}]}}),
            serde_json::json!({"kind": "Pod", "metadata": {"name": 5}}),
            serde_json::json!({"kind": "Pod", "spec": {"containers": [{"name": "c",
                "livenessProbe": {"httpGet": {"port": "http"}}, "bogus": {"x": null}}]}}),
        ];
        assert_eq!(
            typed_check::<Pod>(&pods[0]).unwrap(),
            [
                "metadata.bogusMeta",
                "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].typo",
                "spec.containers[0].ports[0].extra",
                "spec.containers[1].unknownEmpty",
                "spec.containers[1].unknownList",
                "spec.containers[1].unknownNested",
                "spec.containers[1].unknownNull",
                "status.conditions[0].nope",
                "status.what",
            ]
        );
        assert_eq!(typed_check::<Pod>(&pods[1]), Ok(vec![]));
        assert_eq!(typed_check::<Pod>(&pods[2]), Ok(vec![]));
        assert!(typed_check::<Pod>(&pods[3])
            .unwrap_err()
            .starts_with("spec.containers[0].ports[0].containerPort: invalid type"));
        assert!(typed_check::<Pod>(&pods[4])
            .unwrap_err()
            .starts_with("metadata.name: invalid type"));
        assert_eq!(
            typed_check::<Pod>(&pods[5]).unwrap(),
            ["spec.containers[0].bogus"]
        );
        let class = serde_json::json!({"apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PriorityClass", "metadata": {"name": "c"}, "value": 5, "colour": "red"});
        assert_eq!(typed_check::<PriorityClass>(&class).unwrap(), ["colour"]);
    }

    #[test]
    fn pruning_drops_exactly_the_unknown_fields() {
        let mut pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labelz": {}},
            "spec": {"containerz": [], "containers": [
                {"name": "a", "image": "i"},
                {"name": "b", "image": "i", "imagePolicy": "x", "ports": [{"containerPort": 1, "extra": null}]}]}});
        let unknown = schema_check("", "Pod", &pod).unwrap();
        assert_eq!(
            unknown,
            [
                "metadata.labelz",
                "spec.containers[1].imagePolicy",
                "spec.containers[1].ports[0].extra",
                "spec.containerz",
            ]
        );
        prune(&mut pod, &unknown);
        assert_eq!(
            pod,
            serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "a", "image": "i"},
                    {"name": "b", "image": "i", "ports": [{"containerPort": 1}]}]}})
        );
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(Value::from),
            "[a-z]{0,4}".prop_map(Value::String),
        ];
        let keys = prop_oneof![
            Just("containers".to_string()),
            Just("name".to_string()),
            Just("labels".to_string()),
            Just("ports".to_string()),
            Just("spec".to_string()),
            "[a-z]{1,5}",
        ];
        crate::testing::json_tree(leaf.boxed(), keys.boxed(), 4)
    }

    proptest::proptest! {
        /// Whatever a body holds, the check never panics, and a body it accepts holds no
        /// unknown field once pruned: what is stored is what upstream's decoder would keep.
        #[test]
        fn a_pruned_body_has_no_unknown_fields(spec in json_value(), meta in json_value()) {
            let mut pod = serde_json::json!({"kind": "Pod", "metadata": meta, "spec": spec});
            if let Ok(unknown) = schema_check("", "Pod", &pod) {
                prune(&mut pod, &unknown);
                proptest::prop_assert_eq!(schema_check("", "Pod", &pod), Ok(vec![]));
            }
        }
    }
}
