//! The scheduler of simulated pods (seed 16.4.2): a container whose command is a kube-scheduler
//! invocation (`kube-scheduler`, `/usr/local/bin/kube-scheduler`) or `berth scheduler ...` (also
//! berth's image run with `args: [scheduler, ...]`) runs berth's scheduler in process, with the
//! pod's flags, the policy file from its mounted ConfigMap, and the pod's ServiceAccount
//! identity, for as long as the pod runs: it stops when the pod is deleted.
//!
//! Flags are `berth scheduler`'s, plus kube-scheduler's `--config` (read as a policy file),
//! `--lock-object-name`/`--lock-object-namespace` and `--v`; `--kubeconfig` and
//! `--metrics-bind-address` are ignored in a pod (in-cluster identity, no port of its own).

use crate::scheduler::{driver_config, election_config, SchedulerArgs};
use berth_core::clock::Clock;
use berth_kubelet::commands::{Invocation, Program};
use berth_scheduler::driver::{self, Ops};
use berth_scheduler::policy::Policy;

/// The commands that run the scheduler.
pub const COMMANDS: &[&str] = &[
    "/usr/local/bin/kube-scheduler",
    "/usr/local/bin/berth scheduler",
];

#[derive(clap::Parser)]
#[command(name = "kube-scheduler")]
struct PodCommand {
    #[command(flatten)]
    args: SchedulerArgs,
    /// kube-scheduler's older name for `--leader-elect-resource-name`.
    #[arg(long)]
    lock_object_name: Option<String>,
    /// kube-scheduler's older name for `--leader-elect-resource-namespace`.
    #[arg(long)]
    lock_object_namespace: Option<String>,
    /// Log verbosity (accepted; berth logs through `BERTH_LOG`).
    #[arg(long = "v", short = 'v')]
    verbosity: Option<String>,
}

pub fn program(clock: Clock) -> Program {
    std::sync::Arc::new(move |inv: Invocation| {
        let clock = clock.clone();
        let run: futures::future::BoxFuture<'static, Result<String, String>> =
            Box::pin(async move { run_in_pod(inv, clock).await.map_err(|e| format!("{e:#}")) });
        run
    })
}

/// The words clap reads: `berth scheduler ...` loses `berth` (clap takes `scheduler` as the
/// program name).
fn words(argv: &[String]) -> &[String] {
    let base = argv
        .first()
        .map(|a| a.rsplit('/').next().unwrap_or(a))
        .unwrap_or("");
    if base == "berth" && argv.len() > 1 {
        &argv[1..]
    } else {
        argv
    }
}

async fn run_in_pod(inv: Invocation, clock: Clock) -> anyhow::Result<String> {
    use clap::Parser;
    let cmd = PodCommand::try_parse_from(words(&inv.argv)).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut args = cmd.args;
    if let Some(name) = cmd.lock_object_name {
        args.leader_elect_resource_name = Some(name);
    }
    if let Some(ns) = cmd.lock_object_namespace {
        args.leader_elect_resource_namespace = ns;
    }
    // kube-scheduler's `--config` (SchedulerArgs::config): berth reads the seed's `kind: Policy`
    // there, as the seed's pods give it.
    let policy_file = args.policy_config_file.clone().or(args.config.clone());
    let source = crate::scheduler::policy_source(policy_file.as_deref());
    let policy = match policy_file {
        None => Policy::default_policy(),
        Some(path) => {
            let name = path.display().to_string();
            let Some(text) = inv.files.get(&name) else {
                anyhow::bail!(
                    "reading the scheduler policy {name}: no such file (mount the policy's ConfigMap there)"
                );
            };
            if berth_scheduler::config::is_scheduler_configuration(text) {
                anyhow::bail!(
                    "{name}: a KubeSchedulerConfiguration runs with `berth scheduler --config` or `berth serve --scheduler-config`; a scheduler in a simulated pod reads a `kind: Policy` file"
                );
            }
            Policy::from_str(text).map_err(|e| anyhow::anyhow!("{name}: {e}"))?
        }
    };
    let mut election = election_config(&args)?;
    if let Some(e) = &mut election {
        // Upstream's identity is the host name (the pod's name) and a suffix unique to each
        // start, so the Lease shows a hand-over of the pod to another replica's kubelet.
        let suffix = e
            .identity
            .rsplit_once('_')
            .map(|(_, random)| random.to_string())
            .unwrap_or_default();
        e.identity = format!(
            "{}_{suffix}",
            inv.pod.metadata.name.clone().unwrap_or_default()
        );
    }
    crate::scheduler::publish_policy(inv.client.clone(), &args.scheduler_name, &policy, &source)
        .await;
    let cfg = driver::DriverConfig {
        clock: clock.clone(),
        ..driver_config(&args, policy)
    };
    let ops = Ops::new();
    let mut stopped = inv.stopped.clone();
    let deleted = async move {
        let _ = stopped.wait_for(|gone| *gone).await;
    };
    let Some(election) = election else {
        ops.set_leading(true);
        tokio::select! {
            done = driver::run_with(inv.client, cfg, ops, None) => done?,
            _ = deleted => {}
        }
        return Ok(format!("scheduler {:?} stopped", args.scheduler_name));
    };
    let (tx, rx) = tokio::sync::watch::channel(false);
    let elector = driver::LeaderElector::new(inv.client.clone(), election, clock);
    let mut leading = rx.clone();
    let ops_leading = ops.clone();
    tokio::spawn(async move {
        while leading.changed().await.is_ok() {
            ops_leading.set_leading(*leading.borrow());
        }
    });
    tokio::select! {
        // Deleted: stop leading and give the Lease up, as kube-scheduler does on SIGTERM.
        ended = elector.run(tx, deleted) => ended.map_err(|lost| anyhow::anyhow!("{lost}"))?,
        done = driver::run_with(inv.client, cfg, ops, Some(rx)) => done?,
    }
    Ok(format!("scheduler {:?} stopped", args.scheduler_name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parse(argv: &[&str]) -> PodCommand {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        PodCommand::try_parse_from(words(&argv)).unwrap()
    }

    #[test]
    fn kube_scheduler_and_berth_scheduler_command_lines_parse() {
        let k = parse(&[
            "/usr/local/bin/kube-scheduler",
            "--scheduler-name=custom-scheduler",
            "--config=/etc/kubernetes/policy.yaml",
            "--leader-elect=false",
            "--lock-object-name=custom",
            "--v=2",
        ]);
        assert_eq!(k.args.scheduler_name, "custom-scheduler");
        assert_eq!(
            k.args.config.as_deref(),
            Some(std::path::Path::new("/etc/kubernetes/policy.yaml"))
        );
        assert!(!k.args.leader_elect);
        assert_eq!(k.lock_object_name.as_deref(), Some("custom"));
        let b = parse(&[
            "/usr/local/bin/berth",
            "scheduler",
            "--scheduler-name=custom-scheduler",
            "--policy-config-file=/etc/berth/policy.json",
            "--leader-elect",
            "--metrics-bind-address=0.0.0.0:10259",
        ]);
        assert!(b.args.leader_elect);
        assert_eq!(b.args.scheduler_name, "custom-scheduler");
    }
}
