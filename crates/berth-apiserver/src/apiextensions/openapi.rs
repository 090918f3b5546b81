//! OpenAPI for the custom kinds (`kubectl explain widgets`), as upstream's CRD OpenAPI
//! builder publishes them:
//!
//! - v3: the index at `/openapi/v3` lists each served custom group version beside the
//!   built-in ones, and `/openapi/v3/apis/<group>/<version>` serves each kind's schema with
//!   its `x-kubernetes-group-version-kind`;
//! - v2: `/openapi/v2` (JSON, and the protobuf kubectl asks for) is the built-in document
//!   with the same definitions (`com.example.v1.Widget`) and paths added, rebuilt after the
//!   CRDs change (see [`V2Cache`]).
//!
//! Both come from one builder ([`definitions`], [`object_path`]); they differ in where a
//! `$ref` points and in what Swagger 2.0 cannot say (`anyOf`, `oneOf`, `not`, `nullable` are
//! left out of v2, as upstream's `ToStructuralOpenAPIV2` does).

use super::{CustomKinds, Served};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The two OpenAPI dialects custom kinds are published in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dialect {
    V2,
    V3,
}

impl Dialect {
    fn reference(self, name: &str) -> String {
        match self {
            Dialect::V2 => format!("#/definitions/{name}"),
            Dialect::V3 => format!("#/components/schemas/{name}"),
        }
    }
}

/// `/openapi/v2` with the custom kinds in it, as JSON and protobuf.
pub struct V2 {
    pub json: Form,
    pub protobuf: Form,
}

/// One form of a document: its bytes (shared, not copied, by each answer) and its hash.
pub struct Form {
    pub body: axum::body::Bytes,
    pub hash: String,
}

impl From<berth_api::openapi::Served> for Form {
    fn from(s: berth_api::openapi::Served) -> Form {
        Form {
            body: s.body.into(),
            hash: s.hash,
        }
    }
}

/// The last `/openapi/v2` built with custom kinds, and the generation of the CRDs it was
/// built from: the document (several megabytes) is built again only after a CRD changes.
#[derive(Default)]
pub struct V2Cache {
    generation: AtomicU64,
    built: Mutex<Option<(u64, Arc<V2>)>>,
}

impl V2Cache {
    /// Says that the served custom kinds changed.
    pub fn invalidate(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
    }
}

/// `/openapi/v2` when custom kinds are served, else `None` (the built-in document answers).
pub fn v2(custom: &CustomKinds) -> Option<Arc<V2>> {
    let cache = custom.v2_cache();
    let generation = cache.generation.load(Ordering::SeqCst);
    let mut built = cache.built.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((g, doc)) = built.as_ref() {
        if *g == generation {
            return Some(doc.clone());
        }
    }
    let served = custom.served();
    if served.is_empty() {
        *built = None;
        return None;
    }
    let mut doc = berth_api::openapi::v2_value();
    for s in &served {
        let (path, item) = object_path(s.rt, Dialect::V2);
        if let Some(paths) = doc["paths"].as_object_mut() {
            paths.insert(path, item);
        }
    }
    let defs = definitions(&served, Dialect::V2);
    if let Some(all) = doc["definitions"].as_object_mut() {
        all.extend(defs);
    }
    let (json, protobuf) = berth_api::openapi::v2_of(&doc);
    let doc = Arc::new(V2 {
        json: json.into(),
        protobuf: protobuf.into(),
    });
    *built = Some((generation, doc.clone()));
    Some(doc)
}

/// The answer to a GET of `path` when it is an OpenAPI v3 path custom kinds change, else
/// `None` (the built-in documents answer).
pub fn respond(custom: &CustomKinds, path: &str) -> Option<Response> {
    // Every GET passes here: anything but an OpenAPI v3 path leaves at once.
    if !path.starts_with("/openapi/v3") {
        return None;
    }
    let served = custom.served();
    if served.is_empty() {
        return None;
    }
    let by_gv = group_versions(&served);
    match path.trim_end_matches('/') {
        "/openapi/v3" => {
            let mut index = berth_api::openapi_v3_index();
            let paths = index.get_mut("paths")?.as_object_mut()?;
            for (gv, kinds) in &by_gv {
                let url = format!("/openapi/v3/{gv}?hash={}", hash(&document(kinds)));
                paths.insert(gv.clone(), json!({"serverRelativeURL": url}));
            }
            Some(json_answer(&index))
        }
        p => {
            let gv = p.strip_prefix("/openapi/v3/")?;
            let kinds = by_gv.get(gv)?;
            Some(json_answer(&document(kinds)))
        }
    }
}

