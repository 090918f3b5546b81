use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `metadata` of any object (the subset the scheduler reads).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObjectMeta {
    /// Object name.
    pub name: String,
    /// Namespace; empty for cluster-scoped objects (and treated as `default` for pods).
    pub namespace: String,
    /// Unique id.
    pub uid: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    pub annotations: BTreeMap<String, String>,
    /// Owner references; the one with `controller: true` is the controller ref.
    pub owner_references: Vec<OwnerReference>,
    /// Set when the object is being deleted.
    pub deletion_timestamp: Option<String>,
    /// Creation time (RFC 3339), used only for deterministic tie-breaks.
    pub creation_timestamp: Option<String>,
    /// The spec's generation: the `PodScheduled` condition the scheduler writes says which
    /// one it decided on (1.35's `observedGeneration`).
    pub generation: Option<i64>,
}

/// `metadata.ownerReferences[]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OwnerReference {
    /// API version of the owner.
    pub api_version: String,
    /// Kind of the owner (`ReplicaSet`, `ReplicationController`, ...).
    pub kind: String,
    /// Owner name.
    pub name: String,
    /// Owner uid.
    pub uid: String,
    /// Whether this owner is the managing controller.
    pub controller: Option<bool>,
}

/// A label selector (`matchLabels` AND `matchExpressions`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LabelSelector {
    /// Exact key=value requirements.
    pub match_labels: BTreeMap<String, String>,
    /// Set-based requirements.
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// One set-based label requirement (`In`, `NotIn`, `Exists`, `DoesNotExist`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LabelSelectorRequirement {
    /// Label key.
    pub key: String,
    /// Operator.
    pub operator: String,
    /// Values.
    pub values: Vec<String>,
}

impl ObjectMeta {
    /// Namespace, defaulting to `default` when empty.
    pub fn namespace_or_default(&self) -> &str {
        if self.namespace.is_empty() {
            "default"
        } else {
            &self.namespace
        }
    }
    /// The controller owner reference, if any.
    pub fn controller_ref(&self) -> Option<&OwnerReference> {
        self.owner_references
            .iter()
            .find(|o| o.controller == Some(true))
    }
}
