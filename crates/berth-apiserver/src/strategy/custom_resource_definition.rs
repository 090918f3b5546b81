//! The CustomResourceDefinition kind's strategy, as upstream's
//! `apiextensions-apiserver/pkg/registry/customresourcedefinition/strategy.go` and
//! `pkg/apis/apiextensions/validation`: names and versions validated with upstream's words,
//! the structural schema checked, defaults of the names filled in, the cleanup finalizer set,
//! and the `NamesAccepted` and `Established` conditions reported at once (upstream's naming
//! and establishing controllers report them moments after the write; berth serves the kind
//! from the write on, so it says so in the same write).

use crate::apiextensions::schema::Schema;
use crate::error::{ApiResult, Cause};
use crate::strategy::{causes, Strategy};
use berth_api::registry::ResourceType;
use berth_core::validation::{self as v, names, FieldError};
use serde_json::{json, Value};

use crate::apiextensions::CLEANUP_FINALIZER;

/// The strategy of `apiextensions.k8s.io/v1` `CustomResourceDefinition`.
pub struct Definition;

impl Strategy for Definition {
    fn prepare_for_create(&self, obj: &mut Value) {
        obj.as_object_mut().map(|o| o.remove("status"));
        default_names(obj);
        let meta = crate::codec::meta_mut(obj);
        let finalizers = meta.entry("finalizers").or_insert_with(|| json!([]));
        if let Some(f) = finalizers.as_array_mut() {
            if !f.iter().any(|x| x == CLEANUP_FINALIZER) {
                f.push(json!(CLEANUP_FINALIZER));
            }
        }
        set_status(obj, None);
    }

    fn prepare_for_update(&self, old: &Value, new: &mut Value) -> ApiResult<()> {
        default_names(new);
        set_status(new, Some(old));
        Ok(())
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        let mut errs = v::validate_generic(obj, false);
        errs.extend(validate_spec(obj));
        if let Some(old) = old {
            for field in ["group", "scope"] {
                if old["spec"][field] != obj["spec"][field] {
                    errs.push(FieldError::invalid(
                        format!("spec.{field}"),
                        obj["spec"][field].as_str().unwrap_or(""),
                        "field is immutable",
                    ));
                }
            }
        }
        causes(errs)
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }
}

/// `singular` is the lowercased kind and `listKind` `<kind>List` unless given.
fn default_names(obj: &mut Value) {
    let Some(names) = obj
        .get_mut("spec")
        .and_then(|s| s.get_mut("names"))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let kind = names
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if kind.is_empty() {
        return;
    }
    if names
        .get("singular")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        names.insert("singular".into(), json!(kind.to_lowercase()));
    }
    if names
        .get("listKind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        names.insert("listKind".into(), json!(format!("{kind}List")));
    }
}

