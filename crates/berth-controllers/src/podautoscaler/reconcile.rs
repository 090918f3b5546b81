//! One autoscaler's pass (upstream's `reconcileAutoscaler`): read the target's scale, compute
//! the replicas each metric asks for, take the largest, normalize it
//! ([`super::behavior`]), and say what to write: the new scale, the status (current metrics,
//! the `AbleToScale`, `ScalingActive` and `ScalingLimited` conditions) and the events, in
//! upstream's reasons and words.

use super::behavior::{behavior_rules, Ask, Memory, Rules};
use super::replicas::{Calculator, PodMetric, PodMetrics, Target};
use crate::model::to_time;
use berth_core::labels::Selector;
use berth_core::quantity::Quantity;
use chrono::{DateTime, TimeDelta, Utc};
use k8s_openapi::api::autoscaling::v2::{
    HorizontalPodAutoscaler, HorizontalPodAutoscalerCondition, HorizontalPodAutoscalerStatus,
    MetricSpec, MetricStatus, MetricValueStatus, ResourceMetricStatus,
};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KQuantity;
use std::collections::BTreeMap;

/// The controller's settings (kube-controller-manager's `--horizontal-pod-autoscaler-*`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    pub calculator: Calculator,
    /// `--horizontal-pod-autoscaler-downscale-stabilization`: the scale-down window of
    /// autoscalers without `spec.behavior` (5 minutes).
    pub downscale_stabilization: TimeDelta,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            calculator: Calculator::default(),
            downscale_stabilization: TimeDelta::minutes(5),
        }
    }
}

/// The target's `scale` subresource as read: `spec.replicas` and `status.selector`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScaleView {
    pub replicas: i32,
    pub selector: Option<String>,
}

/// One pod's `PodMetrics`: each container's usage by resource (milli-units).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodUsage {
    pub timestamp: DateTime<Utc>,
    pub window: TimeDelta,
    pub containers: Vec<BTreeMap<String, i64>>,
}

/// What one pass reads.
pub struct Inputs<'a> {
    pub hpa: &'a HorizontalPodAutoscaler,
    /// The target's scale, or why it could not be read.
    pub scale: Result<ScaleView, String>,
    /// The pods of the autoscaler's namespace.
    pub pods: &'a [&'a Pod],
    /// `metrics.k8s.io` pod metrics of the namespace by pod name, or why they could not be
    /// read.
    pub usage: Result<&'a BTreeMap<String, PodUsage>, String>,
}

/// An event to record on the autoscaler: (`Normal`/`Warning`, reason, message).
pub type Event = (&'static str, &'static str, String);

/// A rescale the pass decided on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rescale {
    pub from: i32,
    pub to: i32,
    pub reason: String,
}

/// What a pass decided. When [`Plan::rescale`] is set, the driver writes the scale and then
/// finishes the plan with [`Plan::rescaled`] or [`Plan::rescale_failed`].
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub rescale: Option<Rescale>,
    /// The status to write (as it is without the rescale until the plan is finished).
    pub status: HorizontalPodAutoscalerStatus,
    pub events: Vec<Event>,
    behavior: Option<(Rules, Rules)>,
}

impl Plan {
    /// The target's scale was written: the status says so, with an event, and a
    /// behavior's rate limits remember the change.
    pub fn rescaled(mut self, memory: &mut Memory, now: DateTime<Utc>) -> Plan {
        if let Some(r) = &self.rescale {
            set_condition(
                &mut self.status,
                "AbleToScale",
                "True",
                "SucceededRescale",
                format!(
                    "the HPA controller was able to update the target scale to {}",
                    r.to
                ),
                now,
            );
            self.events.push((
                "Normal",
                "SuccessfulRescale",
                format!("New size: {}; reason: {}", r.to, r.reason),
            ));
            self.status.desired_replicas = r.to;
            self.status.last_scale_time = Some(to_time(now));
            if let Some((up, down)) = &self.behavior {
                memory.store_scale_event((up, down), r.from, r.to, now);
            }
        }
        self
    }

    /// Writing the target's scale failed with `error`.
    pub fn rescale_failed(mut self, error: &str, now: DateTime<Utc>) -> Plan {
        if let Some(r) = &self.rescale {
            self.events.push((
                "Warning",
                "FailedRescale",
                format!("New size: {}; reason: {}; error: {error}", r.to, r.reason),
            ));
            set_condition(
                &mut self.status,
                "AbleToScale",
                "False",
                "FailedUpdateScale",
                format!("the HPA controller was unable to update the target scale: {error}"),
                now,
            );
        }
        self
    }
}

