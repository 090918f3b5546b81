//! `berth bench`: reproducible workloads that print throughput (never asserted anywhere).

mod api;
mod scheduler;

#[derive(clap::Subcommand)]
pub enum BenchCommand {
    /// Pod creates/s through HTTPS with concurrent clients, and watch latency.
    Api(api::ApiBenchArgs),
    /// The scheduling engine in process on scheduler_perf workloads.
    Scheduler(scheduler::SchedulerBenchArgs),
}

pub async fn run(cmd: BenchCommand) -> anyhow::Result<()> {
    match cmd {
        BenchCommand::Api(args) => api::run(args).await,
        BenchCommand::Scheduler(args) => scheduler::run(args),
    }
}
