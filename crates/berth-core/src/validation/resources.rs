//! Container resource requirements (upstream `ValidateResourceRequirements`).

use serde_json::{Map, Value};

use super::{names, FieldError};
use crate::quantity::{self, Quantity};

fn is_hugepages(name: &str) -> bool {
    name.starts_with("hugepages-")
}

/// Native resources have no domain or a `kubernetes.io` domain.
fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// Requests may be below limits only for native, non-hugepage resources.
fn overcommit_allowed(name: &str) -> bool {
    is_native(name) && !is_hugepages(name)
}

fn validate_name(name: &str, path: &str) -> Vec<FieldError> {
    let mut errs: Vec<FieldError> = names::qualified_name(name)
        .into_iter()
        .map(|m| FieldError::invalid(path, name, m))
        .collect();
    if !name.contains('/') {
        if !matches!(name, "cpu" | "memory" | "ephemeral-storage") && !is_hugepages(name) {
            errs.push(FieldError::invalid(
                path,
                name,
                "must be a standard resource for containers",
            ));
        }
    } else if !is_native(name) && name.starts_with("requests.") {
        errs.push(FieldError::invalid(
            path,
            name,
            "doesn't follow extended resource name standard",
        ));
    }
    errs
}

/// Parses and checks one quantity; `None` when it does not parse.
fn validate_quantity(
    name: &str,
    raw: &Value,
    path: &str,
    errs: &mut Vec<FieldError>,
) -> Option<Quantity> {
    let q = match quantity::from_json(raw) {
        Ok(q) => q,
        Err(e) => {
            let shown = raw
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| raw.to_string());
            errs.push(FieldError::invalid(path, &shown, e.to_string()));
            return None;
        }
    };
    if q < Quantity::default() {
        errs.push(FieldError::invalid(
            path,
            &q.to_string(),
            "must be greater than or equal to 0",
        ));
    }
    if !is_native(name) && q.milli_value() % 1000 != 0 {
        errs.push(FieldError::invalid(
            path,
            &q.to_string(),
            "must be an integer",
        ));
    }
    Some(q)
}

fn sorted(map: Option<&Value>) -> Vec<(&String, &Value)> {
    let mut v: Vec<_> = map
        .and_then(Value::as_object)
        .map(Map::iter)
        .into_iter()
        .flatten()
        .collect();
    v.sort_by(|a, b| a.0.cmp(b.0));
    v
}

/// Validates a container's `resources` at `path` (e.g. `spec.containers[0].resources`):
/// resource names, quantities parse and are non-negative, requests ≤ limits (equal for
/// hugepages and extended resources, which also need a limit).
pub(crate) fn validate_resources(res: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(res) = res else {
        return errs;
    };
    let lim_path = format!("{path}.limits");
    let req_path = format!("{path}.requests");
    let mut limits = std::collections::BTreeMap::new();
    for (name, raw) in sorted(res.get("limits")) {
        let p = format!("{lim_path}[{name}]");
        errs.extend(validate_name(name, &p));
        if let Some(q) = validate_quantity(name, raw, &p, &mut errs) {
            limits.insert(name.as_str(), q);
        }
    }
    let raw_limits = res.get("limits").and_then(Value::as_object);
    for (name, raw) in sorted(res.get("requests")) {
        let p = format!("{req_path}[{name}]");
        errs.extend(validate_name(name, &p));
        let Some(q) = validate_quantity(name, raw, &p, &mut errs) else {
            continue;
        };
        match limits.get(name.as_str()) {
            Some(limit) if q != *limit && !overcommit_allowed(name) => {
                errs.push(FieldError::invalid(
                    &req_path,
                    &q.to_string(),
                    format!("must be equal to {name} limit of {limit}"),
                ))
            }
            Some(limit) if q > *limit => errs.push(FieldError::invalid(
                &req_path,
                &q.to_string(),
                format!("must be less than or equal to {name} limit of {limit}"),
            )),
            Some(_) => {}
            None if raw_limits.is_some_and(|l| l.contains_key(name.as_str())) => {}
            None if !overcommit_allowed(name) => errs.push(FieldError::required(
                &lim_path,
                "Limit must be set for non overcommitable resources",
            )),
            None => {}
        }
    }
    errs
}
