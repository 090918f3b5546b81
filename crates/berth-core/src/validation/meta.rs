//! `ObjectMeta` validation (upstream `ValidateObjectMeta`, `ValidateLabels`,
//! `ValidateAnnotations`).

use serde_json::{Map, Value};

use super::{label_name_errors, names, str_of, FieldError};

/// Upstream's limit on the total size of annotation keys plus values.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// How an object's name is checked.
#[derive(Clone, Copy)]
pub(crate) enum NameRule {
    /// DNS-1123 subdomain (most kinds: pods, nodes, deployments, ...).
    Subdomain,
    /// DNS-1123 label (namespaces).
    Label,
}

impl NameRule {
    fn check(self, name: &str, prefix: bool) -> Vec<String> {
        // A generateName prefix may end in '-': upstream masks it before checking.
        let masked;
        let name = if prefix && name.ends_with('-') {
            masked = format!("{}a", &name[..name.len() - 1]);
            masked.as_str()
        } else {
            name
        };
        match self {
            NameRule::Subdomain => names::dns1123_subdomain(name),
            NameRule::Label => names::dns1123_label(name),
        }
    }
}

/// Validates an object's `metadata` with DNS-1123 subdomain names: name (or generateName)
/// required and well formed; namespace required and a DNS-1123 label when `namespaced`,
/// forbidden otherwise; label keys and values; annotation keys and total size. `path` is the
/// path of the metadata itself, normally `metadata`.
pub fn validate_object_meta(meta: &Value, namespaced: bool, path: &str) -> Vec<FieldError> {
    validate_meta_with(meta, namespaced, path, NameRule::Subdomain)
}

pub(crate) fn validate_meta_with(
    meta: &Value,
    namespaced: bool,
    path: &str,
    rule: NameRule,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let generate_name = str_of(meta, "generateName");
    if !generate_name.is_empty() {
        for m in rule.check(generate_name, true) {
            errs.push(FieldError::invalid(
                format!("{path}.generateName"),
                generate_name,
                m,
            ));
        }
    }
    let name = str_of(meta, "name");
    if name.is_empty() {
        errs.push(FieldError::required(
            format!("{path}.name"),
            "name or generateName is required",
        ));
    } else {
        for m in rule.check(name, false) {
            errs.push(FieldError::invalid(format!("{path}.name"), name, m));
        }
    }
    let namespace = str_of(meta, "namespace");
    if namespaced {
        if namespace.is_empty() {
            errs.push(FieldError::required(format!("{path}.namespace"), ""));
        } else {
            for m in names::dns1123_label(namespace) {
                errs.push(FieldError::invalid(
                    format!("{path}.namespace"),
                    namespace,
                    m,
                ));
            }
        }
    } else if !namespace.is_empty() {
        errs.push(FieldError::forbidden(
            format!("{path}.namespace"),
            "not allowed on this type",
        ));
    }
    if let Some(g) = meta
        .get("generation")
        .and_then(Value::as_i64)
        .filter(|g| *g < 0)
    {
        errs.push(FieldError::invalid_rendered(
            format!("{path}.generation"),
            &g.to_string(),
            "must be greater than or equal to 0",
        ));
    }
    errs.extend(validate_labels(
        meta.get("labels"),
        &format!("{path}.labels"),
    ));
    errs.extend(validate_annotations(
        meta.get("annotations"),
        &format!("{path}.annotations"),
    ));
    errs.extend(validate_owner_references(
        meta.get("ownerReferences"),
        &format!("{path}.ownerReferences"),
    ));
    errs
}

