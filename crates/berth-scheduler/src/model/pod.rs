use super::{LabelSelector, ObjectMeta};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A Pod.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Pod {
    /// Metadata.
    pub metadata: ObjectMeta,
    /// Spec.
    pub spec: PodSpec,
    /// Status.
    pub status: PodStatus,
}

/// `pod.spec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodSpec {
    /// Node the pod is bound to (empty while pending).
    pub node_name: String,
    /// Exact-match node label requirements.
    pub node_selector: BTreeMap<String, String>,
    /// Regular containers.
    pub containers: Vec<Container>,
    /// Init containers.
    pub init_containers: Vec<Container>,
    /// Affinity rules.
    pub affinity: Option<Affinity>,
    /// Tolerations.
    pub tolerations: Vec<Toleration>,
    /// Volumes.
    pub volumes: Vec<Volume>,
    /// Resolved priority (admission fills it from the priority class).
    pub priority: Option<i32>,
    /// Scheduler responsible for the pod.
    pub scheduler_name: String,
    /// `Never` or `PreemptLowerPriority` (admission copies it from the priority class).
    pub preemption_policy: Option<String>,
    /// `spec.overhead`: resources the runtime class adds to every container's requests.
    pub overhead: BTreeMap<String, Quantity>,
    /// `spec.topologySpreadConstraints`.
    pub topology_spread_constraints: Vec<TopologySpreadConstraint>,
    /// `spec.schedulingGates`: while any is present the pod is not scheduled.
    pub scheduling_gates: Vec<SchedulingGate>,
}

/// `spec.topologySpreadConstraints[]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopologySpreadConstraint {
    /// How uneven the matching pods may be spread over the domains.
    pub max_skew: i32,
    /// The node label whose values are the domains.
    pub topology_key: String,
    /// `DoNotSchedule` (a filter) or `ScheduleAnyway` (a score).
    pub when_unsatisfiable: String,
    /// The pods counted (absent: none).
    pub label_selector: Option<LabelSelector>,
    /// Below this many eligible domains the global minimum is taken as 0.
    pub min_domains: Option<i32>,
    /// `Honor` (default) or `Ignore`: whether the pod's node affinity limits the counted nodes.
    pub node_affinity_policy: Option<String>,
    /// `Honor` or `Ignore` (default): whether untolerated taints exclude nodes from the count.
    pub node_taints_policy: Option<String>,
    /// Pod label keys whose values are added to the selector.
    pub match_label_keys: Vec<String>,
}

/// `spec.schedulingGates[]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SchedulingGate {
    /// The gate's name.
    pub name: String,
}

/// `pod.status` (the subset the scheduler reads).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodStatus {
    /// Phase (`Pending`, `Running`, `Succeeded`, `Failed`).
    pub phase: String,
    /// Node nominated by preemption.
    pub nominated_node_name: String,
    /// When the kubelet started the pod (RFC 3339).
    pub start_time: Option<String>,
}

/// A container.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Container {
    /// Name.
    pub name: String,
    /// Image reference as written.
    pub image: String,
    /// Requests and limits.
    pub resources: ResourceRequirements,
    /// Ports.
    pub ports: Vec<ContainerPort>,
    /// For an init container, `Always` makes it a sidecar (restartable init container).
    pub restart_policy: Option<String>,
}

/// Requests and limits as Kubernetes quantities.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceRequirements {
    /// Requests.
    pub requests: BTreeMap<String, Quantity>,
    /// Limits.
    pub limits: BTreeMap<String, Quantity>,
}

/// A quantity as it appears in JSON: a string (`"100m"`) or a number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Quantity {
    /// String form.
    Str(String),
    /// Integer form.
    Int(i64),
    /// Float form.
    Float(f64),
}

impl Quantity {
    /// The textual form.
    pub fn text(&self) -> String {
        match self {
            Quantity::Str(s) => s.clone(),
            Quantity::Int(i) => i.to_string(),
            Quantity::Float(f) => f.to_string(),
        }
    }
}

/// `containers[].ports[]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContainerPort {
    /// Container port.
    pub container_port: i32,
    /// Host port (0 = none).
    pub host_port: i32,
    /// Host IP (default `0.0.0.0`).
    #[serde(rename = "hostIP")]
    pub host_ip: String,
    /// Protocol (default `TCP`).
    pub protocol: String,
}

/// `spec.affinity`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Affinity {
    /// Node affinity.
    pub node_affinity: Option<NodeAffinity>,
    /// Pod affinity.
    pub pod_affinity: Option<PodAffinity>,
    /// Pod anti-affinity.
    pub pod_anti_affinity: Option<PodAffinity>,
}

