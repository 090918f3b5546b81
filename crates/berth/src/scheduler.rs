//! `berth scheduler`: the scheduling driver against any API server, leader-elected, with
//! `/metrics`, `/healthz` and `/readyz` on a plain-HTTP port.

use anyhow::Context;
use berth_core::duration;
use berth_core::loop_health::LoopHealth;
use berth_core::supervisor::Supervisor;
use berth_scheduler::config::{CompiledProfile, SchedulerConfiguration};
use berth_scheduler::driver::{self, leader, DriverConfig, LeaderElectionConfig, Ops};
use berth_scheduler::policy::Policy;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct SchedulerArgs {
    /// Kubeconfig of the cluster to schedule for (default: $KUBECONFIG, in-cluster, or ~/.kube/config).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Pods whose spec.schedulerName is this are scheduled by this instance.
    #[arg(long, default_value = "default-scheduler")]
    pub scheduler_name: String,
    /// The scheduler policy file (the seed's `kind: Policy`, JSON or YAML).
    #[arg(long)]
    pub policy_config_file: Option<PathBuf>,
    /// A `kubescheduler.config.k8s.io/v1` KubeSchedulerConfiguration (YAML or JSON): its profiles
    /// (one scheduler per `schedulerName`), plugins, args, back-off and leader election replace
    /// the flags. Not together with --policy-config-file.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// percentageOfNodesToScore: 100 scores every node, 0 is upstream's adaptive rule.
    #[arg(long, default_value_t = 100)]
    pub percentage_of_nodes_to_score: u32,
    /// Never preempt lower-priority pods to make room (upstream `--disable-preemption`).
    #[arg(long)]
    pub disable_preemption: bool,
    /// Elect one active replica through a coordination.k8s.io/v1 Lease (`--leader-elect=false` to
    /// schedule without one).
    #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true",
          action = clap::ArgAction::Set)]
    pub leader_elect: bool,
    /// Name of the Lease (default: the scheduler name).
    #[arg(long)]
    pub leader_elect_resource_name: Option<String>,
    /// Namespace of the Lease.
    #[arg(long, default_value = "kube-system")]
    pub leader_elect_resource_namespace: String,
    /// How long standbys wait after the leader's last observed renewal before taking over.
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    pub leader_elect_lease_duration: Duration,
    /// How long the leader keeps trying to renew before it stops scheduling and exits.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub leader_elect_renew_deadline: Duration,
    /// Time between attempts to acquire or renew the Lease.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub leader_elect_retry_period: Duration,
    /// Where to serve /metrics, /healthz and /readyz (plain HTTP; port 0 picks a free one;
    /// an empty value serves nothing).
    #[arg(long, default_value = "127.0.0.1:10259")]
    pub metrics_bind_address: String,
    /// `--logging-format`, `-v`.
    #[command(flatten)]
    pub logging: crate::logging::LoggingArgs,
}

/// Parses a Go-style duration as kube-scheduler's flags take it: `15s`, `500ms`, `1m`, `1m30s`,
/// or plain seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    duration::parse_with(text, duration::Syntax::FLAG)
        .map_err(|_| format!("invalid duration {text:?} (examples: 15s, 500ms, 1m)"))
}

/// Loads a policy file, or the default policy without one. The error names the file and entries.
pub fn load_policy(path: Option<&Path>) -> anyhow::Result<Policy> {
    match path {
        None => Ok(Policy::default_policy()),
        Some(p) => Policy::from_file(p).map_err(|e| anyhow::anyhow!("{e}")),
    }
}

/// What a scheduler runs: the seed's Policy world, or the profiles of a KubeSchedulerConfiguration.
pub enum Scheduling {
    /// A `kind: Policy` file (or the seed's default policy).
    Policy(Policy),
    /// A KubeSchedulerConfiguration: its profiles, compiled, and the whole file.
    Profiles(Vec<CompiledProfile>, Box<SchedulerConfiguration>),
}

