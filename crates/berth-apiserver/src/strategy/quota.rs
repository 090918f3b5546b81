//! ResourceQuotas and LimitRanges (core/v1): upstream's `ValidateResourceQuota` (quantities,
//! resource names, scopes) and `SetDefaults_LimitRangeItem` with `ValidateLimitRange`
//! (`min <= defaultRequest <= default <= max`). Enforcing them is admission's
//! (`crate::admission::resource_quota`, `crate::admission::limit_ranger`).

use super::{causes, Strategy};
use crate::error::{ApiResult, Cause};
use berth_api::registry::ResourceType;
use berth_core::quantity::{self, Quantity};
use berth_core::validation::{self as v, FieldError};
use serde_json::{json, Value};

/// The quota scopes upstream knows (`ResourceQuotaScope`).
pub const SCOPES: &[&str] = &[
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
    "VolumeAttributesClass",
];

pub struct ResourceQuota;

impl Strategy for ResourceQuota {
    fn prepare_for_create(&self, quota: &mut Value) {
        if let Some(o) = quota.as_object_mut() {
            o.remove("status");
        }
    }

    fn validate(&self, rt: &ResourceType, quota: &Value, _old: Option<&Value>) -> Vec<Cause> {
        let mut errors = v::validate_generic(quota, rt.namespaced);
        errors.extend(quantities(quota.pointer("/spec/hard"), "spec.hard"));
        errors.extend(quantities(quota.pointer("/status/hard"), "status.hard"));
        errors.extend(quantities(quota.pointer("/status/used"), "status.used"));
        for (i, scope) in quota
            .pointer("/spec/scopes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let s = scope.as_str().unwrap_or("");
            if !SCOPES.contains(&s) {
                errors.push(FieldError::not_supported(
                    format!("spec.scopes[{i}]"),
                    s,
                    SCOPES,
                ));
            }
        }
        causes(errors)
    }
}

/// Every value of a `ResourceList` must be a non-negative quantity.
fn quantities(list: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (name, value) in list.and_then(Value::as_object).into_iter().flatten() {
        let field = format!("{path}[{name}]");
        match quantity::from_json(value) {
            Ok(q) if q < Quantity::default() => errors.push(FieldError::invalid(
                field,
                &q.to_string(),
                "must be greater than or equal to 0",
            )),
            Ok(_) => {}
            Err(_) => errors.push(FieldError::invalid(
                field,
                value.as_str().unwrap_or(""),
                "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
            )),
        }
    }
    errors
}

pub struct LimitRange;

impl Strategy for LimitRange {
    fn prepare_for_create(&self, lr: &mut Value) {
        default_limit_range(lr);
    }

    fn prepare_for_update(&self, _old: &Value, new: &mut Value) -> ApiResult<()> {
        default_limit_range(new);
        Ok(())
    }

    fn validate(&self, rt: &ResourceType, lr: &Value, _old: Option<&Value>) -> Vec<Cause> {
        let mut errors = v::validate_generic(lr, rt.namespaced);
        for (i, item) in limits(lr).iter().enumerate() {
            errors.extend(validate_item(item, &format!("spec.limits[{i}]")));
        }
        causes(errors)
    }
}

/// The limit types upstream knows.
const LIMIT_TYPES: &[&str] = &["Pod", "Container", "PersistentVolumeClaim"];

