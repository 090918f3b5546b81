//! Scheduler benchmarks: the `scheduler_perf` workloads of `shared/spec/performance-anchors.md`
//! §3, run in-process against the engine (schedule + assume per pod, as scheduler_perf's
//! scheduler does), followed by a validation of the final placement.
//!
//! This module is a harness, not part of the engine: it reads the monotonic clock to time pods.

use crate::model::{Node, Pod, Service};
use crate::policy::{Policy, PredicateConfig, PredicateKind, PriorityConfig, PriorityKind};
use crate::{ClusterCache, Decision, Scheduler};
use berth_core::clock::Stopwatch;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::HashMap;

/// What to run.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// Workload name (see [`WORKLOADS`]).
    pub workload: String,
    /// Number of nodes.
    pub nodes: usize,
    /// Number of measured pods.
    pub pods: usize,
    /// Pods scheduled before measuring (default per workload).
    pub init_pods: Option<usize>,
    /// `percentageOfNodesToScore` (100 = every node; 0 = adaptive).
    pub percentage_of_nodes_to_score: u32,
    /// Seed for tie-breaking.
    pub seed: u64,
}

/// The result of a run.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    /// Workload name.
    pub workload: String,
    /// Nodes.
    pub nodes: usize,
    /// Measured pods.
    pub pods: usize,
    /// Init pods scheduled before measuring.
    pub init_pods: usize,
    /// Measured pods scheduled per second (pods / total measured time).
    pub pods_per_second: f64,
    /// Median per-pod latency (compile + schedule + assume), ms.
    pub p50_ms: f64,
    /// 99th percentile per-pod latency, ms.
    pub p99_ms: f64,
    /// Measured pods that did not fit.
    pub unschedulable: usize,
    /// Final placement respects allocatable and required (anti-)affinity.
    pub valid: bool,
    /// Why the placement is invalid.
    pub invalid_reason: Option<String>,
}

/// Workloads `run` accepts.
pub const WORKLOADS: &[&str] = &[
    "basic",
    "pod-anti-affinity",
    "anti-affinity-groups",
    "pod-affinity",
    "preferred-pod-affinity",
    "preferred-pod-anti-affinity",
    "node-affinity",
    "topology-levels",
    "topology-spreading",
    "preferred-topology-spreading",
];

const HOST: &str = "kubernetes.io/hostname";
const ZONE: &str = "topology.kubernetes.io/zone";

fn default_init(workload: &str) -> usize {
    match workload {
        "basic" | "pod-anti-affinity" | "topology-spreading" | "preferred-topology-spreading" => {
            1000
        }
        "pod-affinity"
        | "preferred-pod-affinity"
        | "preferred-pod-anti-affinity"
        | "node-affinity" => 5000,
        _ => 0,
    }
}

fn node(workload: &str, i: usize) -> Node {
    let name = format!("scheduler-perf-{i:05}");
    let mut labels = json!({ HOST: name });
    match workload {
        "pod-affinity" | "node-affinity" => labels[ZONE] = json!("zone1"),
        // scheduler_perf's TopologySpreading: nodes labelled over three zones
        "topology-spreading" | "preferred-topology-spreading" => {
            labels[ZONE] = json!(["moon-1", "moon-2", "moon-3"][i % 3])
        }
        "topology-levels" => {
            let z = i % 6;
            labels["region"] = json!(format!("r{}", z / 3));
            labels["zone"] = json!(format!("z{z}"));
            labels["rack"] = json!(format!("z{z}-rack{}", (i / 6) % 10));
        }
        _ => {}
    }
    let v = json!({"metadata": {"name": name, "labels": labels},
        "status": {"capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"},
                   "allocatable": {"pods": "110", "cpu": "4", "memory": "32Gi"},
                   "conditions": [{"type": "Ready", "status": "True"}]}});
    serde_json::from_value(v).expect("node template")
}

fn selector(k: &str, v: &str) -> Value {
    json!({"matchLabels": {k: v}})
}

