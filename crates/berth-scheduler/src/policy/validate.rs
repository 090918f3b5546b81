//! Document tree to validated [`Policy`] (scheduler spec §6.1–§6.2), aggregating every error.

use serde_json::{Map, Value};

use super::arguments::{predicate_argument, priority_argument};
use super::extender::extenders;
use super::{defaults, syntax};
use super::{Policy, PolicyEntryError, PredicateConfig, PredicateKind, PredicateName};
use super::{PriorityConfig, PriorityKind, PriorityName};

/// Weights must stay below this (upstream `MaxWeight = MaxInt64 / 10`), so that a weighted
/// 0..10 score cannot overflow.
pub(crate) const MAX_WEIGHT: i64 = i64::MAX / 10;

/// Collected problems, in document order.
pub(crate) type Errors = Vec<PolicyEntryError>;

/// Validates a parsed document.
pub(crate) fn policy(document: &Value) -> Result<Policy, Errors> {
    let mut errors = Errors::new();
    let Some(object) = document.as_object() else {
        let what = if document.is_null() {
            "the document is empty"
        } else {
            "the document is not a mapping"
        };
        return Err(vec![PolicyEntryError::new(
            "document",
            format!("{what}; a policy file is a mapping with kind: Policy"),
        )]);
    };
    header(object, &mut errors);
    let predicates = match object.get("predicates") {
        None | Some(Value::Null) => defaults::predicates(),
        Some(Value::Array(items)) => predicates(items, &mut errors),
        Some(_) => {
            errors.push(PolicyEntryError::new(
                "predicates",
                "must be a list of predicate entries",
            ));
            Vec::new()
        }
    };
    let priorities = match object.get("priorities") {
        None | Some(Value::Null) => defaults::priorities(),
        Some(Value::Array(items)) => priorities(items, &mut errors),
        Some(_) => {
            errors.push(PolicyEntryError::new(
                "priorities",
                "must be a list of priority entries",
            ));
            Vec::new()
        }
    };
    let extenders = match object.get("extenders") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => extenders(items, &mut errors),
        Some(_) => {
            errors.push(PolicyEntryError::new(
                "extenders",
                "must be a list of extender entries",
            ));
            Vec::new()
        }
    };
    let hard_pod_affinity_symmetric_weight =
        symmetric_weight(object.get("hardPodAffinitySymmetricWeight"), &mut errors);
    let always_check_all_predicates = match object.get("alwaysCheckAllPredicates") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            errors.push(PolicyEntryError::new(
                "alwaysCheckAllPredicates",
                format!("must be true or false, got {other}"),
            ));
            false
        }
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Policy {
        predicates,
        priorities,
        always_check_all_predicates,
        hard_pod_affinity_symmetric_weight,
        extenders,
    })
}

/// Checks `kind`, `apiVersion` and the documentation's `version`.
fn header(object: &Map<String, Value>, errors: &mut Errors) {
    match object.get("kind") {
        Some(Value::String(kind)) if kind == "Policy" => {}
        None | Some(Value::Null) => errors.push(PolicyEntryError::new(
            "kind",
            "Object 'Kind' is missing; a policy file declares kind: Policy",
        )),
        Some(other) => errors.push(PolicyEntryError::new(
            "kind",
            format!("is {other}; expected Policy"),
        )),
    }
    for key in ["apiVersion", "version"] {
        match object.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::String(v)) if v == "v1" => {}
            Some(other) => errors.push(PolicyEntryError::new(
                key,
                format!("{other} is not supported; the policy file format is v1"),
            )),
        }
    }
}

/// `predicates[2] (Foo)`, or `predicates[2]` when the entry has no usable name.
pub(crate) fn entry_label(list: &str, index: usize, item: &Value) -> String {
    match item.get("name").and_then(Value::as_str) {
        Some(name) => format!("{list}[{index}] ({name})"),
        None => format!("{list}[{index}]"),
    }
}

