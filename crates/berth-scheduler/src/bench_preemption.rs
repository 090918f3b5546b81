//! The `preemption` workload: scheduler_perf's PreemptionBasic in process. Nodes of 4 CPU are
//! filled with four low-priority pods of 900m each; then high-priority pods of 3,000m arrive,
//! each unschedulable until three low-priority pods on a node are preempted.
//!
//! Timed per high-priority pod: compile + the failed scheduling decision (with its FitError) +
//! the preemption decision (candidates, victims, node choice); the preemption step alone is
//! also reported, to show where the time goes. Not timed: carrying it out (the victims are
//! removed from the cache and the preemptor assumed on its node, standing in for the API's
//! victim deletion and the retry). A harness, not part of the engine: it reads the clock.

use crate::model::Pod;
use crate::preemption::{PreemptionInput, PreemptionOutcome};
use crate::{ClusterCache, Decision, Scheduler};
use berth_core::clock::Stopwatch;
use serde::Serialize;
use serde_json::json;
use std::collections::HashSet;

/// The result of a run.
#[derive(Debug, Clone, Serialize)]
pub struct PreemptionBenchReport {
    /// Nodes.
    pub nodes: usize,
    /// Low-priority pods placed first.
    pub low_pods: usize,
    /// High-priority pods measured.
    pub high_pods: usize,
    /// Preemption decisions per second (victim deletion excluded).
    pub decisions_per_second: f64,
    /// Median per-pod latency, ms.
    pub p50_ms: f64,
    /// 99th percentile per-pod latency, ms.
    pub p99_ms: f64,
    /// The preemption step alone (`Scheduler::preempt`), decisions per second.
    pub preempt_only_per_second: f64,
    /// The preemption step alone, median ms.
    pub preempt_only_p50_ms: f64,
    /// Victims chosen in total.
    pub victims: usize,
    /// Every preemptor found a distinct node with exactly three victims.
    pub valid: bool,
    /// Why not valid.
    pub invalid_reason: Option<String>,
}

fn pod(name: &str, priority: i32, cpu: &str, node: &str) -> Pod {
    serde_json::from_value(
        json!({"metadata": {"name": name, "namespace": "sched-0", "uid": name},
        "spec": {"priority": priority, "nodeName": node,
        "containers": [{"name": "c", "image": "pause",
            "resources": {"requests": {"cpu": cpu, "memory": "100Mi"}}}]}}),
    )
    .expect("pod template")
}

/// Runs PreemptionBasic with `nodes` nodes and `high` preemptors (at most one per node).
pub fn run(nodes: usize, high: usize, seed: u64) -> Result<PreemptionBenchReport, String> {
    let high = high.min(nodes);
    let mut cache = ClusterCache::new();
    for i in 0..nodes {
        let name = format!("scheduler-perf-{i:05}");
        cache
            .upsert_node_json(
                json!({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"allocatable": {"pods": "110", "cpu": "4", "memory": "32Gi"},
                "conditions": [{"type": "Ready", "status": "True"}]}})
                .to_string()
                .as_bytes(),
            )
            .map_err(|e| e.to_string())?;
    }
    for i in 0..nodes * 4 {
        let node = format!("scheduler-perf-{:05}", i % nodes);
        cache.upsert_pod(&pod(&format!("low-{i}"), 0, "900m", &node));
    }
    let mut scheduler = Scheduler::builder()
        .seed(seed)
        .build()
        .map_err(|e| e.to_string())?;
    let pdbs = Vec::new();
    let mut lat = Vec::with_capacity(high);
    let mut lat_preempt = Vec::with_capacity(high);
    let mut used = HashSet::new();
    let (mut victims_total, mut invalid) = (0, None);
    for i in 0..high {
        let p = pod(&format!("high-{i}"), 1000, "3000m", "");
        let t = Stopwatch::now();
        let info = cache.compile_pod(&p);
        let outcome = match scheduler.schedule(&cache, &info) {
            Decision::Unschedulable(fit) => {
                let tp = Stopwatch::now();
                let input = PreemptionInput {
                    nominated: &[],
                    pdbs: &pdbs,
                };
                let outcome = scheduler.preempt(&mut cache, &info, &fit, input);
                lat_preempt.push(tp.elapsed().as_secs_f64());
                outcome
            }
            other => return Err(format!("high-{i}: expected no fit, got {other:?}")),
        };
        lat.push(t.elapsed().as_secs_f64());
        let PreemptionOutcome::Preempt(pre) = outcome else {
            invalid.get_or_insert(format!("high-{i}: {outcome:?}"));
            continue;
        };
        if pre.victims.len() != 3 || !used.insert(pre.node.clone()) {
            invalid.get_or_insert(format!(
                "high-{i}: {} victims on {}",
                pre.victims.len(),
                pre.node
            ));
        }
        victims_total += pre.victims.len();
        for v in &pre.victims {
            cache.remove_pod(v);
        }
        cache.assume(info, &pre.node).map_err(|e| e.to_string())?;
    }
    let per_second = |lat: &[f64]| {
        let total: f64 = lat.iter().sum();
        if total > 0.0 {
            lat.len() as f64 / total
        } else {
            0.0
        }
    };
    let pct = |lat: &mut Vec<f64>, q: f64| {
        lat.sort_by(|a, b| a.total_cmp(b));
        lat.get(((lat.len() as f64 - 1.0) * q).round() as usize)
            .map_or(0.0, |s| s * 1000.0)
    };
    let (decisions_per_second, preempt_only_per_second) =
        (per_second(&lat), per_second(&lat_preempt));
    Ok(PreemptionBenchReport {
        nodes,
        low_pods: nodes * 4,
        high_pods: high,
        decisions_per_second,
        p50_ms: pct(&mut lat, 0.5),
        p99_ms: pct(&mut lat, 0.99),
        preempt_only_per_second,
        preempt_only_p50_ms: pct(&mut lat_preempt, 0.5),
        victims: victims_total,
        valid: invalid.is_none(),
        invalid_reason: invalid,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn preemption_basic_small_is_valid() {
        let r = super::run(20, 20, 1).unwrap();
        assert!(r.valid, "{:?}", r.invalid_reason);
        assert_eq!(r.victims, 60);
    }
}
