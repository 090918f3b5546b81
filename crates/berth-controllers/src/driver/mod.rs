//! The drivers: `watch → store → reconcile`. One informer per kind (`berth-informers`) feeds a
//! read-only store and pings the loops that read it; each loop snapshots the stores, runs its engine with the
//! clock's `now`, and carries the decisions out through the API. Writes carry a
//! `resourceVersion` precondition: a conflict means a newer object is on its way through the
//! watch, which triggers the next pass (level-triggered, no retry loops at call sites).

mod daemonsets;
mod disruption;
use crate::informers;
mod nodes;
mod recorder;
mod taints;

use crate::lifecycle::LifecycleConfig;
use crate::Clock;
use informers::Informers;
use std::time::Duration;

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
}

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

    /// Starts the watches and every controller loop in background tasks.
    pub fn spawn(self) {
        let informers = Informers::start(self.informer_client.as_ref().unwrap_or(&self.client));
        let recorder = recorder::Recorder::new(self.client.clone(), self.clock.clone());
        tokio::spawn(nodes::run_condition_taints(
            self.client.clone(),
            informers.clone(),
            self.clock.clone(),
        ));
        tokio::spawn(nodes::run_lifecycle(
            self.client.clone(),
            informers.clone(),
            recorder.clone(),
            self.clock.clone(),
            self.lifecycle,
            self.monitor_period,
            self.metrics.clone(),
        ));
        tokio::spawn(taints::run(
            self.client.clone(),
            informers.clone(),
            recorder.clone(),
            self.clock.clone(),
            self.metrics.clone(),
        ));
        tokio::spawn(daemonsets::run(
            self.client.clone(),
            informers.clone(),
            recorder.clone(),
            self.clock.clone(),
        ));
        // Endpoints and EndpointSlices of Services; a default ServiceAccount per namespace.
        tokio::spawn(crate::endpoints::run(self.client.clone()));
        tokio::spawn(crate::serviceaccount::run(self.client.clone()));
        if let Some((signer, ca)) = self.service_account_tokens.clone() {
            tokio::spawn(crate::serviceaccount_token::run(
                self.client.clone(),
                signer,
                ca,
            ));
        }
        tokio::spawn(crate::aggregation::run(self.client.clone()));
        // Workloads: ReplicaSets and ReplicationControllers, Deployments, garbage collection.
        spawn_workloads(
            &self.client,
            &informers,
            &self.clock,
            self.terminated_pod_gc_threshold,
        );
        tokio::spawn(crate::job::driver::run(
            self.client.clone(),
            informers.pods.clone(),
            self.clock.clone(),
        ));
        tokio::spawn(crate::cronjob::driver::run(
            self.client.clone(),
            self.clock.clone(),
        ));
        tokio::spawn(crate::statefulset::driver::run(
            self.client.clone(),
            informers.stateful_sets.clone(),
            informers.pods.clone(),
        ));
        tokio::spawn(disruption::run(
            self.client,
            informers,
            recorder,
            self.clock,
        ));
    }
}

/// The workload controllers: ReplicaSets and RCs, Deployments, garbage collection, pod GC.
fn spawn_workloads(
    client: &kube::Client,
    informers: &crate::informers::Informers,
    clock: &crate::Clock,
    terminated_pod_gc_threshold: usize,
) {
    tokio::spawn(crate::replicaset::driver::run(
        client.clone(),
        informers.clone(),
        clock.clone(),
    ));
    tokio::spawn(crate::garbage_collector::driver::run(
        client.clone(),
        informers.clone(),
    ));
    tokio::spawn(crate::podgc::driver::run(
        client.clone(),
        informers.clone(),
        clock.clone(),
        terminated_pod_gc_threshold,
    ));
    tokio::spawn(crate::deployment::driver::run(
        client.clone(),
        informers.clone(),
        clock.clone(),
    ));
}