/// The entry's `name`, checked against the name regexp; `None` (with an error) if unusable.
fn entry_name<'a>(item: &'a Value, label: &str, errors: &mut Errors) -> Option<&'a str> {
    if !item.is_object() {
        errors.push(PolicyEntryError::new(
            label,
            "must be a mapping with a name",
        ));
        return None;
    }
    match item.get("name") {
        Some(Value::String(name)) => {
            if !syntax::is_algorithm_name(name) {
                errors.push(PolicyEntryError::new(
                    label,
                    syntax::algorithm_name_message(name),
                ));
            }
            Some(name)
        }
        None | Some(Value::Null) => {
            errors.push(PolicyEntryError::new(label, "name is required"));
            None
        }
        Some(other) => {
            errors.push(PolicyEntryError::new(
                label,
                format!("name must be a string, got {other}"),
            ));
            None
        }
    }
}

/// The entry's argument if present and not null.
fn argument(item: &Value) -> Option<&Value> {
    item.get("argument").filter(|a| !a.is_null())
}

/// Validates the predicate list.
fn predicates(items: &[Value], errors: &mut Errors) -> Vec<PredicateConfig> {
    let mut out: Vec<(usize, PredicateConfig)> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let label = entry_label("predicates", i, item);
        let Some(name) = entry_name(item, &label, errors) else {
            continue;
        };
        let kind = match argument(item) {
            Some(arg) => {
                predicate_argument(name, arg).map_err(|m| PolicyEntryError::new(&label, m))
            }
            None => PredicateName::parse(name)
                .map(PredicateKind::Builtin)
                .ok_or_else(|| PolicyEntryError::new(&label, predicate_not_found(name))),
        };
        match kind {
            Ok(kind) => {
                let config = PredicateConfig {
                    name: name.to_string(),
                    kind,
                };
                let key = predicate_key(&config);
                if let Some((j, first)) = out.iter().find(|(_, c)| predicate_key(c) == key) {
                    errors.push(PolicyEntryError::new(
                        &label,
                        format!(
                            "duplicate predicate: already configured as predicates[{j}] ({})",
                            first.name
                        ),
                    ));
                } else {
                    out.push((i, config));
                }
            }
            Err(e) => errors.push(e),
        }
    }
    out.into_iter().map(|(_, c)| c).collect()
}

/// Identity of a predicate for duplicate detection: the canonical name of a static one (so
/// `PodFitsPorts` and `PodFitsHostPorts` collide), the user's name otherwise.
fn predicate_key(config: &PredicateConfig) -> &str {
    match &config.kind {
        PredicateKind::Builtin(name) => name.as_str(),
        _ => &config.name,
    }
}

