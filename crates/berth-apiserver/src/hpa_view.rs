//! `autoscaling/v1` HorizontalPodAutoscalers are a view of the stored `autoscaling/v2` ones, as
//! upstream converts between them: v1's `targetCPUUtilizationPercentage` is v2's CPU
//! `Utilization` resource metric, its `currentCPUUtilizationPercentage` the CPU current metric.
//! So an autoscaler written through either version is read, listed and watched through both.
//!
//! Upstream also keeps v2's other metrics in annotations of the v1 form; berth does not: an
//! update through v1 keeps only the CPU target.

use berth_api::registry::ResourceType;
use serde_json::{json, Map, Value};

/// Whether `rt` is the `autoscaling/v1` view.
pub fn is_view(rt: &ResourceType) -> bool {
    rt.group == "autoscaling" && rt.version == "v1" && rt.plural == "horizontalpodautoscalers"
}

/// A stored (v2) autoscaler as `autoscaling/v1` shows it.
pub fn to_view(hpa: &mut Value) {
    let Some(obj) = hpa.as_object_mut() else {
        return;
    };
    if let Some(Value::Object(spec)) = obj.get_mut("spec") {
        let target = spec
            .remove("metrics")
            .as_ref()
            .and_then(|m| cpu_metric(m, "target"))
            .and_then(|t| t.get("averageUtilization").cloned());
        spec.remove("behavior");
        if let Some(t) = target {
            spec.insert("targetCPUUtilizationPercentage".into(), t);
        }
    }
    if let Some(Value::Object(status)) = obj.get_mut("status") {
        let current = status
            .remove("currentMetrics")
            .as_ref()
            .and_then(|m| cpu_metric(m, "current"))
            .and_then(|c| c.get("averageUtilization").cloned());
        status.remove("conditions");
        if let Some(c) = current {
            status.insert("currentCPUUtilizationPercentage".into(), c);
        }
    }
}

/// An `autoscaling/v1` autoscaler as it is stored (v2).
pub fn to_stored(hpa: &Value) -> Value {
    let mut stored = hpa.clone();
    let Some(obj) = stored.as_object_mut() else {
        return stored;
    };
    if let Some(Value::Object(spec)) = obj.get_mut("spec") {
        if let Some(t) = spec.remove("targetCPUUtilizationPercentage") {
            spec.insert(
                "metrics".into(),
                json!([{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": t}}}]),
            );
        }
    }
    if let Some(Value::Object(status)) = obj.get_mut("status") {
        if let Some(c) = status.remove("currentCPUUtilizationPercentage") {
            status.insert(
                "currentMetrics".into(),
                json!([{"type": "Resource", "resource": {"name": "cpu",
                    "current": {"averageUtilization": c}}}]),
            );
        }
    }
    stored
}

/// The `target` (or `current`) of the CPU resource metric in a list of v2 metrics.
fn cpu_metric<'a>(metrics: &'a Value, field: &str) -> Option<&'a Map<String, Value>> {
    metrics.as_array()?.iter().find_map(|m| {
        let resource = m.get("resource")?;
        (m.get("type")? == "Resource" && resource.get("name")? == "cpu")
            .then(|| resource.get(field)?.as_object())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v1_cpu_target_is_stored_as_a_v2_utilization_metric_and_back() {
        let v1 = json!({"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "x"},
            "minReplicas": 2, "maxReplicas": 5, "targetCPUUtilizationPercentage": 50},
            "status": {"currentReplicas": 2, "currentCPUUtilizationPercentage": 10}});
        let stored = to_stored(&v1);
        assert_eq!(
            stored["spec"]["metrics"][0]["resource"]["target"],
            json!({"type": "Utilization", "averageUtilization": 50})
        );
        assert!(stored["spec"]
            .get("targetCPUUtilizationPercentage")
            .is_none());
        let mut back = stored;
        to_view(&mut back);
        assert_eq!(back, v1);
    }

    #[test]
    fn a_v2_object_without_a_cpu_metric_has_no_v1_target() {
        let mut v2 = json!({"spec": {"maxReplicas": 3, "metrics": [{"type": "Resource",
            "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}}}],
            "behavior": {}}});
        to_view(&mut v2);
        assert_eq!(v2, json!({"spec": {"maxReplicas": 3}}));
    }
}
