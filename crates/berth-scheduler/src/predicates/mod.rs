//! Predicates (filters): one file per predicate, named as the policy file names it, each with its
//! test vectors at the bottom.
//!
//! Every check reads the per-decision [`PodCtx`] (computed once per pod) and one node, and
//! pushes user-facing [`Reason`]s on failure. Checks do not allocate or look up maps.

pub(crate) mod check_node_condition;
pub(crate) mod check_node_label_presence;
pub(crate) mod check_node_pressure;
pub(crate) mod check_node_unschedulable;
pub(crate) mod check_service_affinity;
pub(crate) mod check_volume_binding;
pub(crate) mod general_predicates;
pub(crate) mod host_name;
pub(crate) mod match_inter_pod_affinity;
pub(crate) mod match_node_selector;
pub(crate) mod max_volume_count;
pub(crate) mod no_disk_conflict;
pub(crate) mod no_volume_zone_conflict;
pub(crate) mod pod_fits_host_ports;
pub(crate) mod pod_fits_resources;
pub(crate) mod pod_tolerates_node_taints;

use crate::ctx::PodCtx;
use crate::intern::Sym;
use crate::node_info::NodeInfo;
use crate::pod_info::PodInfo;
use serde::Serialize;

/// A node as a predicate sees it: the cached info (or a modified copy) plus pods added to it for
/// this evaluation (nominated pods in the first pass).
#[derive(Clone, Copy)]
pub struct NodeView<'a> {
    /// The node's info (with added pods' aggregates included).
    pub info: &'a NodeInfo,
    /// The node's slot in the cache.
    pub ix: u32,
    /// Pods added for this evaluation only.
    pub added: &'a [&'a PodInfo],
}

/// A failure reason, rendered with [`Reason::text`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reason {
    /// `Insufficient <resource>`.
    Insufficient(ResourceName),
    /// `node(s) had no available disk`.
    NoDiskConflict,
    /// `node(s) had no available volume zone`.
    NoVolumeZoneConflict,
    /// `node(s) didn't match node selector`.
    NodeSelectorNotMatch,
    /// `node(s) didn't match pod affinity/anti-affinity`.
    PodAffinityNotMatch,
    /// `node(s) didn't match pod affinity rules`.
    PodAffinityRulesNotMatch,
    /// `node(s) didn't match pod anti-affinity rules`.
    PodAntiAffinityRulesNotMatch,
    /// `node(s) didn't satisfy existing pods anti-affinity rules`.
    ExistingPodsAntiAffinityRulesNotMatch,
    /// `node(s) had taints that the pod didn't tolerate`.
    TaintsTolerationsNotMatch,
    /// `node(s) didn't match the requested hostname`.
    PodNotMatchHostName,
    /// `node(s) didn't have free ports for the requested pod ports`.
    PodNotFitsHostPorts,
    /// `node(s) didn't have the requested labels`.
    NodeLabelPresenceViolated,
    /// `node(s) didn't match service affinity`.
    ServiceAffinityViolated,
    /// `node(s) exceed max volume count`.
    MaxVolumeCountExceeded,
    /// `node(s) had memory pressure`.
    NodeUnderMemoryPressure,
    /// `node(s) had disk pressure`.
    NodeUnderDiskPressure,
    /// `node(s) had pid pressure`.
    NodeUnderPIDPressure,
    /// `node(s) were out of disk space`.
    NodeOutOfDisk,
    /// `node(s) were not ready`.
    NodeNotReady,
    /// `node(s) had unavailable network`.
    NodeNetworkUnavailable,
    /// `node(s) were unschedulable`.
    NodeUnschedulable,
    /// `node(s) had unknown conditions`.
    NodeUnknownCondition,
    /// `node(s) had volume node affinity conflict`.
    VolumeNodeAffinityConflict,
    /// `node(s) didn't find available persistent volumes to bind`.
    VolumeBindingNoMatch,
}

/// A resource named in an `Insufficient` reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResourceName {
    /// `pods`.
    Pods,
    /// `cpu`.
    Cpu,
    /// `memory`.
    Memory,
    /// `ephemeral-storage`.
    EphemeralStorage,
    /// A scalar resource by interned name.
    Scalar(Sym),
}

