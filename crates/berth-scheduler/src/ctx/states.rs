//! The predicates' per-decision states, filled by their `prepare` functions.

use crate::compiled::NodeTerm;
use crate::intern::Sym;

/// MatchInterPodAffinity's per-decision state: per-node flags and satisfied-term masks.
#[derive(Debug, Default)]
pub(crate) struct AffinityState<'a> {
    pub flags: &'a [u8],
    pub flagged: &'a [u32],
    pub sat: &'a [u64],
    pub all_terms: u64,
    pub first_pod: bool,
}

/// NoVolumeZoneConflict's per-decision state: (label key, allowed values) constraints, or the error to report.
#[derive(Debug, Default)]
pub(crate) struct ZoneState {
    pub constraints: Vec<(Sym, Vec<Sym>)>,
    pub error: Option<String>,
    pub zone_keys: [Option<Sym>; 2],
}

/// A provisioner's allowed topologies: per term, (label key, allowed values).
pub(crate) type AllowedTopologies = [Vec<(Sym, Vec<Sym>)>];

/// An unbound delayed-binding claim: candidate PVs' node terms (None = any node) and the
/// provisioner's allowed topologies (None = cannot provision).
#[derive(Debug, Default)]
pub(crate) struct Unbound<'a> {
    pub candidates: Vec<Option<&'a [NodeTerm]>>,
    pub dynamic: Option<&'a AllowedTopologies>,
}

/// CheckVolumeBinding's per-decision state: bound claims' node terms and unbound claims.
#[derive(Debug, Default)]
pub(crate) struct BindingState<'a> {
    pub bound: Vec<&'a [NodeTerm]>,
    pub unbound: Vec<Unbound<'a>>,
    pub error: Option<String>,
}

/// PodTopologySpread's per-decision filter state (upstream's preFilterState): the pod's
/// `DoNotSchedule` constraints, and per constraint the matching pods per domain and the
/// critical paths. Empty for a pod without such constraints (the filter then passes every node).
#[derive(Debug, Default)]
pub(crate) struct SpreadState {
    pub constraints: Vec<crate::topology_spread::SpreadConstraint>,
    pub counts: Vec<crate::intern::FxMap<Sym, i64>>,
    pub paths: Vec<crate::topology_spread::CriticalPaths>,
    /// Per constraint, the most matching pods a domain may already hold for the pod to fit
    /// there (`maxSkew + min - self`): the fast filter's one comparison per node.
    pub limits: Vec<i64>,
}
