//! What an update may change in a pod's spec (upstream `ValidatePodUpdate`): the images of
//! containers and init containers, `activeDeadlineSeconds` (set, or lowered), added
//! tolerations (and the `tolerationSeconds` of existing ones), `terminationGracePeriodSeconds`
//! from a negative value to 1, and removed scheduling gates. Everything else is fixed at creation.

use berth_core::quantity::Quantity;
use berth_core::validation::{FieldError, FieldErrorKind};
use serde_json::{Map, Value};

const UPDATABLE: &str = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// The field errors of updating a pod's spec from `old` to `new` (whole pod objects).
pub fn validate(old: &Value, new: &Value) -> Vec<FieldError> {
    let (old, new) = (&old["spec"], &new["spec"]);
    // Status writes and metadata edits (most pod updates) leave the spec as it was.
    if old == new {
        return Vec::new();
    }
    let mut errors = active_deadline(old, new);
    if !errors.is_empty() {
        return errors;
    }
    errors.extend(only_added_tolerations(old, new));
    let mut munged = new.clone();
    if !munged.is_object() {
        munged = Value::Object(Map::new());
    }
    for list in ["containers", "initContainers"] {
        let old_list = old[list].as_array();
        if let Some(containers) = munged.get_mut(list).and_then(Value::as_array_mut) {
            for (ix, c) in containers.iter_mut().enumerate() {
                match old_list
                    .and_then(|l| l.get(ix))
                    .and_then(|o| o.get("image"))
                {
                    Some(image) if c.is_object() => {
                        c["image"] = image.clone();
                    }
                    _ => {}
                }
            }
        }
    }
    for field in [
        "activeDeadlineSeconds",
        "tolerations",
        "ephemeralContainers",
    ] {
        copy_field(old, &mut munged, field);
    }
    let old_grace = old["terminationGracePeriodSeconds"].as_i64();
    if old_grace.is_some_and(|g| g < 0) && new["terminationGracePeriodSeconds"].as_i64() == Some(1)
    {
        copy_field(old, &mut munged, "terminationGracePeriodSeconds");
    }
    if removes_only(
        old["schedulingGates"].as_array(),
        new["schedulingGates"].as_array(),
    ) {
        copy_field(old, &mut munged, "schedulingGates");
    }
    let changed = changed_fields(&normalize(old), &normalize(&munged), "spec");
    if !changed.is_empty() {
        errors.push(FieldError {
            field: "spec".into(),
            kind: FieldErrorKind::Forbidden,
            value: None,
            detail: format!("{UPDATABLE}\n  changed: {}", changed.join(", ")),
        });
    }
    errors
}

fn copy_field(from: &Value, to: &mut Value, field: &str) {
    let Some(to) = to.as_object_mut() else { return };
    match from.get(field) {
        Some(v) => {
            to.insert(field.into(), v.clone());
        }
        None => {
            to.remove(field);
        }
    }
}

fn active_deadline(old: &Value, new: &Value) -> Vec<FieldError> {
    let field = "spec.activeDeadlineSeconds";
    let invalid = |shown: String, detail: &str| FieldError {
        field: field.into(),
        kind: FieldErrorKind::Invalid,
        value: None,
        detail: format!("{shown}: {detail}"),
    };
    let old = old["activeDeadlineSeconds"].as_i64();
    match new.get("activeDeadlineSeconds").filter(|v| !v.is_null()) {
        Some(v) => match v.as_i64() {
            Some(n) if (0..=i64::from(i32::MAX)).contains(&n) => match old {
                Some(o) if o < n => vec![invalid(
                    n.to_string(),
                    "must be less than or equal to previous value",
                )],
                _ => Vec::new(),
            },
            _ => vec![invalid(
                v.to_string(),
                &format!("must be between 0 and {}, inclusive", i32::MAX),
            )],
        },
        None if old.is_some() => vec![invalid(
            "\"null\"".into(),
            "must not update from a positive integer to nil value",
        )],
        None => Vec::new(),
    }
}

/// Every existing toleration must still be there; only its `tolerationSeconds` may change.
fn only_added_tolerations(old: &Value, new: &Value) -> Vec<FieldError> {
    let without_seconds = |t: &Value| {
        let mut t = normalize(t);
        if let Some(o) = t.as_object_mut() {
            o.remove("tolerationSeconds");
        }
        t
    };
    let new: Vec<Value> = new["tolerations"]
        .as_array()
        .map(|l| l.iter().map(without_seconds).collect())
        .unwrap_or_default();
    let mut errors = Vec::new();
    for t in old["tolerations"].as_array().into_iter().flatten() {
        if !new.contains(&without_seconds(t)) {
            errors.push(FieldError {
                field: "spec.tolerations".into(),
                kind: FieldErrorKind::Forbidden,
                value: None,
                detail: format!(
                    "existing toleration can not be modified except its tolerationSeconds: {t}"
                ),
            });
        }
    }
    errors
}

