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
use informers::Informers;
use std::time::Duration;

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

    /// Starts the watches and every controller loop in background tasks.
    pub fn spawn(self) {
        let reads = self.informer_client.clone().unwrap_or(self.client.clone());
        let informers = Informers::start(&reads);
        let recorder_as =
            |account: &str| recorder::Recorder::new(self.client_as(account), self.clock.clone());
        let node_controller = self.client_as(NODE_CONTROLLER);
        tokio::spawn(nodes::run_condition_taints(
            node_controller.clone(),
            informers.clone(),
            self.clock.clone(),
        ));
        tokio::spawn(nodes::run_lifecycle(
            node_controller,
            informers.clone(),
            recorder_as(NODE_CONTROLLER),
            self.clock.clone(),
            self.lifecycle.clone(),
            self.monitor_period,
            self.metrics.clone(),
        ));
        tokio::spawn(taints::run(
            // As upstream's taint eviction controller, with the node controller's credentials.
            self.client_as(NODE_CONTROLLER),
            informers.clone(),
            recorder_as(NODE_CONTROLLER),
            self.clock.clone(),
            self.metrics.clone(),
        ));
        tokio::spawn(daemonsets::run(
            self.client_as("daemon-set-controller"),
            informers.clone(),
            recorder_as("daemon-set-controller"),
            self.clock.clone(),
        ));
        // Endpoints and EndpointSlices of Services; a default ServiceAccount per namespace.
        let writers = crate::endpoints::Writers {
            endpoints: self.client_as("endpoint-controller"),
            slices: self.client_as("endpointslice-controller"),
        };
        tokio::spawn(crate::endpoints::run(reads.clone(), writers));
        tokio::spawn(crate::serviceaccount::run(
            reads.clone(),
            self.client_as("service-account-controller"),
        ));
        if let Some((signer, ca)) = self.service_account_tokens.clone() {
            // Upstream's tokens controller runs with the controller manager's own
            // credentials, not a ServiceAccount's.
            tokio::spawn(crate::serviceaccount_token::run(reads.clone(), signer, ca));
        }
        tokio::spawn(crate::aggregation::run(
            self.client_as("clusterrole-aggregation-controller"),
        ));
        // Workloads: ReplicaSets and ReplicationControllers, Deployments, garbage collection.
        spawn_workloads(
            &|account| self.client_as(account),
            &informers,
            &self.clock,
            self.terminated_pod_gc_threshold,
        );
        tokio::spawn(crate::job::driver::run(
            self.client_as("job-controller"),
            self.client_as("ttl-after-finished-controller"),
            informers.pods.clone(),
            self.clock.clone(),
        ));
        tokio::spawn(crate::cronjob::driver::run(
            self.client_as("cronjob-controller"),
            self.clock.clone(),
        ));
        tokio::spawn(crate::statefulset::driver::run(
            self.client_as("statefulset-controller"),
            reads.clone(),
            informers.stateful_sets.clone(),
            informers.pods.clone(),
            self.clock.clone(),
        ));
        tokio::spawn(crate::volume::driver::run(
            self.client_as("persistent-volume-binder"),
            reads.clone(),
        ));
        tokio::spawn(disruption::run(
            self.client_as("disruption-controller"),
            informers,
            recorder_as("disruption-controller"),
            self.clock.clone(),
        ));
    }
}

/// The workload controllers: ReplicaSets and RCs, Deployments, garbage collection, pod GC.
fn spawn_workloads(
    client_as: &dyn Fn(&str) -> kube::Client,
    informers: &crate::informers::Informers,
    clock: &crate::Clock,
    terminated_pod_gc_threshold: usize,
) {
    tokio::spawn(crate::replicaset::driver::run(
        client_as("replicaset-controller"),
        client_as("replication-controller"),
        informers.clone(),
        clock.clone(),
    ));
    tokio::spawn(crate::garbage_collector::driver::run(
        client_as("generic-garbage-collector"),
        informers.clone(),
    ));
    tokio::spawn(crate::podgc::driver::run(
        client_as("pod-garbage-collector"),
        informers.clone(),
        clock.clone(),
        terminated_pod_gc_threshold,
    ));
    tokio::spawn(crate::deployment::driver::run(
        client_as("deployment-controller"),
        informers.clone(),
        clock.clone(),
    ));
}