/// `affinity.nodeAffinity`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeAffinity {
    /// Hard rule.
    pub required_during_scheduling_ignored_during_execution: Option<NodeSelector>,
    /// Soft rules.
    pub preferred_during_scheduling_ignored_during_execution: Vec<PreferredSchedulingTerm>,
}

/// A node selector: terms ORed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeSelector {
    /// Terms (ORed).
    pub node_selector_terms: Vec<NodeSelectorTerm>,
}

/// A node selector term: expressions and fields ANDed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeSelectorTerm {
    /// Label requirements.
    pub match_expressions: Vec<NodeSelectorRequirement>,
    /// Field requirements (`metadata.name`).
    pub match_fields: Vec<NodeSelectorRequirement>,
}

/// A node selector requirement (`In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`, `Lt`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeSelectorRequirement {
    /// Key.
    pub key: String,
    /// Operator.
    pub operator: String,
    /// Values.
    pub values: Vec<String>,
}

/// A weighted node preference.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PreferredSchedulingTerm {
    /// Weight 1..100.
    pub weight: i32,
    /// The preference.
    pub preference: NodeSelectorTerm,
}

/// `podAffinity` or `podAntiAffinity`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodAffinity {
    /// Hard terms.
    pub required_during_scheduling_ignored_during_execution: Vec<PodAffinityTerm>,
    /// Soft terms.
    pub preferred_during_scheduling_ignored_during_execution: Vec<WeightedPodAffinityTerm>,
}

/// A pod (anti-)affinity term.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodAffinityTerm {
    /// Selector over pods (absent = matches nothing).
    pub label_selector: Option<LabelSelector>,
    /// Namespaces (empty = the namespace of the pod defining the term).
    pub namespaces: Vec<String>,
    /// Node label defining the topology domain.
    pub topology_key: String,
}

/// A weighted pod (anti-)affinity term.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WeightedPodAffinityTerm {
    /// Weight.
    pub weight: i32,
    /// The term.
    pub pod_affinity_term: PodAffinityTerm,
}

/// A toleration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Toleration {
    /// Taint key (empty = any).
    pub key: String,
    /// `Equal` (default) or `Exists`.
    pub operator: String,
    /// Value for `Equal`.
    pub value: String,
    /// Effect (empty = any).
    pub effect: String,
    /// Ignored by scheduling.
    pub toleration_seconds: Option<i64>,
}

/// A pod volume (only the sources the predicates read).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Volume {
    /// Volume name.
    pub name: String,
    /// GCE PD.
    pub gce_persistent_disk: Option<GcePersistentDisk>,
    /// AWS EBS.
    pub aws_elastic_block_store: Option<AwsElasticBlockStore>,
    /// Azure Disk.
    pub azure_disk: Option<AzureDisk>,
    /// Ceph RBD.
    pub rbd: Option<Rbd>,
    /// iSCSI.
    pub iscsi: Option<Iscsi>,
    /// CSI (inline).
    pub csi: Option<CsiSource>,
    /// PVC reference.
    pub persistent_volume_claim: Option<PvcSource>,
}

/// GCE PD source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GcePersistentDisk {
    /// Disk name.
    pub pd_name: String,
    /// Read-only.
    pub read_only: bool,
}
/// AWS EBS source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AwsElasticBlockStore {
    /// Volume id.
    #[serde(rename = "volumeID")]
    pub volume_id: String,
    /// Read-only.
    pub read_only: bool,
}
/// Azure Disk source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AzureDisk {
    /// Disk name.
    pub disk_name: String,
    /// Read-only.
    pub read_only: Option<bool>,
}
/// Ceph RBD source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Rbd {
    /// Monitors.
    pub monitors: Vec<String>,
    /// Pool (default `rbd`).
    pub pool: String,
    /// Image.
    pub image: String,
    /// Read-only.
    pub read_only: bool,
}
/// iSCSI source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Iscsi {
    /// Target IQN.
    pub iqn: String,
    /// Read-only.
    pub read_only: bool,
}
/// CSI source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CsiSource {
    /// Driver name.
    pub driver: String,
    /// Volume handle (persistent volumes).
    pub volume_handle: String,
}
/// PVC reference.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PvcSource {
    /// Claim name.
    pub claim_name: String,
    /// Read-only.
    pub read_only: bool,
}

/// Unused but kept so selectors from JSON can be carried around.
pub type PodLabelSelector = LabelSelector;
