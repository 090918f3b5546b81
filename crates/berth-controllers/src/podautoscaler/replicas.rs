//! The replica calculator (upstream's `replica_calculator.go`): how many replicas bring a
//! resource metric to its target, from the pods' requests and their usage as `metrics.k8s.io`
//! reports it. Pods being deleted or failed are left out; pending pods, and for CPU pods not
//! yet ready or sampled too soon after becoming ready, count as using nothing when scaling up
//! and are otherwise left out; pods without a sample count as using nothing on a scale-up and
//! their request (or the target) on a scale-down, so that a gap in the metrics never moves the
//! scale further than the pods that were measured justify.

use crate::model::to_chrono;
use chrono::{DateTime, TimeDelta, Utc};
use k8s_openapi::api::core::v1::Pod;
use std::collections::{BTreeMap, BTreeSet};

/// One pod's usage of one resource, in milli-units, and when it was sampled over which window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodMetric {
    pub value: i64,
    pub timestamp: DateTime<Utc>,
    pub window: TimeDelta,
}

/// Usage samples by pod name.
pub type PodMetrics = BTreeMap<String, PodMetric>;

/// What a resource metric aims at: a percentage of the pods' requests, or an average amount
/// per pod (milli-units).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Utilization(i32),
    AverageValue(i64),
}

/// The replica count a metric asks for, and what it measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proposal {
    pub replicas: i32,
    /// The measured percentage of the requests (utilization targets only).
    pub utilization: Option<i32>,
    /// The measured average per pod, in milli-units.
    pub average: i64,
}

/// The calculator's settings (kube-controller-manager's `--horizontal-pod-autoscaler-*`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calculator {
    /// `--horizontal-pod-autoscaler-tolerance`: a usage ratio this close to 1 changes nothing.
    pub tolerance: f64,
    /// `--horizontal-pod-autoscaler-cpu-initialization-period`: how long after a pod starts
    /// its CPU samples are trusted only once taken a whole window after it became ready.
    pub cpu_initialization_period: TimeDelta,
    /// `--horizontal-pod-autoscaler-initial-readiness-delay`: after the initialization
    /// period, a pod not ready that turned unready this soon after it started has never been
    /// ready, and its CPU samples are left out.
    pub initial_readiness_delay: TimeDelta,
}

impl Default for Calculator {
    fn default() -> Calculator {
        Calculator {
            tolerance: 0.1,
            cpu_initialization_period: TimeDelta::minutes(5),
            initial_readiness_delay: TimeDelta::seconds(30),
        }
    }
}

/// The pods of a calculation, grouped as upstream's `groupPods` groups them.
#[derive(Debug, Default, PartialEq, Eq)]
struct Groups {
    ready: usize,
    unready: BTreeSet<String>,
    missing: BTreeSet<String>,
    ignored: BTreeSet<String>,
}

impl Calculator {
    /// The replicas `target` asks for on `resource` (`cpu`, `memory`), given the pods the
    /// target's selector selects and their samples; `Err` in upstream's words when nothing
    /// can be computed.
    pub fn resource_replicas(
        &self,
        current: i32,
        target: Target,
        resource: &str,
        pods: &[&Pod],
        mut metrics: PodMetrics,
        now: DateTime<Utc>,
    ) -> Result<Proposal, String> {
        if metrics.is_empty() {
            return Err(format!(
                "unable to get metrics for resource {resource}: no metrics returned from resource metrics API"
            ));
        }
        if pods.is_empty() {
            return Err("no pods returned by selector while calculating replica count".into());
        }
        let groups = self.group(pods, &metrics, resource, now);
        metrics.retain(|p, _| !groups.ignored.contains(p) && !groups.unready.contains(p));
        if metrics.is_empty() {
            return Err("did not receive metrics for targeted pods (pods might be unready)".into());
        }
        let requests = match target {
            Target::Utilization(_) => Some(requests(pods, resource)?),
            Target::AverageValue(_) => None,
        };
        let ratio = |m: &PodMetrics| match (target, &requests) {
            (Target::Utilization(t), Some(req)) => utilization_ratio(m, req, t),
            (Target::AverageValue(t), _) => Ok(average_ratio(m, t)),
            _ => Err("missing requests".to_string()),
        };
        let (usage_ratio, utilization, average) = ratio(&metrics)?;
        let proposal = |replicas| Proposal {
            replicas,
            utilization,
            average,
        };
        let scale_up_with_unready = !groups.unready.is_empty() && usage_ratio > 1.0;
        if !scale_up_with_unready && groups.missing.is_empty() {
            if (1.0 - usage_ratio).abs() <= self.tolerance {
                return Ok(proposal(current));
            }
            return Ok(proposal(ceil(usage_ratio * groups.ready as f64)));
        }
        if !groups.missing.is_empty() {
            for pod in &groups.missing {
                // A scale-down counts a pod not measured as at its target, a scale-up as idle.
                let value = if usage_ratio < 1.0 {
                    match (target, &requests) {
                        (Target::AverageValue(t), _) => t,
                        (_, Some(req)) => req.get(pod).copied().unwrap_or(0),
                        _ => 0,
                    }
                } else {
                    0
                };
                metrics.insert(pod.clone(), zero_at(value, now));
            }
        }
        if scale_up_with_unready {
            for pod in &groups.unready {
                metrics.insert(pod.clone(), zero_at(0, now));
            }
        }
        let (new_ratio, _, _) = ratio(&metrics)?;
        if (1.0 - new_ratio).abs() <= self.tolerance
            || (usage_ratio < 1.0 && new_ratio > 1.0)
            || (usage_ratio > 1.0 && new_ratio < 1.0)
        {
            // Too small a change, or the pods not measured turned the direction around.
            return Ok(proposal(current));
        }
        let replicas = ceil(new_ratio * metrics.len() as f64);
        if (new_ratio < 1.0 && replicas > current) || (new_ratio > 1.0 && replicas < current) {
            return Ok(proposal(current));
        }
        Ok(proposal(replicas))
    }

