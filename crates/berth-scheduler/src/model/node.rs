use super::{ObjectMeta, Quantity};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A Node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Node {
    /// Metadata.
    pub metadata: ObjectMeta,
    /// Spec.
    pub spec: NodeSpec,
    /// Status.
    pub status: NodeStatus,
}

/// `node.spec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeSpec {
    /// Cordoned.
    pub unschedulable: bool,
    /// Taints.
    pub taints: Vec<Taint>,
}

/// A taint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Taint {
    /// Key.
    pub key: String,
    /// Value.
    pub value: String,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: String,
}

/// `node.status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeStatus {
    /// Capacity (used only when allocatable is absent, as API defaulting does).
    pub capacity: BTreeMap<String, Quantity>,
    /// Allocatable: what the scheduler places against.
    pub allocatable: BTreeMap<String, Quantity>,
    /// Conditions.
    pub conditions: Vec<NodeCondition>,
    /// Images present on the node.
    pub images: Vec<ContainerImage>,
}

/// A node condition.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeCondition {
    /// Type (`Ready`, `MemoryPressure`, ...).
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
}

/// An image on a node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContainerImage {
    /// Names (tags and digests).
    pub names: Vec<String>,
    /// Size in bytes.
    pub size_bytes: i64,
}
