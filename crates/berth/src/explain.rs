//! `berth explain pod NAMESPACE/NAME`: why the scheduler would (not) put a pod on each node.
//!
//! Lists what the engine reads through the API into a fresh `ClusterCache`, takes the pod out
//! of it if it is bound (it is explained as if it were pending), and prints `Scheduler::explain`:
//! per node, the failed predicates with their reasons, or each priority's score and the total.

use anyhow::{bail, Context};
use berth_scheduler::config::CompiledProfile;
use berth_scheduler::driver::published_policy;
use berth_scheduler::{ClusterCache, Explanation, PredicateResult, Scheduler};
use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{
    Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController, Service,
};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::serde::de::DeserializeOwned;
use kube::api::{Api, ListParams};
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(clap::Subcommand, Debug)]
pub enum ExplainCommand {
    /// Explain the scheduling decision for one pod, node by node.
    Pod(ExplainPodArgs),
}

#[derive(clap::Args, Debug)]
pub struct ExplainPodArgs {
    /// The pod, as NAMESPACE/NAME (or NAME in the `default` namespace).
    pub pod: String,
    /// Kubeconfig of the cluster (default: $KUBECONFIG or ~/.kube/config).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// The scheduler policy file to explain with. Without one, the policy the pod's scheduler
    /// runs, as it published it (`kube-system/<schedulerName>-running-policy`).
    #[arg(long)]
    pub policy_config_file: Option<PathBuf>,
    /// A KubeSchedulerConfiguration to explain with: the profile named by the pod's
    /// `schedulerName` (not together with --policy-config-file).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    pub output: Output,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    Table,
    Json,
}

pub async fn run(cmd: ExplainCommand) -> anyhow::Result<()> {
    let ExplainCommand::Pod(args) = cmd;
    let (namespace, name) = match args.pod.split_once('/') {
        Some((ns, n)) if !ns.is_empty() && !n.is_empty() => (ns.to_string(), n.to_string()),
        None if !args.pod.is_empty() => ("default".to_string(), args.pod.clone()),
        _ => bail!("expected NAMESPACE/NAME, got {:?}", args.pod),
    };
    let client = crate::scheduler::client(args.kubeconfig.as_deref(), "berth-explain").await?;
    let pod = Api::<Pod>::namespaced(client.clone(), &namespace)
        .get_opt(&name)
        .await
        .with_context(|| format!("reading pod {namespace}/{name}"))?
        .with_context(|| format!("pod {namespace}/{name} not found"))?;
    let (policy, policy_note, profile) = policy_for(
        &client,
        &pod,
        args.policy_config_file.as_deref(),
        args.config.as_deref(),
    )
    .await?;
    let mut cache = ClusterCache::new();
    load(&client, &mut cache).await?;
    let key = format!("{namespace}/{name}");
    let bound_to = pod.spec.as_ref().and_then(|s| s.node_name.clone());
    let _ = cache.remove_pod(&key);
    let mut pending = serde_json::to_value(&pod)?;
    if let Some(spec) = pending.get_mut("spec").and_then(|s| s.as_object_mut()) {
        spec.remove("nodeName");
    }
    // A profile's plugin args (addedAffinity, ignored resources, scoring) apply to the pod.
    let plugin_args = profile
        .as_ref()
        .map(|p| p.plugin_args.clone())
        .unwrap_or_default();
    let model: berth_scheduler::model::Pod =
        serde_json::from_value(pending).map_err(|e| anyhow::anyhow!("compiling pod {key}: {e}"))?;
    let info = plugin_args.compile_pod(&mut cache, &model);
    let mut scheduler = Scheduler::builder()
        .policy(policy)
        .framework_profile(profile.is_some())
        .plugin_args(plugin_args)
        .build()
        .map_err(|e| anyhow::anyhow!("building the scheduler: {e}"))?;
    let mut ex = scheduler.explain(&cache, &info);
    let policy_note = match &profile {
        Some(p) => {
            as_plugins(&mut ex);
            format!("{policy_note}\n{}", plugin_lines(p))
        }
        None => policy_note,
    };
    match args.output {
        Output::Json => {
            eprintln!("{policy_note}");
            crate::output::print(&format!("{}\n", serde_json::to_string_pretty(&ex)?))?;
        }
        Output::Table => {
            let text = table(&ex, bound_to.as_deref());
            crate::output::print(&format!("{text}{policy_note}\n"))?;
        }
    }
    Ok(())
}

