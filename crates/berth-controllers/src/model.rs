//! Small shared vocabulary of the engines: time conversions, node conditions, taints and
//! tolerations, and the actions drivers carry out.

use berth_core::taints;
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{Node, NodeCondition, Pod, Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Taint keys the node controllers own (upstream `k8s.io/api/core/v1` well-known taints).
pub mod keys {
    pub const NOT_READY: &str = "node.kubernetes.io/not-ready";
    pub const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
    pub const MEMORY_PRESSURE: &str = "node.kubernetes.io/memory-pressure";
    pub const DISK_PRESSURE: &str = "node.kubernetes.io/disk-pressure";
    pub const PID_PRESSURE: &str = "node.kubernetes.io/pid-pressure";
    pub const NETWORK_UNAVAILABLE: &str = "node.kubernetes.io/network-unavailable";
    pub const UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";
}

/// A Kubernetes `Time` as chrono time.
pub fn to_chrono(t: &Time) -> DateTime<Utc> {
    DateTime::from_timestamp(t.0.as_second(), t.0.subsec_nanosecond().max(0) as u32)
        .unwrap_or_default()
}

/// Chrono time as a Kubernetes `Time`, truncated to whole seconds as upstream serializes it.
pub fn to_time(t: DateTime<Utc>) -> Time {
    Time(k8s_openapi::jiff::Timestamp::new(t.timestamp(), 0).unwrap_or_default())
}

/// `2026-11-22T19:59:15Z`, the form Kubernetes writes `Time` in.
pub use berth_core::clock::timestamp;

/// The node's condition of type `type_`, if it reports one.
pub fn node_condition<'a>(node: &'a Node, type_: &str) -> Option<&'a NodeCondition> {
    node.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

/// The status (`True`, `False`, `Unknown`) of the node's condition `type_`.
pub fn node_condition_status<'a>(node: &'a Node, type_: &str) -> Option<&'a str> {
    node_condition(node, type_).map(|c| c.status.as_str())
}

/// The node's taints (empty when it has none).
pub fn node_taints(node: &Node) -> &[Taint] {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or(&[])
}

/// Whether two taints are the same taint (key and effect identify one; value compared too).
pub fn same_taint(a: &Taint, b: &Taint) -> bool {
    a.key == b.key
        && a.effect == b.effect
        && a.value.as_deref().unwrap_or("") == b.value.as_deref().unwrap_or("")
}

/// A taint with empty value, as the node controllers write them.
pub fn taint(key: &str, effect: &str, added: Option<DateTime<Utc>>) -> Taint {
    Taint {
        key: key.to_string(),
        effect: effect.to_string(),
        value: None,
        time_added: added.map(to_time),
    }
}

/// Whether toleration `t` tolerates taint `x` (control-loops §3.8; berth-core's rule).
pub fn tolerates(t: &Toleration, x: &Taint) -> bool {
    let toleration = taints::Toleration {
        key: t.key.as_deref().filter(|k| !k.is_empty()),
        operator: taints::Operator::parse(t.operator.as_deref().unwrap_or("")),
        value: t.value.as_deref().unwrap_or(""),
        effect: t.effect.as_deref().filter(|e| !e.is_empty()),
    };
    let taint = taints::Taint {
        key: x.key.as_str(),
        value: x.value.as_deref().unwrap_or(""),
        effect: x.effect.as_str(),
    };
    taints::tolerates(&toleration, &taint)
}

/// The node a pod is bound to, if any.
pub fn pod_node(pod: &Pod) -> Option<&str> {
    pod.spec
        .as_ref()?
        .node_name
        .as_deref()
        .filter(|n| !n.is_empty())
}

/// Whether the pod is being deleted.
pub fn is_deleting(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// Identity of a pod in actions and events.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PodRef {
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

impl PodRef {
    /// The reference of `pod`.
    pub fn of(pod: &Pod) -> PodRef {
        PodRef {
            namespace: pod.metadata.namespace.clone().unwrap_or_default(),
            name: pod.metadata.name.clone().unwrap_or_default(),
            uid: pod.metadata.uid.clone().unwrap_or_default(),
        }
    }
}

/// The object an event is about.
#[derive(Clone, Debug, PartialEq, Eq)]
///
/// Each carries the `resourceVersion` the controller saw, as upstream's `ObjectReference`
/// (`reference.GetReference`) does; empty when unknown.
pub enum Involved {
    /// A pod, and its resourceVersion.
    Pod(PodRef, String),
    Node {
        name: String,
        uid: String,
        resource_version: String,
    },
    PodDisruptionBudget {
        namespace: String,
        name: String,
        uid: String,
        resource_version: String,
    },
    DaemonSet {
        namespace: String,
        name: String,
        uid: String,
        resource_version: String,
    },
    /// A workload object that creates pods (ReplicaSet, ReplicationController, StatefulSet,
    /// Job).
    Workload {
        api_version: &'static str,
        kind: &'static str,
        namespace: String,
        name: String,
        uid: String,
        resource_version: String,
    },
}

/// The resourceVersion of an object's metadata (empty when unset).
pub fn version_of(meta: &kube::api::ObjectMeta) -> String {
    meta.resource_version.clone().unwrap_or_default()
}

impl Involved {
    /// A pod as events name it.
    pub fn pod(pod: &Pod) -> Involved {
        Involved::Pod(PodRef::of(pod), version_of(&pod.metadata))
    }
}

/// An event a controller records (core/v1 `Event`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventRecord {
    pub involved: Involved,
    /// `Normal` or `Warning`.
    pub type_: &'static str,
    pub reason: &'static str,
    pub message: String,
}

/// Sets (or replaces) the condition of `c.type_` in `conditions`.
pub fn upsert_condition(conditions: &mut Vec<NodeCondition>, c: NodeCondition) {
    match conditions.iter_mut().find(|x| x.type_ == c.type_) {
        Some(x) => *x = c,
        None => conditions.push(c),
    }
}
