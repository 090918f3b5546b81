//! `berth bench`: reproducible workloads that print throughput (never asserted anywhere).

mod api;
mod churn;
mod deployments;
mod descheduler;
mod e2e;
mod load;
mod scheduler;

#[derive(clap::Subcommand)]
pub enum BenchCommand {
    /// Pod creates/s through HTTPS with concurrent clients, and watch latency.
    Api(api::ApiBenchArgs),
    /// Pods scheduled/s end to end: creates through HTTPS until a watch sees every pod bound.
    E2e(e2e::E2eBenchArgs),
    /// The descheduler's engine in process: all five strategies in one pass over a cluster.
    Descheduler(descheduler::DeschedulerBenchArgs),
    /// The scheduling engine in process on scheduler_perf workloads.
    Scheduler(scheduler::SchedulerBenchArgs),
    /// `berth simulate` on virtual time: simulated seconds per wall second, pods/s.
    Simulate(crate::simulate::bench::SimulateBenchArgs),
}

pub async fn run(cmd: BenchCommand) -> anyhow::Result<()> {
    match cmd {
        BenchCommand::Api(args) => api::run(args).await,
        BenchCommand::E2e(args) => e2e::run(args).await,
        BenchCommand::Scheduler(args) => scheduler::run(args),
        BenchCommand::Descheduler(args) => descheduler::run(args),
        // Runs on its own paused runtime, which `main` starts instead of this one.
        BenchCommand::Simulate(_) => {
            anyhow::bail!("bench simulate runs on a paused runtime of its own")
        }
    }
}

/// An etcd key prefix no other run uses, so a bench on a shared etcd starts from an empty
/// cluster.
pub fn etcd_prefix() -> String {
    use std::hash::{BuildHasher, Hasher};
    // RandomState is seeded randomly per process: enough to tell runs apart.
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    format!("/berth-bench/{}-{random:016x}", std::process::id())
}
