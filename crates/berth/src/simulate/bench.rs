//! `berth bench simulate`: how fast virtual time runs: simulated seconds per wall second and
//! pods scheduled per wall second, on `--nodes` default nodes (4 cpu, 16Gi) and a day of Jobs
//! arriving every hour (each pod runs `sleep 1800`, so as many depart). Printed, never asserted.

use super::timeline::{Action, Entry, Timeline};
use super::{RunArgs, SchedulerChoice};
use berth_core::clock::Stopwatch;
use serde_json::json;
use std::time::Duration;

#[derive(clap::Args, Debug, Clone)]
pub struct SimulateBenchArgs {
    /// Simulated nodes.
    #[arg(long, default_value_t = 100)]
    pub nodes: usize,
    /// Pod arrivals over the run (Jobs created each hour, their pods running 30 minutes).
    #[arg(long, default_value_t = 3_000)]
    pub pods: usize,
    /// How much cluster time to simulate.
    #[arg(long, default_value = "24h", value_parser = berth_controllers::parse_duration)]
    pub until: Duration,
}

/// The hourly Jobs: `pods` arrivals spread over the hours of `until`.
fn workload(pods: usize, until: Duration) -> Timeline {
    let hours = (until.as_secs() / 3600).max(1) as usize;
    let per_hour = pods.div_ceil(hours).max(1);
    let entries = (0..hours)
        .map(|h| Entry {
            at: Duration::from_secs(h as u64 * 3600),
            actions: vec![Action::Create(vec![json!({
                "apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": format!("bench-{h}")},
                "spec": {"completions": per_hour, "parallelism": per_hour,
                    "template": {"spec": {"restartPolicy": "Never", "containers": [{
                        "name": "c", "image": "busybox", "command": ["sleep", "1800"],
                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}}},
            })])],
        })
        .collect();
    Timeline { entries }
}

pub fn run(args: SimulateBenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.nodes > 0, "--nodes must be at least 1");
    let run = RunArgs {
        cluster: None,
        nodes: args.nodes,
        from_kubeconfig: None,
        workload: None,
        until: args.until,
        seed: 0,
        report: None,
        sample_interval: Duration::from_secs(600),
        policy_config_file: None,
        config: None,
        descheduler_policy: None,
        descheduling_interval: Duration::from_secs(300),
        master_config: None,
        compare: None,
        quiet: true,
        explain: Vec::new(),
    };
    let timeline = workload(args.pods, args.until);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()?;
    let watch = Stopwatch::start();
    let report = runtime.block_on(super::driver::simulate(
        &run,
        &SchedulerChoice::default(),
        &timeline,
        None,
    ))?;
    let wall = watch.elapsed().as_secs_f64().max(0.001);
    runtime.shutdown_background();
    println!(
        "simulated {} of {} nodes in {wall:.1}s: {:.0} simulated seconds per wall second, {} pods scheduled, {:.0} pods/s",
        super::driver::clock_text(args.until.as_secs()),
        args.nodes,
        args.until.as_secs_f64() / wall,
        report.totals.scheduled,
        report.totals.scheduled as f64 / wall
    );
    Ok(())
}
