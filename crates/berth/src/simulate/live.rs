//! `berth simulate --from-kubeconfig K`: a run that starts from a live cluster's state.
//!
//! The live cluster is only read (one list per kind). Its nodes become simulated nodes of the
//! same name, labels, taints and resources ([`berth_kubelet::config::imported`]); at time 0,
//! before the timeline, the objects that decide where pods go are created in the simulation:
//! namespaces, PriorityClasses, StorageClasses, PersistentVolumes and claims, ServiceAccounts
//! (pods name them), PodDisruptionBudgets (preemption and the descheduler heed them), then every
//! pod that still holds resources. Bound pods keep their node;
//! pending ones go through the simulated scheduler. This is what kube-scheduler-simulator
//! imports from a cluster.
//!
//! Pods come without their owners: the workload controllers are not imported, so that a
//! Deployment does not make a second set of the pods the snapshot already has. A timeline
//! that scales or deletes a live workload therefore finds nothing to act on; it can create
//! its own.

use anyhow::Context;
use berth_kubelet::NodeConfig;
use serde_json::Value;
use std::path::Path;

/// What a run takes from the live cluster.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// The kubeconfig it was read through (for the report's action line).
    pub source: String,
    pub nodes: Vec<NodeConfig>,
    /// Nodes cordoned in the live cluster, cordoned again at time 0.
    pub cordoned: Vec<String>,
    /// What is created at time 0, in creation order.
    pub objects: Vec<Value>,
}

/// The namespaces every berth cluster already has.
const BUILT_IN_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// The annotations that make a pod a node's mirror pod: only a node may create those.
const MIRROR_ANNOTATIONS: [&str; 3] = [
    "kubernetes.io/config.mirror",
    "kubernetes.io/config.source",
    "kubernetes.io/config.hash",
];

/// The live cluster's lists, as the API gave them (each item with apiVersion and kind).
#[derive(Default)]
pub struct Lists {
    pub nodes: Vec<Value>,
    pub namespaces: Vec<Value>,
    pub priority_classes: Vec<Value>,
    pub storage_classes: Vec<Value>,
    pub persistent_volumes: Vec<Value>,
    pub persistent_volume_claims: Vec<Value>,
    pub service_accounts: Vec<Value>,
    pub disruption_budgets: Vec<Value>,
    pub pods: Vec<Value>,
}

/// Reads the live cluster behind `kubeconfig` (read-only: one list per kind).
pub fn read(kubeconfig: &Path) -> anyhow::Result<Snapshot> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let lists = runtime.block_on(async {
        let client = crate::scheduler::client(Some(kubeconfig), "berth-simulate").await?;
        anyhow::Ok(Lists {
            nodes: list::<k8s_openapi::api::core::v1::Node>(&client, "nodes").await?,
            namespaces: list::<k8s_openapi::api::core::v1::Namespace>(&client, "namespaces")
                .await?,
            priority_classes: list::<k8s_openapi::api::scheduling::v1::PriorityClass>(
                &client,
                "priorityclasses",
            )
            .await?,
            storage_classes: list::<k8s_openapi::api::storage::v1::StorageClass>(
                &client,
                "storageclasses",
            )
            .await?,
            persistent_volumes: list::<k8s_openapi::api::core::v1::PersistentVolume>(
                &client,
                "persistentvolumes",
            )
            .await?,
            persistent_volume_claims: list::<k8s_openapi::api::core::v1::PersistentVolumeClaim>(
                &client,
                "persistentvolumeclaims",
            )
            .await?,
            service_accounts: list::<k8s_openapi::api::core::v1::ServiceAccount>(
                &client,
                "serviceaccounts",
            )
            .await?,
            disruption_budgets: list::<k8s_openapi::api::policy::v1::PodDisruptionBudget>(
                &client,
                "poddisruptionbudgets",
            )
            .await?,
            pods: list::<k8s_openapi::api::core::v1::Pod>(&client, "pods").await?,
        })
    })?;
    snapshot(&kubeconfig.display().to_string(), &lists)
}

async fn list<K>(client: &kube::Client, plural: &str) -> anyhow::Result<Vec<Value>>
where
    K: kube::Resource<DynamicType = ()>
        + k8s_openapi::Metadata
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    let items = kube::Api::<K>::all(client.clone())
        .list(&Default::default())
        .await
        .with_context(|| format!("listing {plural} of the live cluster"))?
        .items;
    items
        .iter()
        .map(|i| serde_json::to_value(i).map_err(anyhow::Error::from))
        .collect()
}

