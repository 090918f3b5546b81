//! What a priority unit declares: the descriptor every file of this module exports as `UNIT`.
//! Its file also exports `uniform` (the score every node gets when it does not depend on the
//! node, if so) and `score_nodes` (0..10 per feasible node), dispatched statically by the
//! registry.

/// One priority.
#[derive(Debug)]
pub(crate) struct PriorityUnit {
    /// The name a policy file gives it; for a configurable priority, its type's name.
    pub name: &'static str,
    /// `Some` for a priority configured by a policy `argument` instead of by name.
    pub argument: Option<Argument>,
    /// `Some` for a priority computed from the node's hot resource numbers alone, which the
    /// engine fuses into one pass (and reuses across pods of one shape).
    pub hot: Option<Hot>,
}

/// The policy `argument` that configures a priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Argument {
    /// `serviceAntiAffinity`.
    ServiceAntiAffinity,
    /// `labelPreference`.
    LabelPreference,
    /// None: a policy file cannot name it. The scheduler applies it by itself to the pods it
    /// concerns (PodTopologySpread: pods with topology spread constraints).
    Implicit,
}

/// The resource scores the engine computes in one fused pass over the hot node numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hot {
    /// LeastRequestedPriority.
    Least,
    /// MostRequestedPriority.
    Most,
    /// BalancedResourceAllocation.
    Balanced,
}