fn json_answer(v: &Value) -> Response {
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-cache, private"),
        ],
        v.to_string(),
    )
        .into_response()
}

fn group_versions(served: &[Arc<Served>]) -> BTreeMap<String, Vec<Arc<Served>>> {
    let mut out: BTreeMap<String, Vec<Arc<Served>>> = BTreeMap::new();
    for s in served {
        let gv = format!("apis/{}/{}", s.rt.group, s.rt.version);
        out.entry(gv).or_default().push(s.clone());
    }
    out
}

fn hash(v: &Value) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    v.to_string().hash(&mut h);
    format!("{:016X}", h.finish())
}

/// `com.example.stable` for `stable.example.com`, as upstream names definitions.
fn reversed(group: &str) -> String {
    group.split('.').rev().collect::<Vec<_>>().join(".")
}

/// The path of one object with its PATCH operation: kubectl looks there for the
/// `fieldValidation` parameter to know that the server validates fields itself.
fn object_path(rt: &berth_api::registry::ResourceType, dialect: Dialect) -> (String, Value) {
    let path = if rt.namespaced {
        format!(
            "/apis/{}/{}/namespaces/{{namespace}}/{}/{{name}}",
            rt.group, rt.version, rt.plural
        )
    } else {
        format!("/apis/{}/{}/{}/{{name}}", rt.group, rt.version, rt.plural)
    };
    let gvk = json!({"group": rt.group, "version": rt.version, "kind": rt.kind});
    let names = ["dryRun", "fieldManager", "fieldValidation", "force"];
    // No strategic merge patch for custom resources: kubectl then sends a merge patch.
    let patch_types = [
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/apply-patch+yaml",
    ];
    let operation = match dialect {
        Dialect::V3 => {
            let query = |name: &str| json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}});
            let content: Map<String, Value> = patch_types
                .iter()
                .map(|t| (t.to_string(), json!({"schema": {"type": "object"}})))
                .collect();
            json!({
                "operationId": format!("patch{}", rt.kind),
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": gvk,
                "parameters": names.map(query),
                "requestBody": {"content": content},
                "responses": {"200": {"description": "OK"}},
            })
        }
        Dialect::V2 => {
            let mut parameters = vec![json!({"name": "body", "in": "body", "required": true,
                "schema": {"type": "object"}})];
            parameters.extend(names.map(
                |name| json!({"name": name, "in": "query", "type": "string", "uniqueItems": true}),
            ));
            json!({
                "operationId": format!("patch{}", rt.kind),
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": gvk,
                "consumes": patch_types,
                "produces": ["application/json", "application/yaml"],
                "parameters": parameters,
                "responses": {"200": {"description": "OK"}},
            })
        }
    };
    (path, json!({"patch": operation}))
}

fn document(kinds: &[Arc<Served>]) -> Value {
    let mut paths = Map::new();
    for s in kinds {
        let (path, item) = object_path(s.rt, Dialect::V3);
        paths.insert(path, item);
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
        "paths": paths,
        "components": {"schemas": definitions(kinds, Dialect::V3)},
    })
}

/// Each served version's kind and list kind, named as upstream names them
/// (`com.example.v1.Widget`, `com.example.v1.WidgetList`).
fn definitions(kinds: &[Arc<Served>], dialect: Dialect) -> Map<String, Value> {
    let mut schemas = Map::new();
    for s in kinds {
        let rt = s.rt;
        let prefix = format!("{}.{}", reversed(rt.group), rt.version);
        let gvk = json!([{"group": rt.group, "version": rt.version, "kind": rt.kind}]);
        let mut schema = match &s.raw_schema {
            Some(raw) if dialect == Dialect::V2 => without_v3_only(raw, 0),
            Some(raw) => raw.clone(),
            None => json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        };
        if let Some(o) = schema.as_object_mut() {
            let props = o
                .entry("properties")
                .or_insert_with(|| json!({}))
                .as_object_mut();
            if let Some(props) = props {
                props.insert("apiVersion".into(), json!({"type": "string",
                    "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"}));
                props.insert("kind".into(), json!({"type": "string",
                    "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"}));
                props.insert("metadata".into(), json!({"type": "object",
                    "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"}));
            }
            o.insert("x-kubernetes-group-version-kind".into(), gvk.clone());
        }
        schemas.insert(format!("{prefix}.{}", rt.kind), schema);
        schemas.insert(
            format!("{prefix}.{}List", rt.kind),
            json!({
                "type": "object",
                "description": format!("{}List is a list of {}", rt.kind, rt.kind),
                "required": ["items"],
                "properties": {
                    "apiVersion": {"type": "string"},
                    "kind": {"type": "string"},
                    "metadata": {"type": "object"},
                    "items": {"type": "array",
                              "items": {"$ref": dialect.reference(&format!("{prefix}.{}", rt.kind))}},
                },
                "x-kubernetes-group-version-kind":
                    [{"group": rt.group, "version": rt.version, "kind": format!("{}List", rt.kind)}],
            }),
        );
    }
    schemas
}