impl Reason {
    /// The user-facing string (upstream `GetReason()`).
    pub fn text(&self, i: &crate::intern::Interner) -> String {
        use Reason::*;
        match self {
            Insufficient(r) => format!(
                "Insufficient {}",
                match r {
                    ResourceName::Pods => "pods",
                    ResourceName::Cpu => "cpu",
                    ResourceName::Memory => "memory",
                    ResourceName::EphemeralStorage => "ephemeral-storage",
                    ResourceName::Scalar(s) => i.resolve(*s),
                }
            ),
            NoDiskConflict => "node(s) had no available disk".into(),
            NoVolumeZoneConflict => "node(s) had no available volume zone".into(),
            NodeSelectorNotMatch => "node(s) didn't match node selector".into(),
            PodAffinityNotMatch => "node(s) didn't match pod affinity/anti-affinity".into(),
            PodAffinityRulesNotMatch => "node(s) didn't match pod affinity rules".into(),
            PodAntiAffinityRulesNotMatch => "node(s) didn't match pod anti-affinity rules".into(),
            ExistingPodsAntiAffinityRulesNotMatch => {
                "node(s) didn't satisfy existing pods anti-affinity rules".into()
            }
            TaintsTolerationsNotMatch => "node(s) had taints that the pod didn't tolerate".into(),
            PodNotMatchHostName => "node(s) didn't match the requested hostname".into(),
            PodNotFitsHostPorts => {
                "node(s) didn't have free ports for the requested pod ports".into()
            }
            NodeLabelPresenceViolated => "node(s) didn't have the requested labels".into(),
            ServiceAffinityViolated => "node(s) didn't match service affinity".into(),
            MaxVolumeCountExceeded => "node(s) exceed max volume count".into(),
            NodeUnderMemoryPressure => "node(s) had memory pressure".into(),
            NodeUnderDiskPressure => "node(s) had disk pressure".into(),
            NodeUnderPIDPressure => "node(s) had pid pressure".into(),
            NodeOutOfDisk => "node(s) were out of disk space".into(),
            NodeNotReady => "node(s) were not ready".into(),
            NodeNetworkUnavailable => "node(s) had unavailable network".into(),
            NodeUnschedulable => "node(s) were unschedulable".into(),
            NodeUnknownCondition => "node(s) had unknown conditions".into(),
            VolumeNodeAffinityConflict => "node(s) had volume node affinity conflict".into(),
            VolumeBindingNoMatch => {
                "node(s) didn't find available persistent volumes to bind".into()
            }
        }
    }

    /// True if preemption could resolve it (1.13 unresolvable set excluded).
    pub fn resolvable(&self) -> bool {
        use Reason::*;
        !matches!(
            self,
            NodeSelectorNotMatch
                | PodAffinityRulesNotMatch
                | PodNotMatchHostName
                | TaintsTolerationsNotMatch
                | NodeLabelPresenceViolated
                | NodeNotReady
                | NodeNetworkUnavailable
                | NodeUnderDiskPressure
                | NodeUnderPIDPressure
                | NodeUnderMemoryPressure
                | NodeOutOfDisk
                | NodeUnschedulable
                | NodeUnknownCondition
                | NoVolumeZoneConflict
                | VolumeNodeAffinityConflict
                | VolumeBindingNoMatch
        )
    }
}

/// The result of running predicates on a node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum PredicateResult {
    /// The pod fits.
    Fit,
    /// The pod does not fit, for these reasons.
    Unschedulable {
        /// User-facing reasons.
        reasons: Vec<String>,
        /// Whether preemption could help.
        resolvable: bool,
    },
    /// The predicate could not be evaluated (aborts the decision).
    Error(String),
}

/// A configured predicate, in the static evaluation order of scheduler.md §2.4.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pred {
    /// CheckNodeCondition.
    CheckNodeCondition,
    /// CheckNodeUnschedulable.
    CheckNodeUnschedulable,
    /// GeneralPredicates.
    GeneralPredicates,
    /// HostName.
    HostName,
    /// PodFitsHostPorts.
    PodFitsHostPorts,
    /// MatchNodeSelector.
    MatchNodeSelector,
    /// PodFitsResources.
    PodFitsResources,
    /// NoDiskConflict.
    NoDiskConflict,
    /// PodToleratesNodeTaints.
    PodToleratesNodeTaints,
    /// PodToleratesNodeNoExecuteTaints.
    PodToleratesNodeNoExecuteTaints,
    /// CheckNodeLabelPresence (labelsPresence argument); `slot` indexes the label arguments.
    CheckNodeLabelPresence { slot: usize, presence: bool },
    /// CheckServiceAffinity (serviceAffinity argument); `slot` indexes the label arguments.
    CheckServiceAffinity { slot: usize },
    /// MaxEBSVolumeCount.
    MaxEBSVolumeCount,
    /// MaxGCEPDVolumeCount.
    MaxGCEPDVolumeCount,
    /// MaxCSIVolumeCountPred.
    MaxCSIVolumeCountPred,
    /// MaxAzureDiskVolumeCount.
    MaxAzureDiskVolumeCount,
    /// CheckVolumeBinding.
    CheckVolumeBinding,
    /// NoVolumeZoneConflict.
    NoVolumeZoneConflict,
    /// CheckNodeMemoryPressure.
    CheckNodeMemoryPressure,
    /// CheckNodePIDPressure.
    CheckNodePIDPressure,
    /// CheckNodeDiskPressure.
    CheckNodeDiskPressure,
    /// MatchInterPodAffinity.
    MatchInterPodAffinity,
}