    /// Sorts the pods: ignored (deleted, failed), unready (pending; for CPU, not ready or
    /// sampled too early), missing (no sample), or ready.
    fn group(
        &self,
        pods: &[&Pod],
        metrics: &PodMetrics,
        resource: &str,
        now: DateTime<Utc>,
    ) -> Groups {
        let mut g = Groups::default();
        for pod in pods {
            let name = pod.metadata.name.clone().unwrap_or_default();
            let status = pod.status.as_ref();
            let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or("");
            if pod.metadata.deletion_timestamp.is_some() || phase == "Failed" {
                g.ignored.insert(name);
                continue;
            }
            if phase == "Pending" {
                g.unready.insert(name);
                continue;
            }
            let Some(metric) = metrics.get(&name) else {
                g.missing.insert(name);
                continue;
            };
            if resource == "cpu" && self.cpu_unready(pod, metric, now) {
                g.unready.insert(name);
                continue;
            }
            g.ready += 1;
        }
        g
    }

    /// Whether a pod's CPU sample is left out: the pod is not ready, or within its
    /// initialization period was sampled less than a window after it became ready, or after
    /// it has never been ready.
    fn cpu_unready(&self, pod: &Pod, metric: &PodMetric, now: DateTime<Utc>) -> bool {
        let status = pod.status.as_ref();
        let ready = status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"));
        let start = status.and_then(|s| s.start_time.as_ref()).map(to_chrono);
        let (Some(ready), Some(start)) = (ready, start) else {
            return true;
        };
        let not_ready = ready.status == "False";
        let transition = ready.last_transition_time.as_ref().map(to_chrono);
        if start + self.cpu_initialization_period > now {
            not_ready || transition.is_some_and(|t| metric.timestamp < t + metric.window)
        } else {
            not_ready && transition.is_some_and(|t| start + self.initial_readiness_delay > t)
        }
    }
}

fn zero_at(value: i64, now: DateTime<Utc>) -> PodMetric {
    PodMetric {
        value,
        timestamp: now,
        window: TimeDelta::zero(),
    }
}

fn ceil(x: f64) -> i32 {
    let c = x.ceil();
    if c >= i32::MAX as f64 {
        i32::MAX
    } else if c <= 0.0 {
        0
    } else {
        c as i32
    }
}

/// Each pod's request of `resource` (milli-units), the sum over its containers; every
/// container must request it.
fn requests(pods: &[&Pod], resource: &str) -> Result<BTreeMap<String, i64>, String> {
    let mut out = BTreeMap::new();
    for pod in pods {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let mut sum: i64 = 0;
        for c in pod.spec.iter().flat_map(|s| s.containers.iter()) {
            let request = c
                .resources
                .as_ref()
                .and_then(|r| r.requests.as_ref())
                .and_then(|r| r.get(resource))
                .and_then(|q| berth_core::quantity::Quantity::parse(&q.0).ok());
            let Some(request) = request else {
                return Err(format!(
                    "missing request for {resource} in container {} of Pod {name}",
                    c.name
                ));
            };
            sum = sum.saturating_add(request.milli_value());
        }
        out.insert(name, sum);
    }
    Ok(out)
}

/// Usage over requests against a utilization target: (ratio, utilization %, average).
fn utilization_ratio(
    metrics: &PodMetrics,
    requests: &BTreeMap<String, i64>,
    target: i32,
) -> Result<(f64, Option<i32>, i64), String> {
    let (mut used, mut requested, mut counted) = (0i64, 0i64, 0i64);
    for (pod, m) in metrics {
        if let Some(r) = requests.get(pod) {
            used = used.saturating_add(m.value);
            requested = requested.saturating_add(*r);
            counted += 1;
        }
    }
    if requested == 0 {
        return Err("no metrics returned matched known pods".into());
    }
    let utilization = (used as i128 * 100 / requested as i128).clamp(0, i32::MAX as i128) as i32;
    let ratio = utilization as f64 / target.max(1) as f64;
    Ok((ratio, Some(utilization), used / counted))
}

/// The average per pod against an average-value target: (ratio, none, average).
fn average_ratio(metrics: &PodMetrics, target: i64) -> (f64, Option<i32>, i64) {
    let total: i64 = metrics
        .values()
        .fold(0i64, |a, m| a.saturating_add(m.value));
    let average = total / (metrics.len().max(1) as i64);
    (average as f64 / target.max(1) as f64, None, average)
}

#[cfg(test)]
mod tests;