/// A schema as Swagger 2.0 can say it: without `anyOf`, `oneOf`, `not` and `allOf` (the
/// value validations of the junctors; the structural schema around them stays) and without
/// `nullable`. Bounded by the schema depth CRD validation allows.
fn without_v3_only(v: &Value, depth: usize) -> Value {
    let Some(o) = v.as_object() else {
        return v.clone();
    };
    if depth > super::schema::MAX_SCHEMA_DEPTH {
        return json!({});
    }
    let mut out = Map::new();
    for (k, child) in o {
        match k.as_str() {
            "anyOf" | "oneOf" | "not" | "allOf" | "nullable" => {}
            "properties" => {
                let props: Map<String, Value> = child
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(name, p)| (name.clone(), without_v3_only(p, depth + 1)))
                    .collect();
                out.insert(k.clone(), Value::Object(props));
            }
            "items" | "additionalProperties" => {
                out.insert(k.clone(), without_v3_only(child, depth + 1));
            }
            _ => {
                out.insert(k.clone(), child.clone());
            }
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widgets_crd() -> Value {
        json!({"metadata": {"name": "widgets.stable.example.com"},
            "spec": {"group": "stable.example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {
                            "name": {"type": "string", "nullable": true,
                                     "anyOf": [{"maxLength": 5}, {"pattern": "^x+$"}]}}}}}}}]}})
    }

    fn definitions_of(custom: &CustomKinds) -> Option<Map<String, Value>> {
        let doc = v2(custom)?;
        let value: Value = serde_json::from_slice(&doc.json.body).ok()?;
        value["definitions"].as_object().cloned()
    }

    #[test]
    fn v2_adds_each_served_kind_and_follows_the_crds() {
        let custom = CustomKinds::default();
        assert!(
            v2(&custom).is_none(),
            "no custom kinds: the built-in document answers"
        );
        custom.put(&widgets_crd());
        let defs = definitions_of(&custom).unwrap();
        let widget = &defs["com.example.stable.v1.Widget"];
        assert_eq!(
            widget["x-kubernetes-group-version-kind"],
            json!([{"group": "stable.example.com", "version": "v1", "kind": "Widget"}])
        );
        // What Swagger 2.0 cannot say is left out; the structure stays.
        assert_eq!(
            widget["properties"]["spec"]["properties"]["name"],
            json!({"type": "string"})
        );
        assert_eq!(
            defs["com.example.stable.v1.WidgetList"]["properties"]["items"]["items"]["$ref"],
            "#/definitions/com.example.stable.v1.Widget"
        );
        assert!(defs.contains_key("io.k8s.api.core.v1.Pod"));
        let first = v2(&custom).unwrap();
        assert!(
            Arc::ptr_eq(&first, &v2(&custom).unwrap()),
            "built once per change"
        );
        let mut gone = widgets_crd();
        gone["spec"]["versions"][0]["served"] = json!(false);
        custom.put(&gone);
        assert!(v2(&custom).is_none());
    }

    #[test]
    fn v3_keeps_the_junctors() {
        let custom = CustomKinds::default();
        custom.put(&widgets_crd());
        let doc = document(&custom.served());
        let name = &doc["components"]["schemas"]["com.example.stable.v1.Widget"]["properties"]
            ["spec"]["properties"]["name"];
        assert_eq!(name["anyOf"][0]["maxLength"], 5);
    }
}
