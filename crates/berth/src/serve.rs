//! `berth serve`: the API server over embedded storage, with simulated nodes, in one process.

use anyhow::Context;
use berth_apiserver::{tls, ApiServer, Clock};
use berth_store::Store;
use std::path::PathBuf;

#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind_address: String,
    /// Port to listen on (0 picks a free one; the kubeconfig names the one chosen).
    #[arg(long, default_value_t = 6443)]
    pub port: u16,
    /// Where the store, the certificates and the kubeconfig live.
    #[arg(long, default_value = "./berth-data")]
    pub data_dir: PathBuf,
    /// How many simulated nodes to register (node-1..node-N); ignored with --cluster.
    #[arg(long, default_value_t = 3)]
    pub nodes: usize,
    /// Node pools of simulated nodes (see examples/cluster.yaml); replaces --nodes.
    #[arg(long)]
    pub cluster: Option<PathBuf>,
    /// How often each simulated node runs its eviction manager (upstream: 10s).
    #[arg(long, default_value = "10s", value_parser = parse_interval)]
    pub housekeeping_interval: std::time::Duration,
    /// Keep everything in memory (nothing survives a restart).
    #[arg(long)]
    pub memory_store: bool,
    /// The scheduler policy file (the seed's `kind: Policy`, JSON or YAML); the default policy without one.
    #[arg(long)]
    pub policy_config_file: Option<PathBuf>,
    /// Run the built-in scheduler with this `kubescheduler.config.k8s.io/v1`
    /// KubeSchedulerConfiguration (its profiles, plugins and args) instead of a policy file.
    #[arg(long)]
    pub scheduler_config: Option<PathBuf>,
    /// Do not run the built-in `default-scheduler` (pods stay Pending unless another scheduler binds them).
    #[arg(long)]
    pub disable_scheduler: bool,
    /// Serve the built-in scheduler's /metrics, /healthz and /readyz on this address (plain HTTP).
    #[arg(long)]
    pub scheduler_metrics_address: Option<String>,
    /// How long a node may go without a lease renewal or status heartbeat before the node
    /// lifecycle controller marks it `Unknown` and taints it (`40s`, `2m`, or seconds).
    #[arg(long, default_value = "40s", value_parser = berth_controllers::parse_duration)]
    pub node_monitor_grace_period: std::time::Duration,
    /// Terminated pods kept before pod GC deletes the oldest (0 keeps them all).
    #[arg(long, default_value_t = berth_controllers::podgc::DEFAULT_TERMINATED_THRESHOLD)]
    pub terminated_pod_gc_threshold: usize,
    /// As kube-controller-manager's flag: each controller writes as its own ServiceAccount
    /// `kube-system:<controller>`, authorized by its `system:controller:*` role, instead of
    /// as the controller manager.
    #[arg(long)]
    pub use_service_account_credentials: bool,
    /// The horizontal pod autoscaler's `--horizontal-pod-autoscaler-*` flags.
    #[command(flatten)]
    pub autoscaler: crate::controllers::AutoscalerArgs,
    /// As kube-apiserver's flag: a pod-bound token a kubelet asks for with
    /// `expirationSeconds: 3607` is signed for a year, and its uses after the hour count as
    /// stale (`serviceaccount_stale_tokens_total`), so programs that never reread their token
    /// keep working. `=false` signs every token for what it asked.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub service_account_extend_token_expiration: bool,
    /// Run the cluster's clock this many times as fast as the machine's, for demos and tests:
    /// with 60, a CronJob every minute runs each second, and every timer of the control plane
    /// and the simulated nodes (leases, grace periods, tolerationSeconds, run and termination
    /// times) passes 60 times as fast. Timestamps run ahead of the machine's clock: `kubectl
    /// get` ages are the cluster's, while `describe` may show ages of the future as `<invalid>`.
    /// Not with --etcd-servers.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=3600))]
    pub time_scale: u32,
    /// The built-in scheduler never preempts lower-priority pods.
    #[arg(long)]
    pub disable_preemption: bool,
    /// An OpenShift `master-config.yaml`: `kubernetesMasterConfig.schedulerArgs.disablePreemption`
    /// (seed 16.6.6) turns preemption and Priority admission off; `admissionConfig.pluginConfig`
    /// enables, disables and configures admission plugins by name.
    #[arg(long)]
    pub master_config: Option<PathBuf>,
    /// kube-apiserver's `AdmissionConfiguration` (`apiserver.config.k8s.io/v1`): each of
    /// `plugins[]` configures the admission plugin it names, inline (`configuration`) or from
    /// a file (`path`), over what `--master-config` says (PodSecurity's `defaults` and
    /// `exemptions`, ...).
    #[arg(long)]
    pub admission_control_config_file: Option<PathBuf>,
    /// How long a new pod tolerates the `node.kubernetes.io/not-ready` NoExecute taint unless
    /// it says otherwise (the DefaultTolerationSeconds admission plugin; upstream: 300).
    #[arg(long)]
    pub default_not_ready_toleration_seconds: Option<u32>,
    /// The same for `node.kubernetes.io/unreachable` (upstream: 300).
    #[arg(long)]
    pub default_unreachable_toleration_seconds: Option<u32>,
    /// The CIDR Service cluster IPs are allocated from; its first address is the `kubernetes`
    /// Service's.
    #[arg(long, default_value = "10.96.0.0/12")]
    pub service_cluster_ip_range: String,
    /// The ports NodePort and LoadBalancer Services are allocated from (`min-max`).
    #[arg(long, default_value = "30000-32767")]
    pub service_node_port_range: String,
    /// Run the descheduler in process with this policy (`descheduler/v1alpha1` or `v1alpha2`).
    #[arg(long)]
    pub descheduler_policy: Option<PathBuf>,
    /// With --descheduler-policy: time between descheduler runs (0: once, after the start).
    #[arg(long, default_value = "5m", value_parser = crate::scheduler::parse_duration)]
    pub descheduling_interval: std::time::Duration,
    /// As kube-apiserver's flag: requests without credentials are `system:anonymous` (in
    /// `system:unauthenticated`), whom RBAC authorizes: the health and version paths are open
    /// to them, anything else is 403. `=false` refuses them (401).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub anonymous_auth: bool,
    /// Upstream's static token file (CSV `token,user,uid,"group1,group2"`): bearer tokens of
    /// further users, authorized by RBAC.
    #[arg(long)]
    pub token_auth_file: Option<PathBuf>,
    /// How often each simulated node renews its lease (the kubelet's heartbeat; upstream
    /// 10s). Keep it well under --node-monitor-grace-period.
    #[arg(long, default_value = "10s", value_parser = parse_interval)]
    pub node_status_update_frequency: std::time::Duration,
    /// As kube-apiserver's flag: how long a request that is not long-running (a watch, exec,
    /// attach, port-forward, logs, proxy) may take before the client gets a 504
    /// `Timeout` (0: no limit).
    #[arg(long, default_value = "1m", value_parser = berth_controllers::parse_duration)]
    pub request_timeout: std::time::Duration,
    /// As kube-apiserver's flag: read-only requests (get, list) of network clients served at
    /// once; beyond it a request gets 429 with `Retry-After: 1` (0: no limit). Watches and
    /// other long-running requests, `system:masters`, health probes and berth's own
    /// components are never refused.
    #[arg(long, default_value_t = berth_apiserver::overload::DEFAULT_MAX_REQUESTS_INFLIGHT)]
    pub max_requests_inflight: usize,
    /// As kube-apiserver's flag: the same for mutating requests (create, update, patch,
    /// delete).
    #[arg(long, default_value_t = berth_apiserver::overload::DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT)]
    pub max_mutating_requests_inflight: usize,
    /// As kube-apiserver's flag: API Priority and Fairness classifies each request by the
    /// FlowSchemas (`kubectl get flowschemas`) and queues it fairly in its priority level for
    /// one of the two in-flight limits' seats; `=false` applies only the in-flight limits.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub enable_priority_and_fairness: bool,
    /// As kube-apiserver's flag: streams one HTTP/2 connection may have open at once (0:
    /// upstream's default, 100).
    #[arg(long, default_value_t = 0)]
    pub http2_max_streams_per_connection: u32,
    /// Connections the HTTPS listener keeps open at once; beyond it new clients wait until
    /// one closes (0: the open-file limit, raised to its hard maximum at start as Go
    /// programs do, less the descriptors kept for the store and the components).
    #[arg(long, default_value_t = 0)]
    pub max_connections: usize,
    /// Node lifecycle zones and taint rates (--node-eviction-rate, ...).
    #[command(flatten)]
    pub zones: crate::controllers::ZoneArgs,
    /// Which controllers run, by kube-controller-manager's names: `*` all, `name` one,
    /// `-name` all but one (`--controllers='*,-namespace-controller'`).
    #[arg(long, value_delimiter = ',', default_value = "*")]
    pub controllers: Vec<String>,
    /// The seed of the built-in scheduler's tie-breaks among equal-scored nodes (`berth
    /// simulate --seed`).
    #[arg(long, default_value_t = 0, hide = true)]
    pub scheduler_seed: u64,
    /// `berth simulate`'s control plane: the simulated nodes renew no lease and post only
    /// what changed, and the node lifecycle controller takes their simulated behaviour as
    /// their sign of life (see `berth_kubelet::Kubelet::simulation`).
    #[arg(skip)]
    pub simulation: bool,
    /// `berth simulate --from-kubeconfig`: the simulated twins of a live cluster's nodes,
    /// instead of --cluster or --nodes.
    #[arg(skip)]
    pub imported_nodes: Option<Vec<berth_kubelet::NodeConfig>>,
    /// The etcd backend and, with it, the election of the replica running the control loops.
    #[command(flatten)]
    pub etcd: crate::ha::EtcdArgs,
    /// `--logging-format`, `-v`.
    #[command(flatten)]
    pub logging: crate::logging::LoggingArgs,
}

