//! `berth bench scheduler`: the engine in process on the scheduler_perf workloads.

use berth_scheduler::bench::{self, BenchConfig};

#[derive(clap::Args, Debug)]
pub struct SchedulerBenchArgs {
    /// Workload: basic, pod-anti-affinity, anti-affinity-groups, pod-affinity,
    /// preferred-pod-affinity, preferred-pod-anti-affinity, node-affinity, topology-levels,
    /// topology-spreading, preferred-topology-spreading (scheduler_perf's TopologySpreading and
    /// PreferredTopologySpreading: use --nodes 5000 --pods 1000), preemption (PreemptionBasic: use --nodes 1000 --pods 1000), ...
    #[arg(long, default_value = "basic")]
    workload: String,
    /// Number of nodes.
    #[arg(long, default_value_t = 5000)]
    nodes: usize,
    /// Number of measured pods.
    #[arg(long, default_value_t = 10000)]
    pods: usize,
    /// Pods scheduled before measuring (default: the workload's own).
    #[arg(long)]
    init_pods: Option<usize>,
    /// percentageOfNodesToScore: 100 scores every node, 0 is upstream's adaptive rule.
    #[arg(long, default_value_t = 100)]
    percentage_of_nodes_to_score: u32,
    /// Seed for tie-breaking.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print one JSON object per run.
    #[arg(long)]
    json: bool,
    /// Schedule with the first profile of this KubeSchedulerConfiguration (1.35's plugins,
    /// scoring 0..100) instead of the workload's `kind: Policy`.
    #[arg(long, value_name = "FILE")]
    scheduler_config: Option<std::path::PathBuf>,
}

pub fn run(args: SchedulerBenchArgs) -> anyhow::Result<()> {
    if args.workload == "preemption" {
        anyhow::ensure!(
            args.scheduler_config.is_none(),
            "--scheduler-config is not supported with --workload preemption"
        );
        return preemption(&args);
    }
    let cfg = BenchConfig {
        workload: args.workload.clone(),
        nodes: args.nodes,
        pods: args.pods,
        init_pods: args.init_pods,
        percentage_of_nodes_to_score: args.percentage_of_nodes_to_score,
        seed: args.seed,
    };
    let report = match &args.scheduler_config {
        None => bench::run(&cfg),
        Some(path) => {
            let (profiles, _) = crate::scheduler::load_configuration(path)?;
            let first = profiles.first().ok_or_else(|| {
                anyhow::anyhow!("{}: the configuration has no profile", path.display())
            })?;
            bench::run_profile(&cfg, first)
        }
    }
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!(
            "workload {} nodes {} pods {} (init {}): {:.0} pods/s, p50 {:.3} ms, p99 {:.3} ms, unschedulable {}, valid {}{}",
            report.workload,
            report.nodes,
            report.pods,
            report.init_pods,
            report.pods_per_second,
            report.p50_ms,
            report.p99_ms,
            report.unschedulable,
            report.valid,
            report.invalid_reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default()
        );
    }
    if !report.valid {
        anyhow::bail!("the placement is invalid");
    }
    Ok(())
}

/// PreemptionBasic: `--nodes` nodes with 4 low-priority pods of 900m each, then `--pods`
/// high-priority pods of 3,000m (at most one per node) that each preempt three.
fn preemption(args: &SchedulerBenchArgs) -> anyhow::Result<()> {
    let r = berth_scheduler::bench_preemption::run(args.nodes, args.pods, args.seed)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if args.json {
        println!("{}", serde_json::to_string(&r)?);
    } else {
        println!(
            "workload preemption nodes {} low pods {} high pods {}: {:.0} decisions/s (victim deletion through the API excluded), p50 {:.3} ms, p99 {:.3} ms; preemption step alone {:.0}/s, p50 {:.3} ms; victims {}, valid {}{}",
            r.nodes, r.low_pods, r.high_pods, r.decisions_per_second, r.p50_ms, r.p99_ms,
            r.preempt_only_per_second, r.preempt_only_p50_ms,
            r.victims, r.valid,
            r.invalid_reason.as_deref().map(|x| format!(" ({x})")).unwrap_or_default()
        );
    }
    if !r.valid {
        anyhow::bail!("the preemption decisions are invalid");
    }
    Ok(())
}
