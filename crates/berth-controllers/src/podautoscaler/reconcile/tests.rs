use super::*;
use k8s_openapi::api::core::v1::{
    Container, PodCondition, PodSpec, PodStatus, ResourceRequirements,
};

fn t(secs: i64) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-01-01T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
        + TimeDelta::seconds(secs)
}

fn hpa(extra: serde_json::Value) -> HorizontalPodAutoscaler {
    let mut h = serde_json::json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default", "uid": "u1", "generation": 1},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "minReplicas": 2, "maxReplicas": 5,
                 "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                     "target": {"type": "Utilization", "averageUtilization": 50}}}]}
    });
    if let (Some(spec), Some(extra)) = (h["spec"].as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            spec.insert(k.clone(), v.clone());
        }
    }
    serde_json::from_value(h).unwrap()
}

fn pod(i: usize) -> Pod {
    Pod {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(format!("web-{i}")),
            labels: Some([("app".to_string(), "web".to_string())].into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                resources: Some(ResourceRequirements {
                    requests: Some([("cpu".to_string(), KQuantity("100m".into()))].into()),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: Some(PodStatus {
            phase: Some("Running".into()),
            start_time: Some(crate::model::to_time(t(-3600))),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: "True".into(),
                last_transition_time: Some(crate::model::to_time(t(-3600))),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    }
}

fn usage(cpu_milli: &[i64]) -> BTreeMap<String, PodUsage> {
    cpu_milli
        .iter()
        .enumerate()
        .map(|(i, m)| {
            (
                format!("web-{i}"),
                PodUsage {
                    timestamp: t(0),
                    window: TimeDelta::seconds(10),
                    containers: vec![[("cpu".to_string(), *m)].into()],
                },
            )
        })
        .collect()
}

fn scale(replicas: i32) -> Result<ScaleView, String> {
    Ok(ScaleView {
        replicas,
        selector: Some("app=web".into()),
    })
}

fn run(
    h: &HorizontalPodAutoscaler,
    memory: &mut Memory,
    replicas: i32,
    cpu: &[i64],
    at: i64,
) -> Plan {
    let pods: Vec<Pod> = (0..replicas as usize).map(pod).collect();
    let refs: Vec<&Pod> = pods.iter().collect();
    let u = usage(cpu);
    let inputs = Inputs {
        hpa: h,
        scale: scale(replicas),
        pods: &refs,
        usage: Ok(&u),
    };
    reconcile(&Settings::default(), memory, &inputs, t(at))
}

fn condition(p: &Plan, type_: &str) -> (String, String, String) {
    let c = p
        .status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_)
        .unwrap();
    (
        c.status.clone(),
        c.reason.clone().unwrap_or_default(),
        c.message.clone().unwrap_or_default(),
    )
}

#[test]
fn high_cpu_scales_up_to_max_with_upstreams_event() {
    // With `spec.behavior` (default scale-up: 4 pods or 100% per 15 s, so 2 may become 6).
    let h = hpa(serde_json::json!({"behavior": {"scaleDown": {"stabilizationWindowSeconds": 0}}}));
    let plan = run(&h, &mut Memory::default(), 2, &[200, 200], 0);
    let rescale = plan.rescale.clone().unwrap();
    assert_eq!((rescale.from, rescale.to), (2, 5));
    let plan = plan.rescaled(&mut Memory::default(), t(0));
    assert_eq!(
        plan.events,
        vec![(
            "Normal",
            "SuccessfulRescale",
            "New size: 5; reason: cpu resource utilization (percentage of request) above target"
                .to_string()
        )]
    );
    assert_eq!(plan.status.desired_replicas, 5);
    assert_eq!(plan.status.current_replicas, Some(2));
    let m = &plan.status.current_metrics.as_ref().unwrap()[0];
    let current = &m.resource.as_ref().unwrap().current;
    assert_eq!(current.average_utilization, Some(200));
    assert_eq!(current.average_value, Some(KQuantity("200m".into())));
    assert_eq!(
        condition(&plan, "AbleToScale"),
        (
            "True".into(),
            "SucceededRescale".into(),
            "the HPA controller was able to update the target scale to 5".into()
        )
    );
    assert_eq!(
        condition(&plan, "ScalingLimited"),
        (
            "True".into(),
            "TooManyReplicas".into(),
            "the desired replica count is more than the maximum replica count".into()
        )
    );
    assert_eq!(
        condition(&plan, "ScalingActive").1,
        "ValidMetricFound".to_string()
    );
}

#[test]
fn without_behavior_low_cpu_waits_five_minutes_to_scale_down() {
    let h = hpa(serde_json::json!({}));
    let mut m = Memory::default();
    let plan = run(&h, &mut m, 5, &[10, 10, 10, 10, 10], 0);
    assert_eq!(plan.rescale, None);
    assert_eq!(condition(&plan, "AbleToScale").1, "ScaleDownStabilized");
    let plan = run(&h, &mut m, 5, &[10, 10, 10, 10, 10], 301);
    assert_eq!(
        plan.rescale.map(|r| (r.to, r.reason)),
        Some((2, "All metrics below target".into()))
    );
}

#[test]
fn a_zero_scale_down_window_scales_down_at_once() {
    let h = hpa(serde_json::json!({"behavior": {"scaleDown": {"stabilizationWindowSeconds": 0}}}));
    let plan = run(&h, &mut Memory::default(), 5, &[10, 10, 10, 10, 10], 0);
    assert_eq!(plan.rescale.map(|r| r.to), Some(2));
}

#[test]
fn missing_metrics_stop_the_pass_with_upstreams_conditions() {
    let h = hpa(serde_json::json!({}));
    let plan = run(&h, &mut Memory::default(), 2, &[], 0);
    assert_eq!(plan.rescale, None);
    assert_eq!(
        condition(&plan, "ScalingActive"),
        (
            "False".into(),
            "FailedGetResourceMetric".into(),
            "the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned from resource metrics API".into()
        )
    );
    assert!(plan.events.contains(&(
        "Warning",
        "FailedComputeMetricsReplicas",
        "invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value: failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned from resource metrics API".into()
    )));
}

#[test]
fn a_target_that_cannot_be_read_is_reported() {
    let h = hpa(serde_json::json!({}));
    let inputs = Inputs {
        hpa: &h,
        scale: Err("deployments.apps \"web\" not found".into()),
        pods: &[],
        usage: Err("not read".into()),
    };
    let plan = reconcile(&Settings::default(), &mut Memory::default(), &inputs, t(0));
    assert_eq!(
        condition(&plan, "AbleToScale"),
        (
            "False".into(),
            "FailedGetScale".into(),
            "the HPA controller was unable to get the target's current scale: deployments.apps \"web\" not found".into()
        )
    );
}

#[test]
fn replicas_outside_the_bounds_are_brought_within_them() {
    let h = hpa(serde_json::json!({}));
    let plan = run(&h, &mut Memory::default(), 7, &[], 0);
    assert_eq!(
        plan.rescale.map(|r| (r.to, r.reason)),
        Some((
            5,
            "Current number of replicas above Spec.MaxReplicas".into()
        ))
    );
    let plan = run(&h, &mut Memory::default(), 1, &[], 0);
    assert_eq!(plan.rescale.map(|r| r.to), Some(2));
}

#[test]
fn a_target_scaled_to_zero_disables_scaling() {
    let h = hpa(serde_json::json!({}));
    let plan = run(&h, &mut Memory::default(), 0, &[], 0);
    assert_eq!(plan.rescale, None);
    assert_eq!(condition(&plan, "ScalingActive").1, "ScalingDisabled");
}

#[test]
fn without_behavior_a_scale_up_at_most_doubles_and_at_least_to_four() {
    let h = hpa(serde_json::json!({}));
    let plan = run(&h, &mut Memory::default(), 2, &[200, 200], 0);
    assert_eq!(plan.rescale.as_ref().map(|r| r.to), Some(4));
    assert_eq!(condition(&plan, "ScalingLimited").1, "ScaleUpLimit");
}

#[test]
fn a_failed_rescale_keeps_the_desired_replicas_and_says_why() {
    let h = hpa(serde_json::json!({}));
    let plan = run(&h, &mut Memory::default(), 2, &[200, 200], 0).rescale_failed("forbidden", t(0));
    assert_eq!(plan.status.desired_replicas, 0);
    assert_eq!(condition(&plan, "AbleToScale").1, "FailedUpdateScale");
    assert_eq!(plan.events[0].1, "FailedRescale");
}

#[test]
fn a_condition_keeps_its_transition_time_while_its_status_holds() {
    let h = hpa(serde_json::json!({}));
    let plan = run(&h, &mut Memory::default(), 3, &[50, 50, 50], 0);
    let mut h2 = h.clone();
    h2.status = Some(plan.status.clone());
    let later = run(&h2, &mut Memory::default(), 3, &[50, 50, 50], 100);
    let at = |p: &Plan| {
        p.status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == "ScalingActive")
            .unwrap()
            .last_transition_time
            .clone()
    };
    assert_eq!(at(&plan), at(&later));
}

#[test]
fn an_average_value_target_scales_on_the_average_per_pod() {
    let h = hpa(
        serde_json::json!({"metrics": [{"type": "Resource", "resource": {"name": "cpu",
        "target": {"type": "AverageValue", "averageValue": "100m"}}}],
        "behavior": {"scaleUp": {"stabilizationWindowSeconds": 0}}}),
    );
    let plan = run(&h, &mut Memory::default(), 2, &[300, 300], 0);
    assert_eq!(
        plan.rescale.map(|r| (r.to, r.reason)),
        Some((5, "cpu resource above target".into()))
    );
}