/// Everything `berth serve` started, for callers (benchmarks) that run it in process.
pub struct Running {
    pub kubeconfig: PathBuf,
    pub url: String,
    /// The API server, for the shutdown's drain.
    pub server: berth_apiserver::ApiServer,
}

/// How long a shutdown waits for requests in flight (the default `--request-timeout`: none
/// runs longer).
const DRAIN_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Waits for SIGINT (Ctrl-C) or SIGTERM (what `kill`, systemd and the kubelet send).
async fn shutdown_signal() -> std::io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut terminate = signal(SignalKind::terminate())?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => result,
        _ = terminate.recv() => Ok(()),
    }
}

fn parse_interval(s: &str) -> Result<std::time::Duration, String> {
    berth_kubelet::eviction::thresholds::parse_duration(s).map_err(|e| e.to_string())
}

/// File descriptors kept for everything but client connections: the store's files, the
/// etcd connections, the simulated nodes' and components' sockets, the log.
const RESERVED_FILE_DESCRIPTORS: u64 = 256;

/// The listener's bounds from the flags: `--max-connections 0` is the open-file limit less
/// [`RESERVED_FILE_DESCRIPTORS`], so that connections alone never exhaust the process.
fn connection_limits(args: &ServeArgs) -> berth_apiserver::listener::ConnectionLimits {
    let mut limits = berth_apiserver::listener::ConnectionLimits::default();
    if args.http2_max_streams_per_connection > 0 {
        limits.http2_max_streams_per_connection = args.http2_max_streams_per_connection;
    }
    limits.max_connections = match args.max_connections {
        0 => match raise_open_file_limit() {
            Some(files) => usize::try_from(files.saturating_sub(RESERVED_FILE_DESCRIPTORS))
                .unwrap_or(usize::MAX)
                .max(1),
            None => limits.max_connections,
        },
        n => n,
    };
    tracing::info!(max_connections = limits.max_connections, "HTTPS listener");
    limits
}

