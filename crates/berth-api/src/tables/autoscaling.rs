//! Rows of HorizontalPodAutoscalers, in either served version (`autoscaling/v2` metrics or
//! `autoscaling/v1`'s CPU target).

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{age, arr_at, col, int_at, str_at, Column, AGE, NAME};

pub(super) const HPA_COLUMNS: &[Column] = &[
    NAME,
    col("Reference", "string", "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be collected, as well as to actually change the replica count."),
    col("Targets", "string", "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used)."),
    col("MinPods", "string", "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down. It defaults to 1 pod."),
    col("MaxPods", "integer", "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up. It cannot be less that minReplicas."),
    col("Replicas", "integer", "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler."),
    AGE,
];

/// How many metrics the Targets cell shows before `+ N more...` (upstream's printer).
const SHOWN_METRICS: usize = 2;

pub(super) fn hpa_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let reference = format!(
        "{}/{}",
        str_at(obj, "/spec/scaleTargetRef/kind"),
        str_at(obj, "/spec/scaleTargetRef/name")
    );
    let min_pods = match obj.pointer("/spec/minReplicas").and_then(Value::as_i64) {
        Some(n) => n.to_string(),
        None => "<unset>".to_string(),
    };
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(reference),
        json!(targets(obj)),
        json!(min_pods),
        json!(int_at(obj, "/spec/maxReplicas")),
        json!(int_at(obj, "/status/currentReplicas")),
        json!(age(obj, now)),
    ]
}

/// Upstream's `formatHPAMetrics` (v2), or the CPU utilisation of a v1 object.
fn targets(obj: &Value) -> String {
    if let Some(target) = obj
        .pointer("/spec/targetCPUUtilizationPercentage")
        .and_then(Value::as_i64)
    {
        let current = obj
            .pointer("/status/currentCPUUtilizationPercentage")
            .and_then(Value::as_i64)
            .map_or("<unknown>".to_string(), |c| format!("{c}%"));
        return format!("cpu: {current}/{target}%");
    }
    let specs = arr_at(obj, "/spec/metrics");
    if specs.is_empty() {
        return "<none>".to_string();
    }
    let statuses = arr_at(obj, "/status/currentMetrics");
    let shown: Vec<String> = specs
        .iter()
        .take(SHOWN_METRICS)
        .enumerate()
        .map(|(i, spec)| metric(spec, statuses.get(i)))
        .collect();
    let mut out = shown.join(", ");
    if specs.len() > SHOWN_METRICS {
        out.push_str(&format!(" + {} more...", specs.len() - SHOWN_METRICS));
    }
    out
}

fn metric(spec: &Value, status: Option<&Value>) -> String {
    let unknown = || "<unknown>".to_string();
    let value_or_average = |source: &str, current: &str| -> String {
        let target = spec
            .pointer(&format!("/{source}/target"))
            .unwrap_or(&Value::Null);
        let shown = |field: &str| {
            status
                .and_then(|s| s.pointer(&format!("/{current}/current/{field}")))
                .map(value_text)
                .unwrap_or_else(unknown)
        };
        if let Some(v) = target.get("value") {
            format!("{}/{}", shown("value"), value_text(v))
        } else {
            let avg = target
                .get("averageValue")
                .map(value_text)
                .unwrap_or_default();
            format!("{}/{} (avg)", shown("averageValue"), avg)
        }
    };
    match str_at(spec, "/type") {
        "Resource" | "ContainerResource" => {
            let source = if str_at(spec, "/type") == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let name = str_at(spec, &format!("/{source}/name"));
            let target = spec
                .pointer(&format!("/{source}/target"))
                .unwrap_or(&Value::Null);
            let current = status.and_then(|s| s.pointer(&format!("/{source}/current")));
            if let Some(avg) = target.get("averageValue") {
                let now = current
                    .and_then(|c| c.get("averageValue"))
                    .map(value_text)
                    .unwrap_or_else(unknown);
                format!("{name}: {now}/{}", value_text(avg))
            } else {
                let now = current
                    .and_then(|c| c.get("averageUtilization"))
                    .and_then(Value::as_i64)
                    .map_or_else(unknown, |u| format!("{u}%"));
                let goal = target
                    .get("averageUtilization")
                    .and_then(Value::as_i64)
                    .map_or("<auto>".to_string(), |u| format!("{u}%"));
                format!("{name}: {now}/{goal}")
            }
        }
        "Pods" => {
            let avg = spec
                .pointer("/pods/target/averageValue")
                .map(value_text)
                .unwrap_or_default();
            let now = status
                .and_then(|s| s.pointer("/pods/current/averageValue"))
                .map(value_text)
                .unwrap_or_else(unknown);
            format!("{now}/{avg}")
        }
        "Object" => value_or_average("object", "object"),
        "External" => value_or_average("external", "external"),
        _ => "<unknown type>".to_string(),
    }
}

/// A quantity as JSON holds it (`"500m"`, or a bare number).
fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::now;
    use super::*;

    fn hpa(spec: Value, status: Value) -> Value {
        json!({"metadata": {"name": "h"}, "spec": spec, "status": status})
    }

    #[test]
    fn a_v2_cpu_target_without_status_is_unknown_of_the_target() {
        let h = hpa(
            json!({"scaleTargetRef": {"kind": "Deployment", "name": "x"}, "minReplicas": 2, "maxReplicas": 5,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 50}}}]}),
            json!({}),
        );
        let cells = hpa_cells(&h, now());
        assert_eq!(
            cells[1..6],
            [
                json!("Deployment/x"),
                json!("cpu: <unknown>/50%"),
                json!("2"),
                json!(5),
                json!(0)
            ]
        );
    }

    #[test]
    fn a_v1_object_prints_its_cpu_utilisation() {
        let h = hpa(
            json!({"scaleTargetRef": {"kind": "Deployment", "name": "x"}, "maxReplicas": 5,
                "targetCPUUtilizationPercentage": 50}),
            json!({"currentReplicas": 2, "currentCPUUtilizationPercentage": 20}),
        );
        let cells = hpa_cells(&h, now());
        assert_eq!(cells[2], "cpu: 20%/50%");
        assert_eq!(cells[3], "<unset>");
    }

    #[test]
    fn more_than_two_metrics_are_summarised() {
        let m = json!({"type": "Resource", "resource": {"name": "memory",
            "target": {"type": "AverageValue", "averageValue": "100Mi"}}});
        let h = hpa(json!({"metrics": [m, m, m]}), json!({}));
        assert_eq!(
            targets(&h),
            "memory: <unknown>/100Mi, memory: <unknown>/100Mi + 1 more..."
        );
        assert_eq!(targets(&hpa(json!({}), json!({}))), "<none>");
    }
}