/// The status the naming and establishing controllers would report: the names accepted,
/// the kind established, the storage version among the stored versions.
fn set_status(obj: &mut Value, old: Option<&Value>) {
    let now = obj["metadata"]["creationTimestamp"].clone();
    let names = obj["spec"]["names"].clone();
    let mut stored: Vec<Value> = old
        .and_then(|o| o["status"]["storedVersions"].as_array().cloned())
        .unwrap_or_default();
    let storage = obj["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["storage"] == true)
        .map(|v| v["name"].clone());
    if let Some(storage) = storage {
        if !stored.contains(&storage) {
            stored.push(storage);
        }
    }
    let condition = |ty: &str, reason: &str, message: &str| {
        let since = old
            .and_then(|o| o["status"]["conditions"].as_array())
            .into_iter()
            .flatten()
            .find(|c| c["type"] == ty && c["status"] == "True")
            .map(|c| c["lastTransitionTime"].clone())
            .unwrap_or_else(|| now.clone());
        json!({"type": ty, "status": "True", "lastTransitionTime": since,
               "reason": reason, "message": message})
    };
    let mut conditions = vec![
        condition("NamesAccepted", "NoConflicts", "no conflicts found"),
        condition(
            "Established",
            "InitialNamesAccepted",
            "the initial names have been accepted",
        ),
    ];
    if obj["metadata"].get("deletionTimestamp").is_some() {
        conditions.push(json!({"type": "Terminating", "status": "True",
            "lastTransitionTime": now, "reason": "InstanceDeletionInProgress",
            "message": "CustomResource deletion is in progress"}));
    }
    obj["status"] = json!({
        "acceptedNames": names,
        "conditions": conditions,
        "storedVersions": stored,
    });
}

fn dns1035_label(value: &str) -> Vec<String> {
    let ok = !value.is_empty()
        && value.len() <= 63
        && value.starts_with(|c: char| c.is_ascii_lowercase())
        && !value.ends_with('-')
        && value
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if ok {
        return Vec::new();
    }
    vec![names::regex_error(
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
        "[a-z]([-a-z0-9]*[a-z0-9])?",
        &["my-name", "abc-123"],
    )]
}

fn validate_spec(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = &obj["spec"];
    let str_at = |v: &Value| v.as_str().unwrap_or("").to_string();
    let group = str_at(&spec["group"]);
    let names = &spec["names"];
    let plural = str_at(&names["plural"]);
    let name = crate::codec::meta_str(obj, "name");
    if name != format!("{plural}.{group}") {
        errs.push(FieldError::invalid(
            "metadata.name",
            name,
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if group.is_empty() {
        errs.push(FieldError::required("spec.group", ""));
    } else {
        for m in names::dns1123_subdomain(&group) {
            errs.push(FieldError::invalid("spec.group", &group, m));
        }
        if group.split('.').count() < 2 {
            errs.push(FieldError::invalid(
                "spec.group",
                &group,
                "should be a domain with at least one dot",
            ));
        }
    }
    match spec["scope"].as_str().unwrap_or("") {
        "Cluster" | "Namespaced" => {}
        "" => errs.push(FieldError::required("spec.scope", "")),
        other => errs.push(FieldError::not_supported(
            "spec.scope",
            other,
            &["Cluster", "Namespaced"],
        )),
    }
    for field in ["plural", "singular", "kind", "listKind"] {
        let value = str_at(&names[field]);
        let path = format!("spec.names.{field}");
        if value.is_empty() {
            if field == "plural" || field == "kind" {
                errs.push(FieldError::required(path, ""));
            }
            continue;
        }
        let problems = if field == "kind" || field == "listKind" {
            dns1035_label(&value.to_lowercase())
        } else {
            names::dns1123_label(&value)
        };
        for m in problems {
            errs.push(FieldError::invalid(&path, &value, m));
        }
    }
    for (i, short) in names["shortNames"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let short = str_at(short);
        for m in names::dns1123_label(&short) {
            errs.push(FieldError::invalid(
                format!("spec.names.shortNames[{i}]"),
                &short,
                m,
            ));
        }
    }
    match spec["conversion"]["strategy"].as_str().unwrap_or("None") {
        "None" => {}
        other => errs.push(FieldError::not_supported(
            "spec.conversion.strategy",
            other,
            &["None"],
        )),
    }
    errs.extend(validate_versions(&spec["versions"]));
    errs
}

fn validate_versions(versions: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let list = versions.as_array().cloned().unwrap_or_default();
    if list.is_empty() {
        errs.push(FieldError::required(
            "spec.versions",
            "must have exactly one version marked as storage version",
        ));
        return errs;
    }
    let storage = list.iter().filter(|v| v["storage"] == true).count();
    if storage != 1 {
        errs.push(FieldError::invalid_rendered(
            "spec.versions",
            &format!(
                "[]apiextensions.CustomResourceDefinitionVersion{{...{} versions}}",
                list.len()
            ),
            "must have exactly one version marked as storage version",
        ));
    }
    if !list.iter().any(|v| v["served"] == true) {
        errs.push(FieldError::invalid_rendered(
            "spec.versions",
            &format!(
                "[]apiextensions.CustomResourceDefinitionVersion{{...{} versions}}",
                list.len()
            ),
            "must have at least one version marked as served",
        ));
    }
    let mut seen = Vec::new();
    for (i, version) in list.iter().enumerate() {
        let path = format!("spec.versions[{i}]");
        let name = version["name"].as_str().unwrap_or("");
        if name.is_empty() {
            errs.push(FieldError::required(format!("{path}.name"), ""));
        } else {
            for m in dns1035_label(name) {
                errs.push(FieldError::invalid(format!("{path}.name"), name, m));
            }
            if seen.contains(&name) {
                errs.push(FieldError::duplicate(format!("{path}.name"), name));
            }
            seen.push(name);
        }
        let schema_path = format!("{path}.schema.openAPIV3Schema");
        match version["schema"].get("openAPIV3Schema") {
            None => errs.push(FieldError::required(schema_path, "schemas are required")),
            Some(raw) => {
                if raw["type"] != "object" {
                    errs.push(FieldError::invalid(
                        format!("{schema_path}.type"),
                        raw["type"].as_str().unwrap_or(""),
                        "must be object at the root",
                    ));
                }
                structural(raw, &schema_path, &mut errs, 0);
                let mut junctor_errs = Vec::new();
                complete(raw, &schema_path, &mut junctor_errs);
                // Upstream sorts these (its schemas are maps); so do we, for stable answers.
                junctor_errs.sort_by_key(FieldError::message);
                errs.extend(junctor_errs);
                if let Err(e) = Schema::parse(raw) {
                    errs.push(FieldError {
                        field: schema_path.clone(),
                        kind: v::FieldErrorKind::Invalid,
                        value: None,
                        detail: e,
                    });
                }
                let rules = count_rules(raw, 0);
                if rules > crate::apiextensions::cel::MAX_RULES {
                    errs.push(FieldError::forbidden(
                        schema_path.clone(),
                        format!(
                            "at most {} x-kubernetes-validations rules per schema",
                            crate::apiextensions::cel::MAX_RULES
                        ),
                    ));
                }
            }
        }
        if let Some(scale) = version["subresources"].get("scale") {
            for field in ["specReplicasPath", "statusReplicasPath"] {
                let p = scale[field].as_str().unwrap_or("");
                let sub_path = format!("{path}.subresources.scale.{field}");
                if p.is_empty() {
                    errs.push(FieldError::required(sub_path, ""));
                } else if !p.starts_with('.') {
                    errs.push(FieldError::invalid(sub_path, p, "should be a json path"));
                }
            }
        }
    }
    errs
}

fn count_rules(v: &Value, depth: usize) -> usize {
    if depth > crate::apiextensions::schema::MAX_SCHEMA_DEPTH {
        return 0;
    }
    let own = v["x-kubernetes-validations"].as_array().map_or(0, Vec::len);
    let children: usize = v["properties"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(_, c)| count_rules(c, depth + 1))
        .sum();
    own + children
        + v.get("items").map_or(0, |c| count_rules(c, depth + 1))
        + v.get("additionalProperties")
            .filter(|a| a.is_object())
            .map_or(0, |c| count_rules(c, depth + 1))
}

/// Upstream's structural-schema rule most CRDs meet first: every specified node has a type,
/// unless it is int-or-string or preserves unknown fields.
fn structural(v: &Value, path: &str, errs: &mut Vec<FieldError>, depth: usize) {
    if depth > crate::apiextensions::schema::MAX_SCHEMA_DEPTH {
        return;
    }
    let exempt = v["x-kubernetes-int-or-string"] == true
        || v["x-kubernetes-preserve-unknown-fields"] == true;
    if v["type"].as_str().unwrap_or("").is_empty() && !exempt {
        errs.push(FieldError::required(
            format!("{path}.type"),
            "must not be empty for specified object fields",
        ));
    }
    if let Some(props) = v["properties"].as_object() {
        if v["additionalProperties"].is_object() {
            errs.push(FieldError::forbidden(
                format!("{path}.additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        for (k, child) in props {
            structural(child, &format!("{path}.properties[{k}]"), errs, depth + 1);
        }
    }
    if let Some(items) = v.get("items") {
        structural(items, &format!("{path}.items"), errs, depth + 1);
    } else if v["type"] == "array" {
        errs.push(FieldError::required(
            format!("{path}.items"),
            "must be specified",
        ));
    }
    if let Some(a) = v.get("additionalProperties").filter(|a| a.is_object()) {
        structural(a, &format!("{path}.additionalProperties"), errs, depth + 1);
    }
    let mut junctor_errs = Vec::new();
    let skip_any_of = is_int_or_string_any_of(&v["anyOf"]);
    let skip_first_all_of_any_of = is_int_or_string_any_of(&v["allOf"][0]["anyOf"]);
    junctors(
        v,
        skip_any_of,
        skip_first_all_of_any_of,
        path,
        &mut junctor_errs,
        depth,
    );
    junctor_errs.sort_by_key(FieldError::message);
    errs.extend(junctor_errs);
}

/// The two spellings of int-or-string upstream lets stand beside
/// `x-kubernetes-int-or-string`: `anyOf: [{type: integer}, {type: string}]` (alone or as
/// the first `allOf`'s `anyOf`).
fn is_int_or_string_any_of(any_of: &Value) -> bool {
    *any_of == json!([{"type": "integer"}, {"type": "string"}])
}

/// Walks the `anyOf`/`allOf`/`oneOf`/`not` branches of one node (upstream's
/// `validateValueValidation`).
fn junctors(
    v: &Value,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    path: &str,
    errs: &mut Vec<FieldError>,
    depth: usize,
) {
    if depth > crate::apiextensions::schema::MAX_SCHEMA_DEPTH {
        return;
    }
    let branches = |key: &str| v[key].as_array().cloned().unwrap_or_default();
    if !skip_any_of {
        for (i, b) in branches("anyOf").iter().enumerate() {
            nested(b, false, &format!("{path}.anyOf[{i}]"), errs, depth + 1);
        }
    }
    for (i, b) in branches("allOf").iter().enumerate() {
        let skip = skip_first_all_of_any_of && i == 0;
        nested(b, skip, &format!("{path}.allOf[{i}]"), errs, depth + 1);
    }
    for (i, b) in branches("oneOf").iter().enumerate() {
        nested(b, false, &format!("{path}.oneOf[{i}]"), errs, depth + 1);
    }
    if let Some(not) = v.get("not") {
        nested(not, false, &format!("{path}.not"), errs, depth + 1);
    }
}

/// Inside a junctor only value validations may stand (upstream's
/// `validateNestedValueValidation`): what shapes or defaults a value must be said in the
/// structural schema itself.
fn nested(v: &Value, skip_any_of: bool, path: &str, errs: &mut Vec<FieldError>, depth: usize) {
    if depth > crate::apiextensions::schema::MAX_SCHEMA_DEPTH {
        return;
    }
    junctors(v, skip_any_of, false, path, errs, depth);
    if let Some(items) = v.get("items") {
        nested(items, false, &format!("{path}.items"), errs, depth + 1);
    }
    for (k, child) in v["properties"].as_object().into_iter().flatten() {
        nested(
            child,
            false,
            &format!("{path}.properties[{k}]"),
            errs,
            depth + 1,
        );
    }
    let forbid = |errs: &mut Vec<FieldError>, field: &str, detail: &str| {
        errs.push(FieldError::forbidden(format!("{path}.{field}"), detail));
    };
    let non_empty_str = |k: &str| v[k].as_str().is_some_and(|s| !s.is_empty());
    let non_empty_list = |k: &str| v[k].as_array().is_some_and(|a| !a.is_empty());
    if non_empty_str("type") {
        forbid(errs, "type", "must be empty to be structural");
    }
    if v.get("additionalProperties").is_some() {
        forbid(
            errs,
            "additionalProperties",
            "must be undefined to be structural",
        );
    }
    if v.get("default").is_some_and(|d| !d.is_null()) {
        forbid(errs, "default", "must be undefined to be structural");
    }
    if non_empty_str("title") {
        forbid(errs, "title", "must be empty to be structural");
    }
    if non_empty_str("description") {
        forbid(errs, "description", "must be empty to be structural");
    }
    if v["nullable"] == true {
        forbid(errs, "nullable", "must be false to be structural");
    }
    if v.get("externalDocs").is_some() {
        forbid(errs, "externalDocs", "must be undefined to be structural");
    }
    for flag in [
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    ] {
        if v[flag] == true {
            forbid(errs, flag, "must be false to be structural");
        }
    }
    if non_empty_list("x-kubernetes-list-map-keys") {
        forbid(
            errs,
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
        );
    }
    for ext in ["x-kubernetes-list-type", "x-kubernetes-map-type"] {
        if v.get(ext).is_some_and(|x| !x.is_null()) {
            forbid(errs, ext, "must be undefined to be structural");
        }
    }
    if non_empty_list("x-kubernetes-validations") {
        forbid(
            errs,
            "x-kubernetes-validations",
            "must be empty to be structural",
        );
    }
    if v["properties"].get("metadata").is_some() {
        forbid(
            errs,
            "properties[metadata]",
            "must not be specified in a nested context",
        );
    }
}

/// Every field or array a junctor of the root speaks of must be specified in the structural
/// schema too (upstream's `validateStructuralCompleteness`, which starts at the root).
fn complete(root: &Value, path: &str, errs: &mut Vec<FieldError>) {
    complete_junctors(root, Some(root), path, path, errs, 0);
}

fn complete_junctors(
    v: &Value,
    s: Option<&Value>,
    s_path: &str,
    v_path: &str,
    errs: &mut Vec<FieldError>,
    depth: usize,
) {
    if depth > crate::apiextensions::schema::MAX_SCHEMA_DEPTH {
        return;
    }
    if let Some(not) = v.get("not") {
        complete_nested(not, s, s_path, &format!("{v_path}.not"), errs, depth + 1);
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for (i, b) in v[key].as_array().into_iter().flatten().enumerate() {
            complete_nested(
                b,
                s,
                s_path,
                &format!("{v_path}.{key}[{i}]"),
                errs,
                depth + 1,
            );
        }
    }
}

fn complete_nested(
    v: &Value,
    s: Option<&Value>,
    s_path: &str,
    v_path: &str,
    errs: &mut Vec<FieldError>,
    depth: usize,
) {
    if depth > crate::apiextensions::schema::MAX_SCHEMA_DEPTH {
        return;
    }
    let Some(s) = s else {
        errs.push(FieldError::required(
            s_path,
            format!("because it is defined in {v_path}"),
        ));
        return;
    };
    complete_junctors(v, Some(s), s_path, v_path, errs, depth);
    if let Some(items) = v.get("items") {
        complete_nested(
            items,
            s.get("items"),
            &format!("{s_path}.items"),
            &format!("{v_path}.items"),
            errs,
            depth + 1,
        );
    }
    for (k, child) in v["properties"].as_object().into_iter().flatten() {
        let s_child = format!("{s_path}.properties[{k}]");
        let v_child = format!("{v_path}.properties[{k}]");
        match s["properties"].get(k) {
            None => errs.push(FieldError::required(
                s_child,
                format!("because it is defined in {v_child}"),
            )),
            Some(sf) => complete_nested(child, Some(sf), &s_child, &v_child, errs, depth + 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd() -> Value {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com", "creationTimestamp": "2025-01-01T00:00:00Z"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object",
                        "properties": {"spec": {"type": "object",
                            "properties": {"replicas": {"type": "integer"}}}}}}}]}})
    }

    fn messages(obj: &Value, old: Option<&Value>) -> Vec<String> {
        let rt =
            berth_api::registry::find("apiextensions.k8s.io", "v1", "customresourcedefinitions")
                .unwrap();
        Definition
            .validate(rt, obj, old)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn a_well_formed_definition_is_accepted_established_and_finalized() {
        let mut obj = crd();
        Definition.prepare_for_create(&mut obj);
        assert_eq!(messages(&obj, None), Vec::<String>::new());
        assert_eq!(obj["spec"]["names"]["singular"], "widget");
        assert_eq!(obj["spec"]["names"]["listKind"], "WidgetList");
        assert_eq!(obj["metadata"]["finalizers"], json!([CLEANUP_FINALIZER]));
        let types: Vec<_> = obj["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["type"].clone(), c["status"].clone()))
            .collect();
        assert_eq!(
            types,
            [
                (json!("NamesAccepted"), json!("True")),
                (json!("Established"), json!("True"))
            ]
        );
        assert_eq!(obj["status"]["storedVersions"], json!(["v1"]));
    }

    #[test]
    fn upstream_messages_for_the_fields_people_get_wrong() {
        for (change, want) in [
            (
                json!({"metadata": {"name": "widget.example.com"}}),
                "metadata.name: Invalid value: \"widget.example.com\": must be spec.names.plural+\".\"+spec.group",
            ),
            (
                json!({"spec": {"group": "example"}, "metadata": {"name": "widgets.example"}}),
                "spec.group: Invalid value: \"example\": should be a domain with at least one dot",
            ),
            (
                json!({"spec": {"scope": "Global"}}),
                "spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\"",
            ),
            (
                json!({"spec": {"versions": [{"name": "v1", "served": true, "storage": false,
                    "schema": {"openAPIV3Schema": {"type": "object"}}}]}}),
                "must have exactly one version marked as storage version",
            ),
            (
                json!({"spec": {"versions": [{"name": "v1", "served": true, "storage": true}]}}),
                "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required",
            ),
            (
                json!({"spec": {"versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object",
                        "properties": {"spec": {"properties": {}}}}}}]}}),
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
            ),
        ] {
            let mut obj = crd();
            merge(&mut obj, &change);
            let got = messages(&obj, None);
            assert!(got.iter().any(|m| m.contains(want)), "{want}\n got {got:?}");
        }
    }

    fn with_schema(schema: Value) -> Vec<String> {
        let mut obj = crd();
        obj["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = schema;
        messages(&obj, None)
    }

    /// Upstream's `validateNestedValueValidation`: only value validations inside junctors.
    #[test]
    fn junctors_hold_value_validations_only() {
        let got = with_schema(json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"a": {"type": "string"}},
                "anyOf": [{"type": "object", "description": "d", "default": {},
                           "nullable": true, "x-kubernetes-preserve-unknown-fields": true,
                           "x-kubernetes-list-type": "atomic", "additionalProperties": {},
                           "properties": {"a": {"title": "t", "minLength": 1}}}],
                "not": {"properties": {"metadata": {}}, "x-kubernetes-validations": [{"rule": "true"}]}}}}));
        let p = "spec.versions[0].schema.openAPIV3Schema.properties[spec]";
        for want in [
            format!("{p}.anyOf[0].type: Forbidden: must be empty to be structural"),
            format!("{p}.anyOf[0].description: Forbidden: must be empty to be structural"),
            format!("{p}.anyOf[0].default: Forbidden: must be undefined to be structural"),
            format!("{p}.anyOf[0].nullable: Forbidden: must be false to be structural"),
            format!("{p}.anyOf[0].x-kubernetes-preserve-unknown-fields: Forbidden: must be false to be structural"),
            format!("{p}.anyOf[0].x-kubernetes-list-type: Forbidden: must be undefined to be structural"),
            format!("{p}.anyOf[0].additionalProperties: Forbidden: must be undefined to be structural"),
            format!("{p}.anyOf[0].properties[a].title: Forbidden: must be empty to be structural"),
            format!("{p}.not.properties[metadata]: Forbidden: must not be specified in a nested context"),
            format!("{p}.not.x-kubernetes-validations: Forbidden: must be empty to be structural"),
        ] {
            assert!(got.contains(&want), "{want}\n got {got:?}");
        }
    }

    /// Upstream's `validateStructuralCompleteness`: a junctor of the root may only speak of
    /// fields the structural schema specifies.
    #[test]
    fn junctors_speak_only_of_specified_fields() {
        let got = with_schema(json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"a": {"type": "string"}}}},
            "allOf": [{"properties": {"spec": {"properties": {"a": {"minLength": 1},
                                                             "b": {"maxLength": 3}},
                                                "oneOf": [{"properties": {"c": {"items": {}}}}]}}}]}));
        let p = "spec.versions[0].schema.openAPIV3Schema";
        assert_eq!(
            got,
            [
                format!("{p}.properties[spec].properties[b]: Required value: because it is defined in {p}.allOf[0].properties[spec].properties[b]"),
                format!("{p}.properties[spec].properties[c]: Required value: because it is defined in {p}.allOf[0].properties[spec].oneOf[0].properties[c]"),
            ]
        );
    }

    #[test]
    fn int_or_string_spelled_with_any_of_is_structural() {
        let got = with_schema(json!({"type": "object", "properties": {
            "port": {"x-kubernetes-int-or-string": true,
                     "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "size": {"x-kubernetes-int-or-string": true,
                     "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"pattern": "^[0-9]+$"}]}}}));
        assert_eq!(got, Vec::<String>::new());
    }

    #[test]
    fn group_and_scope_are_immutable() {
        let old = crd();
        let mut new = crd();
        new["spec"]["scope"] = json!("Cluster");
        let got = messages(&new, Some(&old));
        assert!(
            got.contains(&"spec.scope: Invalid value: \"Cluster\": field is immutable".to_string()),
            "{got:?}"
        );
    }

    fn merge(target: &mut Value, patch: &Value) {
        json_patch::merge(target, patch);
    }
}
