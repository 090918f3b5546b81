use super::{
    AwsElasticBlockStore, AzureDisk, CsiSource, GcePersistentDisk, LabelSelector, NodeSelector,
    ObjectMeta, Quantity,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A PersistentVolume.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PersistentVolume {
    /// Metadata (zone/region labels live here).
    pub metadata: ObjectMeta,
    /// Spec.
    pub spec: PersistentVolumeSpec,
}
/// `pv.spec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PersistentVolumeSpec {
    /// Capacity (`storage`).
    pub capacity: BTreeMap<String, Quantity>,
    /// Access modes.
    pub access_modes: Vec<String>,
    /// Storage class.
    pub storage_class_name: String,
    /// Claim this volume is bound to.
    pub claim_ref: Option<ClaimRef>,
    /// Node affinity.
    pub node_affinity: Option<VolumeNodeAffinity>,
    /// GCE PD.
    pub gce_persistent_disk: Option<GcePersistentDisk>,
    /// AWS EBS.
    pub aws_elastic_block_store: Option<AwsElasticBlockStore>,
    /// Azure Disk.
    pub azure_disk: Option<AzureDisk>,
    /// CSI.
    pub csi: Option<CsiSource>,
}
/// `pv.spec.claimRef`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClaimRef {
    /// Claim namespace.
    pub namespace: String,
    /// Claim name.
    pub name: String,
}
/// `pv.spec.nodeAffinity`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VolumeNodeAffinity {
    /// Required node selector.
    pub required: Option<NodeSelector>,
}

/// A PersistentVolumeClaim.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PersistentVolumeClaim {
    /// Metadata.
    pub metadata: ObjectMeta,
    /// Spec.
    pub spec: PersistentVolumeClaimSpec,
}
/// `pvc.spec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PersistentVolumeClaimSpec {
    /// Bound volume name (empty = unbound).
    pub volume_name: String,
    /// Storage class.
    pub storage_class_name: Option<String>,
    /// Access modes.
    pub access_modes: Vec<String>,
    /// Requested size.
    pub resources: PvcResources,
    /// Selector over PVs.
    pub selector: Option<LabelSelector>,
}
/// `pvc.spec.resources`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PvcResources {
    /// Requests (`storage`).
    pub requests: BTreeMap<String, Quantity>,
}

/// A StorageClass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StorageClass {
    /// Metadata.
    pub metadata: ObjectMeta,
    /// Provisioner (`kubernetes.io/no-provisioner` = none).
    pub provisioner: String,
    /// `Immediate` or `WaitForFirstConsumer`; absent is an error for the zone predicate.
    pub volume_binding_mode: Option<String>,
    /// Topologies dynamic provisioning may serve (empty = any).
    pub allowed_topologies: Vec<TopologySelectorTerm>,
}
/// `allowedTopologies[]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopologySelectorTerm {
    /// Requirements (ANDed).
    pub match_label_expressions: Vec<TopologySelectorRequirement>,
}
/// `matchLabelExpressions[]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopologySelectorRequirement {
    /// Key.
    pub key: String,
    /// Allowed values.
    pub values: Vec<String>,
}