/// Loads a KubeSchedulerConfiguration and compiles its profiles; errors name the file and fields.
pub fn load_configuration(
    path: &Path,
) -> anyhow::Result<(Vec<CompiledProfile>, SchedulerConfiguration)> {
    let config = SchedulerConfiguration::from_file(path).map_err(|e| anyhow::anyhow!("{e}"))?;
    let profiles = config.compile().map_err(|e| {
        anyhow::anyhow!(
            "{}",
            berth_scheduler::config::ConfigError {
                file: Some(path.display().to_string()),
                errors: e.errors
            }
        )
    })?;
    Ok((profiles, config))
}

/// The Policy file or the KubeSchedulerConfiguration (never both: they configure different eras
/// of the scheduler).
pub fn load_scheduling(policy: Option<&Path>, config: Option<&Path>) -> anyhow::Result<Scheduling> {
    match (policy, config) {
        (Some(_), Some(_)) => anyhow::bail!(
            "a scheduler policy file and a KubeSchedulerConfiguration cannot be used together: \
             give either the `kind: Policy` file or the configuration"
        ),
        (_, Some(path)) => {
            let (profiles, config) = load_configuration(path)?;
            Ok(Scheduling::Profiles(profiles, Box::new(config)))
        }
        (policy, None) => Ok(Scheduling::Policy(load_policy(policy)?)),
    }
}

/// Publishes what each profile runs, for `berth explain`: the configuration file under each
/// profile's name (`kube-system/<schedulerName>-running-policy`).
pub(crate) async fn publish_profiles(
    client: kube::Client,
    profiles: &[CompiledProfile],
    path: &Path,
) {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!(file = %path.display(), error = %e, "could not re-read the configuration to publish it");
            return;
        }
    };
    let source = path.display().to_string();
    for p in profiles {
        if let Err(e) = driver::published_policy::publish_profile(
            client.clone(),
            &p.scheduler_name,
            &text,
            &source,
        )
        .await
        {
            tracing::warn!(scheduler = %p.scheduler_name, error = %e,
                "could not publish the running profile (berth explain will not find it)");
        }
    }
}

/// Publishes the policy a scheduler runs for `berth explain` (`kube-system/<name>-running-policy`); a
/// scheduler whose account may not write it (upstream's `system:kube-scheduler` role does not
/// grant ConfigMaps) schedules all the same, and says so once.
pub(crate) async fn publish_policy(
    client: kube::Client,
    name: &str,
    policy: &Policy,
    source: &str,
) {
    if let Err(e) = driver::published_policy::publish(client, name, policy, source).await {
        // The API's own words, not the client's dump of its Status.
        let e = match e {
            kube::Error::Api(status) => status.message,
            e => e.to_string(),
        };
        tracing::warn!(scheduler = %name, error = %e,
            "could not publish the running policy (berth explain will not find it)");
    }
}

/// Where a policy came from, as published: the file's path, or `default`.
pub(crate) fn policy_source(path: Option<&Path>) -> String {
    path.map_or_else(|| "default".to_string(), |p| p.display().to_string())
}

/// A kube client from a kubeconfig file, or the usual inference (in-cluster inside a pod).
pub async fn client(kubeconfig: Option<&Path>, program: &str) -> anyhow::Result<kube::Client> {
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
    crate::client::build(config, program)
}

/// Binds `address` and serves the scheduler's metrics and health there; returns where it serves.
pub async fn serve_metrics(address: &str, ops: Ops) -> anyhow::Result<std::net::SocketAddr> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("listening on {address} for /metrics"))?;
    let local = listener.local_addr()?;
    tokio::spawn(async move {
        if let Err(e) = driver::ops::serve(listener, ops).await {
            tracing::error!(error = %e, "serving /metrics stopped");
        }
    });
    Ok(local)
}

/// The Lease configuration the flags ask for (none with `--leader-elect=false`).
pub(crate) fn election_config(
    args: &SchedulerArgs,
) -> anyhow::Result<Option<LeaderElectionConfig>> {
    let election = args.leader_elect.then(|| LeaderElectionConfig {
        namespace: args.leader_elect_resource_namespace.clone(),
        name: args
            .leader_elect_resource_name
            .clone()
            .unwrap_or_else(|| args.scheduler_name.clone()),
        identity: leader::default_identity(),
        lease_duration: args.leader_elect_lease_duration,
        renew_deadline: args.leader_elect_renew_deadline,
        retry_period: args.leader_elect_retry_period,
    });
    if let Some(e) = &election {
        e.validate().map_err(|m| anyhow::anyhow!(m))?;
    }
    Ok(election)
}

