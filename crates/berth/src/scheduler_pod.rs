//! The scheduler of simulated pods (seed 16.4.2): a container whose command is a kube-scheduler
//! invocation (`kube-scheduler`, `/usr/local/bin/kube-scheduler`) or `berth scheduler ...` (also
//! berth's image run with `args: [scheduler, ...]`) runs berth's scheduler in process, with the
//! pod's flags, the policy file from its mounted ConfigMap (or the `--policy-configmap`), and
//! the pod's ServiceAccount identity, for as long as the pod runs: it stops when the pod is
//! deleted.
//!
//! Flags are `berth scheduler`'s plus those of the seed's kube-scheduler release, with its
//! defaults: `--address`/`--port` (accepted, with pflag's deprecation warning: a simulated pod
//! serves nothing), `--policy-configmap`/`--policy-configmap-namespace` (the policy's
//! `policy.cfg`, read as the pod's account), `--lock-object-name`/`--lock-object-namespace`
//! (the Lease; `kube-scheduler` in `kube-system` by default, the one Lease upstream's
//! `system:kube-scheduler` role may renew), `--config` (read as a policy file), `-v`.
//! `--kubeconfig` and `--metrics-bind-address` are ignored in a pod (in-cluster identity, no
//! port of its own).
//!
//! What it logs goes to the container's log (`kubectl logs`); a fatal error is logged there
//! as klog's `"command failed"` line and ends the container with exit code 1.

use crate::scheduler::{driver_config, election_config, SchedulerArgs};
use berth_core::clock::Clock;
use berth_kubelet::commands::{Invocation, Program};
use berth_scheduler::driver::{self, Ops};
use berth_scheduler::policy::Policy;
use k8s_openapi::api::core::v1::ConfigMap;

/// The commands that run the scheduler.
pub const COMMANDS: &[&str] = &[
    "/usr/local/bin/kube-scheduler",
    "/usr/local/bin/berth scheduler",
];

/// Upstream's Lease (and, before Leases, Endpoints) of the scheduler.
const UPSTREAM_LOCK: &str = "kube-scheduler";
/// The key of a `--policy-configmap` holding the policy (upstream's
/// `SchedulerPolicyConfigMapKey`).
const POLICY_CONFIGMAP_KEY: &str = "policy.cfg";

#[derive(clap::Parser)]
#[command(name = "kube-scheduler")]
struct PodCommand {
    #[command(flatten)]
    args: SchedulerArgs,
    /// The name of the Lease (kube-scheduler's flag of the seed's release).
    #[arg(long)]
    lock_object_name: Option<String>,
    /// The namespace of the Lease.
    #[arg(long)]
    lock_object_namespace: Option<String>,
    /// The address the insecure port listened on (a pod of berth's serves nothing).
    #[arg(long)]
    address: Option<String>,
    /// The insecure port (a pod of berth's serves nothing).
    #[arg(long)]
    port: Option<u16>,
    /// A ConfigMap whose `policy.cfg` is the scheduler policy.
    #[arg(long)]
    policy_configmap: Option<String>,
    /// The namespace of `--policy-configmap`.
    #[arg(long, default_value = "kube-system")]
    policy_configmap_namespace: String,
    /// Read the policy from `--policy-config-file` even when `--policy-configmap` is given.
    #[arg(long, default_value_t = false, num_args = 0..=1, default_missing_value = "true",
          action = clap::ArgAction::Set)]
    use_legacy_policy_config: bool,
    /// The algorithm provider (only upstream's `DefaultProvider`, which berth's default policy is).
    #[arg(long)]
    algorithm_provider: Option<String>,
}

/// The flags the seed's release marked deprecated, with pflag's note, in the order given.
const DEPRECATED: &[(&str, &str)] = &[
    ("address", "see --bind-address instead."),
    ("port", "see --secure-port instead."),
    (
        "lock-object-name",
        "use --leader-elect-resource-name instead.",
    ),
    (
        "lock-object-namespace",
        "use --leader-elect-resource-namespace instead.",
    ),
    ("policy-configmap", "use --config instead."),
    ("policy-configmap-namespace", "use --config instead."),
    ("use-legacy-policy-config", "use --config instead."),
    ("algorithm-provider", "use --config instead."),
];

/// pflag's warnings for the deprecated flags among `argv`, one per flag given.
fn deprecation_warnings(argv: &[String]) -> Vec<String> {
    let given = |flag: &str| {
        argv.iter().any(|a| {
            a.strip_prefix("--").is_some_and(|a| {
                a == flag || a.strip_prefix(flag).is_some_and(|r| r.starts_with('='))
            })
        })
    };
    DEPRECATED
        .iter()
        .filter(|(flag, _)| given(flag))
        .map(|(flag, note)| format!("Flag --{flag} has been deprecated, {note}"))
        .collect()
}

