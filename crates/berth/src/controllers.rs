//! `berth controllers`: the controllers of `berth serve` (workloads, garbage collection, pod GC,
//! namespaces, node lifecycle, taints, disruption budgets, the root CA publisher) against any
//! API server, leader-elected through a
//! Lease as kube-controller-manager is, with upstream's flag names.

use crate::scheduler::{client, parse_duration};
use anyhow::Context;
use berth_core::clock::Clock;
use berth_scheduler::driver::{leader, LeaderElectionConfig, LeaderElector};
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct ControllersArgs {
    /// Kubeconfig of the cluster (default: $KUBECONFIG, in-cluster, or ~/.kube/config).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Elect one active replica through a coordination.k8s.io/v1 Lease (`--leader-elect=false` to
    /// run without one).
    #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true",
          action = clap::ArgAction::Set)]
    pub leader_elect: bool,
    /// Name of the Lease.
    #[arg(long, default_value = "kube-controller-manager")]
    pub leader_elect_resource_name: String,
    /// Namespace of the Lease.
    #[arg(long, default_value = "kube-system")]
    pub leader_elect_resource_namespace: String,
    /// How long standbys wait after the leader's last observed renewal before taking over.
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    pub leader_elect_lease_duration: Duration,
    /// How long the leader keeps trying to renew before it stops and exits.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub leader_elect_renew_deadline: Duration,
    /// Time between attempts to acquire or renew the Lease.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub leader_elect_retry_period: Duration,
    /// Terminated pods kept before pod GC deletes the oldest (0 keeps them all).
    #[arg(long, default_value_t = berth_controllers::podgc::DEFAULT_TERMINATED_THRESHOLD)]
    pub terminated_pod_gc_threshold: usize,
    /// How long a node may go without a heartbeat before it is marked Unknown.
    #[arg(long, default_value = "40s", value_parser = parse_duration)]
    pub node_monitor_grace_period: Duration,
    #[command(flatten)]
    pub zones: ZoneArgs,
    #[command(flatten)]
    pub autoscaler: AutoscalerArgs,
    /// `--logging-format`, `-v`.
    #[command(flatten)]
    pub logging: crate::logging::LoggingArgs,
    /// Which controllers run, by kube-controller-manager's names: `*` all, `name` one,
    /// `-name` all but one (`--controllers='*,-namespace-controller'`).
    #[arg(long, value_delimiter = ',', default_value = "*")]
    pub controllers: Vec<String>,
    /// The cluster CA (PEM) published as `kube-root-ca.crt` in every namespace (default: the
    /// kubeconfig's certificate authority).
    #[arg(long)]
    pub root_ca_file: Option<PathBuf>,
    /// As kube-controller-manager's flag: each controller acts as its own ServiceAccount
    /// `kube-system:<controller>` (created if missing, with a token requested for a year),
    /// authorized by its `system:controller:<controller>` role, instead of the kubeconfig's
    /// identity; the shared watches still read as the kubeconfig's.
    #[arg(long)]
    pub use_service_account_credentials: bool,
    /// The CA certificate (PEM) that signs approved CertificateSigningRequests; with
    /// `--cluster-signing-key-file`, runs the CSR signing controller.
    #[arg(long, requires = "cluster_signing_key_file")]
    pub cluster_signing_cert_file: Option<PathBuf>,
    /// The CA's private key (PEM).
    #[arg(long, requires = "cluster_signing_cert_file")]
    pub cluster_signing_key_file: Option<PathBuf>,
    /// Serve the controllers' /metrics, /healthz and /readyz on this address (plain HTTP, e.g.
    /// `127.0.0.1:10257`); empty serves none.
    #[arg(long, default_value = "")]
    pub metrics_bind_address: String,
}

/// The node lifecycle controller's zone flags (kube-controller-manager's names and defaults).
#[derive(clap::Args, Debug, Clone)]
pub struct ZoneArgs {
    /// Nodes per second tainted NoExecute (their pods evicted) in a healthy zone.
    #[arg(long, default_value_t = 0.1)]
    pub node_eviction_rate: f64,
    /// The same in a partially disrupted zone of more than --large-cluster-size-threshold nodes.
    #[arg(long, default_value_t = 0.01)]
    pub secondary_node_eviction_rate: f64,
    /// The fraction of not-ready nodes (more than 2) that makes a zone partially disrupted.
    #[arg(long, default_value_t = 0.55)]
    pub unhealthy_zone_threshold: f64,
    /// A zone of more nodes than this keeps evicting, at the secondary rate, when partially
    /// disrupted; a smaller one stops.
    #[arg(long, default_value_t = 50)]
    pub large_cluster_size_threshold: usize,
    /// How often the node lifecycle controller checks node health.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub node_monitor_period: Duration,
}