/// The policy to explain `pod` with, and a line saying which it is: the file given, else the
/// one the pod's scheduler published; berth's default policy for `default-scheduler` when it
/// published none (a cluster whose scheduler is not berth's), a refusal for other schedulers.
async fn policy_for(
    client: &kube::Client,
    pod: &Pod,
    file: Option<&std::path::Path>,
    config: Option<&std::path::Path>,
) -> anyhow::Result<(
    berth_scheduler::policy::Policy,
    String,
    Option<CompiledProfile>,
)> {
    let scheduler = pod
        .spec
        .as_ref()
        .and_then(|s| s.scheduler_name.clone())
        .unwrap_or_else(|| "default-scheduler".into());
    match crate::scheduler::load_scheduling(file, config)? {
        crate::scheduler::Scheduling::Profiles(profiles, _) => {
            let path = config.map(|p| p.display().to_string()).unwrap_or_default();
            let Some(p) = profiles.into_iter().find(|p| p.scheduler_name == scheduler) else {
                bail!("the configuration {path} has no profile {scheduler:?} (the pod's schedulerName)");
            };
            let note = format!("Profile: {scheduler} of the KubeSchedulerConfiguration {path}");
            return Ok((p.policy.clone(), note, Some(p)));
        }
        crate::scheduler::Scheduling::Policy(policy) if file.is_some() => {
            let path = file.map(|p| p.display().to_string()).unwrap_or_default();
            return Ok((policy, format!("Policy: the file {path}"), None));
        }
        crate::scheduler::Scheduling::Policy(_) => {}
    }
    let configmap = format!(
        "{}/{}",
        published_policy::NAMESPACE,
        published_policy::configmap_name(&scheduler)
    );
    match published_policy::read(client.clone(), &scheduler)
        .await
        .map_err(anyhow::Error::msg)?
    {
        Some(p) if p.profile.is_some() => Ok((
            p.policy,
            format!(
                "Profile: the one {scheduler} runs (ConfigMap {configmap}, from the KubeSchedulerConfiguration {})",
                p.source
            ),
            p.profile,
        )),
        Some(p) => Ok((
            p.policy,
            format!(
                "Policy: the one {scheduler} runs (ConfigMap {configmap}, from {})",
                p.source
            ),
            None,
        )),
        None if scheduler == "default-scheduler" => Ok((
            crate::scheduler::load_policy(None)?,
            format!(
                "Policy: berth's default ({scheduler} published none in ConfigMap {configmap})"
            ),
            None,
        )),
        None => bail!(
            "the pod's scheduler {scheduler:?} published no policy (no ConfigMap {configmap}): \
             give the policy it runs with --policy-config-file"
        ),
    }
}

/// A profile's explanation in its plugins' terms: 1.35's reasons. (Its scores are already the
/// plugins' own, 0..100 with the profile's weights.)
pub(crate) fn as_plugins(ex: &mut Explanation) {
    use berth_scheduler::config::messages;
    for n in &mut ex.nodes {
        if let PredicateResult::Unschedulable { reasons, .. } = &mut n.result {
            *reasons = reasons
                .iter()
                .filter_map(|r| messages::reason(r).map(str::to_string))
                .collect();
        }
    }
}

/// The profile's plugins at the points that decide placement.
fn plugin_lines(p: &CompiledProfile) -> String {
    use berth_scheduler::config::Point;
    let at = |point: Point| -> String {
        let names: Vec<String> = p
            .plugins
            .iter()
            .filter(|pp| pp.point == point)
            .map(|pp| match point {
                Point::Score => format!("{}(x{})", pp.name, pp.weight),
                _ => pp.name.clone(),
            })
            .collect();
        format!("  {}: {}", point.field(), names.join(", "))
    };
    [
        Point::PreEnqueue,
        Point::Filter,
        Point::PostFilter,
        Point::Score,
    ]
    .into_iter()
    .map(at)
    .collect::<Vec<_>>()
    .join("\n")
}

