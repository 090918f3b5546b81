//! The drivers: `watch → store → reconcile`. One informer per kind (`berth-informers`) feeds a
//! read-only store and pings the loops that read it; each loop snapshots the stores, runs its engine with the
//! clock's `now`, and carries the decisions out through the API. Writes carry a
//! `resourceVersion` precondition: a conflict means a newer object is on its way through the
//! watch, which triggers the next pass (level-triggered, no retry loops at call sites).

mod daemonsets;
mod disruption;
use crate::informers;
mod nodes;
use crate::recorder;
mod taints;

use crate::lifecycle::LifecycleConfig;
use crate::Clock;
use berth_core::supervisor::Supervisor;
use informers::Informers;
use std::time::Duration;

/// Runs `$run($args...)` under the supervisor `$sup` as the loop `$name`: each named argument
/// is evaluated once and cloned into every (re)start.
macro_rules! supervise {
    ($sup:expr, $name:literal, $run:path $(, $arg:ident = $val:expr)* $(,)?) => {{
        $(let $arg = $val;)*
        $sup.spawn($name, move || $run($($arg.clone()),*));
    }};
}

/// The node lifecycle controller's ServiceAccount: it also taints nodes by condition.
const NODE_CONTROLLER: &str = "node-controller";

/// The machine config controller's ServiceAccount (OpenShift runs it in
/// `openshift-machine-config-operator`; berth's controllers act from `kube-system`).
const MACHINE_CONFIG_CONTROLLER: &str = "machine-config-controller";

/// The ServiceAccounts of `kube-system` the controllers act as under
/// `--use-service-account-credentials` (upstream's names; each has the bootstrap role
/// `system:controller:<name>`).
pub const SERVICE_ACCOUNTS: &[&str] = &[
    "certificate-controller",
    "clusterrole-aggregation-controller",
    "cronjob-controller",
    "daemon-set-controller",
    "deployment-controller",
    "disruption-controller",
    "endpoint-controller",
    "endpointslice-controller",
    "generic-garbage-collector",
    "horizontal-pod-autoscaler",
    "job-controller",
    MACHINE_CONFIG_CONTROLLER,
    "namespace-controller",
    NODE_CONTROLLER,
    "persistent-volume-binder",
    "pod-garbage-collector",
    "replicaset-controller",
    "replication-controller",
    "resourcequota-controller",
    "root-ca-cert-publisher",
    "service-account-controller",
    "statefulset-controller",
    "ttl-after-finished-controller",
];

/// The controllers of `berth serve`, configured once and started together.
pub struct Controllers {
    client: kube::Client,
    /// What the shared informers list and watch through, if not `client`.
    informer_client: Option<kube::Client>,
    clock: Clock,
    lifecycle: LifecycleConfig,
    monitor_period: Duration,
    terminated_pod_gc_threshold: usize,
    /// The tokens controller's signer and CA, when legacy token Secrets are served.
    service_account_tokens: Option<(crate::serviceaccount_token::Signer, String)>,
    metrics: crate::metrics::ControllerMetrics,
    /// Each controller's own client, by its ServiceAccount name in `kube-system`.
    credentials: Option<ServiceAccountCredentials>,
    /// Which loops are down, as the supervisor marks them.
    health: berth_core::loop_health::LoopHealth,
    /// `--controllers`: which controllers run.
    selection: crate::selection::Selection,
    /// The cluster CA (PEM) the root CA publisher puts in every namespace, if known.
    root_ca: Option<String>,
    /// The horizontal pod autoscaler's sync period and settings.
    autoscaler: crate::podautoscaler::Config,
    /// The cluster CA that signs approved CertificateSigningRequests, if given.
    csr_signer: Option<crate::certificates::Signer>,
    /// `berth simulate`'s nodes, whose sign of life is their simulated behaviour.
    simulated_nodes: Option<crate::lifecycle::simulated::SimulatedLeases>,
}

