//! `berth bench api`.

#[derive(clap::Args, Debug)]
pub struct ApiBenchArgs {}

pub async fn run(_args: ApiBenchArgs) -> anyhow::Result<()> {
    anyhow::bail!("berth bench api: not implemented yet")
}
