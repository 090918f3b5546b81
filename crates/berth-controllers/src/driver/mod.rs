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
        }
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
        let node_controller = self.client_as(NODE_CONTROLLER);
        supervise!(
            sup,
            "node-condition-taints",
            nodes::run_condition_taints,
            client = node_controller.clone(),
            informers = informers.clone(),
            clock = self.clock.clone()
        );
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
            metrics = self.metrics.clone()
        );
        // As upstream's taint eviction controller, with the node controller's credentials.
        supervise!(
            sup,
            "taint-manager",
            taints::run,
            client = self.client_as(NODE_CONTROLLER),
            informers = informers.clone(),
            recorder = recorder_as(NODE_CONTROLLER),
            clock = self.clock.clone(),
            metrics = self.metrics.clone()
        );
        supervise!(
            sup,
            "daemonset-controller",
            daemonsets::run,
            client = self.client_as("daemon-set-controller"),
            informers = informers.clone(),
            recorder = recorder_as("daemon-set-controller"),
            clock = self.clock.clone()
        );
        // Endpoints and EndpointSlices of Services; a default ServiceAccount per namespace.
        let endpoint_writers = crate::endpoints::Writers {
            endpoints: self.client_as("endpoint-controller"),
            slices: self.client_as("endpointslice-controller"),
        };
        supervise!(
            sup,
            "endpoints-controller",
            crate::endpoints::run,
            reads = reads.clone(),
            writers = endpoint_writers
        );
        supervise!(
            sup,
            "serviceaccount-controller",
            crate::serviceaccount::run,
            reads = reads.clone(),
            client = self.client_as("service-account-controller")
        );
        if let Some((token_signer, token_ca)) = self.service_account_tokens.clone() {
            // Upstream's tokens controller runs with the controller manager's own
            // credentials, not a ServiceAccount's.
            supervise!(
                sup,
                "serviceaccount-token-controller",
                crate::serviceaccount_token::run,
                reads = reads.clone(),
                signer = token_signer,
                ca = token_ca
            );
        }
        supervise!(
            sup,
            "resourcequota-controller",
            crate::resourcequota::run,
            reads = reads.clone(),
            client = self.client_as("resourcequota-controller"),
            pods = informers.pods.clone()
        );
        supervise!(
            sup,
            "clusterrole-aggregation-controller",
            crate::aggregation::run,
            client = self.client_as("clusterrole-aggregation-controller")
        );
        // Workloads: ReplicaSets and ReplicationControllers, Deployments, garbage collection.
        spawn_workloads(
            &sup,
            &|account| self.client_as(account),
            &informers,
            &self.clock,
            self.terminated_pod_gc_threshold,
        );
        supervise!(
            sup,
            "job-controller",
            crate::job::driver::run,
            client = self.client_as("job-controller"),
            ttl = self.client_as("ttl-after-finished-controller"),
            pods = informers.pods.clone(),
            clock = self.clock.clone()
        );
        supervise!(
            sup,
            "cronjob-controller",
            crate::cronjob::driver::run,
            client = self.client_as("cronjob-controller"),
            clock = self.clock.clone()
        );
        supervise!(
            sup,
            "statefulset-controller",
            crate::statefulset::driver::run,
            client = self.client_as("statefulset-controller"),
            reads = reads.clone(),
            sets = informers.stateful_sets.clone(),
            pods = informers.pods.clone(),
            clock = self.clock.clone()
        );
        supervise!(
            sup,
            "persistentvolume-binder-controller",
            crate::volume::driver::run,
            client = self.client_as("persistent-volume-binder"),
            reads = reads.clone()
        );
        supervise!(
            sup,
            "disruption-controller",
            disruption::run,
            client = self.client_as("disruption-controller"),
            informers = informers,
            recorder = recorder_as("disruption-controller"),
            clock = self.clock.clone()
        );
    }
}

/// The workload controllers: ReplicaSets and RCs, Deployments, garbage collection, pod GC.
fn spawn_workloads(
    sup: &Supervisor,
    client_as: &dyn Fn(&str) -> kube::Client,
    informers: &crate::informers::Informers,
    clock: &crate::Clock,
    terminated_pod_gc_threshold: usize,
) {
    supervise!(
        sup,
        "replicaset-controller",
        crate::replicaset::driver::run,
        sets = client_as("replicaset-controller"),
        rcs = client_as("replication-controller"),
        informers = informers.clone(),
        clock = clock.clone()
    );
    supervise!(
        sup,
        "garbage-collector-controller",
        crate::garbage_collector::driver::run,
        client = client_as("generic-garbage-collector"),
        informers = informers.clone()
    );
    supervise!(
        sup,
        "pod-garbage-collector",
        crate::podgc::driver::run,
        client = client_as("pod-garbage-collector"),
        informers = informers.clone(),
        clock = clock.clone(),
        threshold = terminated_pod_gc_threshold
    );
    supervise!(
        sup,
        "deployment-controller",
        crate::deployment::driver::run,
        client = client_as("deployment-controller"),
        informers = informers.clone(),
        clock = clock.clone()
    );
}