/// Makes the client a controller writes through from its ServiceAccount name
/// (`deployment-controller`): upstream's `--use-service-account-credentials`.
pub type ServiceAccountCredentials = std::sync::Arc<dyn Fn(&str) -> kube::Client + Send + Sync>;

impl Controllers {
    /// All controllers over `client`, reading wall time from `clock`, with upstream defaults.
    pub fn new(client: kube::Client, clock: Clock) -> Controllers {
        Controllers {
            client,
            informer_client: None,
            clock,
            lifecycle: LifecycleConfig::default(),
            monitor_period: Duration::from_secs(5),
            terminated_pod_gc_threshold: crate::podgc::DEFAULT_TERMINATED_THRESHOLD,
            service_account_tokens: None,
            metrics: Default::default(),
            credentials: None,
            health: Default::default(),
            selection: Default::default(),
            root_ca: None,
            autoscaler: Default::default(),
            csr_signer: None,
            simulated_nodes: None,
        }
    }

    /// Runs the CSR signing controller with the cluster CA (upstream's
    /// `--cluster-signing-cert-file` and `--cluster-signing-key-file`).
    pub fn csr_signer(mut self, signer: crate::certificates::Signer) -> Controllers {
        self.csr_signer = Some(signer);
        self
    }

    /// The horizontal pod autoscaler's `--horizontal-pod-autoscaler-*` settings.
    pub fn horizontal_pod_autoscaler(
        mut self,
        config: crate::podautoscaler::Config,
    ) -> Controllers {
        self.autoscaler = config;
        self
    }

    /// `berth simulate`: these nodes' kubelets renew no Lease; the node lifecycle controller
    /// takes their simulated behaviour (`berth.io/simulate`) as their sign of life instead
    /// ([`crate::lifecycle::simulated`]). Other nodes are watched by their Lease as ever.
    pub fn simulated_nodes(mut self, nodes: impl IntoIterator<Item = String>) -> Controllers {
        self.simulated_nodes = Some(crate::lifecycle::simulated::SimulatedLeases::new(nodes));
        self
    }

    /// `--controllers`: only the selected controllers run (all by default).
    pub fn selection(mut self, selection: crate::selection::Selection) -> Controllers {
        self.selection = selection;
        self
    }

    /// Runs the root CA certificate publisher: `ca` (PEM) as the ConfigMap `kube-root-ca.crt`
    /// in every namespace (upstream's `--root-ca-file`).
    pub fn root_ca(mut self, ca: String) -> Controllers {
        self.root_ca = Some(ca);
        self
    }

    /// Where the node lifecycle controller and the taint manager report their metrics.
    pub fn metrics(mut self, metrics: crate::metrics::ControllerMetrics) -> Controllers {
        self.metrics = metrics;
        self
    }

    /// `--node-monitor-grace-period`: how long a node may go without a heartbeat or lease
    /// renewal before it is marked `Unknown` (40s).
    pub fn node_monitor_grace_period(mut self, grace: Duration) -> Controllers {
        self.lifecycle.grace_period =
            chrono::Duration::from_std(grace).unwrap_or(self.lifecycle.grace_period);
        self
    }

    /// The zone settings of the node lifecycle controller: `--node-eviction-rate`,
    /// `--secondary-node-eviction-rate`, `--unhealthy-zone-threshold`,
    /// `--large-cluster-size-threshold`.
    pub fn zones(mut self, zones: crate::lifecycle::zones::ZoneConfig) -> Controllers {
        self.lifecycle.zones = zones;
        self
    }

    /// `--node-monitor-period`: how often node health is checked (5s).
    pub fn node_monitor_period(mut self, period: Duration) -> Controllers {
        self.monitor_period = period.max(Duration::from_millis(100));
        self
    }

    /// `--terminated-pod-gc-threshold`: terminated pods kept before pod GC deletes the oldest
    /// (12500; 0 keeps them all).
    pub fn terminated_pod_gc_threshold(mut self, threshold: usize) -> Controllers {
        self.terminated_pod_gc_threshold = threshold;
        self
    }