/// Validates `ownerReferences` (upstream `ValidateOwnerReferences`): each names its owner's
/// version, kind, name and uid; an Event cannot own; at most one is the controller, which
/// is what lets a controller adopt by patch without a resourceVersion.
pub fn validate_owner_references(refs: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(refs) = refs.and_then(Value::as_array) else {
        return errs;
    };
    let mut first_controller: Option<String> = None;
    for r in refs {
        let api_version = str_of(r, "apiVersion");
        let kind = str_of(r, "kind");
        let version = api_version.rsplit('/').next().unwrap_or_default();
        if version.is_empty() {
            errs.push(FieldError::invalid(
                format!("{path}.apiVersion"),
                api_version,
                "version must not be empty",
            ));
        }
        for field in ["kind", "name", "uid"] {
            let value = str_of(r, field);
            if value.is_empty() {
                errs.push(FieldError::invalid(
                    format!("{path}.{field}"),
                    value,
                    format!("{field} must not be empty"),
                ));
            }
        }
        if api_version == "v1" && kind == "Event" {
            errs.push(FieldError::invalid_rendered(
                path,
                &owner_json(r),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if r.get("controller").and_then(Value::as_bool) == Some(true) {
            let this = format!("{kind}/{}", str_of(r, "name"));
            match &first_controller {
                Some(first) => errs.push(FieldError::invalid_rendered(
                    path,
                    &format!(
                        "[{}]",
                        refs.iter().map(owner_json).collect::<Vec<_>>().join(",")
                    ),
                    &format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {this}"
                    ),
                )),
                None => first_controller = Some(this),
            }
        }
    }
    errs
}

/// An owner reference as upstream's error shows it: Go's JSON of the struct, in its field
/// order (the strings always, the two flags when set).
fn owner_json(r: &Value) -> String {
    let mut fields: Vec<String> = ["apiVersion", "kind", "name", "uid"]
        .iter()
        .map(|f| format!("\"{f}\":{}", Value::from(str_of(r, f))))
        .collect();
    for f in ["controller", "blockOwnerDeletion"] {
        if let Some(b) = r.get(f).and_then(Value::as_bool) {
            fields.push(format!("\"{f}\":{b}"));
        }
    }
    format!("{{{}}}", fields.join(","))
}

fn sorted(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<_> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries
}

/// Validates a label map (upstream `ValidateLabels`): keys are qualified names, values label
/// values; every error is reported at `path` itself (e.g. `metadata.labels`,
/// `spec.nodeSelector`). Keys are checked in sorted order. `None`/`null` is valid.
pub fn validate_labels(labels: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let map = match labels {
        None | Some(Value::Null) => return errs,
        Some(Value::Object(m)) => m,
        Some(_) => {
            return vec![FieldError::invalid_rendered(
                path,
                "<non-map>",
                "must be a map of strings",
            )]
        }
    };
    for (k, v) in sorted(map) {
        errs.extend(label_name_errors(k, path));
        match v.as_str() {
            Some(v) => {
                for m in names::label_value(v) {
                    errs.push(FieldError::invalid(path, v, m));
                }
            }
            None => errs.push(FieldError::invalid_rendered(
                path,
                &v.to_string(),
                "must be a string",
            )),
        }
    }
    errs
}

/// Validates annotations (upstream `ValidateAnnotations`): lower-cased keys are qualified names,
/// and keys plus values total at most 256 KiB.
pub fn validate_annotations(annotations: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let map = match annotations {
        None | Some(Value::Null) => return errs,
        Some(Value::Object(m)) => m,
        Some(_) => {
            return vec![FieldError::invalid_rendered(
                path,
                "<non-map>",
                "must be a map of strings",
            )]
        }
    };
    let mut total = 0;
    for (k, v) in sorted(map) {
        for m in names::qualified_name(&k.to_lowercase()) {
            errs.push(FieldError::invalid(path, k, m));
        }
        total += k.len() + v.as_str().map_or(0, str::len);
        if !v.is_string() {
            errs.push(FieldError::invalid_rendered(
                path,
                &v.to_string(),
                "must be a string",
            ));
        }
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(FieldError::too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT));
    }
    errs
}

/// Validates a Namespace: metadata with a DNS-1123 *label* name and no namespace.
pub fn validate_namespace(ns: &Value) -> Vec<FieldError> {
    validate_meta_with(
        ns.get("metadata").unwrap_or(&Value::Null),
        false,
        "metadata",
        NameRule::Label,
    )
}

/// Validates only the metadata of any object (kinds without a dedicated validator).
pub fn validate_generic(obj: &Value, namespaced: bool) -> Vec<FieldError> {
    validate_object_meta(
        obj.get("metadata").unwrap_or(&Value::Null),
        namespaced,
        "metadata",
    )
}
