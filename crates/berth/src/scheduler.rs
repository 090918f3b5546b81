//! `berth scheduler`: the scheduling driver against any API server.

use anyhow::Context;
use berth_scheduler::driver::{self, DriverConfig};
use berth_scheduler::policy::Policy;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct SchedulerArgs {
    /// Kubeconfig of the cluster to schedule for (default: $KUBECONFIG or ~/.kube/config).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Pods whose spec.schedulerName is this are scheduled by this instance.
    #[arg(long, default_value = "default-scheduler")]
    pub scheduler_name: String,
    /// The scheduler policy file (the seed's `kind: Policy`, JSON or YAML).
    #[arg(long)]
    pub policy_config_file: Option<PathBuf>,
    /// percentageOfNodesToScore: 100 scores every node, 0 is upstream's adaptive rule.
    #[arg(long, default_value_t = 100)]
    pub percentage_of_nodes_to_score: u32,
}

/// Loads a policy file, or the default policy without one. The error names the file and entries.
pub fn load_policy(path: Option<&Path>) -> anyhow::Result<Policy> {
    match path {
        None => Ok(Policy::default_policy()),
        Some(p) => Policy::from_file(p).map_err(|e| anyhow::anyhow!("{e}")),
    }
}

/// A kube client from a kubeconfig file, or the usual inference.
pub async fn client(kubeconfig: Option<&Path>) -> anyhow::Result<kube::Client> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = match kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &Default::default())
                .await
                .with_context(|| format!("using kubeconfig {}", path.display()))?
        }
        None => kube::Config::infer()
            .await
            .context("finding a kubeconfig")?,
    };
    Ok(kube::Client::try_from(config)?)
}

pub async fn run(args: SchedulerArgs) -> anyhow::Result<()> {
    let policy = load_policy(args.policy_config_file.as_deref())?;
    let client = client(args.kubeconfig.as_deref()).await?;
    let cfg = DriverConfig {
        policy,
        percentage_of_nodes_to_score: args.percentage_of_nodes_to_score,
        ..DriverConfig::named(&args.scheduler_name)
    };
    println!("berth scheduler {:?} is running", args.scheduler_name);
    driver::run(client, cfg).await?;
    Ok(())
}