/// The pod template of a workload; `ns` is `sched-0` for init pods and `sched-1` for measured ones.
fn pod(workload: &str, i: usize, ns: &str) -> Pod {
    let both = json!(["sched-1", "sched-0"]);
    let (labels, affinity) = match workload {
        "pod-anti-affinity" => (
            json!({"color": "green"}),
            json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": selector("color", "green"), "topologyKey": HOST, "namespaces": both}]}}),
        ),
        "anti-affinity-groups" => {
            let g = format!("g-{}", i / 10);
            (
                json!({"group": g}),
                json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": selector("group", &g), "topologyKey": HOST}]}}),
            )
        }
        "pod-affinity" => (
            json!({"color": "blue"}),
            json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": selector("color", "blue"), "topologyKey": ZONE, "namespaces": both}]}}),
        ),
        "preferred-pod-affinity" => (
            json!({"color": "red"}),
            json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1,
                "podAffinityTerm": {"labelSelector": selector("color", "red"), "topologyKey": HOST, "namespaces": both}}]}}),
        ),
        "preferred-pod-anti-affinity" => (
            json!({"color": "yellow"}),
            json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1,
                "podAffinityTerm": {"labelSelector": selector("color", "yellow"), "topologyKey": HOST, "namespaces": both}}]}}),
        ),
        "node-affinity" => (
            json!({}),
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone1", "zone2"]}]}]}}}),
        ),
        "topology-levels" => (json!({"app": "web"}), Value::Null),
        _ => (json!({}), Value::Null),
    };
    // scheduler_perf's pod-with-topology-spreading / pod-with-preferred-topology-spreading
    // (measured pods only; init pods are plain)
    let spread = match workload {
        "topology-spreading" | "preferred-topology-spreading" if ns == "sched-1" => {
            let when = if workload == "topology-spreading" {
                "DoNotSchedule"
            } else {
                "ScheduleAnyway"
            };
            json!([{"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": when,
                    "labelSelector": selector("color", "blue")}])
        }
        _ => json!([]),
    };
    let labels = if spread.as_array().is_some_and(|a| !a.is_empty()) {
        json!({"color": "blue"})
    } else {
        labels
    };
    let res = json!({"cpu": "100m", "memory": "500Mi"});
    let v = json!({"metadata": {"name": format!("pod-{i:06}"), "namespace": ns, "uid": format!("{ns}-{i}"), "labels": labels},
        "spec": {"affinity": affinity, "topologySpreadConstraints": spread, "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
            "ports": [{"containerPort": 80}], "resources": {"requests": res, "limits": res}}]}});
    serde_json::from_value(v).expect("pod template")
}

fn policy(workload: &str) -> Policy {
    let mut p = Policy::default_policy();
    if workload == "topology-levels" {
        p.predicates.push(PredicateConfig {
            name: "RegionZoneAffinity".into(),
            kind: PredicateKind::ServiceAffinity {
                labels: vec!["region".into(), "zone".into()],
            },
        });
        p.priorities.push(PriorityConfig {
            name: "RackSpread".into(),
            weight: 1,
            kind: PriorityKind::ServiceAntiAffinity {
                label: "rack".into(),
            },
        });
    }
    p
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let ix = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[ix.min(sorted.len() - 1)]
}

/// Runs a workload.
pub fn run(cfg: &BenchConfig) -> Result<BenchReport, String> {
    run_tuned(cfg, Tuning::default())
}

/// Engine knobs for measurements.
#[derive(Debug, Clone, Copy)]
pub struct Tuning {
    /// Rayon node-count threshold (None = the engine default).
    pub parallel_threshold: Option<usize>,
    /// Reuse per-node results across pods (the engine default, true).
    pub reuse: bool,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            parallel_threshold: None,
            reuse: true,
        }
    }
}

/// Runs a workload with explicit engine knobs.
pub fn run_tuned(cfg: &BenchConfig, tuning: Tuning) -> Result<BenchReport, String> {
    run_with(cfg, tuning, None)
}

