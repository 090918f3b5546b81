//! HorizontalPodAutoscalers (`autoscaling/v2`, and `autoscaling/v1` through the view of
//! `crate::hpa_view`): upstream's `SetDefaults_HorizontalPodAutoscaler` (one replica at
//! least; v2 without metrics targets 80% CPU; a given `behavior` completed with upstream's
//! scale-up and scale-down rules) and `ValidateHorizontalPodAutoscaler`'s main rules.

use super::{causes, defaults::default_at, Strategy};
use crate::error::{ApiResult, Cause};
use berth_api::registry::ResourceType;
use berth_core::validation::{self as v, FieldError};
use serde_json::{json, Value};

/// Upstream's `DefaultCPUUtilization`: the target of an autoscaler that names no metric.
const DEFAULT_CPU_UTILIZATION: i64 = 80;

/// Upstream's scale-down stabilisation window when a `behavior` leaves it out (5 minutes).
const SCALE_DOWN_STABILIZATION_SECONDS: i64 = 300;

pub struct HorizontalPodAutoscaler;

impl Strategy for HorizontalPodAutoscaler {
    fn prepare_for_create(&self, hpa: &mut Value) {
        if let Some(o) = hpa.as_object_mut() {
            o.remove("status");
        }
        default_hpa(hpa);
    }

    fn prepare_for_update(&self, _old: &Value, new: &mut Value) -> ApiResult<()> {
        default_hpa(new);
        Ok(())
    }

    fn validate(&self, rt: &ResourceType, hpa: &Value, _old: Option<&Value>) -> Vec<Cause> {
        let mut errors = v::validate_generic(hpa, rt.namespaced);
        errors.extend(validate_spec(&hpa["spec"]));
        causes(errors)
    }
}

fn default_hpa(hpa: &mut Value) {
    let spec = &mut hpa["spec"];
    if !spec.is_object() {
        return;
    }
    default_at(spec, "minReplicas", json!(1));
    // v1 objects (no `metrics` field, perhaps a CPU percentage) are defaulted as v2 ones
    // once stored; a v2 object without metrics targets CPU.
    let v1 = spec.get("targetCPUUtilizationPercentage").is_some()
        || hpa.get("apiVersion").and_then(Value::as_str) == Some("autoscaling/v1");
    let spec = &mut hpa["spec"];
    if !v1
        && spec
            .get("metrics")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty)
    {
        spec["metrics"] = json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}]);
    }
    if let Some(behavior) = spec.get_mut("behavior").filter(|b| b.is_object()) {
        default_at(behavior, "scaleUp", json!({}));
        default_at(behavior, "scaleDown", json!({}));
        let up = &mut behavior["scaleUp"];
        default_at(up, "stabilizationWindowSeconds", json!(0));
        default_at(up, "selectPolicy", json!("Max"));
        default_at(
            up,
            "policies",
            json!([{"type": "Pods", "value": 4, "periodSeconds": 15},
                   {"type": "Percent", "value": 100, "periodSeconds": 15}]),
        );
        let down = &mut behavior["scaleDown"];
        default_at(
            down,
            "stabilizationWindowSeconds",
            json!(SCALE_DOWN_STABILIZATION_SECONDS),
        );
        default_at(down, "selectPolicy", json!("Max"));
        default_at(
            down,
            "policies",
            json!([{"type": "Percent", "value": 100, "periodSeconds": 15}]),
        );
    }
}

fn validate_spec(spec: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let min = spec["minReplicas"].as_i64().unwrap_or(1);
    let max = spec["maxReplicas"].as_i64().unwrap_or(0);
    if min < 1 {
        errors.push(FieldError::invalid_rendered(
            "spec.minReplicas",
            &min.to_string(),
            "must be greater than or equal to 1",
        ));
    }
    if max < 1 {
        errors.push(FieldError::invalid_rendered(
            "spec.maxReplicas",
            &max.to_string(),
            "must be greater than or equal to 1",
        ));
    } else if min > max {
        errors.push(FieldError::invalid_rendered(
            "spec.maxReplicas",
            &max.to_string(),
            "must be greater than or equal to `minReplicas`",
        ));
    }
    for field in ["kind", "name"] {
        if spec["scaleTargetRef"][field]
            .as_str()
            .unwrap_or("")
            .is_empty()
        {
            errors.push(FieldError::required(
                format!("spec.scaleTargetRef.{field}"),
                "",
            ));
        }
    }
    if let Some(p) = spec["targetCPUUtilizationPercentage"].as_i64() {
        if p < 1 {
            errors.push(FieldError::invalid_rendered(
                "spec.targetCPUUtilizationPercentage",
                &p.to_string(),
                "must be greater than or equal to 1",
            ));
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_api::registry::find;

    #[test]
    fn a_v2_autoscaler_without_metrics_targets_80_percent_cpu_from_one_replica() {
        let mut h = json!({"apiVersion": "autoscaling/v2", "spec": {"maxReplicas": 3}});
        HorizontalPodAutoscaler.prepare_for_create(&mut h);
        assert_eq!(h["spec"]["minReplicas"], 1);
        assert_eq!(
            h["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
            80
        );
        assert!(h["spec"].get("behavior").is_none());
    }

    #[test]
    fn a_given_behavior_is_completed_with_upstream_rules() {
        let mut h = json!({"spec": {"maxReplicas": 3, "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}});
        HorizontalPodAutoscaler.prepare_for_create(&mut h);
        let b = &h["spec"]["behavior"];
        assert_eq!(b["scaleDown"]["stabilizationWindowSeconds"], 60);
        assert_eq!(
            b["scaleUp"]["policies"][0],
            json!({"type": "Pods", "value": 4, "periodSeconds": 15})
        );
        assert_eq!(b["scaleUp"]["selectPolicy"], "Max");
    }

    #[test]
    fn replicas_bounds_and_target_are_validated() {
        let rt = find("autoscaling", "v2", "horizontalpodautoscalers").unwrap();
        let h = json!({"metadata": {"name": "h", "namespace": "d"},
            "spec": {"minReplicas": 5, "maxReplicas": 2, "scaleTargetRef": {"kind": "Deployment"}}});
        let m: Vec<String> = HorizontalPodAutoscaler
            .validate(rt, &h, None)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        assert_eq!(
            m,
            vec![
                "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`",
                "spec.scaleTargetRef.name: Required value",
            ]
        );
    }
}
