//! Vectors from upstream's `replica_calculator_test.go` (one container per pod: its metric
//! values are upstream's per container).

use super::*;
use k8s_openapi::api::core::v1::{
    Container, PodCondition, PodSpec, PodStatus, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KQuantity;

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-01-01T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

/// Started long ago (upstream's "cool" CPU pods), ready since its start unless `ready` is false.
fn pod(i: usize, request: &str, ready: bool) -> Pod {
    pod_started(i, request, ready, now() - TimeDelta::minutes(10))
}

fn pod_started(i: usize, request: &str, ready: bool, start: DateTime<Utc>) -> Pod {
    Pod {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(format!("test-pod-{i}")),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                resources: Some(ResourceRequirements {
                    requests: Some(
                        [
                            ("cpu".to_string(), KQuantity(request.into())),
                            ("memory".to_string(), KQuantity(request.into())),
                        ]
                        .into(),
                    ),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: Some(PodStatus {
            phase: Some("Running".into()),
            start_time: Some(crate::model::to_time(start)),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: if ready { "True" } else { "False" }.into(),
                last_transition_time: Some(crate::model::to_time(start)),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    }
}

fn levels(values: &[i64]) -> PodMetrics {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            (
                format!("test-pod-{i}"),
                PodMetric {
                    value: *v,
                    timestamp: now(),
                    window: TimeDelta::seconds(60),
                },
            )
        })
        .collect()
}

fn calc(
    current: i32,
    target: Target,
    resource: &str,
    pods: &[Pod],
    metrics: &[i64],
) -> Result<Proposal, String> {
    let refs: Vec<&Pod> = pods.iter().collect();
    Calculator::default().resource_replicas(
        current,
        target,
        resource,
        &refs,
        levels(metrics),
        now(),
    )
}

fn ready_pods(n: usize) -> Vec<Pod> {
    (0..n).map(|i| pod(i, "1.0", true)).collect()
}

#[test]
fn scale_up_on_utilization_above_target() {
    let p = calc(
        3,
        Target::Utilization(30),
        "cpu",
        &ready_pods(3),
        &[300, 500, 700],
    )
    .unwrap();
    assert_eq!(
        p,
        Proposal {
            replicas: 5,
            utilization: Some(50),
            average: 500
        }
    );
}

#[test]
fn scale_down_on_utilization_below_target() {
    let p = calc(
        5,
        Target::Utilization(50),
        "cpu",
        &ready_pods(5),
        &[100, 300, 500, 250, 250],
    )
    .unwrap();
    assert_eq!((p.replicas, p.utilization, p.average), (3, Some(28), 280));
}

#[test]
fn a_change_within_tolerance_keeps_the_replicas() {
    let p = calc(
        3,
        Target::Utilization(100),
        "cpu",
        &ready_pods(3),
        &[1010, 1030, 1020],
    )
    .unwrap();
    assert_eq!((p.replicas, p.utilization), (3, Some(102)));
}

#[test]
fn unready_pods_count_as_idle_on_a_scale_up() {
    let pods = vec![
        pod(0, "1.0", false),
        pod(1, "1.0", true),
        pod(2, "1.0", true),
    ];
    let p = calc(3, Target::Utilization(30), "cpu", &pods, &[300, 500, 700]).unwrap();
    assert_eq!((p.replicas, p.utilization, p.average), (4, Some(60), 600));
}

#[test]
fn a_pod_in_its_cpu_initialization_sampled_too_early_is_unready() {
    // Upstream's "hot CPU" pod: started just now, ready, but sampled within the window.
    let mut hot = pod_started(0, "1.0", true, now() - TimeDelta::seconds(30));
    if let Some(s) = hot.status.as_mut() {
        s.conditions.as_mut().unwrap()[0].last_transition_time = Some(crate::model::to_time(now()));
    }
    let pods = vec![hot, pod(1, "1.0", true), pod(2, "1.0", true)];
    let p = calc(3, Target::Utilization(50), "cpu", &pods, &[2000, 100, 2000]).unwrap();
    // 2100/2000 measured is 105%: ratio 2.1; with the hot pod at 0: 2100/3000 = 70%.
    assert_eq!((p.replicas, p.utilization), (5, Some(105)));
}

#[test]
fn missing_metrics_count_as_idle_on_a_scale_up() {
    let pods = vec![
        pod(0, "1.0", false),
        pod(1, "1.0", true),
        pod(2, "1.0", true),
    ];
    let p = calc(3, Target::Utilization(50), "cpu", &pods, &[100, 2000]).unwrap();
    assert_eq!((p.replicas, p.utilization, p.average), (4, Some(200), 2000));
}

#[test]
fn missing_metrics_count_as_at_their_request_on_a_scale_down() {
    let pods = vec![
        pod(0, "1.0", false),
        pod(1, "1.0", true),
        pod(2, "1.0", true),
        pod(3, "1.0", true),
    ];
    let p = calc(4, Target::Utilization(50), "cpu", &pods, &[100, 100, 100]).unwrap();
    assert_eq!((p.replicas, p.utilization, p.average), (3, Some(10), 100));
}

#[test]
fn missing_metrics_that_would_reverse_the_direction_keep_the_replicas() {
    // Measured 95% of a 100% target says scale down a little; the two unmeasured pods at their
    // request make it 97%: within tolerance.
    let p = calc(
        4,
        Target::Utilization(100),
        "cpu",
        &ready_pods(4),
        &[900, 1000],
    )
    .unwrap();
    assert_eq!(p.replicas, 4);
}

#[test]
fn deleted_and_failed_pods_are_left_out() {
    let mut pods = ready_pods(3);
    pods[2].metadata.deletion_timestamp = Some(crate::model::to_time(now()));
    let p = calc(2, Target::Utilization(50), "cpu", &pods, &[500, 500, 5000]).unwrap();
    assert_eq!((p.replicas, p.utilization), (2, Some(50)));
}

#[test]
fn an_average_value_target_needs_no_requests() {
    let p = calc(
        3,
        Target::AverageValue(30_000),
        "memory",
        &ready_pods(3),
        &[20_000, 10_000, 30_000],
    )
    .unwrap();
    assert_eq!((p.replicas, p.utilization, p.average), (2, None, 20_000));
}

#[test]
fn memory_samples_of_unready_pods_still_count() {
    let pods = vec![pod(0, "1.0", false), pod(1, "1.0", true)];
    let p = calc(2, Target::Utilization(50), "memory", &pods, &[1000, 1000]).unwrap();
    assert_eq!((p.replicas, p.utilization), (4, Some(100)));
}

#[test]
fn no_metrics_is_an_error_in_upstreams_words() {
    assert_eq!(
        calc(1, Target::Utilization(50), "cpu", &ready_pods(1), &[]).unwrap_err(),
        "unable to get metrics for resource cpu: no metrics returned from resource metrics API"
    );
}

#[test]
fn a_container_without_a_request_is_an_error() {
    let mut pods = ready_pods(1);
    pods[0].spec.as_mut().unwrap().containers[0].resources = None;
    assert_eq!(
        calc(1, Target::Utilization(50), "cpu", &pods, &[100]).unwrap_err(),
        "missing request for cpu in container c of Pod test-pod-0"
    );
}

#[test]
fn only_unready_pods_measured_is_an_error() {
    let pods = vec![pod(0, "1.0", false)];
    assert_eq!(
        calc(1, Target::Utilization(50), "cpu", &pods, &[100]).unwrap_err(),
        "did not receive metrics for targeted pods (pods might be unready)"
    );
}