/// Runs a workload under a KubeSchedulerConfiguration profile (its plugins, 0..100 scores and
/// weights, plugin args) instead of the workload's Policy; `percentageOfNodesToScore` is still
/// `cfg`'s.
pub fn run_profile(
    cfg: &BenchConfig,
    profile: &crate::config::CompiledProfile,
) -> Result<BenchReport, String> {
    run_with(cfg, Tuning::default(), Some(profile))
}

fn run_with(
    cfg: &BenchConfig,
    tuning: Tuning,
    profile: Option<&crate::config::CompiledProfile>,
) -> Result<BenchReport, String> {
    let parallel_threshold = tuning.parallel_threshold;
    let w = cfg.workload.as_str();
    if !WORKLOADS.contains(&w) {
        return Err(format!(
            "unknown workload {w:?}; expected one of {}",
            WORKLOADS.join(", ")
        ));
    }
    if cfg.nodes == 0 {
        return Err("--nodes must be at least 1".into());
    }
    let init = cfg.init_pods.unwrap_or_else(|| default_init(w));
    let mut cache = ClusterCache::new();
    let nodes: Vec<Node> = (0..cfg.nodes).map(|i| node(w, i)).collect();
    for n in &nodes {
        cache.upsert_node(n);
    }
    if w == "topology-levels" {
        for ns in ["sched-0", "sched-1"] {
            let svc: Service = serde_json::from_value(json!({"metadata": {"name": "web", "namespace": ns}, "spec": {"selector": {"app": "web"}}}))
                .map_err(|e| e.to_string())?;
            cache.upsert_service(&svc);
        }
    }
    let plugin_args = profile.map(|p| p.plugin_args.clone()).unwrap_or_default();
    let sched = Scheduler::builder()
        .policy(profile.map_or_else(|| policy(w), |p| p.policy.clone()))
        .framework_profile(profile.is_some())
        .plugin_args(plugin_args.clone())
        .topology_spread_args(profile.map_or_else(
            crate::topology_spread::TopologySpreadArgs::none,
            crate::config::CompiledProfile::topology_spread_args,
        ))
        .seed(cfg.seed)
        .percentage_of_nodes_to_score(cfg.percentage_of_nodes_to_score)
        .reuse_across_pods(tuning.reuse);
    let mut sched = match parallel_threshold {
        Some(t) => sched.parallel_threshold(t),
        None => sched,
    }
    .build()
    .map_err(|e| e.to_string())?;
    let mut placed: Vec<(Pod, String)> = Vec::with_capacity(init + cfg.pods);
    let mut place =
        |cache: &mut ClusterCache, sched: &mut Scheduler, p: Pod| -> Result<bool, String> {
            let info = plugin_args.compile_pod(cache, &p);
            match sched.schedule(cache, &info) {
                Decision::Scheduled { node, .. } => {
                    cache.assume(info, &node).map_err(|e| e.to_string())?;
                    placed.push((p, node));
                    Ok(true)
                }
                Decision::Unschedulable(_) => Ok(false),
                Decision::Error(e) => Err(e),
            }
        };
    for i in 0..init {
        place(&mut cache, &mut sched, pod(w, i, "sched-0"))?;
    }
    let measured: Vec<Pod> = (0..cfg.pods).map(|i| pod(w, init + i, "sched-1")).collect();
    let mut lat = Vec::with_capacity(cfg.pods);
    let mut unschedulable = 0;
    let start = Stopwatch::now();
    for p in measured {
        let t = Stopwatch::now();
        if !place(&mut cache, &mut sched, p)? {
            unschedulable += 1;
        }
        lat.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let total = start.elapsed().as_secs_f64();
    lat.sort_by(|a, b| a.total_cmp(b));
    let invalid_reason = validate(&nodes, &placed);
    Ok(BenchReport {
        workload: w.to_string(),
        nodes: cfg.nodes,
        pods: cfg.pods,
        init_pods: init,
        pods_per_second: if total > 0.0 {
            cfg.pods as f64 / total
        } else {
            0.0
        },
        p50_ms: percentile(&lat, 0.5),
        p99_ms: percentile(&lat, 0.99),
        unschedulable,
        valid: invalid_reason.is_none(),
        invalid_reason,
    })
}

/// Checks allocatable and required (anti-)affinity on the final placement, independently of
/// the engine (plain strings and maps).
fn validate(nodes: &[Node], placed: &[(Pod, String)]) -> Option<String> {
    let by_name: HashMap<&str, &Node> = nodes
        .iter()
        .map(|n| (n.metadata.name.as_str(), n))
        .collect();
    let mut used: HashMap<&str, (i64, i64, i64)> = HashMap::new();
    // (namespace, label key, label value, topology key, topology value) -> pods
    let mut domain: HashMap<(String, String, String, String, String), usize> = HashMap::new();
    let topo_keys = [HOST, ZONE, "zone", "region", "rack"];
    for (p, n) in placed {
        let Some(node) = by_name.get(n.as_str()) else {
            return Some(format!("pod {} on unknown node {n}", p.metadata.name));
        };
        let e = used.entry(n.as_str()).or_default();
        e.0 += 100;
        e.1 += 500 * 1024 * 1024;
        e.2 += 1;
        for (k, v) in &p.metadata.labels {
            for tk in topo_keys {
                if let Some(tv) = node.metadata.labels.get(tk) {
                    *domain
                        .entry((
                            p.metadata.namespace.clone(),
                            k.clone(),
                            v.clone(),
                            tk.to_string(),
                            tv.clone(),
                        ))
                        .or_default() += 1;
                }
            }
        }
    }
    for (n, (cpu, mem, pods)) in &used {
        if *cpu > 4000 || *mem > 32 * 1024 * 1024 * 1024 || *pods > 110 {
            return Some(format!(
                "node {n} over allocatable: cpu {cpu}m, memory {mem}, pods {pods}"
            ));
        }
    }
    if let Some(reason) = spread_violation(nodes, placed) {
        return Some(reason);
    }
    for (p, n) in placed {
        let node = by_name[n.as_str()];
        let Some(aff) = &p.spec.affinity else {
            continue;
        };
        let count = |t: &crate::model::PodAffinityTerm| -> (usize, bool) {
            let Some(sel) = &t.label_selector else {
                return (0, false);
            };
            let Some((k, v)) = sel.match_labels.iter().next() else {
                return (0, false);
            };
            let Some(tv) = node.metadata.labels.get(&t.topology_key) else {
                return (0, false);
            };
            let nss: Vec<String> = if t.namespaces.is_empty() {
                vec![p.metadata.namespace.clone()]
            } else {
                t.namespaces.clone()
            };
            let c = nss
                .iter()
                .map(|ns| {
                    domain
                        .get(&(
                            ns.clone(),
                            k.clone(),
                            v.clone(),
                            t.topology_key.clone(),
                            tv.clone(),
                        ))
                        .copied()
                        .unwrap_or(0)
                })
                .sum();
            let selfmatch =
                nss.contains(&p.metadata.namespace) && p.metadata.labels.get(k) == Some(v);
            (c, selfmatch)
        };
        if let Some(anti) = &aff.pod_anti_affinity {
            for t in &anti.required_during_scheduling_ignored_during_execution {
                let (c, selfmatch) = count(t);
                if c > usize::from(selfmatch) {
                    return Some(format!(
                        "pod {}/{} on {n} violates its required anti-affinity",
                        p.metadata.namespace, p.metadata.name
                    ));
                }
            }
        }
        if let Some(a) = &aff.pod_affinity {
            for t in &a.required_during_scheduling_ignored_during_execution {
                if count(t).0 == 0 {
                    return Some(format!(
                        "pod {}/{} on {n} violates its required affinity",
                        p.metadata.namespace, p.metadata.name
                    ));
                }
            }
        }
    }
    None
}

/// The `DoNotSchedule` topology spread constraints of the placed pods hold at the end: over the
/// domains of every node, the matching pods differ by at most `maxSkew` (each placement kept
/// the skew within bounds, and the minimum never decreases).
fn spread_violation(nodes: &[Node], placed: &[(Pod, String)]) -> Option<String> {
    let zone_of: HashMap<&str, Option<&String>> = nodes
        .iter()
        .map(|n| (n.metadata.name.as_str(), n.metadata.labels.get(ZONE)))
        .collect();
    let (p, _) = placed.iter().find(|(p, _)| {
        p.spec
            .topology_spread_constraints
            .iter()
            .any(|c| c.when_unsatisfiable == "DoNotSchedule")
    })?;
    let c = &p.spec.topology_spread_constraints[0];
    let sel = c.label_selector.as_ref()?;
    let (k, v) = sel.match_labels.iter().next()?;
    let mut counts: HashMap<&String, i64> = zone_of.values().flatten().map(|z| (*z, 0)).collect();
    for (q, n) in placed {
        if q.metadata.namespace == p.metadata.namespace && q.metadata.labels.get(k) == Some(v) {
            if let Some(Some(z)) = zone_of.get(n.as_str()) {
                *counts.entry(z).or_default() += 1;
            }
        }
    }
    let max = counts.values().max().copied().unwrap_or(0);
    let min = counts.values().min().copied().unwrap_or(0);
    (max - min > i64::from(c.max_skew)).then(|| {
        format!(
            "zones hold {counts:?} pods of {k}={v}: skew above {}",
            c.max_skew
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_workload_runs_small_and_valid() {
        for w in WORKLOADS {
            let nodes = if *w == "pod-anti-affinity" { 100 } else { 30 };
            let cfg = BenchConfig {
                workload: w.to_string(),
                nodes,
                pods: 60,
                init_pods: Some(20),
                percentage_of_nodes_to_score: 100,
                seed: 1,
            };
            let r = run(&cfg).unwrap();
            assert!(r.valid, "{w}: {:?}", r.invalid_reason);
            assert_eq!(r.unschedulable, 0, "{w}");
        }
    }

    #[test]
    fn anti_affinity_saturates_without_violation() {
        let cfg = BenchConfig {
            workload: "pod-anti-affinity".into(),
            nodes: 10,
            pods: 15,
            init_pods: Some(0),
            percentage_of_nodes_to_score: 100,
            seed: 1,
        };
        let r = run(&cfg).unwrap();
        assert!(r.valid);
        assert_eq!(r.unschedulable, 5);
    }

    #[test]
    fn unknown_workload_is_an_error() {
        let cfg = BenchConfig {
            workload: "nope".into(),
            nodes: 1,
            pods: 1,
            init_pods: None,
            percentage_of_nodes_to_score: 100,
            seed: 0,
        };
        assert!(run(&cfg).is_err());
    }
}

#[cfg(test)]
mod plan_tests {
    use super::*;

    #[test]
    fn basic_takes_the_memo_path() {
        let mut cache = ClusterCache::new();
        for i in 0..3 {
            cache.upsert_node(&node("basic", i));
        }
        let p = cache.compile_pod(&pod("basic", 0, "sched-1"));
        let mut s = Scheduler::builder()
            .policy(policy("basic"))
            .build()
            .unwrap();
        let preds = s.preds.clone();
        let prios = s.prios.clone();
        let ctx = s.prepare(&preds, &cache, &p).unwrap();
        for (pr, _, name) in &prios {
            assert!(
                pr.uniform(&ctx).is_some()
                    || matches!(
                        pr.name.unit().hot,
                        Some(
                            crate::priorities::unit::Hot::Least
                                | crate::priorities::unit::Hot::Balanced
                        )
                    ),
                "{name} not uniform"
            );
        }
        assert!(
            crate::engine::filter::plan(&ctx, &preds, &[]).is_some(),
            "{preds:?}"
        );
    }
}