/// Upstream's unknown-name message, with a hint for the configurable types' names.
fn predicate_not_found(name: &str) -> String {
    let message = format!("Invalid configuration: Predicate type not found for {name}");
    let hint = match name.to_ascii_lowercase().as_str() {
        "checknodelabelpresence" | "labelspresence" => {
            Some(r#"{"labelsPresence": {"labels": ["<label>"], "presence": true}}"#)
        }
        "checkserviceaffinity" | "serviceaffinity" => {
            Some(r#"{"serviceAffinity": {"labels": ["<label>"]}}"#)
        }
        _ => None,
    };
    match hint {
        Some(hint) => format!(
            "{message} ({name} is a configurable predicate: give it a name of your choice and the argument {hint})"
        ),
        None => message,
    }
}

/// Validates the priority list, then the total weight.
fn priorities(items: &[Value], errors: &mut Errors) -> Vec<PriorityConfig> {
    let mut out: Vec<(usize, PriorityConfig)> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let label = entry_label("priorities", i, item);
        let Some(name) = entry_name(item, &label, errors) else {
            continue;
        };
        let weight = weight(item.get("weight"), name).map_err(|m| PolicyEntryError::new(&label, m));
        let kind = match argument(item) {
            Some(arg) => priority_argument(name, arg).map_err(|m| PolicyEntryError::new(&label, m)),
            None => PriorityName::parse(name)
                .map(PriorityKind::Builtin)
                .ok_or_else(|| PolicyEntryError::new(&label, priority_not_found(name))),
        };
        match (weight, kind) {
            (Ok(weight), Ok(kind)) => {
                if let Some((j, _)) = out.iter().find(|(_, c)| c.name == name) {
                    errors.push(PolicyEntryError::new(
                        &label,
                        format!(
                            "duplicate priority: already configured as priorities[{j}] ({name})"
                        ),
                    ));
                } else {
                    out.push((
                        i,
                        PriorityConfig {
                            name: name.to_string(),
                            weight,
                            kind,
                        },
                    ));
                }
            }
            (weight, kind) => errors.extend(weight.err().into_iter().chain(kind.err())),
        }
    }
    let total = out.iter().try_fold(0i64, |sum, (_, c)| {
        c.weight.checked_mul(10).and_then(|w| sum.checked_add(w))
    });
    if total.is_none() {
        errors.push(PolicyEntryError::new(
            "priorities",
            "Total priority of priority functions has overflown",
        ));
    }
    out.into_iter().map(|(_, c)| c).collect()
}

/// Upstream's unknown-name message, with a hint for the configurable types' names.
fn priority_not_found(name: &str) -> String {
    let message = format!("Invalid configuration: Priority type not found for {name}");
    let hint = match name.to_ascii_lowercase().as_str() {
        "serviceantiaffinity" | "serviceantiaffinitypriority" => {
            Some(r#"{"serviceAntiAffinity": {"label": "<label>"}}"#)
        }
        "nodelabelpriority" | "labelpreference" => {
            Some(r#"{"labelPreference": {"label": "<label>", "presence": true}}"#)
        }
        _ => None,
    };
    match hint {
        Some(hint) => format!(
            "{message} ({name} is a configurable priority: give it a name of your choice and the argument {hint})"
        ),
        None => message,
    }
}

/// A priority's weight: a positive integer below [`MAX_WEIGHT`].
fn weight(value: Option<&Value>, name: &str) -> Result<i64, String> {
    let overflown = || {
        format!("Priority {name} should have a positive weight applied to it or it has overflown")
    };
    match value {
        // Upstream decodes a missing weight as 0, which then fails the positivity check.
        None | Some(Value::Null) => Err(format!("{} (weight is missing)", overflown())),
        Some(Value::Number(n)) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(w), _, _) if w > 0 && w < MAX_WEIGHT => Ok(w),
            (Some(_), _, _) | (None, Some(_), _) => Err(overflown()),
            (None, None, Some(f)) if f.fract() == 0.0 && f.abs() >= MAX_WEIGHT as f64 => {
                Err(overflown())
            }
            _ => Err(format!("weight must be an integer, got {n}")),
        },
        Some(Value::String(s)) => Err(format!("weight must be an integer, not a string ({s:?})")),
        Some(other) => Err(format!("weight must be an integer, got {other}")),
    }
}

/// `hardPodAffinitySymmetricWeight`: 0 or absent means the default; otherwise 1..=100.
fn symmetric_weight(value: Option<&Value>, errors: &mut Errors) -> i32 {
    const KEY: &str = "hardPodAffinitySymmetricWeight";
    let fallback = defaults::HARD_POD_AFFINITY_SYMMETRIC_WEIGHT;
    let range = |v: &dyn std::fmt::Display| {
        format!("invalid hardPodAffinitySymmetricWeight: {v}, must be in the range 1-100")
    };
    match value {
        None | Some(Value::Null) => fallback,
        Some(Value::Number(n)) => match n.as_i64() {
            Some(0) => fallback,
            Some(v @ 1..=100) => v as i32,
            Some(v) => {
                errors.push(PolicyEntryError::new(KEY, range(&v)));
                fallback
            }
            None if n.as_u64().is_some() => {
                errors.push(PolicyEntryError::new(KEY, range(n)));
                fallback
            }
            None => {
                errors.push(PolicyEntryError::new(
                    KEY,
                    format!("must be an integer, got {n}"),
                ));
                fallback
            }
        },
        Some(other) => {
            errors.push(PolicyEntryError::new(
                KEY,
                format!("must be an integer, got {other}"),
            ));
            fallback
        }
    }
}
