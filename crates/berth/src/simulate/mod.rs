//! `berth simulate`: what-if on virtual time.
//!
//! The whole control plane of `berth serve` (API server on the memory store, scheduler,
//! controllers, descheduler, simulated kubelets) runs in process on a paused tokio clock that
//! jumps to the next timer whenever every component is idle, so a day of cluster time takes
//! seconds. A workload timeline ([`timeline`]) is carried out through the API ([`actions`]);
//! what happens is watched through the API ([`observer`]) and written as `report.json`
//! ([`report`]) with a text summary ([`summary`]).
//!
//! The pieces that decide (timeline parsing, report building, capacity counting) are pure and
//! unit-tested; [`run`] and [`driver`] are the shell.

mod actions;
pub mod bench;
pub mod capacity;
mod deschedule;
mod driver;
mod html;
pub mod live;
mod observer;
pub mod report;
mod summary;
pub mod timeline;
mod why;

use anyhow::Context;
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args, Debug, Clone)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SimulateArgs {
    #[command(subcommand)]
    pub command: Option<SimulateCommand>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(clap::Subcommand, Debug, Clone)]
pub enum SimulateCommand {
    /// How many more instances of a pod the cluster can schedule (cluster-capacity's question).
    Capacity(capacity::CapacityArgs),
}

/// The inputs of a simulation run.
#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// Node pools of simulated nodes (the `berth serve --cluster` format, failures included).
    #[arg(long)]
    pub cluster: Option<PathBuf>,
    /// Without --cluster: how many default nodes (4 CPU, 16Gi).
    #[arg(long, default_value_t = 3)]
    pub nodes: usize,
    /// Start from a live cluster's state, read (never written) through this kubeconfig: its
    /// nodes, namespaces, PriorityClasses, storage, ServiceAccounts and pods (see
    /// docs/simulate.md).
    #[arg(long, value_name = "KUBECONFIG", conflicts_with_all = ["cluster", "nodes"])]
    pub from_kubeconfig: Option<PathBuf>,
    /// The workload timeline (see docs/simulate.md).
    #[arg(long)]
    pub workload: Option<PathBuf>,
    /// How much cluster time to simulate (`24h`, `90m`).
    #[arg(long, default_value = "24h", value_parser = berth_controllers::parse_duration)]
    pub until: Duration,
    /// The scheduler's tie-breaking seed: the same inputs and seed give the same report.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Write report.json and index.html (the plots, offline) here (created if missing).
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// How often the utilisation and pending series are sampled (cluster time).
    #[arg(long, default_value = "5m", value_parser = berth_controllers::parse_duration)]
    pub sample_interval: Duration,
    /// The scheduler policy file (the seed's `kind: Policy`).
    #[arg(long)]
    pub policy_config_file: Option<PathBuf>,
    /// A KubeSchedulerConfiguration for the scheduler (profiles, plugins, scoringStrategy).
    #[arg(long, alias = "scheduler-config")]
    pub config: Option<PathBuf>,
    /// Run the descheduler with this policy (`descheduler/v1alpha1` or `v1alpha2`).
    #[arg(long)]
    pub descheduler_policy: Option<PathBuf>,
    /// With --descheduler-policy: cluster time between descheduler runs.
    #[arg(long, default_value = "5m", value_parser = berth_controllers::parse_duration)]
    pub descheduling_interval: Duration,
    /// An OpenShift master-config.yaml (admission plugins, disablePreemption).
    #[arg(long)]
    pub master_config: Option<PathBuf>,
    /// Run the same timeline under two scheduler configurations (each a `kind: Policy` or a
    /// KubeSchedulerConfiguration file) and report the differences side by side.
    #[arg(long, num_args = 2, value_names = ["A", "B"], conflicts_with_all = ["policy_config_file", "config"])]
    pub compare: Option<Vec<PathBuf>>,
    /// No progress line on the terminal.
    #[arg(long)]
    pub quiet: bool,
    /// Explain this pod's scheduling decisions node by node in the report's "why here"
    /// table: each node's filter result, or its scores (NAMESPACE/NAME as the report names
    /// it, `default/web-7d4b9c-1`; repeatable).
    #[arg(long = "explain", value_name = "POD")]
    pub explain: Vec<String>,
}

