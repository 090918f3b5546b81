//! `berth simulate capacity`: how many more instances of a pod the cluster can schedule
//! (cluster-capacity's question, answered in its words) with berth's scheduling engine and
//! the configured policy.
//!
//! The count is pure: the nodes (and the pods already on them) go into a [`ClusterCache`],
//! then copies of the pod are scheduled and assumed one by one, as the scheduler would bind
//! them, until one does not fit or `--max` is reached. No control plane runs: this takes
//! milliseconds.

use anyhow::Context;
use berth_scheduler::{ClusterCache, Decision, Scheduler};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(clap::Args, Debug, Clone)]
pub struct CapacityArgs {
    /// The pod to count instances of (a Pod manifest, YAML or JSON).
    #[arg(long)]
    pub pod: PathBuf,
    /// Stop after this many instances (0: until one does not fit).
    #[arg(long, default_value_t = 0)]
    pub max: usize,
    /// Node pools (the `berth serve --cluster` format).
    #[arg(long)]
    pub cluster: Option<PathBuf>,
    /// Without --cluster: how many default nodes (4 CPU, 16Gi).
    #[arg(long, default_value_t = 3)]
    pub nodes: usize,
    /// Count on a snapshot of the cluster this kubeconfig names instead: its nodes and the pods
    /// bound to them, read once (nothing is written to it).
    #[arg(long, conflicts_with = "cluster")]
    pub from_kubeconfig: Option<PathBuf>,
    /// The scheduler policy file (the seed's `kind: Policy`).
    #[arg(long)]
    pub policy_config_file: Option<PathBuf>,
    /// A KubeSchedulerConfiguration (its first profile is used).
    #[arg(long, alias = "scheduler-config")]
    pub config: Option<PathBuf>,
    /// Print each instance's node as well.
    #[arg(long)]
    pub verbose: bool,
}

/// The most instances counted when `--max` is not given: a bound on the work.
pub const COUNT_LIMIT: usize = 1_000_000;

/// The answer: how many fit, where, and why the next one did not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capacity {
    pub pod_name: String,
    pub instances: usize,
    pub per_node: BTreeMap<String, usize>,
    /// `Unschedulable`, `LimitReached` or `Error`.
    pub fail_type: &'static str,
    pub fail_message: String,
}

impl Capacity {
    /// cluster-capacity's report.
    pub fn text(&self, verbose: bool) -> String {
        let mut out = format!(
            "The cluster can schedule {} instance(s) of the pod {}.\n\nTermination reason: {}: {}\n",
            self.instances, self.pod_name, self.fail_type, self.fail_message
        );
        if verbose && self.instances > 0 {
            out.push_str(&format!(
                "\nPod distribution among nodes:\n{}\n",
                self.pod_name
            ));
            for (node, n) in &self.per_node {
                out.push_str(&format!("\t- {node}: {n} instance(s)\n"));
            }
        }
        out
    }
}

/// A node object as the simulated kubelet registers it: labels, taints, capacity and
/// allocatable of its pool.
pub fn node_object(n: &berth_kubelet::NodeConfig) -> Value {
    let mut labels: BTreeMap<String, String> = n.labels.clone();
    labels
        .entry("kubernetes.io/hostname".into())
        .or_insert_with(|| n.name.clone());
    labels
        .entry("kubernetes.io/os".into())
        .or_insert_with(|| "linux".into());
    labels
        .entry("kubernetes.io/arch".into())
        .or_insert_with(|| "amd64".into());
    let list = |l: &berth_kubelet::allocatable::ResourceList| -> BTreeMap<String, String> {
        l.iter().map(|(k, q)| (k.clone(), q.to_string())).collect()
    };
    let taints: Vec<Value> = n
        .taints
        .iter()
        .map(|t| json!({"key": t.key, "value": t.value, "effect": t.effect}))
        .collect();
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": n.name, "labels": labels},
        "spec": {"taints": taints},
        "status": {
            "capacity": list(&n.capacity),
            "allocatable": list(&n.allocatable),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    })
}