impl ZoneArgs {
    /// The zone settings, refused when a rate or the threshold is out of range.
    pub fn zones(&self) -> anyhow::Result<berth_controllers::lifecycle::zones::ZoneConfig> {
        let rates = [
            ("--node-eviction-rate", self.node_eviction_rate),
            (
                "--secondary-node-eviction-rate",
                self.secondary_node_eviction_rate,
            ),
        ];
        for (flag, rate) in rates {
            if !rate.is_finite() || rate < 0.0 {
                anyhow::bail!("{flag}: must be a number of nodes per second >= 0, got {rate}");
            }
        }
        let t = self.unhealthy_zone_threshold;
        if !(t > 0.0 && t <= 1.0) {
            anyhow::bail!("--unhealthy-zone-threshold: must be in (0, 1], got {t}");
        }
        Ok(berth_controllers::lifecycle::zones::ZoneConfig {
            eviction_rate: self.node_eviction_rate,
            secondary_eviction_rate: self.secondary_node_eviction_rate,
            unhealthy_zone_threshold: t,
            large_cluster_size_threshold: self.large_cluster_size_threshold,
        })
    }
}

/// The horizontal pod autoscaler's flags (kube-controller-manager's names and defaults).
#[derive(clap::Args, Debug, Clone)]
pub struct AutoscalerArgs {
    /// How often each HorizontalPodAutoscaler is reconciled.
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    pub horizontal_pod_autoscaler_sync_period: Duration,
    /// How long a scale-down waits for every recommendation to agree (autoscalers without
    /// `spec.behavior`).
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub horizontal_pod_autoscaler_downscale_stabilization: Duration,
    /// The usage ratio's distance from 1 under which nothing is scaled.
    #[arg(long, default_value_t = 0.1)]
    pub horizontal_pod_autoscaler_tolerance: f64,
    /// How long after a pod starts its CPU samples count only once taken a window after it
    /// became ready.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub horizontal_pod_autoscaler_cpu_initialization_period: Duration,
    /// After that period, how soon after its start a pod's turning unready means it never was
    /// ready.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub horizontal_pod_autoscaler_initial_readiness_delay: Duration,
}

impl AutoscalerArgs {
    /// The autoscaler's settings, refused when the tolerance is negative or not a number.
    pub fn config(&self) -> anyhow::Result<berth_controllers::podautoscaler::Config> {
        let tolerance = self.horizontal_pod_autoscaler_tolerance;
        if !tolerance.is_finite() || tolerance < 0.0 {
            anyhow::bail!("--horizontal-pod-autoscaler-tolerance: must be >= 0, got {tolerance}");
        }
        let delta = |d: Duration| chrono::TimeDelta::from_std(d).unwrap_or(chrono::TimeDelta::MAX);
        Ok(berth_controllers::podautoscaler::Config {
            sync_period: self.horizontal_pod_autoscaler_sync_period,
            settings: berth_controllers::podautoscaler::reconcile::Settings {
                calculator: berth_controllers::podautoscaler::replicas::Calculator {
                    tolerance,
                    cpu_initialization_period: delta(
                        self.horizontal_pod_autoscaler_cpu_initialization_period,
                    ),
                    initial_readiness_delay: delta(
                        self.horizontal_pod_autoscaler_initial_readiness_delay,
                    ),
                },
                downscale_stabilization: delta(
                    self.horizontal_pod_autoscaler_downscale_stabilization,
                ),
            },
        })
    }
}

/// The `--controllers` selection, refused as upstream refuses an unknown name.
pub fn selection(list: &[String]) -> anyhow::Result<berth_controllers::selection::Selection> {
    berth_controllers::selection::Selection::parse(list)
        .map_err(|e| anyhow::anyhow!("--controllers: {e}"))
}