/// The run's inputs from the live cluster's lists.
pub fn snapshot(source: &str, lists: &Lists) -> anyhow::Result<Snapshot> {
    let nodes = lists
        .nodes
        .iter()
        .map(|n| berth_kubelet::config::imported::from_live_node(n).map_err(anyhow::Error::msg))
        .collect::<anyhow::Result<Vec<_>>>()?;
    anyhow::ensure!(!nodes.is_empty(), "the live cluster has no nodes");
    let cordoned = lists
        .nodes
        .iter()
        .filter(|n| berth_kubelet::config::imported::is_cordoned(n))
        .filter_map(|n| Some(n.pointer("/metadata/name")?.as_str()?.to_string()))
        .collect();
    let mut objects = Vec::new();
    let user_namespaces = lists.namespaces.iter().filter(|ns| {
        let name = ns.pointer("/metadata/name").and_then(Value::as_str);
        !name.is_some_and(|n| BUILT_IN_NAMESPACES.contains(&n))
    });
    // Built-in PriorityClasses (`system-...`) exist in every cluster; the API refuses new ones
    // of that prefix.
    let user_classes = lists.priority_classes.iter().filter(|pc| {
        let name = pc.pointer("/metadata/name").and_then(Value::as_str);
        !name.is_some_and(|n| n.starts_with("system-"))
    });
    objects.extend(user_namespaces.chain(user_classes).map(cleaned));
    objects.extend(lists.storage_classes.iter().map(cleaned));
    objects.extend(lists.persistent_volumes.iter().map(volume));
    objects.extend(lists.service_accounts.iter().map(service_account));
    objects.extend(lists.persistent_volume_claims.iter().map(cleaned));
    objects.extend(lists.disruption_budgets.iter().map(cleaned));
    objects.extend(lists.pods.iter().filter(|p| holds_resources(p)).map(pod));
    Ok(Snapshot {
        source: source.to_string(),
        nodes,
        cordoned,
        objects,
    })
}

/// A pod that is neither finished nor going away.
fn holds_resources(pod: &Value) -> bool {
    let phase = pod.pointer("/status/phase").and_then(Value::as_str);
    !matches!(phase, Some("Succeeded" | "Failed"))
        && pod.pointer("/metadata/deletionTimestamp").is_none()
}

/// The object as a user would write it: what the server set (uid, resourceVersion, times,
/// managed fields, owners that are not imported, status) removed.
fn cleaned(obj: &Value) -> Value {
    let mut out = obj.clone();
    if let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "generation",
            "managedFields",
            "ownerReferences",
            "selfLink",
            "finalizers",
        ] {
            meta.remove(field);
        }
    }
    if let Some(map) = out.as_object_mut() {
        map.remove("status");
    }
    out
}

/// A PersistentVolume keeps its claim's name (so the two bind again) but not the live uid.
fn volume(pv: &Value) -> Value {
    let mut out = cleaned(pv);
    for field in ["uid", "resourceVersion"] {
        if let Some(claim) = out
            .pointer_mut("/spec/claimRef")
            .and_then(Value::as_object_mut)
        {
            claim.remove(field);
        }
    }
    out
}

/// A ServiceAccount without the live token Secrets it lists (they are not imported).
fn service_account(sa: &Value) -> Value {
    let mut out = cleaned(sa);
    if let Some(map) = out.as_object_mut() {
        map.remove("secrets");
    }
    out
}