/// Lists every kind the engine reads into `cache`.
pub(crate) async fn load(client: &kube::Client, cache: &mut ClusterCache) -> anyhow::Result<()> {
    for b in list::<Node>(client, "nodes").await? {
        cache.upsert_node_json(&b).map_err(anyhow::Error::msg)?;
    }
    for b in list::<Pod>(client, "pods").await? {
        cache.upsert_pod_json(&b).map_err(anyhow::Error::msg)?;
    }
    for b in list::<Service>(client, "services").await? {
        cache.upsert_service_json(&b).map_err(anyhow::Error::msg)?;
    }
    for b in list::<ReplicationController>(client, "replicationcontrollers").await? {
        cache
            .upsert_controller_json("ReplicationController", &b)
            .map_err(anyhow::Error::msg)?;
    }
    for b in list::<ReplicaSet>(client, "replicasets").await? {
        cache
            .upsert_controller_json("ReplicaSet", &b)
            .map_err(anyhow::Error::msg)?;
    }
    for b in list::<StatefulSet>(client, "statefulsets").await? {
        cache
            .upsert_controller_json("StatefulSet", &b)
            .map_err(anyhow::Error::msg)?;
    }
    for b in list::<PersistentVolume>(client, "persistentvolumes").await? {
        cache
            .upsert_volume_object_json("PersistentVolume", &b)
            .map_err(anyhow::Error::msg)?;
    }
    for b in list::<PersistentVolumeClaim>(client, "persistentvolumeclaims").await? {
        cache
            .upsert_volume_object_json("PersistentVolumeClaim", &b)
            .map_err(anyhow::Error::msg)?;
    }
    for b in list::<StorageClass>(client, "storageclasses").await? {
        cache
            .upsert_volume_object_json("StorageClass", &b)
            .map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

/// Every object of a kind, as JSON bytes (what the cache decodes).
async fn list<K>(client: &kube::Client, what: &str) -> anyhow::Result<Vec<Vec<u8>>>
where
    K: kube::Resource + Clone + DeserializeOwned + std::fmt::Debug + k8s_openapi::serde::Serialize,
    K::DynamicType: Default,
{
    let items = Api::<K>::all(client.clone())
        .list(&ListParams::default())
        .await
        .with_context(|| format!("listing {what}"))?;
    items
        .items
        .iter()
        .map(|o| serde_json::to_vec(o).map_err(anyhow::Error::from))
        .collect()
}

/// The explanation as a table: one row per node, one column per priority (raw score 0..10
/// under a policy, 0..100 under a profile;
/// the header gives the weight), the weighted total, and the failed predicates' reasons.
pub(crate) fn table(ex: &Explanation, bound_to: Option<&str>) -> String {
    let mut out = String::new();
    let bound = bound_to.map_or(String::new(), |n| {
        format!(" (bound to {n}; explained as if pending)")
    });
    out.push_str(&format!("Pod {}{bound}\n", ex.pod));
    if let Some(e) = &ex.error {
        out.push_str(&format!("Error: {e}\n"));
        return out;
    }
    let prios: Vec<String> = ex
        .nodes
        .iter()
        .find(|n| !n.priorities.is_empty())
        .map(|n| {
            n.priorities
                .iter()
                .map(|p| format!("{}(x{})", p.name, p.weight))
                .collect()
        })
        .unwrap_or_default();
    let mut rows = vec![[
        vec!["NODE".into(), "FITS".into(), "TOTAL".into()],
        prios.clone(),
    ]
    .concat()
    .into_iter()
    .chain(std::iter::once("REASONS".to_string()))
    .collect::<Vec<String>>()];
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    for n in &ex.nodes {
        let mut row = vec![n.node.clone()];
        match &n.result {
            PredicateResult::Fit => {
                row.push("yes".into());
                row.push(n.total.map_or("-".into(), |t| t.to_string()));
                row.extend(n.priorities.iter().map(|p| p.score.to_string()));
                row.resize(3 + prios.len(), "-".into());
                row.push(String::new());
            }
            PredicateResult::Unschedulable { reasons: why, .. } => {
                row.push("no".into());
                row.push("-".into());
                row.resize(3 + prios.len(), "-".into());
                row.push(why.join("; "));
                for r in why {
                    *reasons.entry(r.clone()).or_default() += 1;
                }
            }
            PredicateResult::Error(e) => {
                row.push("error".into());
                row.push("-".into());
                row.resize(3 + prios.len(), "-".into());
                row.push(e.clone());
            }
        }
        rows.push(row);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0))
        .collect();
    for r in &rows {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(line.join("   ").trim_end());
        out.push('\n');
    }
    let best = ex.nodes.iter().filter_map(|n| n.total).max();
    match best {
        Some(best) => {
            let top: Vec<&str> = ex
                .nodes
                .iter()
                .filter(|n| n.total == Some(best))
                .map(|n| n.node.as_str())
                .collect();
            let tie = if top.len() > 1 {
                " (a tie: the scheduler picks one at random)"
            } else {
                ""
            };
            out.push_str(&format!(
                "Highest total {best} on {}{tie}.\n",
                top.join(", ")
            ));
        }
        None => {
            let mut parts: Vec<String> = reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
            parts.sort();
            out.push_str(&format!(
                "0/{} nodes are available: {}.\n",
                ex.nodes.len(),
                parts.join(", ")
            ));
        }
    }
    out
}
