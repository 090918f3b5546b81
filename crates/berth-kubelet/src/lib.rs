//! berth's simulated nodes.
//!
//! Each simulated node registers a `Node`, renews its `Lease` in `kube-node-lease`, runs the pods
//! bound to it (they become Running with conditions, IPs and container statuses) and finishes
//! their graceful deletion. It is a Kubernetes client like any other component: it talks to the
//! API server only through a `kube::Client`, in process or over HTTPS.
//!
//! Nodes come from node pools ([`config::parse_cluster`], `examples/cluster.yaml`) or the quick
//! form ([`NodeConfig::quick`]). Each node reports capacity and allocatable (seed 004), simulates
//! its pods' usage (`berth.io/usage`), and every housekeeping interval runs the eviction manager
//! (seed 001): pressure conditions, node-level reclaim, one eviction per pass, admission under
//! pressure, and a simulated OOM killer. Its stats summary is published in the ConfigMap
//! `kube-node-lease/berth-stats-<node>` for the API server's `nodes/<node>/proxy/stats/summary`.
//! Each pass also puts its node's conditions right if the API shows otherwise (for instance
//! `Unknown`, written by the node lifecycle controller while the node was silent).
//! The decisions are pure ([`eviction`], [`model`], [`status`]); the driver only carries them out.
//! Condition taints are the node lifecycle controller's, not the kubelet's.
//!
//! ```no_run
//! # async fn demo(client: kube::Client) {
//! let nodes = berth_kubelet::NodeConfig::quick(3);
//! berth_kubelet::Kubelet::new(client, nodes).spawn();
//! # }
//! ```

pub mod allocatable;
pub mod commands;
pub mod config;
pub mod eviction;
pub mod model;
mod node;
pub mod oom;
mod pods;
pub mod sim;
pub mod status;
pub mod summary;
pub mod usage;

pub use berth_core::clock::Clock;
pub use config::NodeConfig;
/// The former name of [`NodeConfig`].
pub use config::NodeConfig as NodeSpec;

use berth_informers::{Event, Informer};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::Api;
use kube::runtime::watcher;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

/// How often each node renews its lease (upstream: a quarter of the 40s lease).
const LEASE_RENEW: Duration = Duration::from_secs(10);

/// Errors of the simulated nodes.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("registering node {node}: {source}")]
    Register { node: String, source: kube::Error },
}

/// A set of simulated nodes sharing one client.
pub struct Kubelet {
    client: kube::Client,
    nodes: Vec<NodeConfig>,
    housekeeping_interval: Duration,
    clock: Clock,
    commands: commands::Commands,
}

/// Upstream's housekeeping interval.
pub const DEFAULT_HOUSEKEEPING_INTERVAL: Duration = Duration::from_secs(10);

impl Kubelet {
    pub fn new(client: kube::Client, nodes: Vec<NodeConfig>) -> Kubelet {
        Kubelet {
            client,
            nodes,
            housekeeping_interval: DEFAULT_HOUSEKEEPING_INTERVAL,
            clock: Clock::system(),
            commands: commands::Commands::default(),
        }
    }

    /// Programs that containers naming them run in process ([`commands`]).
    pub fn commands(mut self, commands: commands::Commands) -> Kubelet {
        self.commands = commands;
        self
    }

    /// The clock the nodes read time from (the process's shared clock; a paused one in tests).
    pub fn clock(mut self, clock: Clock) -> Kubelet {
        self.clock = clock;
        self
    }

    /// How often the eviction manager runs (upstream: 10s, fixed; shorter for tests).
    pub fn housekeeping_interval(mut self, every: Duration) -> Kubelet {
        self.housekeeping_interval = every.max(Duration::from_millis(100));
        self
    }

    /// Registers the nodes, then runs leases and pods in background tasks.
    pub async fn start(self) -> Result<(), Error> {
        for (i, config) in self.nodes.iter().enumerate() {
            let spec = node::NodeSpec {
                config,
                index: i + 1,
            };
            node::register(&self.client, &spec, &self.clock)
                .await
                .map_err(|source| Error::Register {
                    node: config.name.clone(),
                    source,
                })?;
        }
        let names: Arc<HashSet<String>> =
            Arc::new(self.nodes.iter().map(|n| n.name.clone()).collect());
        tokio::spawn(node::renew_leases(
            self.client.clone(),
            names.clone(),
            LEASE_RENEW,
            self.clock.clone(),
        ));
        let models = self.nodes.into_iter().map(model::NodeModel::new).collect();
        let sim = Arc::new(sim::Sim::new(
            self.client.clone(),
            models,
            self.housekeeping_interval,
            self.clock,
        ));
        sim.spawn();
        tokio::spawn(watch_nodes(self.client.clone(), sim.clone()));
        tokio::spawn(run_pods(self.client.clone(), sim, self.commands));
        Ok(())
    }

    /// [`Kubelet::start`] in a background task, logging a failure.
    pub fn spawn(self) {
        tokio::spawn(async move {
            if let Err(e) = self.start().await {
                tracing::error!(error = %e, "simulated nodes failed to start");
            }
        });
    }
}

/// Watches the nodes, so that each kubelet sees what the API shows of its node's conditions.
async fn watch_nodes(client: kube::Client, sim: Arc<sim::Sim>) {
    let nodes: Informer<Node> = Informer::start(Api::all(client), watcher::Config::default());
    let mut events = nodes.subscribe();
    while let Some(event) = events.recv().await {
        if let Some(node) = event.applied() {
            sim.observe_node(node);
        }
    }
}

/// Watches pods bound to any node and runs those on ours.
async fn run_pods(client: kube::Client, sim: Arc<sim::Sim>, commands: commands::Commands) {
    let config = watcher::Config::default().fields("spec.nodeName!=");
    let pods: Informer<Pod> = Informer::start(Api::all(client.clone()), config);
    let mut events = pods.subscribe();
    while let Some(event) = events.recv().await {
        match event {
            Event::Added(pod) | Event::Updated { new: pod, .. } => {
                if sim.owns(&pod) {
                    commands.observe(&client, &pod, sim.clock());
                }
                if sim.owns(&pod) && sim.on_pod(&pod).await {
                    tokio::spawn(pods::reconcile(client.clone(), pod, sim.clock().clone()));
                }
            }
            Event::Deleted(pod) => sim.on_delete(&pod),
            Event::Synced => {}
        }
    }
}