/// The name the scheduler's loop is supervised under.
pub(crate) const LOOP_NAME: &str = "scheduler";

/// Runs the scheduling driver under `supervisor`: a driver that panics or fails (a watch
/// that ended, say) is logged, counted and started afresh after a back-off. The task runs
/// until aborted.
pub(crate) fn supervise(
    supervisor: &Supervisor,
    client: kube::Client,
    cfg: DriverConfig,
    ops: Ops,
    leading: Option<tokio::sync::watch::Receiver<bool>>,
) -> tokio::task::JoinHandle<()> {
    // One loop per profile: the first keeps the plain name, the others add their schedulerName.
    let name = match &cfg.profile {
        Some(p) if p.scheduler_name != "default-scheduler" => {
            format!("{LOOP_NAME}/{}", p.scheduler_name)
        }
        _ => LOOP_NAME.to_string(),
    };
    supervisor.spawn(name, move || {
        driver::run_with(client.clone(), cfg.clone(), ops.clone(), leading.clone())
    })
}

/// The driver configuration the flags ask for.
pub(crate) fn driver_config(args: &SchedulerArgs, policy: Policy) -> DriverConfig {
    DriverConfig {
        policy,
        percentage_of_nodes_to_score: args.percentage_of_nodes_to_score,
        disable_preemption: args.disable_preemption,
        ..DriverConfig::named(&args.scheduler_name)
    }
}

/// The Lease configuration of a KubeSchedulerConfiguration's `leaderElection` block.
fn configured_election(c: &SchedulerConfiguration) -> anyhow::Result<Option<LeaderElectionConfig>> {
    let le = &c.leader_election;
    let election = le.leader_elect.then(|| LeaderElectionConfig {
        namespace: le.resource_namespace.clone(),
        name: le.resource_name.clone(),
        identity: leader::default_identity(),
        lease_duration: le.lease_duration,
        renew_deadline: le.renew_deadline,
        retry_period: le.retry_period,
    });
    if let Some(e) = &election {
        e.validate().map_err(|m| anyhow::anyhow!(m))?;
    }
    Ok(election)
}

pub async fn run(args: SchedulerArgs) -> anyhow::Result<()> {
    let scheduling = load_scheduling(args.policy_config_file.as_deref(), args.config.as_deref())?;
    let (cfgs, election, kubeconfig, name) = match scheduling {
        Scheduling::Policy(policy) => {
            let election = election_config(&args)?;
            let client = client(args.kubeconfig.as_deref(), "kube-scheduler").await?;
            let source = policy_source(args.policy_config_file.as_deref());
            publish_policy(client.clone(), &args.scheduler_name, &policy, &source).await;
            return run_instances(
                &args,
                vec![driver_config(&args, policy)],
                election,
                client,
                args.scheduler_name.clone(),
            )
            .await;
        }
        Scheduling::Profiles(profiles, config) => {
            let election = configured_election(&config)?;
            let kubeconfig = args.kubeconfig.clone().or_else(|| {
                let k = &config.client_connection.kubeconfig;
                (!k.is_empty()).then(|| PathBuf::from(k))
            });
            let names: Vec<String> = profiles.iter().map(|p| p.scheduler_name.clone()).collect();
            let cfgs: Vec<DriverConfig> = profiles
                .into_iter()
                .map(DriverConfig::for_profile)
                .collect();
            (cfgs, election, kubeconfig, names.join(", "))
        }
    };
    let client = client(kubeconfig.as_deref(), "kube-scheduler").await?;
    let profiles: Vec<CompiledProfile> = cfgs.iter().filter_map(|c| c.profile.clone()).collect();
    if let Some(path) = args.config.as_deref() {
        publish_profiles(client.clone(), &profiles, path).await;
    }
    run_instances(&args, cfgs, election, client, name).await
}

