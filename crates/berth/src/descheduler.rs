//! `berth descheduler`: upstream's descheduler command against any API server, and the same
//! loop in process for `berth serve --descheduler-policy` and for pods that run
//! `/bin/descheduler` on a simulated node.

use anyhow::Context;
use berth_core::clock::Clock;
use berth_core::labels::Selector;
use berth_descheduler::driver::{self, Metrics, RunConfig, Stop};
use berth_descheduler::{Options, Policy, Report};
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args, Debug, Clone)]
pub struct DeschedulerArgs {
    /// Kubeconfig of the cluster (default: $KUBECONFIG, in-cluster, or ~/.kube/config).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// The policy: the seed's `descheduler/v1alpha1` DeschedulerPolicy or a
    /// `descheduler/v1alpha2` one with profiles (JSON or YAML).
    #[arg(long)]
    pub policy_config_file: Option<PathBuf>,
    /// Time between runs (`5m`, `30s`); 0 runs once and exits.
    #[arg(long, default_value = "0", value_parser = crate::scheduler::parse_duration)]
    pub descheduling_interval: Duration,
    /// Decide and report what would be evicted; evict nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Only nodes matching this label selector (`=`, `==`, `!=`, set-based).
    #[arg(long)]
    pub node_selector: Option<String>,
    /// At most this many evictions per node in one run, all strategies together (0: no limit).
    #[arg(long, default_value_t = 0)]
    pub max_pods_to_evict_per_node: u32,
    /// Also evict pods with emptyDir or hostPath volumes.
    #[arg(long)]
    pub evict_local_storage_pods: bool,
    /// Verbosity: -v lists the pass's notes and metrics after each run.
    #[arg(short = 'v', long = "v", action = clap::ArgAction::Count)]
    pub verbosity: u8,
    /// Report format: `table` or `json` (one JSON object per run).
    #[arg(short = 'o', long = "output", default_value = "table", value_parser = ["table", "json"])]
    pub output: String,
    /// Log format: `text` (klog's lines) or `json` (upstream's JSON schema).
    #[arg(long = "logging-format", default_value = "text", value_parser = ["text", "json"])]
    pub logging_format: String,
}

impl DeschedulerArgs {
    /// The engine's options from the flags; a bad `--node-selector` is an error.
    pub fn options(&self) -> anyhow::Result<Options> {
        let node_selector = match self.node_selector.as_deref() {
            None | Some("") => None,
            Some(s) => Some(
                Selector::parse(s).map_err(|e| anyhow::anyhow!("--node-selector {s:?}: {e}"))?,
            ),
        };
        Ok(Options {
            node_selector,
            max_pods_to_evict_per_node: Some(self.max_pods_to_evict_per_node).filter(|&n| n > 0),
            evict_local_storage_pods: self.evict_local_storage_pods,
            // Each run sets its own time.
            now: None,
        })
    }
}

/// Reads and compiles a policy file; the error names the file, the strategy and the field.
pub fn load_policy(path: &std::path::Path) -> anyhow::Result<Policy> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the descheduler policy {}", path.display()))?;
    Ok(Policy::parse(&path.display().to_string(), &text)?)
}

/// Runs the loop: once when the interval is 0, else every interval until the task is dropped.
/// Each run's report goes to `print` (the table or JSON text).
pub async fn run_loop(
    client: kube::Client,
    args: &DeschedulerArgs,
    policy: Policy,
    clock: Clock,
    metrics: Metrics,
    mut print: impl FnMut(String),
) -> anyhow::Result<()> {
    let cfg = RunConfig {
        policy,
        options: args.options()?,
        dry_run: args.dry_run,
        events: driver::Events::start(client.clone(), clock.clone()),
        clock,
        stop: Stop::process(),
    };
    let once = args.descheduling_interval.is_zero();
    loop {
        match driver::run_once(&client, &cfg).await {
            Ok(report) => {
                metrics.add(&report);
                print(render(&report, args)?);
                if args.verbosity > 0 {
                    print(metrics.text());
                }
            }
            Err(e) if once => return Err(e.into()),
            // A long-running descheduler outlives an API hiccup: the next run tries again.
            Err(e) => tracing::warn!(error = %e, "descheduling run failed"),
        }
        if once || cfg.stop.is_set() {
            return Ok(());
        }
        tokio::select! {
            () = cfg.clock.sleep(args.descheduling_interval) => {}
            () = cfg.stop.stopped() => return Ok(()),
        }
    }
}

fn render(report: &Report, args: &DeschedulerArgs) -> anyhow::Result<String> {
    Ok(if args.output == "json" {
        serde_json::to_string(report)? + "\n"
    } else {
        report.table()
    })
}

/// A client like the scheduler's, without kube's retries of 429: a disruption budget's 429 on
/// an eviction is an answer (skip that pod), not a transient failure.
async fn client(kubeconfig: Option<&std::path::Path>) -> anyhow::Result<kube::Client> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut config = match kubeconfig {
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
    config.default_retry = false;
    crate::client::build(config, "descheduler")
}