    /// Runs the tokens controller: legacy token Secrets get tokens from `signer` and `ca`
    /// (the cluster CA, PEM) as their `ca.crt`.
    pub fn service_account_tokens(
        mut self,
        signer: crate::serviceaccount_token::Signer,
        ca: String,
    ) -> Controllers {
        self.service_account_tokens = Some((signer, ca));
        self
    }

    /// The client the shared informers list and watch through: upstream's controller manager
    /// does so as `system:kube-controller-manager`, whose role reads everything.
    pub fn informer_client(mut self, client: kube::Client) -> Controllers {
        self.informer_client = Some(client);
        self
    }

    /// Each controller acts as its ServiceAccount `kube-system/<name>` through the client
    /// `credentials` makes, so RBAC authorizes it by its `system:controller:<name>` role
    /// (upstream's `--use-service-account-credentials`); the shared informers still read
    /// through the informer client.
    pub fn service_account_credentials(
        mut self,
        credentials: ServiceAccountCredentials,
    ) -> Controllers {
        self.credentials = Some(credentials);
        self
    }

    /// The client the controller named `account` (its ServiceAccount) writes through.
    fn client_as(&self, account: &str) -> kube::Client {
        match &self.credentials {
            Some(make) => make(account),
            None => self.client.clone(),
        }
    }

    /// The handle on which the supervisor marks a loop down while it waits to restart it
    /// (`berth serve` hands the API server's, so that `/readyz` reports it).
    pub fn loop_health(mut self, health: berth_core::loop_health::LoopHealth) -> Controllers {
        self.health = health;
        self
    }

