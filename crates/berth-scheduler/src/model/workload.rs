use super::{LabelSelector, ObjectMeta};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A Service (only its selector matters to scheduling).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Service {
    /// Metadata.
    pub metadata: ObjectMeta,
    /// Spec.
    pub spec: ServiceSpec,
}
/// `service.spec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ServiceSpec {
    /// Selector (absent = selects nothing).
    pub selector: Option<BTreeMap<String, String>>,
}

/// A ReplicationController.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReplicationController {
    /// Metadata.
    pub metadata: ObjectMeta,
    /// Spec.
    pub spec: ReplicationControllerSpec,
}
/// `replicationcontroller.spec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReplicationControllerSpec {
    /// Map selector.
    pub selector: BTreeMap<String, String>,
}

/// A ReplicaSet or StatefulSet (both carry a label selector in `spec.selector`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SelectorWorkload {
    /// Metadata.
    pub metadata: ObjectMeta,
    /// Spec.
    pub spec: SelectorWorkloadSpec,
}
/// `spec` of a ReplicaSet/StatefulSet.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SelectorWorkloadSpec {
    /// Selector.
    pub selector: Option<LabelSelector>,
}

/// A ReplicaSet.
pub type ReplicaSet = SelectorWorkload;
/// A StatefulSet.
pub type StatefulSet = SelectorWorkload;
