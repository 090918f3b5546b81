//! Affinity validation (upstream `validateAffinity` and the node selector / label selector
//! requirement checks).

use serde_json::Value;

use super::meta::validate_labels;
use super::{label_name_errors, list_of, names, str_of, FieldError};

fn strings(v: &Value, key: &str) -> Vec<String> {
    list_of(v, key)
        .iter()
        .map(|s| s.as_str().unwrap_or("").to_string())
        .collect()
}

fn node_selector_requirement(rq: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let values = strings(rq, "values");
    let op = str_of(rq, "operator");
    match op {
        "In" | "NotIn" if values.is_empty() => errs.push(FieldError::required(
            format!("{path}.values"),
            "must be specified when `operator` is 'In' or 'NotIn'",
        )),
        "Exists" | "DoesNotExist" if !values.is_empty() => errs.push(FieldError::forbidden(
            format!("{path}.values"),
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        )),
        "Gt" | "Lt" if values.len() != 1 => errs.push(FieldError::required(
            format!("{path}.values"),
            "must be specified single value when `operator` is 'Lt' or 'Gt'",
        )),
        "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
        _ => errs.push(FieldError::invalid(
            format!("{path}.operator"),
            op,
            "not a valid selector operator",
        )),
    }
    errs.extend(label_name_errors(str_of(rq, "key"), &format!("{path}.key")));
    errs
}

fn node_field_requirement(rq: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let values = strings(rq, "values");
    let op = str_of(rq, "operator");
    match op {
        "In" | "NotIn" if values.len() != 1 => errs.push(FieldError::required(
            format!("{path}.values"),
            "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
        )),
        "In" | "NotIn" => {}
        _ => errs.push(FieldError::invalid(
            format!("{path}.operator"),
            op,
            "not a valid selector operator",
        )),
    }
    let key = str_of(rq, "key");
    if key != "metadata.name" {
        errs.push(FieldError::invalid(
            format!("{path}.key"),
            key,
            "not a valid field selector key",
        ));
    } else {
        for (i, v) in values.iter().enumerate() {
            for m in names::dns1123_subdomain(v) {
                errs.push(FieldError::invalid(format!("{path}.values[{i}]"), v, m));
            }
        }
    }
    errs
}

fn node_selector_term(term: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (j, rq) in list_of(term, "matchExpressions").iter().enumerate() {
        errs.extend(node_selector_requirement(
            rq,
            &format!("{path}.matchExpressions[{j}]"),
        ));
    }
    for (j, rq) in list_of(term, "matchFields").iter().enumerate() {
        errs.extend(node_field_requirement(
            rq,
            &format!("{path}.matchFields[{j}]"),
        ));
    }
    errs
}

fn weight_error(w: &Value, path: String) -> Option<FieldError> {
    let weight = w.get("weight").and_then(Value::as_i64).unwrap_or(0);
    (!(1..=100).contains(&weight)).then(|| {
        FieldError::invalid_rendered(path, &weight.to_string(), "must be in the range 1-100")
    })
}

fn node_affinity(na: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(req) = na
        .get("requiredDuringSchedulingIgnoredDuringExecution")
        .filter(|r| !r.is_null())
    {
        let tp = format!("{path}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms");
        let terms = list_of(req, "nodeSelectorTerms");
        if terms.is_empty() {
            errs.push(FieldError::required(
                &tp,
                "must have at least one node selector term",
            ));
        }
        for (i, t) in terms.iter().enumerate() {
            errs.extend(node_selector_term(t, &format!("{tp}[{i}]")));
        }
    }
    let pp = format!("{path}.preferredDuringSchedulingIgnoredDuringExecution");
    for (i, t) in list_of(na, "preferredDuringSchedulingIgnoredDuringExecution")
        .iter()
        .enumerate()
    {
        errs.extend(weight_error(t, format!("{pp}[{i}].weight")));
        let pref = t.get("preference").unwrap_or(&Value::Null);
        errs.extend(node_selector_term(pref, &format!("{pp}[{i}].preference")));
    }
    errs
}

/// Validates a `LabelSelector` at `path` (upstream `ValidateLabelSelector`).
pub(crate) fn label_selector(sel: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = validate_labels(sel.get("matchLabels"), &format!("{path}.matchLabels"));
    for (i, e) in list_of(sel, "matchExpressions").iter().enumerate() {
        let p = format!("{path}.matchExpressions[{i}]");
        let values = strings(e, "values");
        let op = str_of(e, "operator");
        match op {
            "In" | "NotIn" if values.is_empty() => errs.push(FieldError::required(
                format!("{p}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => errs.push(FieldError::forbidden(
                format!("{p}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            _ => errs.push(FieldError::invalid(
                format!("{p}.operator"),
                op,
                "not a valid selector operator",
            )),
        }
        errs.extend(label_name_errors(str_of(e, "key"), &format!("{p}.key")));
        for (j, v) in values.iter().enumerate() {
            for m in names::label_value(v) {
                errs.push(FieldError::invalid(format!("{p}.values[{j}]"), v, m));
            }
        }
    }
    errs
}

fn pod_affinity_term(term: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for key in ["labelSelector", "namespaceSelector"] {
        if let Some(sel) = term.get(key).filter(|s| !s.is_null()) {
            errs.extend(label_selector(sel, &format!("{path}.{key}")));
        }
    }
    for ns in strings(term, "namespaces") {
        for m in names::dns1123_label(&ns) {
            errs.push(FieldError::invalid(format!("{path}.namespace"), &ns, m));
        }
    }
    let topology_key = str_of(term, "topologyKey");
    if topology_key.is_empty() {
        errs.push(FieldError::required(
            format!("{path}.topologyKey"),
            "can not be empty",
        ));
    }
    errs.extend(label_name_errors(
        topology_key,
        &format!("{path}.topologyKey"),
    ));
    errs
}

fn pod_affinity(pa: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let rp = format!("{path}.requiredDuringSchedulingIgnoredDuringExecution");
    for (i, t) in list_of(pa, "requiredDuringSchedulingIgnoredDuringExecution")
        .iter()
        .enumerate()
    {
        errs.extend(pod_affinity_term(t, &format!("{rp}[{i}]")));
    }
    let pp = format!("{path}.preferredDuringSchedulingIgnoredDuringExecution");
    for (i, t) in list_of(pa, "preferredDuringSchedulingIgnoredDuringExecution")
        .iter()
        .enumerate()
    {
        errs.extend(weight_error(t, format!("{pp}[{i}].weight")));
        let term = t.get("podAffinityTerm").unwrap_or(&Value::Null);
        errs.extend(pod_affinity_term(
            term,
            &format!("{pp}[{i}].podAffinityTerm"),
        ));
    }
    errs
}

/// Validates `spec.affinity` at `path`: node affinity operators (`Gt`/`Lt` need exactly one
/// value), at least one required node selector term, weights 1–100, pod (anti-)affinity
/// label selectors and topology keys.
pub(crate) fn validate_affinity(affinity: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(a) = affinity.filter(|a| a.is_object()) else {
        return errs;
    };
    if let Some(na) = a.get("nodeAffinity").filter(|v| v.is_object()) {
        errs.extend(node_affinity(na, &format!("{path}.nodeAffinity")));
    }
    for key in ["podAffinity", "podAntiAffinity"] {
        if let Some(pa) = a.get(key).filter(|v| v.is_object()) {
            errs.extend(pod_affinity(pa, &format!("{path}.{key}")));
        }
    }
    errs
}
