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