/// Which scheduler configuration a run uses.
#[derive(Clone, Debug, Default)]
pub struct SchedulerChoice {
    pub policy: Option<PathBuf>,
    pub config: Option<PathBuf>,
}

impl SchedulerChoice {
    /// What the report calls it.
    pub fn label(&self) -> String {
        match (&self.policy, &self.config) {
            (Some(p), _) | (None, Some(p)) => p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| p.display().to_string()),
            (None, None) => "default".to_string(),
        }
    }

    /// A comparison's file: a KubeSchedulerConfiguration by its kind, else a Policy.
    fn from_file(path: &std::path::Path) -> anyhow::Result<SchedulerChoice> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let is_config = text.contains("KubeSchedulerConfiguration");
        Ok(SchedulerChoice {
            policy: (!is_config).then(|| path.to_path_buf()),
            config: is_config.then(|| path.to_path_buf()),
        })
    }
}

/// `berth simulate ...`: runs on its own paused, single-threaded runtime (so that the clock
/// can jump), one runtime per run.
pub fn main(args: SimulateArgs) -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    if let Some(SimulateCommand::Capacity(cap)) = args.command {
        return capacity::run(cap);
    }
    let run = args.run;
    anyhow::ensure!(!run.until.is_zero(), "--until must be more than 0s");
    anyhow::ensure!(
        run.sample_interval >= Duration::from_secs(1),
        "--sample-interval must be at least 1s"
    );
    let timeline = match &run.workload {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading the workload file {}", path.display()))?;
            timeline::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
        }
        None => timeline::Timeline::default(),
    };
    let choices = match &run.compare {
        Some(files) => files
            .iter()
            .map(|f| SchedulerChoice::from_file(f))
            .collect::<anyhow::Result<Vec<_>>>()?,
        None => vec![SchedulerChoice {
            policy: run.policy_config_file.clone(),
            config: run.config.clone(),
        }],
    };
    // The live cluster is read once: a comparison runs both configurations on the same state.
    let live = match &run.from_kubeconfig {
        Some(path) => Some(live::read(path)?),
        None => None,
    };
    let mut reports = Vec::new();
    for choice in &choices {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()?;
        let report = runtime.block_on(driver::simulate(&run, choice, &timeline, live.as_ref()))?;
        // Every component of this run stops with its runtime.
        runtime.shutdown_background();
        reports.push(report);
    }
    let text = match reports.as_slice() {
        [one] => summary::text(one),
        [a, b] => summary::compare(a, b),
        _ => String::new(),
    };
    if let Some(dir) = &run.report {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let json = match reports.as_slice() {
            [one] => report::to_json(one),
            many => {
                let mut text = serde_json::to_string_pretty(&serde_json::json!({
                    "compare": many,
                    "differences": summary::differences(&many[0], &many[1]),
                }))?;
                text.push('\n');
                text
            }
        };
        let path = dir.join("report.json");
        std::fs::write(&path, json).with_context(|| format!("writing {}", path.display()))?;
        let page = match reports.as_slice() {
            [one] => html::render(one, &text),
            [a, b] => html::render_compare(a, b, &summary::differences(a, b), &text),
            _ => String::new(),
        };
        let path = dir.join("index.html");
        std::fs::write(&path, page).with_context(|| format!("writing {}", path.display()))?;
    }
    print!("{text}");
    if let Some(dir) = &run.report {
        println!(
            "report: {} and {}",
            dir.join("report.json").display(),
            dir.join("index.html").display()
        );
    }
    Ok(())
}
