//! Node taint and pod toleration validation (upstream `validateNodeTaints`,
//! `ValidateTolerations`; control-loops spec §4.6).

use serde_json::Value;

use super::{label_name_errors, names, str_of, FieldError, FieldErrorKind};

const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

fn validate_effect(effect: &str, allow_empty: bool, path: &str) -> Vec<FieldError> {
    if effect.is_empty() && !allow_empty {
        return vec![FieldError::required(path, "")];
    }
    if EFFECTS.contains(&effect) || effect.is_empty() {
        return Vec::new();
    }
    vec![FieldError::not_supported(path, effect, &EFFECTS)]
}

/// Go's `%#v` of an optional pointer field (the address is not reproducible, so a set
/// pointer shows its JSON value instead).
fn pointer(type_name: &str, v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => format!("(*{type_name})(nil)"),
        Some(v) => format!("(*{type_name})({v})"),
    }
}

fn render_taint(t: &Value) -> String {
    format!(
        "core.Taint{{Key:{}, Value:{}, Effect:{}, TimeAdded:{}}}",
        names::go_quote(str_of(t, "key")),
        names::go_quote(str_of(t, "value")),
        names::go_quote(str_of(t, "effect")),
        pointer("v1.Time", t.get("timeAdded"))
    )
}

fn render_toleration(t: &Value) -> String {
    format!(
        "core.Toleration{{Key:{}, Operator:{}, Value:{}, Effect:{}, TolerationSeconds:{}}}",
        names::go_quote(str_of(t, "key")),
        names::go_quote(str_of(t, "operator")),
        names::go_quote(str_of(t, "value")),
        names::go_quote(str_of(t, "effect")),
        pointer("int64", t.get("tolerationSeconds"))
    )
}

/// Validates a node's `spec.taints` list at `path` (e.g. `spec.taints`): key a qualified name,
/// value a label value, effect required and one of `NoSchedule`, `PreferNoSchedule`,
/// `NoExecute`, and (key, effect) pairs unique. `null`/absent is valid.
pub fn validate_taints(taints: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(items) = taints.as_array() else {
        return errs;
    };
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for (i, t) in items.iter().enumerate() {
        let idx = format!("{path}[{i}]");
        let (key, value, effect) = (str_of(t, "key"), str_of(t, "value"), str_of(t, "effect"));
        errs.extend(label_name_errors(key, &format!("{idx}.key")));
        let v_errs = names::label_value(value);
        if !v_errs.is_empty() {
            errs.push(FieldError::invalid(
                format!("{idx}.value"),
                value,
                v_errs.join(";"),
            ));
        }
        errs.extend(validate_effect(effect, false, &format!("{idx}.effect")));
        if seen.contains(&(key, effect)) {
            errs.push(FieldError {
                field: idx,
                kind: FieldErrorKind::Duplicate,
                value: None,
                detail: format!(
                    "{}: taints must be unique by key and effect pair",
                    render_taint(t)
                ),
            });
            continue;
        }
        seen.push((key, effect));
    }
    errs
}

/// Validates a pod's `spec.tolerations` list at `path`: an empty key needs operator `Exists`;
/// `tolerationSeconds` needs effect `NoExecute`; `Equal` (or empty) needs a label value,
/// `Exists` an empty value; other operators are unsupported; a non-empty effect must be one of
/// the three taint effects. `null`/absent is valid.
pub fn validate_tolerations(tolerations: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(items) = tolerations.as_array() else {
        return errs;
    };
    for (i, t) in items.iter().enumerate() {
        let idx = format!("{path}[{i}]");
        let (key, op, value, effect) = (
            str_of(t, "key"),
            str_of(t, "operator"),
            str_of(t, "value"),
            str_of(t, "effect"),
        );
        if !key.is_empty() {
            errs.extend(label_name_errors(key, &format!("{idx}.key")));
        }
        if key.is_empty() && op != "Exists" {
            errs.push(FieldError::invalid(
                format!("{idx}.operator"),
                op,
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        let has_seconds = t.get("tolerationSeconds").is_some_and(|s| !s.is_null());
        if has_seconds && effect != "NoExecute" {
            errs.push(FieldError::invalid(
                format!("{idx}.effect"),
                effect,
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        match op {
            "" | "Equal" => {
                let v_errs = names::label_value(value);
                if !v_errs.is_empty() {
                    errs.push(FieldError::invalid(
                        format!("{idx}.operator"),
                        value,
                        v_errs.join(";"),
                    ));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    errs.push(FieldError::invalid_rendered(
                        format!("{idx}.operator"),
                        &render_toleration(t),
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            other => errs.push(FieldError::not_supported(
                format!("{idx}.operator"),
                other,
                &["Equal", "Exists"],
            )),
        }
        if !effect.is_empty() {
            errs.extend(validate_effect(effect, true, &format!("{idx}.effect")));
        }
    }
    errs
}