/// Runs one scheduling loop per configuration (one per profile), with /metrics and leader
/// election shared by all of them.
async fn run_instances(
    args: &SchedulerArgs,
    cfgs: Vec<DriverConfig>,
    election: Option<LeaderElectionConfig>,
    client: kube::Client,
    name: String,
) -> anyhow::Result<()> {
    let Some(first) = cfgs.first() else {
        anyhow::bail!("no scheduler profile to run");
    };
    let clock = first.clock.clone();
    // The scheduling loop's supervisor reports here: /metrics counts its restarts and
    // /readyz fails while it is down.
    let loops = LoopHealth::new();
    let ops = Ops::with_loops(loops.clone());
    let supervisor = Supervisor::new(loops, clock.clone());
    if !args.metrics_bind_address.is_empty() {
        let at = serve_metrics(&args.metrics_bind_address, ops.clone()).await?;
        println!("serving /metrics, /healthz and /readyz at http://{at} (plain HTTP)");
    }
    if cfgs.len() == 1 {
        println!("berth scheduler {:?} is running", cfgs[0].scheduler_name);
    } else {
        println!("berth scheduler is running profiles {name}");
    }
    let Some(election) = election else {
        ops.set_leading(true);
        let scheduling: Vec<_> = cfgs
            .into_iter()
            .map(|cfg| supervise(&supervisor, client.clone(), cfg, ops.clone(), None))
            .collect();
        let signal = shutdown_signal().await;
        scheduling.iter().for_each(|s| s.abort());
        driver::flush_events().await;
        println!("received {signal}; exiting");
        return Ok(());
    };
    let lease = format!("{}/{}", election.namespace, election.name);
    println!(
        "leader election: lease {lease}, identity {}",
        election.identity
    );
    let (tx, rx) = tokio::sync::watch::channel(false);
    let elector = driver::LeaderElector::new(client.clone(), election, clock.clone());
    let mut watch_leading = rx.clone();
    let ops_leading = ops.clone();
    let lease_name = lease.clone();
    tokio::spawn(async move {
        while watch_leading.changed().await.is_ok() {
            let leading = *watch_leading.borrow();
            ops_leading.set_leading(leading);
            if leading {
                println!("became the leader (lease {lease_name}); scheduling");
            }
        }
    });
    let scheduling: Vec<_> = cfgs
        .into_iter()
        .map(|cfg| {
            supervise(
                &supervisor,
                client.clone(),
                cfg,
                ops.clone(),
                Some(rx.clone()),
            )
        })
        .collect();
    let (signal_tx, signal_rx) = tokio::sync::oneshot::channel();
    let shutdown = async move {
        let signal = shutdown_signal().await;
        let _ = signal_tx.send(signal);
    };
    let ended = elector.run(tx, shutdown).await;
    scheduling.iter().for_each(|s| s.abort());
    // Stopped or deposed, the events already queued are written before the exit (bounded).
    driver::flush_events().await;
    match ended {
        // Stopped by a signal: scheduling has stopped and the lease is given up.
        Ok(()) => {
            let signal = signal_rx.await.unwrap_or("a signal");
            println!("received {signal}; stopped leading and gave up the lease {lease}; exiting");
            Ok(())
        }
        // Like kube-scheduler: stop at once; a supervisor restarts us as a standby.
        Err(lost) => anyhow::bail!("{lost}; exiting"),
    }
}

/// Resolves with the signal's name on SIGTERM (how Kubernetes stops a pod) or SIGINT (Ctrl-C).
pub(crate) async fn shutdown_signal() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = tokio::signal::ctrl_c() => "SIGINT",
        },
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for SIGTERM; stopping on SIGINT only");
            let _ = tokio::signal::ctrl_c().await;
            "SIGINT"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn durations_as_kube_scheduler_flags_take_them() {
        for (text, want) in [
            ("15s", Duration::from_secs(15)),
            ("15", Duration::from_secs(15)),
            ("500ms", Duration::from_millis(500)),
            ("1m30s", Duration::from_secs(90)),
            ("1.5s", Duration::from_millis(1500)),
        ] {
            assert_eq!(parse_duration(text), Ok(want), "{text}");
        }
        for bad in ["", "s", "15x", "-1s", "1s2"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