/// The kubeconfig's connection settings.
async fn config(args: &ControllersArgs) -> anyhow::Result<kube::Config> {
    Ok(match args.kubeconfig.as_deref() {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?
        }
        None => kube::Config::infer().await?,
    })
}

/// A client per controller ServiceAccount of `kube-system` (made if missing), each with a
/// token of its own from the TokenRequest API, renewed before it expires, as
/// kube-controller-manager's `--use-service-account-credentials` does
/// ([`berth_controllers::credentials`]).
async fn service_account_clients(
    client: &kube::Client,
    config: &kube::Config,
    clock: &Clock,
) -> anyhow::Result<berth_controllers::ServiceAccountCredentials> {
    use berth_controllers::credentials::{self, SharedToken};
    let mut clients = std::collections::HashMap::new();
    for &account in berth_controllers::SERVICE_ACCOUNTS {
        let issue = token_issuer(client.clone(), account);
        let issued = issue().await.map_err(anyhow::Error::msg)?;
        let token = SharedToken::new(issued.token);
        let due = credentials::renew_at(clock.now(), issued.expires);
        tokio::spawn(credentials::keep_renewed(
            clock.clone(),
            account.to_string(),
            token.clone(),
            due,
            issue,
        ));
        clients.insert(
            account.to_string(),
            crate::client::build_with_token(config.clone(), "kube-controller-manager", token)?,
        );
    }
    let fallback = client.clone();
    Ok(std::sync::Arc::new(move |account: &str| {
        clients
            .get(account)
            .cloned()
            .unwrap_or_else(|| fallback.clone())
    }))
}

/// Issues tokens for ServiceAccount `kube-system/<account>` through `client`: a TokenRequest
/// for upstream's hour, the account created first when it is missing (as upstream's token
/// source gets or creates it before each request).
fn token_issuer(
    client: kube::Client,
    account: &'static str,
) -> berth_controllers::credentials::Issue {
    use berth_controllers::credentials::{Issued, EXPIRATION_SECONDS};
    use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
    use k8s_openapi::api::core::v1::ServiceAccount;
    use kube::api::{Api, PostParams};
    std::sync::Arc::new(
        move || -> futures::future::BoxFuture<'static, Result<Issued, String>> {
            let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "kube-system");
            Box::pin(async move {
                let request = TokenRequest {
                    spec: TokenRequestSpec {
                        audiences: Vec::new(),
                        expiration_seconds: Some(EXPIRATION_SECONDS),
                        ..Default::default()
                    },
                    ..Default::default()
                };
                let pp = PostParams::default();
                let mut answer = accounts.create_token_request(account, &pp, &request).await;
                if matches!(&answer, Err(kube::Error::Api(s)) if s.code == 404) {
                    let sa = ServiceAccount {
                        metadata: kube::api::ObjectMeta {
                            name: Some(account.to_string()),
                            ..Default::default()
                        },
                        ..Default::default()
                    };
                    match accounts.create(&pp, &sa).await {
                        Ok(_) => {}
                        Err(kube::Error::Api(s)) if s.code == 409 => {}
                        Err(e) => {
                            return Err(format!(
                                "creating ServiceAccount kube-system/{account}: {e}"
                            ))
                        }
                    }
                    answer = accounts.create_token_request(account, &pp, &request).await;
                }
                let status = answer
                .map_err(|e| {
                    format!("requesting a token for ServiceAccount kube-system/{account}: {e}")
                })?
                .status
                .ok_or_else(|| {
                    format!("the token request for ServiceAccount kube-system/{account} has no status")
                })?;
                // The expiry as the API server wrote it (RFC 3339), whatever type the client uses.
                let expires = serde_json::to_value(&status.expiration_timestamp)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .and_then(|t| chrono::DateTime::parse_from_rfc3339(&t).ok())
                    .map(|t| t.with_timezone(&chrono::Utc));
                Ok(Issued {
                    token: status.token,
                    expires,
                })
            })
        },
    )
}

/// The CA to publish: `--root-ca-file`, else the kubeconfig's certificate authority.
async fn root_ca(args: &ControllersArgs) -> anyhow::Result<Option<String>> {
    if let Some(path) = &args.root_ca_file {
        let pem = std::fs::read_to_string(path)
            .with_context(|| format!("--root-ca-file: reading {}", path.display()))?;
        return Ok(Some(pem));
    }
    let config = config(args).await?;
    Ok(config.root_cert.map(|certs| {
        certs
            .iter()
            .map(|der| berth_controllers::certificates::pem_certificate(der))
            .collect()
    }))
}

