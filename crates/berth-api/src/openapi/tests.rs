use super::*;

fn param_names(op: &Value) -> Vec<&str> {
    op["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["name"].as_str())
        .collect()
}

#[test]
fn core_document_has_pod_patch_with_gvk_field_validation_and_smp_body() {
    let doc = openapi_v3_document("api/v1").unwrap();
    assert_eq!(doc["openapi"], "3.0.0");
    let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
    assert_eq!(patch["operationId"], "patchCoreV1NamespacedPod");
    assert_eq!(patch["x-kubernetes-action"], "patch");
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "", "version": "v1", "kind": "Pod"})
    );
    let names = param_names(patch);
    for wanted in [
        "fieldValidation",
        "dryRun",
        "fieldManager",
        "name",
        "namespace",
    ] {
        assert!(names.contains(&wanted), "{wanted} missing from {names:?}");
    }
    let content = &patch["requestBody"]["content"];
    assert!(content["application/strategic-merge-patch+json"].is_object());
    assert!(content["application/apply-patch+yaml"].is_object());
    // Cluster-scoped kinds have no namespace segment.
    assert!(doc["paths"]["/api/v1/nodes/{name}"]["patch"].is_object());
    // Create-only bindings have a POST and no PATCH.
    let paths = doc["paths"].as_object().unwrap();
    assert!(!paths
        .iter()
        .any(|(k, v)| k.contains("/bindings") && v.get("patch").is_some()));
    assert!(doc["paths"]["/api/v1/namespaces/{namespace}/bindings"]["post"].is_object());
}

#[test]
fn components_carry_schemas_tagged_with_their_kind() {
    let doc = openapi_v3_document("api/v1").unwrap();
    let schemas = &doc["components"]["schemas"];
    let pod = &schemas["io.k8s.api.core.v1.Pod"];
    assert_eq!(
        pod["x-kubernetes-group-version-kind"],
        json!([{"group": "", "version": "v1", "kind": "Pod"}])
    );
    assert_eq!(
        pod["properties"]["spec"]["allOf"],
        json!([{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}])
    );
    let tolerations = &schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["tolerations"];
    assert_eq!(
        tolerations["items"],
        json!({"$ref": "#/components/schemas/io.k8s.api.core.v1.Toleration"})
    );
    assert!(
        schemas["io.k8s.api.core.v1.Toleration"]["properties"]["tolerationSeconds"]["description"]
            .is_string()
    );
    // Subresource kinds are described beside their resource.
    assert_eq!(
        schemas["io.k8s.api.policy.v1.Eviction"]["x-kubernetes-group-version-kind"],
        json!([{"group": "policy", "version": "v1", "kind": "Eviction"}])
    );
    // Every reference resolves inside the document.
    let text = doc.to_string();
    for part in text.split("#/components/schemas/").skip(1) {
        let name = &part[..part.find('"').unwrap()];
        assert!(
            schemas.get(name).is_some(),
            "{name} is referenced but missing"
        );
    }
    assert!(!text.contains("#/$defs/"));
}

#[test]
fn group_documents() {
    let doc = openapi_v3_document("apis/scheduling.k8s.io/v1beta1").unwrap();
    let patch = &doc["paths"]["/apis/scheduling.k8s.io/v1beta1/priorityclasses/{name}"]["patch"];
    assert_eq!(patch["operationId"], "patchSchedulingV1beta1PriorityClass");
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "scheduling.k8s.io", "version": "v1beta1", "kind": "PriorityClass"})
    );
    let pc = &doc["components"]["schemas"]["io.k8s.api.scheduling.v1.PriorityClass"];
    assert_eq!(
        pc["x-kubernetes-group-version-kind"],
        json!([{"group": "scheduling.k8s.io", "version": "v1beta1", "kind": "PriorityClass"}])
    );
    let apps = openapi_v3_document("/apis/apps/v1/").unwrap();
    assert!(apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"].is_object());
    let deployment = &apps["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"];
    assert!(deployment["description"].is_string());
    assert!(openapi_v3_document("apis/apps/v9").is_none());
    assert!(openapi_v3_document("api").is_none());
    assert!(openapi_v3_document("apis/apps").is_none());
    assert!(openapi_v3_document("nonsense").is_none());
}

#[test]
fn index_lists_every_group_version_with_stable_hash() {
    let index = openapi_v3_index();
    let paths = index["paths"].as_object().unwrap();
    for gv in [
        "api/v1",
        "apis/apps/v1",
        "apis/batch/v1",
        "apis/policy/v1",
        "apis/scheduling.k8s.io/v1",
        "apis/scheduling.k8s.io/v1beta1",
    ] {
        let url = paths[gv]["serverRelativeURL"].as_str().unwrap();
        let hash = openapi_v3_hash(gv).unwrap();
        assert_eq!(url, format!("/openapi/v3/{gv}?hash={hash}"));
        assert_eq!(hash, super::hash(&v3(gv).unwrap().body));
    }
    assert_ne!(openapi_v3_hash("api/v1"), openapi_v3_hash("apis/apps/v1"));
    assert_eq!(OPENAPI_V2_CONTENT_TYPE.find('@'), None);
}

#[test]
fn v2_has_every_definition_with_gvks_and_patch_consumes() {
    let doc: Value = serde_json::from_slice(&v2().body).unwrap();
    assert_eq!(doc["swagger"], "2.0");
    let defs = &doc["definitions"];
    assert_eq!(
        defs["io.k8s.api.scheduling.v1.PriorityClass"]["x-kubernetes-group-version-kind"],
        json!([
            {"group": "scheduling.k8s.io", "version": "v1", "kind": "PriorityClass"},
            {"group": "scheduling.k8s.io", "version": "v1beta1", "kind": "PriorityClass"},
        ])
    );
    assert_eq!(
        defs["io.k8s.api.core.v1.Pod"]["properties"]["spec"],
        json!({
            "$ref": "#/definitions/io.k8s.api.core.v1.PodSpec",
            "description": defs["io.k8s.api.core.v1.Pod"]["properties"]["spec"]["description"],
        })
    );
    let patch = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
    assert!(patch["consumes"]
        .as_array()
        .unwrap()
        .contains(&json!("application/strategic-merge-patch+json")));
    assert!(param_names(patch).contains(&"body"));
    let text = doc.to_string();
    for part in text.split("#/definitions/").skip(1) {
        let name = &part[..part.find('"').unwrap()];
        assert!(defs.get(name).is_some(), "{name} is referenced but missing");
    }
}

#[test]
fn metadata_is_never_required_as_upstream_documents_it() {
    let v2: Value = serde_json::from_slice(&v2().body).unwrap();
    let defs = &v2["definitions"];
    assert_eq!(
        defs["io.k8s.api.authentication.v1.TokenReview"]["required"],
        json!(["spec"])
    );
    assert!(defs["io.k8s.api.core.v1.Pod"].get("required").is_none());
    assert_eq!(
        defs["io.k8s.api.core.v1.Container"]["required"],
        json!(["name"])
    );
}

#[test]
fn v2_as_protobuf_is_served_and_cached() {
    let proto = v2_protobuf();
    assert!(proto.body.len() > 100_000, "{}", proto.body.len());
    assert!(std::ptr::eq(proto, v2_protobuf()));
}