    /// Starts the watches and every controller loop in background tasks, each under the
    /// [`Supervisor`]: a loop that panics or returns is logged, counted and restarted.
    pub fn spawn(self) {
        let reads = self.informer_client.clone().unwrap_or(self.client.clone());
        let informers = Informers::start(&reads);
        let recorder_as =
            |account: &str| recorder::Recorder::new(self.client_as(account), self.clock.clone());
        let sup = Supervisor::new(self.health.clone(), self.clock.clone());
        let selection = self.selection.clone();
        let on = |name: &str| selection.enabled(name);
        let node_controller = self.client_as(NODE_CONTROLLER);
        // Each controller's work queues, under upstream's names (made once, not per restart).
        let queue = |name: &str| self.metrics.queue(name, &self.clock);
        if on("node-lifecycle-controller") {
            supervise!(
                sup,
                "node-condition-taints",
                nodes::run_condition_taints,
                client = node_controller.clone(),
                informers = informers.clone(),
                clock = self.clock.clone(),
                resync = self.simulated_nodes.is_none(),
                queue = queue("node_lifecycle_controller")
            );
        }
        if on("node-lifecycle-controller") {
            supervise!(
                sup,
                "node-lifecycle",
                nodes::run_lifecycle,
                client = node_controller,
                informers = informers.clone(),
                recorder = recorder_as(NODE_CONTROLLER),
                clock = self.clock.clone(),
                lifecycle = self.lifecycle.clone(),
                period = self.monitor_period,
                metrics = self.metrics.clone(),
                simulated = self.simulated_nodes.clone(),
                pods_queue = queue("node_lifecycle_controller_pods")
            );
        }
        // As upstream's taint eviction controller, with the node controller's credentials.
        if on("taint-eviction-controller") {
            supervise!(
                sup,
                "taint-manager",
                taints::run,
                client = self.client_as(NODE_CONTROLLER),
                informers = informers.clone(),
                recorder = recorder_as(NODE_CONTROLLER),
                clock = self.clock.clone(),
                metrics = self.metrics.clone(),
                node_queue = queue("noexec_taint_node"),
                pod_queue = queue("noexec_taint_pod")
            );
        }
        if on("daemonset-controller") {
            supervise!(
                sup,
                "daemonset-controller",
                daemonsets::run,
                client = self.client_as("daemon-set-controller"),
                informers = informers.clone(),
                recorder = recorder_as("daemon-set-controller"),
                clock = self.clock.clone(),
                metrics = self.metrics.clone()
            );
        }
        // Endpoints and EndpointSlices of Services; a default ServiceAccount per namespace.
        if on("endpoints-controller") {
            let endpoint_writers = crate::endpoints::Writers {
                endpoints: self.client_as("endpoint-controller"),
                slices: self.client_as("endpointslice-controller"),
                endpoint_queue: queue("endpoint"),
                slice_queue: queue("endpoint_slice"),
            };
            supervise!(
                sup,
                "endpoints-controller",
                crate::endpoints::run,
                reads = reads.clone(),
                writers = endpoint_writers
            );
        }
        if on("serviceaccount-controller") {
            supervise!(
                sup,
                "serviceaccount-controller",
                crate::serviceaccount::run,
                reads = reads.clone(),
                client = self.client_as("service-account-controller"),
                queue = queue("serviceaccount")
            );
        }
        if let Some((token_signer, token_ca)) = self.service_account_tokens.clone() {
            // Upstream's tokens controller runs with the controller manager's own
            // credentials, not a ServiceAccount's.
            if on("serviceaccount-token-controller") {
                supervise!(
                    sup,
                    "serviceaccount-token-controller",
                    crate::serviceaccount_token::run,
                    reads = reads.clone(),
                    signer = token_signer,
                    ca = token_ca,
                    queues = crate::serviceaccount_token::Queues {
                        accounts: queue("serviceaccount_tokens_service"),
                        secrets: queue("serviceaccount_tokens_secret"),
                    }
                );
            }
        }
        if on("clusterrole-aggregation-controller") {
            supervise!(
                sup,
                "clusterrole-aggregation-controller",
                crate::aggregation::run,
                client = self.client_as("clusterrole-aggregation-controller"),
                queue = queue("ClusterRoleAggregator")
            );
        }
        if on("resourcequota-controller") {
            supervise!(
                sup,
                "resourcequota-controller",
                crate::resourcequota::run,
                reads = reads.clone(),
                client = self.client_as("resourcequota-controller"),
                pods = informers.pods.clone(),
                queues = crate::resourcequota::Queues {
                    primary: queue("resourcequota_primary"),
                    priority: queue("resourcequota_priority"),
                }
            );
        }
        // Workloads: ReplicaSets and ReplicationControllers, Deployments, garbage collection.
        if on("namespace-controller") {
            supervise!(
                sup,
                "namespace-controller",
                crate::namespace::driver::run,
                client = self.client_as("namespace-controller"),
                reads = reads.clone(),
                informers = informers.clone(),
                clock = self.clock.clone(),
                metrics = self.metrics.clone()
            );
        }
        if let (true, Some(root_ca)) = (
            on("root-ca-certificate-publisher-controller"),
            self.root_ca.clone(),
        ) {
            supervise!(
                sup,
                "root-ca-certificate-publisher-controller",
                crate::root_ca::driver::run,
                reads = reads.clone(),
                client = self.client_as("root-ca-cert-publisher"),
                ca = root_ca,
                queue = queue("root_ca_cert_publisher")
            );
        }
        spawn_workloads(
            &sup,
            &on,
            &|account| self.client_as(account),
            &informers,
            &self.clock,
            self.terminated_pod_gc_threshold,
            &self.metrics,
        );
        if on("job-controller") {
            supervise!(
                sup,
                "job-controller",
                crate::job::driver::run,
                client = self.client_as("job-controller"),
                ttl = self.client_as("ttl-after-finished-controller"),
                informers = informers.clone(),
                clock = self.clock.clone(),
                metrics = self.metrics.clone()
            );
        }
        if on("cronjob-controller") {
            supervise!(
                sup,
                "cronjob-controller",
                crate::cronjob::driver::run,
                client = self.client_as("cronjob-controller"),
                informers = informers.clone(),
                clock = self.clock.clone(),
                metrics = self.metrics.clone()
            );
        }
        if on("horizontal-pod-autoscaler-controller") {
            supervise!(
                sup,
                "horizontal-pod-autoscaler-controller",
                crate::podautoscaler::driver::run,
                client = self.client_as("horizontal-pod-autoscaler"),
                informers = informers.clone(),
                clock = self.clock.clone(),
                config = self.autoscaler,
                metrics = self.metrics.clone()
            );
        }
        if let (true, Some(ca)) = (
            on("certificatesigningrequest-signing-controller"),
            self.csr_signer.clone(),
        ) {
            supervise!(
                sup,
                "certificatesigningrequest-signing-controller",
                crate::certificates::driver::run,
                client = self.client_as("certificate-controller"),
                informers = informers.clone(),
                clock = self.clock.clone(),
                signer = ca,
                queue = queue("certificate")
            );
        }
        if on("statefulset-controller") {
            supervise!(
                sup,
                "statefulset-controller",
                crate::statefulset::driver::run,
                client = self.client_as("statefulset-controller"),
                informers = informers.clone(),
                clock = self.clock.clone(),
                metrics = self.metrics.clone()
            );
        }
        if on("persistentvolume-binder-controller") {
            supervise!(
                sup,
                "persistentvolume-binder-controller",
                crate::volume::driver::run,
                client = self.client_as("persistent-volume-binder"),
                informers = informers.clone(),
                queues = crate::volume::driver::Queues {
                    volumes: queue("volumes"),
                    claims: queue("claims"),
                }
            );
        }
        if on("machine-config-controller") {
            supervise!(
                sup,
                "machine-config-controller",
                crate::machineconfig::run,
                reads = reads.clone(),
                client = self.client_as(MACHINE_CONFIG_CONTROLLER),
                nodes = informers.nodes.clone(),
                clock = self.clock.clone(),
                queues = crate::machineconfig::Queues {
                    kubelet_configs: queue("machineconfigcontroller-kubeletconfigcontroller"),
                    render: queue("machineconfigcontroller-rendercontroller"),
                    nodes: queue("machineconfigcontroller-nodecontroller"),
                }
            );
        }
        if on("disruption-controller") {
            supervise!(
                sup,
                "disruption-controller",
                disruption::run,
                client = self.client_as("disruption-controller"),
                informers = informers,
                recorder = recorder_as("disruption-controller"),
                clock = self.clock.clone(),
                queue = queue("disruption")
            );
        }
    }
}