/// A pod as created again: its node kept (a bound pod stays where it runs), its priority left
/// to the Priority admission plugin (which refuses a given one), no mirror-pod annotations.
fn pod(p: &Value) -> Value {
    let mut out = cleaned(p);
    if let Some(spec) = out.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("priority");
    }
    if let Some(annotations) = out
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        for key in MIRROR_ANNOTATIONS {
            annotations.remove(key);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str, cordoned: bool) -> Value {
        json!({"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
               "spec": {"unschedulable": cordoned},
               "status": {"capacity": {"cpu": "2", "memory": "4Gi", "pods": "110"},
                          "allocatable": {"cpu": "1900m", "memory": "3Gi", "pods": "110"}}})
    }

    fn lists() -> Lists {
        Lists {
            nodes: vec![node("a", false), node("b", true)],
            namespaces: vec![
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default", "uid": "1"}}),
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "uid": "2",
                       "labels": {"pod-security.kubernetes.io/enforce": "baseline"}},
                       "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}),
            ],
            priority_classes: vec![
                json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                       "metadata": {"name": "system-node-critical"}, "value": 2000001000}),
                json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                       "metadata": {"name": "high"}, "value": 1000}),
            ],
            service_accounts: vec![json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": "builder", "namespace": "shop"},
                "secrets": [{"name": "builder-token-x"}]})],
            pods: vec![
                json!({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": "web-1", "namespace": "shop", "uid": "u", "resourceVersion": "9",
                                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                                         "name": "web", "uid": "r", "controller": true}],
                                    "annotations": {"kubernetes.io/config.mirror": "h", "keep": "me"}},
                       "spec": {"nodeName": "a", "priority": 1000, "priorityClassName": "high",
                                "containers": [{"name": "c", "image": "nginx"}]},
                       "status": {"phase": "Running"}}),
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "done", "namespace": "shop"},
                       "spec": {"containers": []}, "status": {"phase": "Succeeded"}}),
                json!({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": "leaving", "namespace": "shop",
                                    "deletionTimestamp": "2026-01-01T00:00:00Z"},
                       "spec": {"containers": []}, "status": {"phase": "Running"}}),
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "waiting", "namespace": "shop"},
                       "spec": {"containers": []}, "status": {"phase": "Pending"}}),
            ],
            ..Lists::default()
        }
    }

    fn names(s: &Snapshot) -> Vec<String> {
        s.objects
            .iter()
            .map(|o| {
                format!(
                    "{}/{}",
                    o["kind"].as_str().unwrap(),
                    o["metadata"]["name"].as_str().unwrap()
                )
            })
            .collect()
    }

    #[test]
    fn the_snapshot_creates_what_pods_need_before_the_pods() {
        let s = snapshot("kc", &lists()).unwrap();
        assert_eq!(
            names(&s),
            [
                "Namespace/shop",
                "PriorityClass/high",
                "ServiceAccount/builder",
                "Pod/web-1",
                "Pod/waiting"
            ]
        );
        assert_eq!(s.nodes.len(), 2);
        assert_eq!(s.cordoned, ["b"]);
        assert_eq!(s.nodes[0].allocatable["cpu"].milli_value(), 1900);
    }

    #[test]
    fn imported_objects_carry_nothing_the_server_sets() {
        let s = snapshot("kc", &lists()).unwrap();
        let ns = &s.objects[0];
        assert!(ns.get("status").is_none());
        assert_eq!(
            ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
            "baseline"
        );
        assert!(ns["metadata"].get("uid").is_none());
        let sa = &s.objects[2];
        assert!(sa.get("secrets").is_none());
        let pod = &s.objects[3];
        assert_eq!(pod["spec"]["nodeName"], "a");
        assert!(pod["spec"].get("priority").is_none());
        assert_eq!(pod["spec"]["priorityClassName"], "high");
        assert!(pod["metadata"].get("ownerReferences").is_none());
        assert!(pod["metadata"].get("resourceVersion").is_none());
        assert_eq!(pod["metadata"]["annotations"], json!({"keep": "me"}));
        assert!(pod.get("status").is_none());
    }

    #[test]
    fn a_cluster_without_nodes_or_with_a_bad_node_is_refused() {
        let mut l = lists();
        l.nodes.clear();
        assert_eq!(
            snapshot("kc", &l).unwrap_err().to_string(),
            "the live cluster has no nodes"
        );
        let mut l = lists();
        l.nodes[0]["status"]["capacity"]["memory"] = json!("lots");
        let e = snapshot("kc", &l).unwrap_err().to_string();
        assert!(
            e.starts_with("node a: status.capacity.memory: \"lots\""),
            "{e}"
        );
    }

    #[test]
    fn a_bound_volume_keeps_its_claim_by_name() {
        let pv = json!({"apiVersion": "v1", "kind": "PersistentVolume",
                        "metadata": {"name": "pv1", "uid": "x"},
                        "spec": {"claimRef": {"name": "data", "namespace": "shop", "uid": "c", "resourceVersion": "3"}},
                        "status": {"phase": "Bound"}});
        let out = volume(&pv);
        assert_eq!(
            out["spec"]["claimRef"],
            json!({"name": "data", "namespace": "shop"})
        );
    }
}
