//! `berth bench scheduler`.

#[derive(clap::Args, Debug)]
pub struct SchedulerBenchArgs {}

pub fn run(_args: SchedulerBenchArgs) -> anyhow::Result<()> {
    anyhow::bail!("berth bench scheduler: not implemented yet")
}