fn removes_only(old: Option<&Vec<Value>>, new: Option<&Vec<Value>>) -> bool {
    let old = old.map(Vec::as_slice).unwrap_or_default();
    new.map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .all(|g| old.contains(g))
}

/// The value as upstream's semantic equality sees it: null, empty lists and empty maps are
/// absent, and quantities are compared by value (`1000m` is `1`).
fn normalize(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter_map(|(k, v)| {
                    let v = if k == "requests" || k == "limits" {
                        quantities(v)
                    } else {
                        normalize(v)
                    };
                    (!is_empty(&v)).then(|| (k.clone(), v))
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(normalize).collect()),
        other => other.clone(),
    }
}

fn quantities(v: &Value) -> Value {
    match v.as_object() {
        Some(m) => Value::Object(
            m.iter()
                .map(|(k, q)| {
                    let canonical = berth_core::quantity::from_json(q)
                        .map(|q: Quantity| Value::String(q.to_string()))
                        .unwrap_or_else(|_| q.clone());
                    (k.clone(), canonical)
                })
                .collect(),
        ),
        None => normalize(v),
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

/// The paths (to a depth that names the field) where `old` and `new` differ.
fn changed_fields(old: &Value, new: &Value, at: &str) -> Vec<String> {
    if old == new {
        return Vec::new();
    }
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter()
                .flat_map(|k| {
                    let (x, y) = (
                        a.get(k).unwrap_or(&Value::Null),
                        b.get(k).unwrap_or(&Value::Null),
                    );
                    changed_fields(x, y, &format!("{at}.{k}"))
                })
                .collect()
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .flat_map(|(i, (x, y))| changed_fields(x, y, &format!("{at}[{i}]")))
            .collect(),
        _ => vec![at.to_string()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(spec: Value) -> Value {
        json!({"spec": spec})
    }

    fn base() -> Value {
        json!({"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx:1", "resources": {"requests": {"cpu": "1"}}}],
               "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
               "terminationGracePeriodSeconds": 30})
    }

    fn errors(change: impl Fn(&mut Value)) -> Vec<String> {
        let old = pod(base());
        let mut new = old.clone();
        change(&mut new["spec"]);
        validate(&old, &new)
            .iter()
            .map(|e| format!("{} {}", e.field, e.detail))
            .collect()
    }

    #[test]
    fn images_tolerations_and_deadlines_may_change() {
        assert!(errors(|s| s["containers"][0]["image"] = json!("nginx:2")).is_empty());
        assert!(errors(|s| s["tolerations"]
            .as_array_mut()
            .unwrap()
            .push(json!({"key": "x", "operator": "Exists"})))
        .is_empty());
        assert!(errors(|s| s["tolerations"][0]["tolerationSeconds"] = json!(10)).is_empty());
        assert!(errors(|s| s["activeDeadlineSeconds"] = json!(60)).is_empty());
        // Semantic equality: 1000m is 1, an empty list is an absent one.
        assert!(errors(|s| {
            s["containers"][0]["resources"]["requests"]["cpu"] = json!("1000m");
            s["volumes"] = json!([]);
        })
        .is_empty());
    }

    #[test]
    fn everything_else_is_fixed() {
        for (what, change) in [
            (
                "spec.nodeSelector",
                Box::new(|s: &mut Value| s["nodeSelector"] = json!({"a": "b"}))
                    as Box<dyn Fn(&mut Value)>,
            ),
            (
                "spec.containers[0].env",
                Box::new(|s: &mut Value| {
                    s["containers"][0]["env"] = json!([{"name": "A", "value": "1"}])
                }),
            ),
            (
                "spec.containers[0].resources.requests.cpu",
                Box::new(|s: &mut Value| {
                    s["containers"][0]["resources"]["requests"]["cpu"] = json!("25")
                }),
            ),
            (
                "spec.nodeName",
                Box::new(|s: &mut Value| s["nodeName"] = json!("node-2")),
            ),
        ] {
            let errs = errors(change);
            assert_eq!(errs.len(), 1, "{what}: {errs:?}");
            assert!(
                errs[0].starts_with("spec pod updates may not change fields other than"),
                "{errs:?}"
            );
            assert!(errs[0].contains(what), "{what}: {errs:?}");
        }
    }

    #[test]
    fn existing_tolerations_stay_and_deadlines_only_fall() {
        let errs = errors(|s| s["tolerations"] = json!([]));
        assert!(errs[0].starts_with("spec.tolerations existing toleration can not be modified except its tolerationSeconds"), "{errs:?}");
        let old = pod(json!({"activeDeadlineSeconds": 30}));
        let raised = validate(&old, &pod(json!({"activeDeadlineSeconds": 60})));
        assert_eq!(
            raised[0].detail,
            "60: must be less than or equal to previous value"
        );
        let removed = validate(&old, &pod(json!({})));
        assert!(removed[0]
            .detail
            .contains("must not update from a positive integer to nil value"));
    }
}
