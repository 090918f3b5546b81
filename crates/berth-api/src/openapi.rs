//! OpenAPI v2 and v3 documents with the schemas of every served kind, for `kubectl explain`,
//! kubectl's choice of server-side validation and its apply patches, and other clients.
//!
//! - [`v3_index`] is `GET /openapi/v3`: one `serverRelativeURL` per served group version,
//!   carrying the hash of that group version's document ([`v3`]), which kubectl uses as a
//!   cache key. Each document holds the REST operations of its kinds (PATCH with the
//!   `fieldValidation` parameter and a strategic-merge-patch request body) and, in
//!   `components.schemas`, the schemas of its kinds and everything they reference.
//! - [`v2`] is `GET /openapi/v2` as JSON (Swagger 2.0): every path and definition at once.
//!   kubectl asks for it as protobuf ([`OPENAPI_V2_CONTENT_TYPE`]): [`v2_protobuf`] holds the
//!   same definitions in gnostic's `openapi.v2.Document` (see [`v2_proto`]).
//!
//! The schemas come from `openapi/k8s-schemas.json`, generated from k8s-openapi by
//! `tools/openapi-gen` (see [`catalog`] for what is added to them). The documents are built
//! once, on first use, and kept as the bytes the server sends.

mod catalog;
mod operations;
mod v2_proto;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::{json, Map, Value};

use crate::registry;
use catalog::{definition, Catalog, Dialect, KindSchema};

/// Content-Type of `GET /openapi/v2` answered to a protobuf Accept, with an **empty body**
/// (a valid empty protobuf `Document`). Must not contain `@` (Go's `mime.ParseMediaType`
/// rejects what kubectl itself sends in Accept).
pub const OPENAPI_V2_CONTENT_TYPE: &str =
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// The Kubernetes version the documents describe, as `/version` reports it.
const INFO: &str = "v1.32.0";

/// A document as the server sends it: compact JSON and the hash clients cache it by.
#[derive(Debug)]
pub struct Served {
    /// The body: JSON, or protobuf for [`v2_protobuf`].
    pub body: Vec<u8>,
    /// 16 upper-case hex digits derived from `body`.
    pub hash: String,
}

impl Served {
    fn new(doc: &Value) -> Served {
        Served::of(doc.to_string().into_bytes())
    }

    fn of(body: Vec<u8>) -> Served {
        let hash = hash(&body);
        Served { body, hash }
    }
}

struct Documents {
    v3_index: Served,
    v3: BTreeMap<String, Served>,
}

static DOCUMENTS: OnceLock<Documents> = OnceLock::new();

/// Apart from the v3 documents: kubectl never reads v2 as JSON, so it costs only the
/// clients that do.
static V2: OnceLock<Served> = OnceLock::new();

fn documents() -> &'static Documents {
    DOCUMENTS.get_or_init(|| {
        let catalog = Catalog::load();
        let v3: BTreeMap<String, Served> = gv_paths()
            .into_iter()
            .filter_map(|(path, g, v)| {
                let doc = v3_document(&catalog, g, v)?;
                Some((path, Served::new(&doc)))
            })
            .collect();
        let index = index(v3.iter().map(|(path, s)| (path.as_str(), s.hash.as_str())));
        Documents {
            v3_index: Served::new(&index),
            v3,
        }
    })
}

/// `GET /openapi/v2` as JSON.
pub fn v2() -> &'static Served {
    V2.get_or_init(|| Served::new(&v2_document(&Catalog::load())))
}

static V2_PROTOBUF: OnceLock<Served> = OnceLock::new();

/// `GET /openapi/v2` as kubectl asks for it: the definitions of [`v2`] as protobuf.
pub fn v2_protobuf() -> &'static Served {
    V2_PROTOBUF.get_or_init(|| Served::of(v2_proto::encode(&v2_document(&Catalog::load()))))
}

/// `GET /openapi/v2` with more in it (the custom kinds' paths and definitions): the served
/// JSON and protobuf forms of `doc`, a Swagger 2.0 document that started as [`v2_value`].
pub fn v2_of(doc: &Value) -> (Served, Served) {
    (Served::new(doc), Served::of(v2_proto::encode(doc)))
}

/// The body of [`v2`] as a value, to add to.
pub fn v2_value() -> Value {
    serde_json::from_slice(&v2().body).unwrap_or(Value::Null)
}

/// `GET /openapi/v3`: `{"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=H"}, ...}}`.
pub fn v3_index() -> &'static Served {
    &documents().v3_index
}