/// The workload controllers: ReplicaSets and RCs, Deployments, garbage collection, pod GC.
fn spawn_workloads(
    sup: &Supervisor,
    on: &dyn Fn(&str) -> bool,
    client_as: &dyn Fn(&str) -> kube::Client,
    informers: &crate::informers::Informers,
    clock: &crate::Clock,
    terminated_pod_gc_threshold: usize,
    metrics: &crate::metrics::ControllerMetrics,
) {
    if on("replicaset-controller") {
        supervise!(
            sup,
            "replicaset-controller",
            crate::replicaset::driver::run,
            sets = client_as("replicaset-controller"),
            rcs = client_as("replication-controller"),
            informers = informers.clone(),
            clock = clock.clone(),
            metrics = metrics.clone()
        );
    }
    if on("garbage-collector-controller") {
        supervise!(
            sup,
            "garbage-collector-controller",
            crate::garbage_collector::driver::run,
            client = client_as("generic-garbage-collector"),
            informers = informers.clone(),
            clock = clock.clone(),
            metrics = metrics.clone()
        );
    }
    if on("pod-garbage-collector-controller") {
        supervise!(
            sup,
            "pod-garbage-collector",
            crate::podgc::driver::run,
            client = client_as("pod-garbage-collector"),
            informers = informers.clone(),
            clock = clock.clone(),
            threshold = terminated_pod_gc_threshold,
            queue = metrics.queue("orphaned_pods_nodes", &clock)
        );
    }
    if on("deployment-controller") {
        supervise!(
            sup,
            "deployment-controller",
            crate::deployment::driver::run,
            client = client_as("deployment-controller"),
            informers = informers.clone(),
            clock = clock.clone(),
            metrics = metrics.clone()
        );
    }
}
