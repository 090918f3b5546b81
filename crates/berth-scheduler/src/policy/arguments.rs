//! The `argument` of a configurable predicate or priority (scheduler spec §6.1).

use serde_json::{Map, Value};

use super::syntax::qualified_name_errors;
use super::{PredicateKind, PriorityKind};

/// Resolves a predicate's argument: exactly one of `serviceAffinity` and `labelsPresence`.
pub(crate) fn predicate_argument(name: &str, argument: &Value) -> Result<PredicateKind, String> {
    const KINDS: [&str; 2] = ["serviceAffinity", "labelsPresence"];
    let object = argument
        .as_object()
        .ok_or_else(|| format!("argument must be a mapping, got {argument}"))?;
    let (key, value) = exactly_one(object, &KINDS).map_err(|(n, unknown)| {
        format!(
            "Exactly 1 predicate argument is required, numArgs: {n}, Predicate: {name}{}",
            known(&KINDS, unknown)
        )
    })?;
    let path = format!("argument.{key}");
    let body = value
        .as_object()
        .ok_or_else(|| format!("{path} must be a mapping, got {value}"))?;
    let labels = label_list(body.get("labels"), &format!("{path}.labels"))?;
    if key == "serviceAffinity" {
        Ok(PredicateKind::ServiceAffinity { labels })
    } else {
        let presence = presence(body.get("presence"), &path)?;
        Ok(PredicateKind::LabelsPresence { labels, presence })
    }
}

/// Resolves a priority's argument: exactly one of `serviceAntiAffinity` and `labelPreference`.
pub(crate) fn priority_argument(name: &str, argument: &Value) -> Result<PriorityKind, String> {
    const KINDS: [&str; 2] = ["serviceAntiAffinity", "labelPreference"];
    let object = argument
        .as_object()
        .ok_or_else(|| format!("argument must be a mapping, got {argument}"))?;
    let (key, value) = exactly_one(object, &KINDS).map_err(|(n, unknown)| {
        format!(
            "Exactly 1 priority argument is required, numArgs: {n}, Priority: {name}{}",
            known(&KINDS, unknown)
        )
    })?;
    let path = format!("argument.{key}");
    let body = value
        .as_object()
        .ok_or_else(|| format!("{path} must be a mapping, got {value}"))?;
    let label = single_label(body.get("label"), &format!("{path}.label"))?;
    if key == "serviceAntiAffinity" {
        Ok(PriorityKind::ServiceAntiAffinity { label })
    } else {
        let presence = presence(body.get("presence"), &path)?;
        Ok(PriorityKind::LabelPreference { label, presence })
    }
}

/// The one known argument kind set (non-null) in `object`; or the count and the unknown keys.
fn exactly_one<'a>(
    object: &'a Map<String, Value>,
    kinds: &[&str],
) -> Result<(&'a str, &'a Value), (usize, Vec<&'a str>)> {
    let set: Vec<(&str, &Value)> = object
        .iter()
        .filter(|(k, v)| kinds.contains(&k.as_str()) && !v.is_null())
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    match set.as_slice() {
        [one] => Ok(*one),
        _ => Err((
            set.len(),
            object
                .keys()
                .map(String::as_str)
                .filter(|k| !kinds.contains(k))
                .collect(),
        )),
    }
}

/// A hint naming the known argument kinds when unknown keys were given.
fn known(kinds: &[&str], unknown: Vec<&str>) -> String {
    if unknown.is_empty() {
        String::new()
    } else {
        format!(
            " (unknown argument {}; known: {})",
            unknown.join(", "),
            kinds.join(", ")
        )
    }
}

/// A non-empty list of label keys.
fn label_list(value: Option<&Value>, path: &str) -> Result<Vec<String>, String> {
    let items = match value {
        Some(Value::Array(items)) if !items.is_empty() => items,
        Some(Value::Array(_)) | None | Some(Value::Null) => {
            return Err(format!(
                "{path} is required: a non-empty list of node label keys"
            ))
        }
        Some(other) => {
            return Err(format!(
                "{path} must be a list of node label keys, got {other}"
            ))
        }
    };
    items.iter().map(|item| label_key(item, path)).collect()
}

/// One label key (the documentation once shows it as a list, which is a documentation error).
fn single_label(value: Option<&Value>, path: &str) -> Result<String, String> {
    match value {
        None | Some(Value::Null) => Err(format!("{path} is required: one node label key")),
        Some(Value::Array(_)) => Err(format!(
            "{path} must be a single node label key, not a list"
        )),
        Some(item) => label_key(item, path),
    }
}

/// A label key: a string that is a valid qualified name.
fn label_key(item: &Value, path: &str) -> Result<String, String> {
    let Some(key) = item.as_str() else {
        return Err(format!("{path}: label keys must be strings, got {item}"));
    };
    let problems = qualified_name_errors(key);
    if problems.is_empty() {
        Ok(key.to_string())
    } else {
        Err(format!(
            "{path}: {key:?} is not a valid label key: {}",
            problems.join("; ")
        ))
    }
}

/// The `presence` flag; required, because a missing flag silently meaning `false` would
/// invert the intent of a policy that forgot it.
fn presence(value: Option<&Value>, path: &str) -> Result<bool, String> {
    match value {
        Some(Value::Bool(b)) => Ok(*b),
        None | Some(Value::Null) => Err(format!("{path}.presence is required: true or false")),
        Some(other) => Err(format!(
            "{path}.presence must be true or false, got {other}"
        )),
    }
}
