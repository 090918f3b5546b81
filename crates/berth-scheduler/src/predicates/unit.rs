//! What a predicate unit declares: the descriptor every file of this module exports as `UNIT`,
//! and the vocabulary its fields use. The registry lists the units; the policy loader, the
//! engine's build and fast path, and preemption read them from there.

use super::PredicateName;

/// One predicate: everything the scheduler needs to know about it besides its check, which the
/// unit's file exports as `filter` (dispatched statically by the registry).
#[derive(Debug)]
pub(crate) struct PredicateUnit {
    /// The name a policy file gives it; for a configurable predicate, its type's name.
    pub name: &'static str,
    /// Other names a policy file may use for it.
    pub aliases: &'static [&'static str],
    /// Its place in upstream's static evaluation order (scheduler.md §2.4); equals its line in
    /// the registry.
    pub order: u8,
    /// `Some` for a predicate configured by a policy `argument` instead of by name.
    pub argument: Option<Argument>,
    /// Every failure reason it reports, with its text and whether preemption can resolve it.
    pub reasons: &'static [&'static ReasonDef],
    /// How the filter's fast path decides it without running it.
    pub fast: FastClass,
    /// How preemption's fast victim search treats it.
    pub victims: VictimsClass,
}

/// The policy `argument` that configures a predicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Argument {
    /// `labelsPresence`.
    LabelsPresence,
    /// `serviceAffinity`.
    ServiceAffinity,
    /// None: a policy file cannot name it. The scheduler applies it by itself to the pods it
    /// concerns (PodTopologySpread: pods with topology spread constraints).
    Implicit,
}

/// A failure reason as a predicate declares it.
#[derive(Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReasonDef {
    /// The user-facing text (upstream `GetReason()`).
    pub text: &'static str,
    /// True if preemption could resolve it (1.13's unresolvable set is false).
    pub resolvable: bool,
}

impl ReasonDef {
    /// This reason, to report.
    pub(crate) const fn reason(&'static self) -> super::Reason {
        super::Reason::Declared(self)
    }
}

/// How the filter's fast path (`engine::filter::plan`) decides a predicate from a node's hot
/// flags and numbers, or that it cannot for this pod (the node then runs the predicates).
#[derive(Debug, Clone, Copy)]
pub(crate) enum FastClass {
    /// Fails exactly on nodes with one of these `node_info::flag`s.
    Flags(u32),
    /// Like `Flags`, for BestEffort pods only; other pods always fit.
    FlagsForBestEffort(u32),
    /// The hot resource numbers decide it; pods with scalar requests cannot use the fast path.
    Resources,
    /// Fits any node for a pod without `spec.nodeName`.
    HostName,
    /// Fits any node without used host ports (`flag::PORTS`) for a pod asking for ports.
    HostPorts,
    /// Fits any node for a pod without node selector and required node affinity.
    NodeSelector,
    /// The per-decision inter-pod affinity state decides it.
    InterPodAffinity,
    /// Fits any node when its serviceAffinity entry has no constraint for this pod.
    ServiceAffinity,
    /// Fits any node for a pod without volumes.
    Volumes,
    /// Fits any node when the pod has no `DoNotSchedule` topology spread constraint.
    TopologySpread,
    /// Never decided without running it.
    Never,
    /// A group: decided when each of these predicates is.
    Parts(&'static [PredicateName]),
}

/// How preemption's fast victim search (`preemption::fast`, used only for pods without host
/// ports and volumes) treats a predicate. Every predicate must say; there is no default.
#[derive(Debug, Clone, Copy)]
pub(crate) enum VictimsClass {
    /// Reads the node's pods only through their requests and count: checked at each reprieve
    /// step on the scratch node.
    Resources,
    /// Always met by a pod without host ports and volumes.
    MetWithoutPortsAndVolumes,
    /// Gives the same answer with or without the victims: checked once on the cached node.
    NodeOnly,
    /// Reads pods on every node (PodTopologySpread's counts). A pod it constrains is evaluated
    /// through the cache (`victims::copy_ok` is false), where removing the victims updates the
    /// counts; for any other pod it is always met.
    ThroughCache,
    /// A group: each of these predicates by its own class.
    Parts(&'static [PredicateName]),
}