/// Raises the soft open-file limit to the hard one, as the Go runtime does at every start
/// (so kube-apiserver runs with it), and returns the limit now in force.
fn raise_open_file_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed by pointer.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return None;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit = raised;
            }
        }
    }
    Some(limit.rlim_cur)
}

/// The simulated nodes: the cluster file's pools, or `--nodes N` quick nodes.
fn simulated_nodes(args: &ServeArgs) -> anyhow::Result<Vec<berth_kubelet::NodeConfig>> {
    if let Some(nodes) = &args.imported_nodes {
        return Ok(nodes.clone());
    }
    let Some(path) = &args.cluster else {
        return Ok(berth_kubelet::NodeConfig::quick(args.nodes));
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the cluster file {}", path.display()))?;
    let cluster = berth_kubelet::config::parse_cluster(&text)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    for ignored in &cluster.ignored {
        tracing::warn!(setting = %ignored, "kubelet argument not simulated; ignored");
    }
    Ok(cluster.nodes)
}

/// The admission configuration of the master config, with the toleration flags applied over
/// DefaultTolerationSeconds' configuration.
fn admission_config(args: &ServeArgs) -> anyhow::Result<berth_apiserver::AdmissionConfig> {
    let mut config = crate::master_config::admission_config(args.master_config.as_deref())?;
    crate::master_config::admission_configuration(
        args.admission_control_config_file.as_deref(),
        &mut config,
    )?;
    let flags = [
        (
            "defaultNotReadyTolerationSeconds",
            args.default_not_ready_toleration_seconds,
        ),
        (
            "defaultUnreachableTolerationSeconds",
            args.default_unreachable_toleration_seconds,
        ),
    ];
    if flags.iter().any(|(_, v)| v.is_some()) {
        let name = "DefaultTolerationSeconds";
        let mut configuration = config
            .configuration(name)
            .cloned()
            .unwrap_or_else(|| serde_json::json!({}));
        for (field, value) in flags {
            if let Some(v) = value {
                configuration[field] = serde_json::json!(v);
            }
        }
        config.insert(
            name,
            configuration,
            "the --default-*-toleration-seconds flags".into(),
        );
    }
    // On as kubeadm turns it on (`--enable-admission-plugins=NodeRestriction`): the simulated
    // kubelets write as their nodes; a master config may still disable it by name.
    if config.configuration("NodeRestriction").is_none() {
        config.insert(
            "NodeRestriction",
            serde_json::json!({}),
            "berth serve's default admission plugins".into(),
        );
    }
    Ok(config)
}

pub async fn start(args: &ServeArgs) -> anyhow::Result<Running> {
    if args.time_scale > 1 && args.etcd.enabled() {
        anyhow::bail!("--time-scale: replicas on etcd share one clock: the machine's; drop --time-scale or --etcd-servers");
    }
    // One clock for every component of the process.
    start_on(args, Clock::system().accelerated(args.time_scale)).await
}

/// `berth serve` with every component on `clock`: the machine's for `serve`, a paused one
/// starting at a fixed time for `berth simulate`.
pub async fn start_on(args: &ServeArgs, clock: Clock) -> anyhow::Result<Running> {
    // A bad cluster file stops the start before anything is served.
    let nodes = simulated_nodes(args)?;
    args.zones.zones()?;
    // A bad policy file stops the start before anything is served.
    let (policy, profiles) = match crate::scheduler::load_scheduling(
        args.policy_config_file.as_deref(),
        args.scheduler_config.as_deref(),
    )? {
        crate::scheduler::Scheduling::Policy(p) => (p, Vec::new()),
        crate::scheduler::Scheduling::Profiles(profiles, _) => {
            (berth_scheduler::policy::Policy::default_policy(), profiles)
        }
    };
    let admission = admission_config(args)?;
    // A bad descheduler policy stops the start before anything is served.
    let descheduler_policy = match &args.descheduler_policy {
        Some(p) => Some(crate::descheduler::load_policy(p)?),
        None => None,
    };
    // Keys, tokens and the store live here: only the owner may look inside.
    tls::create_private_dir(&args.data_dir)
        .with_context(|| format!("creating data dir {}", args.data_dir.display()))?;
    let store = if args.etcd.enabled() {
        args.etcd.open_store().await?
    } else if args.memory_store {
        Store::memory()
    } else {
        Store::open(&args.data_dir.join("store")).with_context(|| {
            format!(
                "opening the store in {}",
                args.data_dir.join("store").display()
            )
        })?
    };
    let listener = tokio::net::TcpListener::bind((args.bind_address.as_str(), args.port))
        .await
        .with_context(|| format!("listening on {}:{}", args.bind_address, args.port))?;
    let port = listener.local_addr()?.port();
    let host = match args.bind_address.as_str() {
        "0.0.0.0" | "::" => "127.0.0.1".to_string(),
        h => h.to_string(),
    };
    let url = format!("https://{host}:{port}");
    let creds = tls::load_or_create(&args.data_dir, std::slice::from_ref(&host))?;
    // The aggregator's client certificate towards extension API servers.
    let front_proxy = tls::load_or_create_front_proxy(&args.data_dir)?;
    let server = ApiServer::new(store, clock.clone(), format!("{host}:{port}"))
        .with_front_proxy(&front_proxy, &creds.ca_pem)
        .map_err(|e| anyhow::anyhow!("the front proxy's client certificate: {e}"))?
        .with_admission(&admission)?
        .with_service_ranges(
            &args.service_cluster_ip_range,
            &args.service_node_port_range,
        )
        .map_err(|e| {
            anyhow::anyhow!("--service-cluster-ip-range/--service-node-port-range: {e}")
        })?;
    let server = match &args.token_auth_file {
        Some(path) => server
            .with_token_auth_file(path)
            .map_err(|e| anyhow::anyhow!("--token-auth-file: {e}"))?,
        None => server,
    };
    // ServiceAccount tokens: signed with <data-dir>/sa.key, made at the first start and kept.
    let server = server
        .with_service_account_key_file(&args.data_dir.join("sa.key"))
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .with_extend_token_expiration(args.service_account_extend_token_expiration)
        .with_anonymous_auth(args.anonymous_auth)
        .with_request_limits(berth_apiserver::overload::RequestLimits {
            max_requests_inflight: args.max_requests_inflight,
            max_mutating_requests_inflight: args.max_mutating_requests_inflight,
            request_timeout: (!args.request_timeout.is_zero()).then_some(args.request_timeout),
        })
        .with_priority_and_fairness(args.enable_priority_and_fairness);
    tracing::info!(plugins = ?server.admission_plugins(), "admission chain");
    server.bootstrap().await.map_err(|e| {
        anyhow::anyhow!(
            "creating the default namespaces and priority classes: {}",
            e.message()
        )
    })?;
    // The embedded store keeps its history as long as kube-apiserver keeps etcd's; with etcd,
    // its compaction rounds already bound every replica's mirror.
    let history_age = args.etcd.etcd_compaction_interval;
    let embedded = args.etcd.etcd_servers.is_empty();
    server.spawn_compactor((embedded && !history_age.is_zero()).then_some(history_age));
    server.spawn_aggregator();
    // Every supervised loop's restarts, whichever component it is, at /metrics.
    let loops_health = server.loop_health();
    server.add_metrics_source(
        "control-loops",
        std::sync::Arc::new(move || loops_health.render_metrics()),
    );
    // Seed 16.6.6: disablePreemption in the master config turns the feature off, admission too.
    let master_disable = crate::master_config::disable_preemption(args.master_config.as_deref())?;
    server.set_pod_priority_disabled(master_disable);

    let kubeconfig = tls::write_kubeconfig(&args.data_dir, &url, &creds)?;
    let config = tls::server_config(&creds)?;
    tokio::spawn(berth_apiserver::listener::serve(
        listener,
        server.authenticated_router(creds.token.clone()),
        config,
        connection_limits(args),
    ));

    // The clients of every component of the process (and of the programs in its pods).
    server.add_metrics_source(
        "rest_client",
        std::sync::Arc::new(berth_core::client_metrics::render),
    );
    let client = kube::Client::new(server.in_process_router(), "default");
    let connect = service_account_clients(url.clone(), creds.ca_pem.clone());
    let tokens = server.legacy_token_signer().map(|signer| {
        let sign: berth_controllers::serviceaccount_token::Signer =
            std::sync::Arc::new(move |ns: &str, sa: &str, uid: &str, secret: &str| {
                signer.sign(ns, sa, uid, secret)
            });
        (sign, creds.ca_pem.clone())
    });
    let accounts = ServiceAccounts {
        tokens,
        connect,
        ca_pem: creds.ca_pem.clone(),
        ca_key_pem: creds.ca_key_pem.clone(),
    };
    let identities = crate::identities::Identities::new(server.clone(), client.clone());
    let api_server = server.clone();
    let loops = Loops {
        args: args.clone(),
        server,
        identities,
        clock,
        nodes,
        policy,
        profiles,
        master_disable,
        descheduler_policy,
        accounts,
    };
    // With etcd, several replicas serve one cluster: each group of loops runs only in the
    // replica holding its own Lease, as upstream's components do.
    if args.etcd.enabled() {
        let election =
            args.etcd
                .election(client.clone(), loops.clock.clone(), loops.supervisor())?;
        // The kubelets are shared among the replicas; the failure schedule runs in one.
        election.run_when_leading(crate::ha::KUBELETS_LEASE, "the node failure schedule", {
            let loops = loops.clone();
            move || loops.clone().failure_schedule()
        })?;
        let replica = args.etcd.replica_id(port);
        let (lease_duration, retry_period) = election.timings();
        let sharing = berth_kubelet::share::Sharing {
            member: election.membership(&replica),
            replica,
            lease_duration,
            retry_period,
        };
        loops.clone().shared_kubelets(sharing).await?;
        election.run_when_leading(crate::ha::CONTROLLER_MANAGER_LEASE, "the controllers", {
            let loops = loops.clone();
            move || loops.clone().controllers()
        })?;
        if loops.descheduler_policy.is_some() {
            election.run_when_leading(crate::ha::DESCHEDULER_LEASE, "the descheduler", {
                let loops = loops.clone();
                move || loops.clone().descheduler()
            })?;
        }
        if !args.disable_scheduler {
            election.run_when_leading(crate::ha::SCHEDULER_LEASE, "the scheduler", {
                let loops = loops.clone();
                move || loops.clone().scheduler()
            })?;
        }
        return Ok(Running {
            kubeconfig,
            url,
            server: api_server,
        });
    }
    loops.clone().kubelets().await?;
    loops.clone().controllers().await?;
    loops.clone().descheduler().await?;
    loops.scheduler().await?;
    Ok(Running {
        kubeconfig,
        url,
        server: api_server,
    })
}

/// What acts on behalf of ServiceAccounts: the tokens controller's signer and the cluster CA,
/// and how in-pod programs get a client as their pod's account.
#[derive(Clone)]
struct ServiceAccounts {
    tokens: Option<(berth_controllers::serviceaccount_token::Signer, String)>,
    connect: berth_kubelet::commands::Connect,
    /// The cluster CA (PEM): the root CA publisher's `kube-root-ca.crt`.
    ca_pem: String,
    /// The cluster CA's key (PEM), with which the CSR signer signs, when the data dir has it.
    ca_key_pem: Option<String>,
}

/// Everything the control loops start from: each group of loops (simulated nodes, controllers,
/// descheduler, scheduler) starts on its own, so that with etcd each can be elected apart.
#[derive(Clone)]
struct Loops {
    args: ServeArgs,
    server: ApiServer,
    identities: crate::identities::Identities,
    clock: Clock,
    nodes: Vec<berth_kubelet::NodeConfig>,
    policy: berth_scheduler::policy::Policy,
    /// The profiles of `--scheduler-config` (empty: the Policy world).
    profiles: Vec<berth_scheduler::config::CompiledProfile>,
    master_disable: bool,
    descheduler_policy: Option<berth_descheduler::Policy>,
    accounts: ServiceAccounts,
}

impl Loops {
    /// The supervisor every loop of the process runs under: a loop that stops is logged,
    /// counted in `berth_control_loop_restarts_total{loop}`, restarted with back-off, and
    /// fails `/readyz` (`poststarthook/berth-control-loops`) while it is down.
    fn supervisor(&self) -> berth_core::supervisor::Supervisor {
        berth_core::supervisor::Supervisor::new(self.server.loop_health(), self.clock.clone())
    }

    /// The simulated nodes' kubelets.
    async fn kubelets(self) -> anyhow::Result<()> {
        self.start_kubelets(None).await
    }

    /// With etcd: the kubelets of the nodes assigned to this replica.
    async fn shared_kubelets(self, sharing: berth_kubelet::share::Sharing) -> anyhow::Result<()> {
        self.start_kubelets(Some(sharing)).await
    }

    /// With etcd: the cluster file's node failure schedule, in the replica leading
    /// `berth-control-plane`.
    async fn failure_schedule(self) -> anyhow::Result<()> {
        let schedule = berth_kubelet::failures::timeline(
            self.nodes
                .iter()
                .map(|n| (n.name.as_str(), n.failures.as_slice())),
        );
        if !schedule.is_empty() {
            berth_kubelet::failures::supervise(
                &self.supervisor(),
                berth_kubelet::failures::LOOP_NAME,
                self.identities.admin(),
                self.clock.clone(),
                schedule,
            );
        }
        Ok(())
    }

    async fn start_kubelets(
        self,
        sharing: Option<berth_kubelet::share::Sharing>,
    ) -> anyhow::Result<()> {
        if self.nodes.is_empty() {
            return Ok(());
        }
        let supervisor = self.supervisor();
        let kubelet = berth_kubelet::Kubelet::new(
            self.identities.admin_as(crate::identities::KUBELET_PROGRAM),
            self.nodes,
        );
        let kubelet = match sharing {
            Some(sharing) => kubelet.shared(sharing),
            None => kubelet,
        };
        kubelet
            .node_credentials(self.identities.nodes())
            .machine_config_daemon(self.identities.machine_config_daemon())
            .housekeeping_interval(self.args.housekeeping_interval)
            .lease_renew_interval(self.args.node_status_update_frequency)
            .simulation(self.args.simulation)
            .clock(self.clock.clone())
            .supervisor(supervisor)
            .commands(programs(&self.clock, self.accounts.connect))
            .start()
            .await?;
        Ok(())
    }

    /// Node lifecycle, condition taints, the NoExecute taint manager, disruption budgets and
    /// the workload controllers: upstream's kube-controller-manager.
    async fn controllers(self) -> anyhow::Result<()> {
        let args = &self.args;
        // The in-process components' metrics are served with the API server's at /metrics.
        let controller_metrics = berth_controllers::metrics::ControllerMetrics::new();
        let rendered = controller_metrics.clone();
        self.server.add_metrics_source(
            "controllers",
            std::sync::Arc::new(move || rendered.render()),
        );
        let mut controllers = berth_controllers::Controllers::new(
            self.identities
                .admin_as(crate::identities::CONTROLLER_MANAGER_PROGRAM),
            self.clock.clone(),
        )
        .informer_client(self.identities.controller_manager())
        .metrics(controller_metrics)
        // A crashed loop makes /readyz fail until its supervisor has restarted it.
        .loop_health(self.server.loop_health())
        .node_monitor_grace_period(args.node_monitor_grace_period)
        .terminated_pod_gc_threshold(args.terminated_pod_gc_threshold)
        .node_monitor_period(args.zones.node_monitor_period)
        .zones(args.zones.zones()?)
        .horizontal_pod_autoscaler(args.autoscaler.config()?)
        .selection(crate::controllers::selection(&args.controllers)?)
        .root_ca(self.accounts.ca_pem.clone());
        if args.use_service_account_credentials {
            controllers = controllers.service_account_credentials(self.identities.controllers());
        }
        if let Some(key) = self.accounts.ca_key_pem.clone() {
            controllers = controllers.csr_signer(berth_controllers::certificates::Signer::new(
                self.accounts.ca_pem.clone(),
                key,
            ));
        }
        if args.simulation {
            controllers = controllers.simulated_nodes(self.nodes.iter().map(|n| n.name.clone()));
        }
        if let Some((signer, ca)) = self.accounts.tokens {
            controllers = controllers.service_account_tokens(signer, ca);
        }
        controllers.spawn();
        Ok(())
    }

    /// The in-process descheduler, if a policy was given.
    async fn descheduler(self) -> anyhow::Result<()> {
        let supervisor = self.supervisor();
        let Some(policy) = self.descheduler_policy else {
            return Ok(());
        };
        // Its `descheduler_pods_evicted` counts are served with the others at /metrics.
        let metrics = berth_descheduler::driver::Metrics::default();
        let rendered = metrics.clone();
        self.server
            .add_metrics_source("descheduler", std::sync::Arc::new(move || rendered.text()));
        crate::descheduler::spawn_in_process(
            &supervisor,
            self.identities.admin_as("descheduler"),
            policy,
            self.args.descheduling_interval,
            self.clock.clone(),
            metrics,
        );
        Ok(())
    }

    /// The built-in default-scheduler, unless disabled.
    async fn scheduler(self) -> anyhow::Result<()> {
        let supervisor = self.supervisor();
        let args = &self.args;
        if args.disable_scheduler {
            return Ok(());
        }
        // Published with the server's own rights: the scheduler's role grants no ConfigMaps.
        let cfgs = if self.profiles.is_empty() {
            let source = crate::scheduler::policy_source(args.policy_config_file.as_deref());
            crate::scheduler::publish_policy(
                self.identities.admin(),
                "default-scheduler",
                &self.policy,
                &source,
            )
            .await;
            vec![berth_scheduler::driver::DriverConfig {
                policy: self.policy,
                disable_preemption: args.disable_preemption || self.master_disable,
                clock: self.clock.clone(),
                seed: args.scheduler_seed,
                ..berth_scheduler::driver::DriverConfig::named("default-scheduler")
            }]
        } else {
            if let Some(path) = args.scheduler_config.as_deref() {
                crate::scheduler::publish_profiles(self.identities.admin(), &self.profiles, path)
                    .await;
            }
            self.profiles
                .iter()
                .map(|p| {
                    let mut cfg = berth_scheduler::driver::DriverConfig::for_profile(p.clone());
                    cfg.disable_preemption |= args.disable_preemption || self.master_disable;
                    cfg.clock = self.clock.clone();
                    cfg.seed = args.scheduler_seed;
                    cfg
                })
                .collect()
        };
        let ops = berth_scheduler::driver::Ops::new();
        let rendered = ops.clone();
        self.server
            .add_metrics_source("scheduler", std::sync::Arc::new(move || rendered.render()));
        if let Some(address) = &args.scheduler_metrics_address {
            let at = crate::scheduler::serve_metrics(address, ops.clone()).await?;
            println!("scheduler metrics at http://{at}/metrics (plain HTTP)");
        }
        ops.set_leading(true);
        // As upstream's kube-scheduler: RBAC authorizes it by its bootstrap role.
        let client = self.identities.scheduler();
        for cfg in cfgs {
            crate::scheduler::supervise(&supervisor, client.clone(), cfg, ops.clone(), None);
        }
        Ok(())
    }
}

/// The programs simulated containers run in process (see `berth_kubelet::commands`), each as
/// its pod's ServiceAccount.
fn programs(
    clock: &Clock,
    connect: berth_kubelet::commands::Connect,
) -> berth_kubelet::commands::Commands {
    let mut commands = berth_kubelet::commands::Commands::default().register(
        "/bin/descheduler",
        crate::descheduler::program(clock.clone()),
    );
    for command in crate::scheduler_pod::COMMANDS {
        commands = commands.register(command, crate::scheduler_pod::program(clock.clone()));
    }
    commands.connect_as_service_account(connect)
}

/// Clients of this server's network listener holding a ServiceAccount token: what programs
/// in simulated pods act through, so RBAC sees them as their pod's ServiceAccount. Each request
/// carries the token the kubelet holds for the pod at that moment (it is refreshed).
fn service_account_clients(url: String, ca_pem: String) -> berth_kubelet::commands::Connect {
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    std::sync::Arc::new(move |token: berth_kubelet::pod_token::TokenSource| {
        let kubeconfig = serde_json::json!({
            "apiVersion": "v1", "kind": "Config", "current-context": "pod",
            "clusters": [{"name": "berth", "cluster": {"server": url, "certificate-authority-data": ca}}],
            "users": [{"name": "pod", "user": {}}],
            "contexts": [{"name": "pod", "context": {"cluster": "berth", "user": "pod"}}],
        });
        Box::pin(async move {
            let kc = kube::config::Kubeconfig::from_yaml(&kubeconfig.to_string())
                .map_err(|e| e.to_string())?;
            let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
                .await
                .map_err(|e| e.to_string())?;
            let bearer = tower::util::MapRequestLayer::new(
                move |mut req: http::Request<kube::client::Body>| {
                    let value = format!("Bearer {}", token.borrow().as_str());
                    if let Ok(value) = http::HeaderValue::from_str(&value) {
                        req.headers_mut().insert(http::header::AUTHORIZATION, value);
                    }
                    req
                },
            );
            let mut config = config;
            let agent = http::HeaderValue::from_str(&crate::client::user_agent("berth-pod"))
                .map_err(|e| e.to_string())?;
            config.headers.push((http::header::USER_AGENT, agent));
            let host = config
                .cluster_url
                .authority()
                .map(|a| a.to_string())
                .unwrap_or_default();
            Ok(kube::client::ClientBuilder::try_from(config)
                .map_err(|e| e.to_string())?
                .with_layer(&bearer)
                .with_layer(&crate::client::CountedLayer::new(&host))
                .build())
        })
    })
}

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let running = start(&args).await?;
    println!("berth is serving the Kubernetes API at {}", running.url);
    println!("kubeconfig: {}", running.kubeconfig.display());
    println!(
        "try:\n  export KUBECONFIG={}\n  kubectl get nodes",
        running.kubeconfig.display()
    );
    shutdown_signal().await?;
    // The in-process scheduler's and descheduler's queued events are written while the server
    // still answers; the descheduler starts no further eviction.
    berth_descheduler::driver::Stop::process().set();
    berth_scheduler::driver::flush_events().await;
    // As kube-apiserver on SIGTERM: requests in flight get their answers before the exit.
    let left = running.server.drain(DRAIN_LIMIT).await;
    if left > 0 {
        tracing::warn!(left, "exiting with requests still in flight");
    }
    Ok(())
}