/// Sets the condition `type_`, keeping its transition time when its status is unchanged.
fn set_condition(
    status: &mut HorizontalPodAutoscalerStatus,
    type_: &str,
    value: &str,
    reason: &str,
    message: String,
    now: DateTime<Utc>,
) {
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    let i = match conditions.iter().position(|c| c.type_ == type_) {
        Some(i) => i,
        None => {
            conditions.push(HorizontalPodAutoscalerCondition {
                type_: type_.into(),
                ..Default::default()
            });
            conditions.len() - 1
        }
    };
    let c = &mut conditions[i];
    if c.status != value {
        c.last_transition_time = Some(to_time(now));
    }
    c.status = value.into();
    c.reason = Some(reason.into());
    c.message = Some(message);
}

/// The metrics an autoscaler without `spec.metrics` follows: 80% of its CPU requests.
fn default_metrics() -> Vec<MetricSpec> {
    serde_json::from_value(serde_json::json!([{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]))
    .unwrap_or_default()
}

/// A metric's failure: the `ScalingActive` condition's reason and the error.
struct MetricError {
    reason: &'static str,
    error: String,
    /// The resource of a `Resource` metric, once known.
    resource: String,
}

/// Runs one pass for `inputs.hpa`, remembering its recommendations in `memory`.
pub fn reconcile(
    settings: &Settings,
    memory: &mut Memory,
    inputs: &Inputs<'_>,
    now: DateTime<Utc>,
) -> Plan {
    let hpa = inputs.hpa;
    let spec = hpa.spec.as_ref().cloned().unwrap_or_default();
    let mut status = hpa.status.clone().unwrap_or_default();
    status.observed_generation = hpa.metadata.generation;
    let behavior = spec.behavior.as_ref().map(behavior_rules);
    let mut plan = Plan {
        rescale: None,
        status,
        events: Vec::new(),
        behavior: behavior.clone(),
    };
    let scale = match &inputs.scale {
        Ok(s) => s.clone(),
        Err(e) => {
            plan.events.push(("Warning", "FailedGetScale", e.clone()));
            set_condition(
                &mut plan.status,
                "AbleToScale",
                "False",
                "FailedGetScale",
                format!("the HPA controller was unable to get the target's current scale: {e}"),
                now,
            );
            return plan;
        }
    };
    set_condition(
        &mut plan.status,
        "AbleToScale",
        "True",
        "SucceededGetScale",
        "the HPA controller was able to get the target's current scale".into(),
        now,
    );
    let current = scale.replicas;
    memory.record_initial(current, now);
    let min = spec.min_replicas.unwrap_or(1);
    let max = spec.max_replicas;
    let mut desired = 0;
    let mut reason = String::new();
    let mut metric_statuses = plan.status.current_metrics.clone();
    let rescale;
    if current == 0 && min != 0 {
        set_condition(
            &mut plan.status,
            "ScalingActive",
            "False",
            "ScalingDisabled",
            "scaling is disabled since the replica count of the target is zero".into(),
            now,
        );
        rescale = false;
    } else if current > max {
        reason = "Current number of replicas above Spec.MaxReplicas".into();
        desired = max;
        rescale = true;
    } else if current < min {
        reason = "Current number of replicas below Spec.MinReplicas".into();
        desired = min;
        rescale = true;
    } else {
        let metrics = match spec.metrics.as_deref() {
            Some(m) if !m.is_empty() => m.to_vec(),
            _ => default_metrics(),
        };
        let computed = compute(settings, &mut plan, inputs, &scale, &metrics, now);
        metric_statuses = Some(computed.statuses);
        let Some((proposal, metric)) = computed.replicas else {
            plan.status.current_replicas = Some(current);
            plan.status.current_metrics = metric_statuses.filter(|m| !m.is_empty());
            return plan;
        };
        desired = proposal;
        if desired > current {
            reason = format!("{metric} above target");
        } else if desired < current {
            reason = "All metrics below target".into();
        }
        let ask = Ask {
            current,
            desired,
            min,
            max,
        };
        let n = match &behavior {
            Some((up, down)) => memory.normalize(ask, up, down, now),
            None => memory.normalize_legacy(ask, settings.downscale_stabilization, now),
        };
        set_condition(
            &mut plan.status,
            "AbleToScale",
            "True",
            n.able_to_scale.0,
            n.able_to_scale.1.into(),
            now,
        );
        set_condition(
            &mut plan.status,
            "ScalingLimited",
            if n.limited { "True" } else { "False" },
            n.scaling_limited.0,
            n.scaling_limited.1.into(),
            now,
        );
        desired = n.replicas;
        rescale = desired != current;
    }
    plan.status.current_replicas = Some(current);
    plan.status.current_metrics = metric_statuses.filter(|m| !m.is_empty());
    if rescale {
        plan.rescale = Some(Rescale {
            from: current,
            to: desired,
            reason,
        });
    } else {
        plan.status.desired_replicas = current;
    }
    plan
}

/// The replicas the metrics ask for and the metric that asked for the most, and each valid
/// metric's status.
struct Computed {
    replicas: Option<(i32, String)>,
    statuses: Vec<MetricStatus>,
}

/// Upstream's `computeReplicasForMetrics`: every metric proposes, the largest wins; an
/// invalid metric stops the pass when all are invalid or the valid ones would scale down.
fn compute(
    settings: &Settings,
    plan: &mut Plan,
    inputs: &Inputs<'_>,
    scale: &ScaleView,
    metrics: &[MetricSpec],
    now: DateTime<Utc>,
) -> Computed {
    let none = |statuses| Computed {
        replicas: None,
        statuses,
    };
    let selector = match scale.selector.as_deref().filter(|s| !s.is_empty()) {
        None => {
            plan.events
                .push(("Warning", "SelectorRequired", "selector is required".into()));
            set_condition(
                &mut plan.status,
                "ScalingActive",
                "False",
                "InvalidSelector",
                "the HPA target's scale is missing a selector".into(),
                now,
            );
            return none(Vec::new());
        }
        Some(s) => {
            match Selector::parse(s) {
                Ok(sel) => sel,
                Err(e) => {
                    let message = format!("couldn't convert selector into a corresponding internal selector object: {e}");
                    plan.events
                        .push(("Warning", "InvalidSelector", message.clone()));
                    set_condition(
                        &mut plan.status,
                        "ScalingActive",
                        "False",
                        "InvalidSelector",
                        message,
                        now,
                    );
                    return none(Vec::new());
                }
            }
        }
    };
    let pods: Vec<&Pod> = inputs
        .pods
        .iter()
        .copied()
        .filter(|p| {
            let labels = p.metadata.labels.as_ref();
            selector.matches_fn(|k| labels.and_then(|l| l.get(k)).map(String::as_str))
        })
        .collect();
    let current = scale.replicas;
    let mut best: Option<(i32, String)> = None;
    let mut statuses = Vec::new();
    let mut invalid: Vec<MetricError> = Vec::new();
    for spec in metrics {
        match resource_metric(settings, spec, inputs, &pods, current, now) {
            Ok((replicas, name, status)) => {
                statuses.push(status);
                if best.as_ref().is_none_or(|(r, _)| replicas > *r) {
                    best = Some((replicas, name));
                }
            }
            Err(e) => {
                plan.events.push(("Warning", e.reason, e.error.clone()));
                invalid.push(e);
            }
        }
    }
    let proposed = best.as_ref().map(|(r, _)| *r).unwrap_or(0);
    if let Some(first) = invalid.first() {
        if invalid.len() >= metrics.len() || proposed < current {
            set_condition(
                &mut plan.status,
                "ScalingActive",
                "False",
                first.reason,
                format!(
                    "the HPA was unable to compute the replica count: {}",
                    first.error
                ),
                now,
            );
            plan.events.push((
                "Warning",
                "FailedComputeMetricsReplicas",
                format!(
                    "invalid metrics ({} invalid out of {}), first error is: {}",
                    invalid.len(),
                    metrics.len(),
                    first_error(first)
                ),
            ));
            return none(statuses);
        }
    }
    let name = best.as_ref().map(|(_, n)| n.clone()).unwrap_or_default();
    set_condition(
        &mut plan.status,
        "ScalingActive",
        "True",
        "ValidMetricFound",
        format!("the HPA was able to successfully calculate a replica count from {name}"),
        now,
    );
    Computed {
        replicas: best,
        statuses,
    }
}

/// The outer words upstream wraps a resource metric's error in.
fn first_error(e: &MetricError) -> String {
    if e.reason == "FailedGetResourceMetric" {
        format!(
            "failed to get {} resource metric value: {}",
            e.resource, e.error
        )
    } else {
        e.error.clone()
    }
}

/// One `Resource` metric: (replicas, the metric's name in events, its status).
fn resource_metric(
    settings: &Settings,
    spec: &MetricSpec,
    inputs: &Inputs<'_>,
    pods: &[&Pod],
    current: i32,
    now: DateTime<Utc>,
) -> Result<(i32, String, MetricStatus), MetricError> {
    let name = spec
        .resource
        .as_ref()
        .map(|r| r.name.clone())
        .unwrap_or_default();
    let fail = |reason: &'static str, error: String| MetricError {
        reason,
        error,
        resource: name.clone(),
    };
    let source = match (spec.type_.as_str(), spec.resource.as_ref()) {
        ("Resource", Some(r)) => r,
        ("Resource", None) => {
            return Err(fail(
                "FailedGetResourceMetric",
                "invalid resource metric source: resource is not set".into(),
            ))
        }
        ("Pods" | "Object" | "External" | "ContainerResource", _) => {
            let reason = match spec.type_.as_str() {
                "Pods" => "FailedGetPodsMetric",
                "Object" => "FailedGetObjectMetric",
                "External" => "FailedGetExternalMetric",
                _ => "FailedGetContainerResourceMetric",
            };
            return Err(fail(
                reason,
                format!(
                    "berth does not serve the metrics of {:?} metric sources",
                    spec.type_
                ),
            ));
        }
        (other, _) => {
            return Err(fail(
                "InvalidMetricSourceType",
                format!("unknown metric source type {other:?}"),
            ))
        }
    };
    let resource = source.name.as_str();
    let target = if let Some(v) = &source.target.average_value {
        let q = Quantity::parse(&v.0).map_err(|e| {
            fail(
                "FailedGetResourceMetric",
                format!("invalid averageValue {:?}: {e}", v.0),
            )
        })?;
        Target::AverageValue(q.milli_value())
    } else if let Some(u) = source.target.average_utilization {
        Target::Utilization(u)
    } else {
        return Err(fail(
            "FailedGetResourceMetric",
            "invalid resource metric source: neither a utilization target nor a value target was set".into(),
        ));
    };
    let samples = match &inputs.usage {
        Ok(usage) => samples(usage, pods, resource),
        Err(e) => {
            return Err(fail(
                "FailedGetResourceMetric",
                format!("failed to get {resource} utilization: unable to get metrics for resource {resource}: {e}"),
            ))
        }
    };
    let proposal = settings
        .calculator
        .resource_replicas(current, target, resource, pods, samples, now)
        .map_err(|e| {
            let what = match target {
                Target::Utilization(_) => "utilization",
                Target::AverageValue(_) => "usage",
            };
            fail(
                "FailedGetResourceMetric",
                format!("failed to get {resource} {what}: {e}"),
            )
        })?;
    let average = Some(KQuantity(
        Quantity::from_milli(proposal.average).to_string(),
    ));
    let (name, current) = match target {
        Target::Utilization(_) => (
            format!("{resource} resource utilization (percentage of request)"),
            MetricValueStatus {
                average_utilization: proposal.utilization,
                average_value: average,
                value: None,
            },
        ),
        Target::AverageValue(_) => (
            format!("{resource} resource"),
            MetricValueStatus {
                average_value: average,
                ..Default::default()
            },
        ),
    };
    let status = MetricStatus {
        type_: "Resource".into(),
        resource: Some(ResourceMetricStatus {
            name: resource.into(),
            current,
        }),
        ..Default::default()
    };
    Ok((proposal.replicas, name, status))
}

/// The samples of `resource` of the selected pods; a pod with a container not reporting it has
/// none (upstream's metrics client).
fn samples(usage: &BTreeMap<String, PodUsage>, pods: &[&Pod], resource: &str) -> PodMetrics {
    let mut out = PodMetrics::new();
    for pod in pods {
        let Some(name) = pod.metadata.name.as_deref() else {
            continue;
        };
        let Some(u) = usage.get(name) else {
            continue;
        };
        let values: Option<Vec<i64>> = u
            .containers
            .iter()
            .map(|c| c.get(resource).copied())
            .collect();
        if let Some(values) = values.filter(|v| !v.is_empty()) {
            out.insert(
                name.to_string(),
                PodMetric {
                    value: values.iter().fold(0i64, |a, v| a.saturating_add(*v)),
                    timestamp: u.timestamp,
                    window: u.window,
                },
            );
        }
    }
    out
}

#[cfg(test)]
mod tests;