impl Pred {
    /// Position in the static order.
    pub fn rank(&self) -> u8 {
        use Pred::*;
        match self {
            CheckNodeCondition => 0,
            CheckNodeUnschedulable => 1,
            GeneralPredicates => 2,
            HostName => 3,
            PodFitsHostPorts => 4,
            MatchNodeSelector => 5,
            PodFitsResources => 6,
            NoDiskConflict => 7,
            PodToleratesNodeTaints => 8,
            PodToleratesNodeNoExecuteTaints => 9,
            CheckNodeLabelPresence { .. } => 10,
            CheckServiceAffinity { .. } => 11,
            MaxEBSVolumeCount => 12,
            MaxGCEPDVolumeCount => 13,
            MaxCSIVolumeCountPred => 14,
            MaxAzureDiskVolumeCount => 15,
            CheckVolumeBinding => 16,
            NoVolumeZoneConflict => 17,
            CheckNodeMemoryPressure => 18,
            CheckNodePIDPressure => 19,
            CheckNodeDiskPressure => 20,
            MatchInterPodAffinity => 21,
        }
    }

    /// Runs the predicate. `Ok(true)` fits; `Ok(false)` pushed reasons; `Err` aborts the decision.
    #[inline]
    pub(crate) fn check(
        &self,
        c: &PodCtx,
        n: &NodeView,
        out: &mut Vec<Reason>,
    ) -> Result<bool, String> {
        use Pred::*;
        Ok(match self {
            CheckNodeCondition => check_node_condition::check(n, out),
            CheckNodeUnschedulable => check_node_unschedulable::check(c, n, out),
            GeneralPredicates => general_predicates::check(c, n, out),
            HostName => host_name::check(c, n, out),
            PodFitsHostPorts => pod_fits_host_ports::check(c, n, out),
            MatchNodeSelector => match_node_selector::check(c, n, out),
            PodFitsResources => pod_fits_resources::check(c, n, out),
            NoDiskConflict => no_disk_conflict::check(c, n, out),
            PodToleratesNodeTaints => pod_tolerates_node_taints::check(c, n, false, out),
            PodToleratesNodeNoExecuteTaints => pod_tolerates_node_taints::check(c, n, true, out),
            CheckNodeLabelPresence { slot, presence } => {
                check_node_label_presence::check(&c.label_args[*slot], *presence, n, out)
            }
            CheckServiceAffinity { slot } => check_service_affinity::check(c, *slot, n, out),
            MaxEBSVolumeCount => {
                max_volume_count::check(c, crate::node_info::AttachKind::Ebs, n, out)
            }
            MaxGCEPDVolumeCount => {
                max_volume_count::check(c, crate::node_info::AttachKind::Gce, n, out)
            }
            MaxCSIVolumeCountPred => {
                max_volume_count::check(c, crate::node_info::AttachKind::Csi, n, out)
            }
            MaxAzureDiskVolumeCount => {
                max_volume_count::check(c, crate::node_info::AttachKind::Azure, n, out)
            }
            CheckVolumeBinding => check_volume_binding::check(c, n, out),
            NoVolumeZoneConflict => no_volume_zone_conflict::check(c, n, out)?,
            CheckNodeMemoryPressure => check_node_pressure::memory(c, n, out),
            CheckNodePIDPressure => check_node_pressure::pid(n, out),
            CheckNodeDiskPressure => check_node_pressure::disk(n, out),
            MatchInterPodAffinity => match_inter_pod_affinity::check(c, n, out),
        })
    }
}
