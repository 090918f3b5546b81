//! `berth bench descheduler`: the descheduler's engine in process on a generated cluster, all
//! five strategies in one pass (decisions only; no API calls).

use berth_core::clock::Stopwatch;
use berth_descheduler::{plan, NodeState, Options, PodState, Policy};
use serde_json::{json, Value};

#[derive(clap::Args, Debug)]
pub struct DeschedulerBenchArgs {
    /// Number of nodes.
    #[arg(long, default_value_t = 1000)]
    nodes: usize,
    /// Number of pods.
    #[arg(long, default_value_t = 30000)]
    pods: usize,
    /// Passes to run (the report is the best and the median).
    #[arg(long, default_value_t = 3)]
    passes: usize,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

const POLICY: &str = r#"apiVersion: "descheduler/v1alpha1"
kind: "DeschedulerPolicy"
strategies:
  "RemoveDuplicates":
     enabled: true
  "LowNodeUtilization":
     enabled: true
     params:
       nodeResourceUtilizationThresholds:
         thresholds: {"cpu": 20, "memory": 20, "pods": 20}
         targetThresholds: {"cpu": 50, "memory": 50, "pods": 50}
  "RemovePodsViolatingInterPodAntiAffinity":
     enabled: true
  "RemovePodsViolatingNodeAffinity":
    enabled: true
    params:
      nodeAffinityType: ["requiredDuringSchedulingIgnoredDuringExecution"]
  "RemovePodsViolatingNodeTaints":
     enabled: true
"#;

/// Node `i`: 8 cpu, 32Gi, 110 pods; every 50th lost its `zone=a` label, every 50th (offset 25)
/// has a NoSchedule taint.
fn node(i: usize) -> Value {
    let mut labels = json!({"kubernetes.io/hostname": format!("node-{i}")});
    if i % 50 != 7 {
        labels["zone"] = json!("a");
    }
    let taints = if i % 50 == 25 {
        json!([{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}])
    } else {
        json!([])
    };
    json!({"metadata": {"name": format!("node-{i}"), "labels": labels},
        "spec": {"taints": taints},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}]}})
}

/// Pod `j` on node `n`: owned by one of many ReplicaSets (a few duplicates per node), 100m to
/// 400m cpu; every 20th carries required anti-affinity against its neighbour's label, every
/// 25th requires `zone In [a]`.
fn pod(j: usize, n: usize) -> Value {
    let cpu = 100 * (1 + j % 4);
    // The anti-affinity pairs (j % 20 in 0..2) have owners of their own, so that no other
    // strategy takes them first.
    let rs = match (j % 20, j % 10) {
        (0 | 1, _) => format!("solo-{j}"),
        (_, 0) => format!("dup-{n}"),
        _ => format!("rs-{}", j / 3),
    };
    let mut spec = json!({"nodeName": format!("node-{n}"),
        "containers": [{"name": "c", "image": "app",
            "resources": {"requests": {"cpu": format!("{cpu}m"), "memory": "256Mi"}}}]});
    if j.is_multiple_of(20) {
        spec["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"app": format!("app-{}", j + 1)}},
            "namespaces": [format!("ns-{}", (j + 1) % 10)],
            "topologyKey": "kubernetes.io/hostname"}]}});
    } else if j.is_multiple_of(25) {
        spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}});
    }
    json!({"metadata": {"name": format!("pod-{j}"), "namespace": format!("ns-{}", j % 10),
            "labels": {"app": format!("app-{j}")},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs,
                "uid": rs, "controller": true}]},
        "spec": spec, "status": {"phase": "Running"}})
}

/// Which node pod `j` runs on: one node in ten is nearly empty, one in ten crowded.
fn placement(nodes: usize, pods: usize) -> Vec<usize> {
    let weight = |n: usize| match n % 10 {
        0 => 1,
        9 => 12,
        _ => 6,
    };
    let total: usize = (0..nodes).map(weight).sum();
    let mut out = Vec::with_capacity(pods);
    for n in 0..nodes {
        let share = (pods * weight(n)).div_ceil(total);
        out.extend(std::iter::repeat_n(n, share));
    }
    out.truncate(pods);
    while out.len() < pods {
        out.push(out.len() % nodes);
    }
    out
}

pub fn run(args: DeschedulerBenchArgs) -> anyhow::Result<()> {
    let policy = Policy::parse("bench-policy.yaml", POLICY)?;
    let watch = Stopwatch::start();
    let nodes: Vec<NodeState> = (0..args.nodes)
        .map(|i| NodeState::from_json(&node(i)))
        .collect::<Result<_, _>>()?;
    let pods: Vec<PodState> = placement(args.nodes, args.pods)
        .into_iter()
        .enumerate()
        .map(|(j, n)| PodState::from_json(&pod(j, n)))
        .collect::<Result<_, _>>()?;
    let compile_s = watch.elapsed().as_secs_f64();
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..args.passes.max(1) {
        let watch = Stopwatch::start();
        let p = plan(&nodes, &pods, &policy, &Options::default());
        times.push(watch.elapsed().as_secs_f64());
        last = Some(p);
    }
    times.sort_by(f64::total_cmp);
    let best = times[0];
    let median = times[times.len() / 2];
    let p = last.unwrap_or_default();
    let mut per_strategy = std::collections::BTreeMap::new();
    for e in &p.evictions {
        *per_strategy.entry(e.strategy.name()).or_insert(0usize) += 1;
    }
    let pods_per_second = p.pods_considered as f64 / median;
    if args.json {
        println!(
            "{}",
            json!({"nodes": p.nodes, "pods": p.pods_considered, "pass_seconds_median": median,
                "pass_seconds_best": best, "pods_considered_per_second": pods_per_second,
                "compile_seconds": compile_s, "evictions": per_strategy})
        );
    } else {
        println!(
            "descheduler: {} nodes, {} pods, all five strategies: pass {:.3} s (median of {}, best {:.3} s), {:.0} pods considered/s; compiling the objects {:.3} s",
            p.nodes, p.pods_considered, median, times.len(), best, pods_per_second, compile_s
        );
        let counts: Vec<String> = per_strategy
            .iter()
            .map(|(s, n)| format!("{s} {n}"))
            .collect();
        println!("evictions chosen: {}", counts.join(", "));
    }
    Ok(())
}