fn limits(lr: &Value) -> &[Value] {
    lr.pointer("/spec/limits")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// `SetDefaults_LimitRangeItem`: for containers, `default` falls back to `max`, and
/// `defaultRequest` to `default`, then to `min`.
fn default_limit_range(lr: &mut Value) {
    let Some(items) = lr.pointer_mut("/spec/limits").and_then(Value::as_array_mut) else {
        return;
    };
    for item in items.iter_mut().filter(|i| i["type"] == "Container") {
        for field in ["default", "defaultRequest"] {
            if !item[field].is_object() {
                item[field] = json!({});
            }
        }
        for (from, to) in [
            ("max", "default"),
            ("default", "defaultRequest"),
            ("min", "defaultRequest"),
        ] {
            let source = item[from].as_object().cloned().unwrap_or_default();
            for (name, value) in source {
                if item[to].get(&name).is_none() {
                    item[to][name] = value;
                }
            }
        }
    }
}

/// Upstream's per-item rules: a known type, quantities, and for each resource
/// `min <= defaultRequest <= default <= max`, with messages as upstream words them.
fn validate_item(item: &Value, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let ty = item["type"].as_str().unwrap_or("");
    if !LIMIT_TYPES.contains(&ty) {
        errors.push(FieldError::not_supported(
            format!("{path}.type"),
            ty,
            LIMIT_TYPES,
        ));
    }
    let list = |field: &str| -> Vec<(String, Quantity)> {
        item[field]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| quantity::from_json(v).ok().map(|q| (k.clone(), q)))
            .collect()
    };
    for field in [
        "max",
        "min",
        "default",
        "defaultRequest",
        "maxLimitRequestRatio",
    ] {
        errors.extend(quantities(item.get(field), &format!("{path}.{field}")));
    }
    if ty == "Pod" {
        for field in ["default", "defaultRequest"] {
            if item[field].as_object().is_some_and(|m| !m.is_empty()) {
                errors.push(FieldError::forbidden(
                    format!("{path}.{field}"),
                    "may not be specified when `type` is 'Pod'",
                ));
            }
        }
    }
    let find =
        |l: &[(String, Quantity)], name: &str| l.iter().find(|(n, _)| n == name).map(|(_, q)| *q);
    let (max, min, default, request) = (
        list("max"),
        list("min"),
        list("default"),
        list("defaultRequest"),
    );
    let mut names: Vec<String> = [&max, &min, &default, &request]
        .iter()
        .flat_map(|l| l.iter().map(|(n, _)| n.clone()))
        .collect();
    names.sort();
    names.dedup();
    for name in names {
        let (mx, mn, df, rq) = (
            find(&max, &name),
            find(&min, &name),
            find(&default, &name),
            find(&request, &name),
        );
        let pair = |field: &str, value: &Quantity, detail: String| {
            FieldError::invalid(
                format!("{path}.{field}[{name}]"),
                &value.to_string(),
                detail,
            )
        };
        if let (Some(mn), Some(mx)) = (&mn, &mx) {
            if mn > mx {
                errors.push(pair(
                    "min",
                    mn,
                    format!("min value {mn} is greater than max value {mx}"),
                ));
            }
        }
        if let (Some(rq), Some(mn)) = (&rq, &mn) {
            if mn > rq {
                errors.push(pair(
                    "defaultRequest",
                    rq,
                    format!("min value {mn} is greater than default request value {rq}"),
                ));
            }
        }
        if let (Some(rq), Some(mx)) = (&rq, &mx) {
            if rq > mx {
                errors.push(pair(
                    "defaultRequest",
                    rq,
                    format!("default request value {rq} is greater than max value {mx}"),
                ));
            }
        }
        if let (Some(rq), Some(df)) = (&rq, &df) {
            if rq > df {
                errors.push(pair(
                    "defaultRequest",
                    rq,
                    format!("default request value {rq} is greater than default limit value {df}"),
                ));
            }
        }
        if let (Some(df), Some(mn)) = (&df, &mn) {
            if mn > df {
                errors.push(pair(
                    "default",
                    df,
                    format!("min value {mn} is greater than default value {df}"),
                ));
            }
        }
        if let (Some(df), Some(mx)) = (&df, &mx) {
            if df > mx {
                errors.push(pair(
                    "default",
                    df,
                    format!("default value {df} is greater than max value {mx}"),
                ));
            }
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_api::registry::find;

    fn lr(limits: Value) -> Value {
        json!({"metadata": {"name": "l", "namespace": "d"}, "spec": {"limits": limits}})
    }

    fn messages(strategy: &dyn Strategy, plural: &str, obj: &Value) -> Vec<String> {
        let rt = find("", "v1", plural).unwrap();
        strategy
            .validate(rt, obj, None)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn a_container_limit_defaults_from_max_and_its_request_from_the_default() {
        let mut l =
            lr(json!([{"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "1Mi"}}]));
        LimitRange.prepare_for_create(&mut l);
        let item = &l["spec"]["limits"][0];
        assert_eq!(item["default"], json!({"cpu": "2"}));
        assert_eq!(item["defaultRequest"], json!({"cpu": "2", "memory": "1Mi"}));
    }

    #[test]
    fn pod_limits_get_no_defaults() {
        let mut l = lr(json!([{"type": "Pod", "max": {"cpu": "2"}}]));
        LimitRange.prepare_for_create(&mut l);
        assert!(l["spec"]["limits"][0].get("default").is_none());
    }

    #[test]
    fn a_default_above_max_is_invalid() {
        let l = lr(
            json!([{"type": "Container", "max": {"cpu": "1"}, "default": {"cpu": "2"},
            "defaultRequest": {"cpu": "500m"}}]),
        );
        assert_eq!(
            messages(&LimitRange, "limitranges", &l),
            vec!["spec.limits[0].default[cpu]: Invalid value: \"2\": default value 2 is greater than max value 1"]
        );
    }

    #[test]
    fn an_unknown_limit_type_is_not_supported() {
        let l = lr(json!([{"type": "Node"}]));
        let m = messages(&LimitRange, "limitranges", &l);
        assert_eq!(m.len(), 1);
        assert!(
            m[0].starts_with("spec.limits[0].type: Unsupported value: \"Node\""),
            "{m:?}"
        );
    }

    #[test]
    fn a_quota_needs_valid_quantities_and_known_scopes() {
        let q = json!({"metadata": {"name": "q", "namespace": "d"},
            "spec": {"hard": {"pods": "x", "cpu": "-1"}, "scopes": ["Everything"]}});
        let m = messages(&ResourceQuota, "resourcequotas", &q);
        assert_eq!(m.len(), 3, "{m:?}");
        assert!(m.iter().any(|e| e.starts_with(
            "spec.hard[cpu]: Invalid value: \"-1\": must be greater than or equal to 0"
        )));
        assert!(m
            .iter()
            .any(|e| e.starts_with("spec.scopes[0]: Unsupported value: \"Everything\"")));
    }

    #[test]
    fn a_new_quota_has_no_status_until_its_controller_writes_one() {
        let mut q = json!({"spec": {"hard": {"pods": "1"}}, "status": {"used": {"pods": "0"}}});
        ResourceQuota.prepare_for_create(&mut q);
        assert!(q.get("status").is_none());
    }
}