pub fn program(clock: Clock) -> Program {
    std::sync::Arc::new(move |inv: Invocation| {
        let clock = clock.clone();
        let run: futures::future::BoxFuture<'static, Result<String, String>> =
            Box::pin(async move {
                run_in_pod(inv, clock).await.map_err(|e| {
                    let printed = e.downcast_ref::<Quiet>().is_some();
                    let e = format!("{e:#}");
                    if !printed {
                        // As component-base's `cli.Run`: one error line, then exit 1.
                        tracing::error!(err = %e, "command failed");
                    }
                    e
                })
            });
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
    let argv = words(&inv.argv);
    let now = || {
        clock
            .now()
            .to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
    };
    let cmd = match PodCommand::try_parse_from(argv) {
        Ok(cmd) => cmd,
        Err(e) => {
            // As cobra: `Error: ...` and the usage, printed before any logging starts.
            let text = e.to_string();
            let text = text.strip_prefix("error: ").unwrap_or(&text);
            inv.log.push(&now(), &format!("Error: {text}"));
            let first = text.lines().next().unwrap_or_default().to_string();
            // Printed already; the termination message says it again.
            return Err(Quiet(first).into());
        }
    };
    for warning in deprecation_warnings(argv) {
        inv.log.push(&now(), &warning);
    }
    if cmd.address.is_some() || cmd.port.is_some() {
        tracing::info!(
            address = cmd.address.as_deref().unwrap_or("0.0.0.0"),
            port = cmd.port.unwrap_or(10251),
            "not serving healthz and metrics: a simulated pod has no network of its own"
        );
    }
    let kube_scheduler = argv
        .first()
        .is_some_and(|a| a.rsplit('/').next() == Some("kube-scheduler"));
    let mut args = cmd.args;
    if let Some(name) = cmd.lock_object_name {
        args.leader_elect_resource_name = Some(name);
    } else if kube_scheduler && args.leader_elect_resource_name.is_none() {
        args.leader_elect_resource_name = Some(UPSTREAM_LOCK.into());
    }
    if let Some(ns) = cmd.lock_object_namespace {
        args.leader_elect_resource_namespace = ns;
    }
    if let Some(p) = cmd.algorithm_provider.as_deref() {
        if p != "DefaultProvider" {
            anyhow::bail!("invalid algorithm provider {p:?}: berth provides DefaultProvider");
        }
    }
    let policy = match cmd
        .policy_configmap
        .filter(|_| !cmd.use_legacy_policy_config)
    {
        Some(name) => {
            policy_from_configmap(&inv.client, &cmd.policy_configmap_namespace, &name).await?
        }
        None => policy_from_files(&inv, &args)?,
    };
    let source = crate::scheduler::policy_source(
        args.policy_config_file
            .as_deref()
            .or(args.config.as_deref()),
    );
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
        return Ok(String::new());
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
    Ok(String::new())
}

/// An error the program already printed (clap's usage): logged no further.
#[derive(Debug)]
struct Quiet(String);

impl std::fmt::Display for Quiet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Quiet {}

/// The policy of `--policy-config-file` or `--config`, from the container's mounted files (the
/// default policy without either).
fn policy_from_files(inv: &Invocation, args: &SchedulerArgs) -> anyhow::Result<Policy> {
    let Some(path) = args.policy_config_file.clone().or(args.config.clone()) else {
        return Ok(Policy::default_policy());
    };
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
    Policy::from_str(text).map_err(|e| anyhow::anyhow!("{name}: {e}"))
}

/// The policy in `policy.cfg` of ConfigMap `namespace/name`, in upstream's words when it
/// cannot be read.
async fn policy_from_configmap(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> anyhow::Result<Policy> {
    let api: kube::Api<ConfigMap> = kube::Api::namespaced(client.clone(), namespace);
    let map = api.get(name).await.map_err(|e| {
        let e = match e {
            kube::Error::Api(s) => s.message,
            e => e.to_string(),
        };
        anyhow::anyhow!("couldn't get policy config map {namespace}/{name}: {e}")
    })?;
    let Some(text) = map.data.unwrap_or_default().remove(POLICY_CONFIGMAP_KEY) else {
        anyhow::bail!("missing policy config map value at key {POLICY_CONFIGMAP_KEY:?}");
    };
    Policy::from_str(&text).map_err(|e| anyhow::anyhow!("invalid policy: {e}"))
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

#[cfg(test)]
mod seed_flags {
    use super::*;
    use clap::Parser;

    fn strings(argv: &[&str]) -> Vec<String> {
        argv.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_seeds_release_flags_parse_with_upstreams_defaults() {
        let argv = strings(&[
            "/usr/local/bin/kube-scheduler",
            "--address=0.0.0.0",
            "--port=10251",
            "--leader-elect=false",
            "--scheduler-name=my-scheduler",
            "--policy-configmap=scheduler-policy",
            "--lock-object-namespace=kube-system",
            "-v=4",
        ]);
        let c = PodCommand::try_parse_from(words(&argv)).unwrap();
        assert_eq!(c.address.as_deref(), Some("0.0.0.0"));
        assert_eq!(c.port, Some(10251));
        assert_eq!(c.policy_configmap.as_deref(), Some("scheduler-policy"));
        assert_eq!(c.policy_configmap_namespace, "kube-system");
        assert_eq!(c.args.logging.v, Some(4));
        assert!(!c.args.leader_elect);
        let plain = PodCommand::try_parse_from(["kube-scheduler"]).unwrap();
        assert!(
            plain.args.leader_elect,
            "upstream elects a leader by default"
        );
        assert_eq!(plain.args.leader_elect_resource_namespace, "kube-system");
        assert!(PodCommand::try_parse_from(["kube-scheduler", "--no-such-flag"]).is_err());
    }

    #[test]
    fn deprecated_flags_warn_as_pflag_does() {
        let argv = strings(&[
            "kube-scheduler",
            "--address=0.0.0.0",
            "--lock-object-name",
            "x",
            "--addressee",
            "--scheduler-name=s",
        ]);
        assert_eq!(
            deprecation_warnings(&argv),
            [
                "Flag --address has been deprecated, see --bind-address instead.",
                "Flag --lock-object-name has been deprecated, use --leader-elect-resource-name instead."
            ]
        );
    }
}
