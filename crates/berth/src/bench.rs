//! `berth bench`: reproducible workloads that print throughput.

#[derive(clap::Subcommand)]
pub enum BenchCommand {
    /// Placeholder until the benchmarks land.
    Api,
}

pub async fn run(cmd: BenchCommand) -> anyhow::Result<()> {
    match cmd {
        BenchCommand::Api => anyhow::bail!("not yet"),
    }
}