/// Counts the instances of `pod` that fit, scheduling and assuming each in turn.
pub fn count(
    cache: &mut ClusterCache,
    scheduler: &mut Scheduler,
    pod: &Value,
    max: usize,
) -> Capacity {
    let pod_name = pod
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("pod")
        .to_string();
    let limit = if max == 0 { COUNT_LIMIT } else { max };
    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    let mut instances = 0;
    let finish = |instances, per_node, fail_type, fail_message| Capacity {
        pod_name: pod_name.clone(),
        instances,
        per_node,
        fail_type,
        fail_message,
    };
    loop {
        if instances >= limit {
            return finish(instances, per_node, "LimitReached", "Limit reached".into());
        }
        let mut copy = pod.clone();
        copy["metadata"]["name"] = json!(format!("{pod_name}-{instances}"));
        copy["metadata"]["uid"] = json!(format!("capacity-{instances}"));
        if copy.pointer("/metadata/namespace").is_none() {
            copy["metadata"]["namespace"] = json!("default");
        }
        if let Some(spec) = copy.get_mut("spec").and_then(Value::as_object_mut) {
            spec.remove("nodeName");
        }
        let bytes = copy.to_string().into_bytes();
        let info = match cache.compile_pod_json(&bytes) {
            Ok(info) => info,
            Err(e) => return finish(instances, per_node, "Error", e.to_string()),
        };
        match scheduler.schedule(cache, &info) {
            Decision::Scheduled { node, .. } => {
                if let Err(e) = cache.assume(info, &node) {
                    return finish(instances, per_node, "Error", e.to_string());
                }
                *per_node.entry(node).or_default() += 1;
                instances += 1;
            }
            Decision::Unschedulable(fit) => {
                return finish(instances, per_node, "Unschedulable", fit.message());
            }
            Decision::Error(e) => return finish(instances, per_node, "Error", e),
        }
    }
}

/// The scheduler the configuration describes (the default policy without one), its
/// tie-breaks seeded with `seed`.
pub fn scheduler(
    policy: Option<&std::path::Path>,
    config: Option<&std::path::Path>,
    seed: u64,
) -> anyhow::Result<Scheduler> {
    let (policy, framework) = match crate::scheduler::load_scheduling(policy, config)? {
        crate::scheduler::Scheduling::Policy(p) => (p, false),
        crate::scheduler::Scheduling::Profiles(profiles, _) => {
            let first = profiles
                .into_iter()
                .next()
                .context("the configuration has no profile")?;
            (first.policy, true)
        }
    };
    Scheduler::builder()
        .policy(policy)
        .seed(seed)
        .framework_profile(framework)
        .build()
        .map_err(|e| anyhow::anyhow!("{e}"))
}

pub fn run(args: CapacityArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.pod)
        .with_context(|| format!("reading the pod file {}", args.pod.display()))?;
    let pod: Value = serde_saphyr::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}: not a YAML or JSON pod: {e}", args.pod.display()))?;
    anyhow::ensure!(
        pod.get("kind").and_then(Value::as_str) == Some("Pod"),
        "{}: expected a manifest of kind Pod",
        args.pod.display()
    );
    let mut cache = ClusterCache::new();
    if let Some(path) = &args.from_kubeconfig {
        snapshot(&mut cache, path)?;
    } else {
        cluster_nodes(&mut cache, &args)?;
    }
    let mut scheduler = scheduler(
        args.policy_config_file.as_deref(),
        args.config.as_deref(),
        0,
    )?;
    let answer = count(&mut cache, &mut scheduler, &pod, args.max);
    print!("{}", answer.text(args.verbose));
    Ok(())
}

/// The cluster file's nodes (or `--nodes` default ones), empty.
fn cluster_nodes(cache: &mut ClusterCache, args: &CapacityArgs) -> anyhow::Result<()> {
    let nodes = match &args.cluster {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading the cluster file {}", path.display()))?;
            berth_kubelet::config::parse_cluster(&text)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
                .nodes
        }
        None => berth_kubelet::NodeConfig::quick(args.nodes),
    };
    for n in &nodes {
        let bytes = node_object(n).to_string().into_bytes();
        cache
            .upsert_node_json(&bytes)
            .map_err(|e| anyhow::anyhow!("node {}: {e}", n.name))?;
    }
    Ok(())
}

/// A live cluster's nodes and the pods bound to them that still hold resources (read-only:
/// two lists).
fn snapshot(cache: &mut ClusterCache, kubeconfig: &std::path::Path) -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::{Node, Pod};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (nodes, pods) = runtime.block_on(async {
        let client = crate::scheduler::client(Some(kubeconfig), "berth-simulate").await?;
        let nodes = kube::Api::<Node>::all(client.clone())
            .list(&Default::default())
            .await
            .context("listing nodes")?;
        let pods = kube::Api::<Pod>::all(client)
            .list(&Default::default())
            .await
            .context("listing pods")?;
        anyhow::Ok((nodes.items, pods.items))
    })?;
    for n in &nodes {
        let bytes = serde_json::to_vec(n)?;
        cache
            .upsert_node_json(&bytes)
            .map_err(|e| anyhow::anyhow!("node {:?}: {e}", n.metadata.name))?;
    }
    for p in &pods {
        let bound = p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some();
        let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
        if bound && !matches!(phase, Some("Succeeded" | "Failed")) {
            let bytes = serde_json::to_vec(p)?;
            cache
                .upsert_pod_json(&bytes)
                .map_err(|e| anyhow::anyhow!("pod {:?}: {e}", p.metadata.name))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
