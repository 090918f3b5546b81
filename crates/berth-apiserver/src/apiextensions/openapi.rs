//! OpenAPI v3 for the custom kinds (`kubectl explain widgets`): the index at `/openapi/v3`
//! lists each served custom group version beside the built-in ones, and
//! `/openapi/v3/apis/<group>/<version>` serves each kind's schema with its
//! `x-kubernetes-group-version-kind`, as upstream's CRD OpenAPI builder publishes them.

use super::{CustomKinds, Served};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

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
fn object_path(rt: &berth_api::registry::ResourceType) -> (String, Value) {
    let path = if rt.namespaced {
        format!(
            "/apis/{}/{}/namespaces/{{namespace}}/{}/{{name}}",
            rt.group, rt.version, rt.plural
        )
    } else {
        format!("/apis/{}/{}/{}/{{name}}", rt.group, rt.version, rt.plural)
    };
    let query = |name: &str| json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}});
    let operation = json!({
        "operationId": format!("patch{}", rt.kind),
        "x-kubernetes-action": "patch",
        "x-kubernetes-group-version-kind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
        "parameters": [query("dryRun"), query("fieldManager"), query("fieldValidation"), query("force")],
        // No strategic merge patch for custom resources: kubectl then sends a merge patch.
        "requestBody": {"content": {
            "application/json-patch+json": {"schema": {"type": "object"}},
            "application/merge-patch+json": {"schema": {"type": "object"}},
            "application/apply-patch+yaml": {"schema": {"type": "object"}}}},
        "responses": {"200": {"description": "OK"}},
    });
    (path, json!({"patch": operation}))
}

fn document(kinds: &[Arc<Served>]) -> Value {
    let mut schemas = Map::new();
    let mut paths = Map::new();
    for s in kinds {
        let rt = s.rt;
        let (path, item) = object_path(rt);
        paths.insert(path, item);
        let prefix = format!("{}.{}", reversed(rt.group), rt.version);
        let gvk = json!([{"group": rt.group, "version": rt.version, "kind": rt.kind}]);
        let mut schema = match &s.raw_schema {
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
                              "items": {"$ref": format!("#/components/schemas/{prefix}.{}", rt.kind)}},
                },
                "x-kubernetes-group-version-kind":
                    [{"group": rt.group, "version": rt.version, "kind": format!("{}List", rt.kind)}],
            }),
        );
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}
