//! `berth node stop|start|partition|not-ready NODE...`: fails and heals simulated nodes. A thin
//! CLI over the Node annotation `berth.io/simulate` that the simulated kubelets obey (the same
//! can be done with `kubectl annotate node NODE berth.io/simulate=stopped --overwrite`).

use anyhow::Context;
use berth_kubelet::simulate::{Simulate, SIMULATE_ANNOTATION};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct NodeArgs {
    #[command(subcommand)]
    pub action: NodeAction,
    /// Kubeconfig of the cluster (default: $KUBECONFIG, or ~/.kube/config, as kubectl).
    #[arg(long, global = true)]
    pub kubeconfig: Option<PathBuf>,
}

#[derive(clap::Subcommand, Debug)]
pub enum NodeAction {
    /// Stop the nodes as dead machines: no status, no lease, their pods stop.
    Stop { nodes: Vec<String> },
    /// Bring the nodes back: they renew their leases and post Ready again.
    Start { nodes: Vec<String> },
    /// Cut the nodes off the API server: they keep running their pods, nothing they write arrives.
    Partition { nodes: Vec<String> },
    /// Make the kubelets post Ready=False.
    NotReady { nodes: Vec<String> },
}

impl NodeAction {
    fn split(&self) -> (Simulate, &[String], &'static str) {
        match self {
            NodeAction::Stop { nodes } => (Simulate::Stopped, nodes, "stopped"),
            NodeAction::Start { nodes } => (Simulate::Running, nodes, "started"),
            NodeAction::Partition { nodes } => (Simulate::Partitioned, nodes, "partitioned"),
            NodeAction::NotReady { nodes } => (Simulate::NotReady, nodes, "set not-ready"),
        }
    }
}

pub async fn run(args: NodeArgs) -> anyhow::Result<()> {
    let (mode, nodes, done) = args.action.split();
    if nodes.is_empty() {
        anyhow::bail!("name at least one node");
    }
    let client = crate::scheduler::client(args.kubeconfig.as_deref(), "berth-node").await?;
    let api: Api<Node> = Api::all(client);
    let patch =
        serde_json::json!({"metadata": {"annotations": {SIMULATE_ANNOTATION: mode.as_str()}}});
    let mut failed = 0;
    for node in nodes {
        let result = api
            .patch(node, &PatchParams::default(), &Patch::Merge(&patch))
            .await;
        match result {
            Ok(_) => println!("node/{node} {done}"),
            Err(kube::Error::Api(e)) if e.code == 404 => {
                failed += 1;
                eprintln!("error: nodes \"{node}\" not found");
            }
            Err(e) => {
                return Err(e).with_context(|| format!("annotating node {node}"));
            }
        }
    }
    if failed > 0 {
        anyhow::bail!("{failed} of {} nodes not found", nodes.len());
    }
    Ok(())
}
