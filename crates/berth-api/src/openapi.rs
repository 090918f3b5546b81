//! OpenAPI stubs: just enough for kubectl's `--validate=strict` to hand validation to the
//! server (api-compat §0.3, §1.3).
//!
//! - `/openapi/v2` is served with Content-Type [`OPENAPI_V2_CONTENT_TYPE`] and an **empty body**
//!   (a valid empty protobuf `Document`); this is what makes `kind: List` files work.
//! - `/openapi/v3` is [`openapi_v3_index`]; each `serverRelativeURL` leads to
//!   [`openapi_v3_document`], which holds one PATCH operation per kind carrying
//!   `x-kubernetes-group-version-kind` and a `fieldValidation` parameter. No request bodies and
//!   no schemas are published, so kubectl builds strategic merge patches from its compiled-in
//!   types instead of looking for schemas in `components`.

use serde_json::{json, Map, Value};

use crate::registry::{self, ResourceType};

/// Content-Type of `GET /openapi/v2`, served with an empty body. Must not contain `@` (Go's
/// `mime.ParseMediaType` rejects what kubectl itself sends in Accept).
pub const OPENAPI_V2_CONTENT_TYPE: &str =
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// Body of `GET /openapi/v3`: `{"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=H"}, ...}}`,
/// one entry per served group version. The hash is derived from the document, so it is
/// constant for a build and changes when the document does.
pub fn openapi_v3_index() -> Value {
    let mut paths = Map::new();
    for path in gv_paths() {
        let doc = openapi_v3_document(&path).expect("every served group version has a document");
        let url = format!("/openapi/v3/{path}?hash={}", document_hash(&doc));
        paths.insert(path, json!({ "serverRelativeURL": url }));
    }
    json!({ "paths": paths })
}

/// The hash of a group version's document as it appears in [`openapi_v3_index`] URLs, or `None`
/// when `path` is not served. The server may redirect requests carrying another hash.
pub fn openapi_v3_hash(path: &str) -> Option<String> {
    openapi_v3_document(path).map(|d| document_hash(&d))
}

/// Body of `GET /openapi/v3/<path>` for `path` like `api/v1` or `apis/apps/v1`, or `None` when
/// that group version is not served.
pub fn openapi_v3_document(path: &str) -> Option<Value> {
    let (group, version) = parse_gv_path(path)?;
    let mut paths = Map::new();
    for rt in registry::resources_of(group, version) {
        if !rt.allows("patch") {
            continue;
        }
        paths.insert(item_path(rt), json!({ "patch": patch_operation(rt) }));
    }
    if paths.is_empty() {
        return None;
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }))
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

fn gv_paths() -> Vec<String> {
    let mut out = Vec::new();
    for group in registry::groups() {
        for version in registry::versions(group) {
            let path = if group.is_empty() {
                format!("api/{version}")
            } else {
                format!("apis/{group}/{version}")
            };
            if openapi_v3_document(&path).is_some() {
                out.push(path);
            }
        }
    }
    out
}

fn item_path(rt: &ResourceType) -> String {
    let prefix = rt.group_version_path();
    if rt.namespaced {
        format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", rt.plural)
    } else {
        format!("{prefix}/{}/{{name}}", rt.plural)
    }
}

fn patch_operation(rt: &ResourceType) -> Value {
    let query = |name: &str, ty: &str| json!({"name": name, "in": "query", "schema": {"type": ty}});
    let path = |name: &str| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}});
    let mut params = vec![path("name")];
    if rt.namespaced {
        params.push(path("namespace"));
    }
    params.extend([
        query("dryRun", "string"),
        query("fieldManager", "string"),
        query("fieldValidation", "string"),
        query("force", "boolean"),
    ]);
    json!({
        "operationId": operation_id(rt),
        "x-kubernetes-action": "patch",
        "x-kubernetes-group-version-kind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
        "parameters": params,
        "responses": {"200": {"description": "OK"}},
    })
}

/// Upstream-style operation id: `patchCoreV1NamespacedPod`, `patchSchedulingV1PriorityClass`.
fn operation_id(rt: &ResourceType) -> String {
    let group = if rt.group.is_empty() {
        "core"
    } else {
        rt.group.split('.').next().unwrap_or(rt.group)
    };
    let scope = if rt.namespaced { "Namespaced" } else { "" };
    format!(
        "patch{}{}{}{}",
        capitalize(group),
        capitalize(rt.version),
        scope,
        rt.kind
    )
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_ascii_uppercase().to_string() + chars.as_str(),
        None => String::new(),
    }
}

/// FNV-1a over the compact JSON, as 16 upper-case hex digits (deterministic: `serde_json`
/// maps are ordered).
fn document_hash(doc: &Value) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in doc.to_string().bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016X}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_document_has_pod_patch_with_gvk_and_field_validation() {
        let doc = openapi_v3_document("api/v1").unwrap();
        assert_eq!(doc["openapi"], "3.0.0");
        assert_eq!(doc["components"], json!({"schemas": {}}));
        let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
        assert_eq!(patch["operationId"], "patchCoreV1NamespacedPod");
        assert_eq!(patch["x-kubernetes-action"], "patch");
        assert_eq!(
            patch["x-kubernetes-group-version-kind"],
            json!({"group": "", "version": "v1", "kind": "Pod"})
        );
        let names: Vec<&str> = patch["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        for wanted in ["fieldValidation", "dryRun", "fieldManager"] {
            assert!(names.contains(&wanted), "{wanted} missing from {names:?}");
        }
        assert!(patch.get("requestBody").is_none());
        // Cluster-scoped kinds have no namespace segment.
        assert!(doc["paths"]["/api/v1/nodes/{name}"]["patch"].is_object());
        // Create-only bindings have no PATCH.
        let paths = doc["paths"].as_object().unwrap();
        assert!(!paths.keys().any(|k| k.contains("/bindings/")));
    }

    #[test]
    fn group_documents() {
        let doc = openapi_v3_document("apis/scheduling.k8s.io/v1beta1").unwrap();
        let patch =
            &doc["paths"]["/apis/scheduling.k8s.io/v1beta1/priorityclasses/{name}"]["patch"];
        assert_eq!(patch["operationId"], "patchSchedulingV1beta1PriorityClass");
        assert_eq!(
            patch["x-kubernetes-group-version-kind"],
            json!({"group": "scheduling.k8s.io", "version": "v1beta1", "kind": "PriorityClass"})
        );
        let apps = openapi_v3_document("/apis/apps/v1/").unwrap();
        assert!(
            apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"].is_object()
        );
        assert!(openapi_v3_document("apis/apps/v9").is_none());
        assert!(openapi_v3_document("api").is_none());
        assert!(openapi_v3_document("apis/apps").is_none());
        assert!(openapi_v3_document("nonsense").is_none());
    }

    #[test]
    fn index_lists_every_group_version_with_stable_hash() {
        let index = openapi_v3_index();
        let paths = index["paths"].as_object().unwrap();
        assert!(paths.contains_key("api/v1"));
        assert!(paths.contains_key("apis/policy/v1"));
        assert!(paths.contains_key("apis/scheduling.k8s.io/v1beta1"));
        let url = paths["api/v1"]["serverRelativeURL"].as_str().unwrap();
        let hash = openapi_v3_hash("api/v1").unwrap();
        assert_eq!(url, format!("/openapi/v3/api/v1?hash={hash}"));
        assert_eq!(index, openapi_v3_index());
        assert_eq!(OPENAPI_V2_CONTENT_TYPE.find('@'), None);
    }
}
