//! berth's simulated nodes.
//!
//! Each simulated node registers a `Node`, renews its `Lease` in `kube-node-lease`, runs the pods
//! bound to it (they become Running with conditions, IPs and container statuses) and finishes
//! their graceful deletion. It is a Kubernetes client like any other component: it talks to the
//! API server only through a `kube::Client`, in process or over HTTPS.
//!
//! It is not (yet) the full node simulator: resource usage, the eviction manager and condition
//! taints come with the node-pool configuration.
//!
//! ```no_run
//! # async fn demo(client: kube::Client) {
//! let nodes = berth_kubelet::NodeSpec::quick(3);
//! berth_kubelet::Kubelet::new(client, nodes).spawn();
//! # }
//! ```

pub mod allocatable;
pub mod config;
pub mod eviction;
pub mod model;
mod node;
pub mod oom;
mod pods;
pub mod usage;

pub use node::NodeSpec;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
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
    nodes: Vec<NodeSpec>,
}

impl Kubelet {
    pub fn new(client: kube::Client, nodes: Vec<NodeSpec>) -> Kubelet {
        Kubelet { client, nodes }
    }

    /// Registers the nodes, then runs leases and pods in background tasks.
    pub async fn start(self) -> Result<(), Error> {
        for spec in &self.nodes {
            node::register(&self.client, spec)
                .await
                .map_err(|source| Error::Register {
                    node: spec.name.clone(),
                    source,
                })?;
        }
        let names: Arc<HashSet<String>> =
            Arc::new(self.nodes.iter().map(|n| n.name.clone()).collect());
        tokio::spawn(node::renew_leases(
            self.client.clone(),
            names.clone(),
            LEASE_RENEW,
        ));
        tokio::spawn(run_pods(self.client.clone(), names));
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

/// Watches pods bound to any node and runs those on ours.
async fn run_pods(client: kube::Client, nodes: Arc<HashSet<String>>) {
    let api: Api<Pod> = Api::all(client.clone());
    let config = watcher::Config::default().fields("spec.nodeName!=");
    let mut stream = watcher(api, config).boxed();
    loop {
        match stream.next().await {
            Some(Ok(watcher::Event::Apply(pod))) | Some(Ok(watcher::Event::InitApply(pod))) => {
                let on_ours = pod
                    .spec
                    .as_ref()
                    .and_then(|s| s.node_name.as_ref())
                    .is_some_and(|n| nodes.contains(n));
                if on_ours {
                    tokio::spawn(pods::reconcile(client.clone(), pod));
                }
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => {
                tracing::warn!(error = %e, "pod watch failed; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            None => return,
        }
    }
}
