//! Predicates (filters): one file per predicate, named as the policy file names it, each with its
//! test vectors at the bottom. Each file declares its unit (`UNIT`: name, place in the order,
//! reasons, fast-path and preemption classes) and its check (`filter`); `registry.rs` lists the
//! units, one line each. A few files hold code several units share (`check_node_pressure`,
//! `max_volume_count`).
//!
//! Every check reads the per-decision [`PodCtx`] (computed once per pod) and one node, and
//! pushes user-facing [`Reason`]s on failure. Checks do not allocate or look up maps.

pub(crate) mod check_node_condition;
pub(crate) mod check_node_disk_pressure;
pub(crate) mod check_node_label_presence;
pub(crate) mod check_node_memory_pressure;
pub(crate) mod check_node_pid_pressure;
#[cfg(test)]
mod check_node_pressure;
pub(crate) mod check_node_unschedulable;
pub(crate) mod check_service_affinity;
pub(crate) mod check_volume_binding;
pub(crate) mod general_predicates;
pub(crate) mod host_name;
pub(crate) mod match_inter_pod_affinity;
pub(crate) mod match_node_selector;
pub(crate) mod max_azure_disk_volume_count;
pub(crate) mod max_csi_volume_count_pred;
pub(crate) mod max_ebs_volume_count;
pub(crate) mod max_gce_pd_volume_count;
pub(crate) mod max_volume_count;
pub(crate) mod no_disk_conflict;
pub(crate) mod no_volume_zone_conflict;
pub(crate) mod pod_fits_host_ports;
pub(crate) mod pod_fits_resources;
pub(crate) mod pod_tolerates_node_no_execute_taints;
pub(crate) mod pod_tolerates_node_taints;
pub(crate) mod pod_topology_spread;
pub(crate) mod registry;
pub(crate) mod spread_counts;
pub(crate) mod unit;

pub use registry::PredicateName;
pub use unit::ReasonDef;

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

/// A failure reason, rendered with [`Reason::text`]. Each predicate declares its own reasons
/// ([`ReasonDef`]); only `Insufficient` carries data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reason {
    /// `Insufficient <resource>` (PodFitsResources).
    Insufficient(ResourceName),
    /// A reason a predicate declares.
    Declared(&'static ReasonDef),
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

impl ResourceName {
    /// The resource's name as the API spells it.
    pub fn as_str<'a>(&self, i: &'a crate::intern::Interner) -> &'a str {
        match self {
            ResourceName::Pods => "pods",
            ResourceName::Cpu => "cpu",
            ResourceName::Memory => "memory",
            ResourceName::EphemeralStorage => "ephemeral-storage",
            ResourceName::Scalar(s) => i.resolve(*s),
        }
    }
}

impl Reason {
    /// The user-facing string (upstream `GetReason()`).
    pub fn text(&self, i: &crate::intern::Interner) -> String {
        match self {
            Reason::Insufficient(r) => format!("Insufficient {}", r.as_str(i)),
            Reason::Declared(d) => d.text.to_string(),
        }
    }

    /// True if preemption could resolve it (1.13 unresolvable set excluded).
    pub fn resolvable(&self) -> bool {
        match self {
            Reason::Insufficient(_) => pod_fits_resources::INSUFFICIENT.resolvable,
            Reason::Declared(d) => d.resolvable,
        }
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

/// A configured predicate: which one, and for a configurable one its argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pred {
    /// Which predicate.
    pub name: PredicateName,
    /// For a configurable predicate, its entry among the label arguments.
    pub slot: usize,
    /// For `CheckNodeLabelPresence`: the labels are required (true) or forbidden (false).
    pub presence: bool,
}

impl Pred {
    /// A predicate without argument.
    pub const fn of(name: PredicateName) -> Pred {
        Pred {
            name,
            slot: 0,
            presence: false,
        }
    }

    /// Position in the static order.
    pub fn rank(&self) -> u8 {
        self.name.unit().order
    }

    /// Runs the predicate. `Ok(true)` fits; `Ok(false)` pushed reasons; `Err` aborts the decision.
    #[inline]
    pub(crate) fn check(
        &self,
        c: &PodCtx,
        n: &NodeView,
        out: &mut Vec<Reason>,
    ) -> Result<bool, String> {
        registry::check(self, c, n, out)
    }
}