pub async fn run(args: ControllersArgs) -> anyhow::Result<()> {
    let selection = selection(&args.controllers)?;
    let client = client(args.kubeconfig.as_deref(), "kube-controller-manager").await?;
    let ca = root_ca(&args).await?;
    let clock = Clock::system();
    let metrics = berth_controllers::metrics::ControllerMetrics::new();
    // The controllers' supervisor marks a crashed loop here: served at /readyz and /metrics.
    let loops = berth_core::loop_health::LoopHealth::new();
    if !args.metrics_bind_address.is_empty() {
        let address = &args.metrics_bind_address;
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .with_context(|| format!("--metrics-bind-address: listening on {address}"))?;
        println!(
            "serving /metrics, /healthz and /readyz at http://{} (plain HTTP)",
            listener.local_addr()?
        );
        let (served, loops) = (metrics.clone(), loops.clone());
        tokio::spawn(async move {
            if let Err(e) = berth_controllers::metrics::serve(listener, served, loops).await {
                tracing::error!(error = %e, "serving /metrics stopped");
            }
        });
    }
    let controllers = berth_controllers::Controllers::new(client.clone(), clock.clone())
        .metrics(metrics)
        .loop_health(loops)
        .node_monitor_grace_period(args.node_monitor_grace_period)
        .node_monitor_period(args.zones.node_monitor_period)
        .zones(args.zones.zones()?)
        .terminated_pod_gc_threshold(args.terminated_pod_gc_threshold)
        .horizontal_pod_autoscaler(args.autoscaler.config()?)
        .selection(selection);
    let mut controllers = match ca {
        Some(ca) => controllers.root_ca(ca),
        None => controllers,
    };
    if let (Some(cert), Some(key)) = (
        &args.cluster_signing_cert_file,
        &args.cluster_signing_key_file,
    ) {
        let read = |path: &PathBuf, flag: &str| {
            std::fs::read_to_string(path)
                .with_context(|| format!("{flag}: reading {}", path.display()))
        };
        controllers = controllers.csr_signer(berth_controllers::certificates::Signer::new(
            read(cert, "--cluster-signing-cert-file")?,
            read(key, "--cluster-signing-key-file")?,
        ));
    }
    if args.use_service_account_credentials {
        let config = config(&args).await?;
        controllers = controllers
            .service_account_credentials(service_account_clients(&client, &config, &clock).await?);
    }
    if !args.leader_elect {
        controllers.spawn();
        println!("berth controllers are running (no leader election)");
        let signal = shutdown_signal().await;
        println!("received {signal}; exiting");
        return Ok(());
    }
    let election = LeaderElectionConfig {
        namespace: args.leader_elect_resource_namespace.clone(),
        name: args.leader_elect_resource_name.clone(),
        identity: leader::default_identity(),
        lease_duration: args.leader_elect_lease_duration,
        renew_deadline: args.leader_elect_renew_deadline,
        retry_period: args.leader_elect_retry_period,
    };
    election.validate().map_err(|m| anyhow::anyhow!(m))?;
    let lease = format!("{}/{}", election.namespace, election.name);
    println!(
        "leader election: lease {lease}, identity {}",
        election.identity
    );
    let (tx, mut rx) = tokio::sync::watch::channel(false);
    let elector = LeaderElector::new(client, election, clock);
    let lease_name = lease.clone();
    // The controllers start once we lead; losing the lease ends the process (a supervisor
    // restarts it as a standby), as kube-controller-manager does.
    tokio::spawn(async move {
        while rx.changed().await.is_ok() {
            if *rx.borrow() {
                println!("became the leader (lease {lease_name}); running the controllers");
                controllers.spawn();
                return;
            }
        }
    });
    let shutdown = async {
        let signal = shutdown_signal().await;
        println!("received {signal}; giving up the lease {lease}");
    };
    match elector.run(tx, shutdown).await {
        Ok(()) => Ok(()),
        Err(lost) => anyhow::bail!("{lost}; exiting"),
    }
}

/// Resolves with the signal's name on SIGTERM or SIGINT.
async fn shutdown_signal() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = tokio::signal::ctrl_c() => "SIGINT",
        },
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            "SIGINT"
        }
    }
}