/// `GET /openapi/v3/<path>` for `path` like `api/v1` or `apis/apps/v1`, or `None` when that
/// group version is not served.
pub fn v3(path: &str) -> Option<&'static Served> {
    let (group, version) = parse_gv_path(path)?;
    documents().v3.get(&gv_path(group, version))
}

/// The body of [`v3_index`] as a value.
pub fn openapi_v3_index() -> Value {
    serde_json::from_slice(&v3_index().body).unwrap_or(Value::Null)
}

/// The body of [`v3`] as a value.
pub fn openapi_v3_document(path: &str) -> Option<Value> {
    v3(path).and_then(|s| serde_json::from_slice(&s.body).ok())
}

/// The hash of a group version's document as it appears in [`v3_index`] URLs, or `None`
/// when `path` is not served. The server redirects requests carrying another hash.
pub fn openapi_v3_hash(path: &str) -> Option<String> {
    v3(path).map(|s| s.hash.clone())
}

fn index<'a>(docs: impl Iterator<Item = (&'a str, &'a str)>) -> Value {
    let paths: Map<String, Value> = docs
        .map(|(path, hash)| {
            let url = format!("/openapi/v3/{path}?hash={hash}");
            (path.to_string(), json!({ "serverRelativeURL": url }))
        })
        .collect();
    json!({ "paths": paths })
}

/// Served group versions in discovery order: `("api/v1", "", "v1")`, ...
fn gv_paths() -> Vec<(String, &'static str, &'static str)> {
    let mut out = Vec::new();
    for group in registry::groups() {
        for version in registry::versions(group) {
            out.push((gv_path(group, version), group, version));
        }
    }
    out
}

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `api/v1` → `("", "v1")`, `apis/apps/v1` → `("apps", "v1")`.
fn parse_gv_path(path: &str) -> Option<(&str, &str)> {
    let path = path.trim_matches('/');
    if let Some(version) = path.strip_prefix("api/") {
        return (!version.contains('/')).then_some(("", version));
    }
    let rest = path.strip_prefix("apis/")?;
    let (group, version) = rest.split_once('/')?;
    (!version.contains('/') && !group.is_empty()).then_some((group, version))
}

/// One group version's document, or `None` when none of its kinds has a schema.
fn v3_document(c: &Catalog, group: &str, version: &str) -> Option<Value> {
    let mut roots: Vec<&KindSchema> = Vec::new();
    let mut paths = Map::new();
    for rt in registry::resources_of(group, version) {
        let Some(schema) = c.kind(group, version, rt.kind) else {
            continue;
        };
        paths.extend(operations::paths(rt, schema, Dialect::V3));
        roots.push(schema);
        // Subresource kinds (Scale, Eviction, ...) are described beside their resource.
        roots.extend(
            rt.subresources
                .iter()
                .filter_map(|s| c.kind(s.group, s.version, s.kind)),
        );
    }
    if paths.is_empty() {
        return None;
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": INFO},
        "paths": paths,
        "components": {"schemas": definitions(c, &roots, Dialect::V3)},
    }))
}

/// The Swagger 2.0 document: every served path and every definition.
fn v2_document(c: &Catalog) -> Value {
    let mut paths = Map::new();
    for rt in registry::all() {
        if let Some(schema) = c.kind(rt.group, rt.version, rt.kind) {
            paths.extend(operations::paths(rt, schema, Dialect::V2));
        }
    }
    let roots: Vec<&KindSchema> = c.kinds.iter().collect();
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": INFO},
        "paths": paths,
        "definitions": definitions(c, &roots, Dialect::V2),
    })
}

/// The definitions `roots` need, in `dialect`, each root tagged with the
/// `x-kubernetes-group-version-kind`s it describes.
fn definitions(c: &Catalog, roots: &[&KindSchema], dialect: Dialect) -> Map<String, Value> {
    let names = c.closure(roots.iter().map(|k| k.definition.as_str()));
    let mut out = Map::new();
    for name in names {
        let Some(schema) = c.definitions.get(&name) else {
            continue;
        };
        let mut schema = definition(&name, schema, dialect);
        let mut gvks: Vec<Value> = Vec::new();
        for k in roots.iter().filter(|k| k.definition == name) {
            if !gvks.contains(&k.gvk()) {
                gvks.push(k.gvk());
            }
        }
        if let (false, Some(obj)) = (gvks.is_empty(), schema.as_object_mut()) {
            obj.insert("x-kubernetes-group-version-kind".into(), Value::Array(gvks));
        }
        out.insert(name, schema);
    }
    out
}

/// FNV-1a over the bytes, as 16 upper-case hex digits.
fn hash(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016X}")
}

#[cfg(test)]
mod tests;