pub async fn run(args: DeschedulerArgs) -> anyhow::Result<()> {
    let Some(path) = &args.policy_config_file else {
        anyhow::bail!("--policy-config-file is required: the descheduler has no default policy");
    };
    let policy = load_policy(path)?;
    args.options()?;
    let client = client(args.kubeconfig.as_deref()).await?;
    // The loop runs in a task of its own: a signal must not cancel an eviction in flight
    // before its event is written.
    let mut running = tokio::spawn(async move {
        run_loop(
            client,
            &args,
            policy,
            Clock::system(),
            Metrics::default(),
            |text| {
                let _ = crate::output::print(&text);
            },
        )
        .await
    });
    tokio::select! {
        ended = &mut running => {
            // The events are written off the eviction path: wait for them before exiting.
            berth_scheduler::driver::flush_events().await;
            ended?
        }
        signal = crate::scheduler::shutdown_signal() => {
            // No further eviction starts; the one in flight and its event are written.
            Stop::process().set();
            berth_scheduler::driver::flush_events().await;
            println!("received {signal}; exiting");
            Ok(())
        }
    }
}

/// The name the in-process descheduler's loop is supervised under.
pub const LOOP_NAME: &str = "descheduler";

/// `berth serve --descheduler-policy`: the loop in a background task under `supervisor`, each
/// run's table printed. A run that panics or fails is restarted after a back-off, waiting one
/// interval again first; with interval 0 the one run, once done, stays done.
pub fn spawn_in_process(
    supervisor: &berth_core::supervisor::Supervisor,
    client: kube::Client,
    policy: Policy,
    interval: Duration,
    clock: Clock,
    metrics: Metrics,
) {
    let args = DeschedulerArgs {
        kubeconfig: None,
        policy_config_file: None,
        descheduling_interval: interval,
        dry_run: false,
        node_selector: None,
        max_pods_to_evict_per_node: 0,
        evict_local_storage_pods: false,
        verbosity: 0,
        output: "table".into(),
        logging_format: "text".into(),
    };
    supervisor.spawn(LOOP_NAME, move || {
        let (client, args, policy) = (client.clone(), args.clone(), policy.clone());
        let (clock, metrics) = (clock.clone(), metrics.clone());
        async move {
            // The cluster has only just started: the first run waits one interval.
            if !interval.is_zero() {
                clock.sleep(interval).await;
            }
            let printed = |text: String| {
                let _ = crate::output::print(&text);
            };
            run_loop(client, &args, policy, clock, metrics, printed).await?;
            // Only a single run (interval 0) ends well: it is done, not to be restarted.
            std::future::pending::<()>().await;
            anyhow::Ok(())
        }
    });
}

/// The `/bin/descheduler` of simulated containers: the pod's arguments, its ConfigMap-mounted
/// policy file, and a client acting as the pod's ServiceAccount (in `berth serve`; see
/// `berth_kubelet::commands`), so it has exactly the rights RBAC grants that account.
/// `--kubeconfig` is ignored in a pod, as in-cluster config would be used upstream.
pub fn program(clock: Clock) -> berth_kubelet::commands::Program {
    std::sync::Arc::new(move |inv: berth_kubelet::commands::Invocation| {
        let clock = clock.clone();
        let run: futures::future::BoxFuture<'static, Result<String, String>> =
            Box::pin(async move {
                run_in_pod(inv, clock).await.map_err(|e| {
                    let e = format!("{e:#}");
                    // Into the container's log, as upstream's `cli.Run`: one error line.
                    tracing::error!(err = %e, "command failed");
                    e
                })
            });
        run
    })
}

#[derive(clap::Parser)]
#[command(name = "descheduler")]
struct PodCommand {
    #[command(flatten)]
    args: DeschedulerArgs,
}

async fn run_in_pod(
    inv: berth_kubelet::commands::Invocation,
    clock: Clock,
) -> anyhow::Result<String> {
    use clap::Parser;
    let cmd = PodCommand::try_parse_from(&inv.argv).map_err(|e| anyhow::anyhow!("{e}"))?;
    let args = cmd.args;
    let Some(path) = &args.policy_config_file else {
        anyhow::bail!("--policy-config-file is required: the descheduler has no default policy");
    };
    let name = path.display().to_string();
    let Some(text) = inv.files.get(&name) else {
        anyhow::bail!(
            "reading the descheduler policy {name}: no such file (mount the policy's ConfigMap there)"
        );
    };
    let policy = Policy::parse(&name, text)?;
    let mut out = String::new();
    run_loop(inv.client, &args, policy, clock, Metrics::default(), |t| {
        out.push_str(&t)
    })
    .await?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: DeschedulerArgs,
    }

    #[test]
    fn upstreams_flags_parse() {
        let cli = Cli::try_parse_from([
            "descheduler",
            "--policy-config-file",
            "/policy-dir/policy.yaml",
            "--descheduling-interval",
            "5m",
            "--dry-run",
            "--node-selector",
            "zone=a",
            "--max-pods-to-evict-per-node",
            "3",
            "--evict-local-storage-pods",
            "-v",
            "-o",
            "json",
        ])
        .unwrap();
        assert_eq!(cli.args.descheduling_interval, Duration::from_secs(300));
        assert!(cli.args.dry_run && cli.args.evict_local_storage_pods);
        let o = cli.args.options().unwrap();
        assert_eq!(o.max_pods_to_evict_per_node, Some(3));
        assert!(o.node_selector.is_some());
        let bad = Cli::try_parse_from([
            "d",
            "--node-selector",
            "a in (",
            "--policy-config-file",
            "p",
        ])
        .unwrap();
        assert!(bad.args.options().is_err());
    }
}
