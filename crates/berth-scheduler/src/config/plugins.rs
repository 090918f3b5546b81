//! The in-tree plugins of kube-scheduler 1.35 that a profile may name: which extension points
//! each implements, and what runs it in berth's engine (a legacy predicate, a legacy priority,
//! the queue, preemption or binding). One line per plugin.

use crate::policy::{PredicateName, PriorityName};

/// An extension point of the scheduling framework, as a profile's `plugins` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Point {
    /// `preEnqueue`: may hold a pod back from the queue (scheduling gates).
    PreEnqueue,
    /// `queueSort`: orders the queue.
    QueueSort,
    /// `preFilter`: per-pod work before filtering.
    PreFilter,
    /// `filter`: may reject a node.
    Filter,
    /// `postFilter`: runs when no node fits (preemption).
    PostFilter,
    /// `preScore`: per-pod work before scoring.
    PreScore,
    /// `score`: ranks feasible nodes, 0..100 times the plugin's weight.
    Score,
    /// `reserve`.
    Reserve,
    /// `permit`.
    Permit,
    /// `preBind`.
    PreBind,
    /// `bind`.
    Bind,
    /// `postBind`.
    PostBind,
}

impl Point {
    /// Every point, in the order upstream's `Plugins` declares them (after `multiPoint`).
    pub const EVERY: [Point; 12] = [
        Point::PreEnqueue,
        Point::QueueSort,
        Point::PreFilter,
        Point::Filter,
        Point::PostFilter,
        Point::PreScore,
        Point::Score,
        Point::Reserve,
        Point::Permit,
        Point::PreBind,
        Point::Bind,
        Point::PostBind,
    ];

    /// The field name in a profile's `plugins` (`preFilter`).
    pub fn field(self) -> &'static str {
        match self {
            Point::PreEnqueue => "preEnqueue",
            Point::QueueSort => "queueSort",
            Point::PreFilter => "preFilter",
            Point::Filter => "filter",
            Point::PostFilter => "postFilter",
            Point::PreScore => "preScore",
            Point::Score => "score",
            Point::Reserve => "reserve",
            Point::Permit => "permit",
            Point::PreBind => "preBind",
            Point::Bind => "bind",
            Point::PostBind => "postBind",
        }
    }

    /// The Go interface name upstream's errors use (`FilterPlugin`).
    pub fn interface(self) -> &'static str {
        match self {
            Point::PreEnqueue => "PreEnqueuePlugin",
            Point::QueueSort => "QueueSortPlugin",
            Point::PreFilter => "PreFilterPlugin",
            Point::Filter => "FilterPlugin",
            Point::PostFilter => "PostFilterPlugin",
            Point::PreScore => "PreScorePlugin",
            Point::Score => "ScorePlugin",
            Point::Reserve => "ReservePlugin",
            Point::Permit => "PermitPlugin",
            Point::PreBind => "PreBindPlugin",
            Point::Bind => "BindPlugin",
            Point::PostBind => "PostBindPlugin",
        }
    }

    const fn bit(self) -> u16 {
        1 << self as u16
    }
}

/// What runs a plugin's filter in berth's engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    /// A legacy predicate with the same semantics.
    Predicate(PredicateName),
    /// PodTopologySpread's filter (the `topo` work; see `compile.rs`).
    TopologySpread,
    /// Nothing to check in berth (no such objects: DynamicResources for pods without claims).
    Nothing,
}

/// What runs a plugin's score in berth's engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Score {
    /// A legacy priority's unit, which scores 0..100 with 1.35's formulas under a profile.
    Priority(PriorityName),
    /// NodeResourcesFit: the priority its `scoringStrategy` names.
    ResourcesFit,
    /// PodTopologySpread's score (the `topo` work).
    TopologySpread,
    /// A score that is the same on every node in berth (VolumeBinding without capacity scoring).
    Uniform,
}

/// One in-tree plugin.
#[derive(Debug)]
pub struct Plugin {
    /// The name profiles use.
    pub name: &'static str,
    /// The extension points it implements (bits of [`Point`]).
    points: u16,
    /// Its filter, if it implements `filter`.
    pub filter: Option<Filter>,
    /// Its score, if it implements `score`.
    pub score: Option<Score>,
    /// The kind of its `pluginConfig` args (`NodeResourcesFitArgs`), if it takes any.
    pub args: Option<&'static str>,
}

impl Plugin {
    /// True if it implements `point`.
    pub fn implements(&self, point: Point) -> bool {
        self.points & point.bit() != 0
    }
}

const fn points(list: &[Point]) -> u16 {
    let (mut bits, mut i) = (0, 0);
    while i < list.len() {
        bits |= list[i].bit();
        i += 1;
    }
    bits
}

use Point::*;

macro_rules! plugins {
    ( $( $name:literal : [$($p:ident),*] filter $f:expr, score $s:expr, args $a:expr; )+ ) => {
        /// Every in-tree plugin berth knows, in upstream's default order.
        pub static PLUGINS: &[Plugin] = &[ $( Plugin {
            name: $name,
            points: points(&[$($p),*]),
            filter: $f,
            score: $s,
            args: $a,
        } ),+ ];
    };
}

plugins! {
    "SchedulingGates": [PreEnqueue] filter None, score None, args None;
    "PrioritySort": [QueueSort] filter None, score None, args None;
    "NodeUnschedulable": [Filter] filter Some(Filter::Predicate(PredicateName::CheckNodeUnschedulable)), score None, args None;
    "NodeName": [Filter] filter Some(Filter::Predicate(PredicateName::HostName)), score None, args None;
    "TaintToleration": [Filter, PreScore, Score]
        filter Some(Filter::Predicate(PredicateName::PodToleratesNodeTaints)),
        score Some(Score::Priority(PriorityName::TaintTolerationPriority)), args None;
    "NodeAffinity": [PreFilter, Filter, PreScore, Score]
        filter Some(Filter::Predicate(PredicateName::MatchNodeSelector)),
        score Some(Score::Priority(PriorityName::NodeAffinityPriority)), args Some("NodeAffinityArgs");
    "NodePorts": [PreFilter, Filter] filter Some(Filter::Predicate(PredicateName::PodFitsHostPorts)), score None, args None;
    "NodeResourcesFit": [PreFilter, Filter, PreScore, Score]
        filter Some(Filter::Predicate(PredicateName::PodFitsResources)),
        score Some(Score::ResourcesFit), args Some("NodeResourcesFitArgs");
    "VolumeRestrictions": [PreFilter, Filter] filter Some(Filter::Predicate(PredicateName::NoDiskConflict)), score None, args None;
    "NodeVolumeLimits": [PreFilter, Filter] filter Some(Filter::Predicate(PredicateName::MaxCSIVolumeCountPred)), score None, args None;
    "VolumeBinding": [PreFilter, Filter, Reserve, PreBind, PreScore, Score]
        filter Some(Filter::Predicate(PredicateName::CheckVolumeBinding)),
        score Some(Score::Uniform), args Some("VolumeBindingArgs");
    "VolumeZone": [PreFilter, Filter] filter Some(Filter::Predicate(PredicateName::NoVolumeZoneConflict)), score None, args None;
    "PodTopologySpread": [PreFilter, Filter, PreScore, Score]
        filter Some(Filter::TopologySpread), score Some(Score::TopologySpread), args Some("PodTopologySpreadArgs");
    "InterPodAffinity": [PreFilter, Filter, PreScore, Score]
        filter Some(Filter::Predicate(PredicateName::MatchInterPodAffinity)),
        score Some(Score::Priority(PriorityName::InterPodAffinityPriority)), args Some("InterPodAffinityArgs");
    "DynamicResources": [PreEnqueue, PreFilter, Filter, PostFilter, Reserve, PreBind]
        filter Some(Filter::Nothing), score None, args Some("DynamicResourcesArgs");
    "DefaultPreemption": [PostFilter] filter None, score None, args Some("DefaultPreemptionArgs");
    "NodeResourcesBalancedAllocation": [PreScore, Score]
        filter None, score Some(Score::Priority(PriorityName::BalancedResourceAllocation)),
        args Some("NodeResourcesBalancedAllocationArgs");
    "ImageLocality": [Score] filter None, score Some(Score::Priority(PriorityName::ImageLocalityPriority)), args None;
    "DefaultBinder": [Bind] filter None, score None, args None;
}

/// Plugins the v1 API no longer accepts (upstream's `invalidPluginsByVersion`).
pub const REMOVED: &[&str] = &[
    "AzureDiskLimits",
    "CinderLimits",
    "EBSLimits",
    "GCEPDLimits",
];

/// The plugin named `name`, if berth knows it.
pub fn lookup(name: &str) -> Option<&'static Plugin> {
    PLUGINS.iter().find(|p| p.name == name)
}

/// The plugin whose args are of kind `kind` (`NodeResourcesFitArgs`).
pub fn by_args_kind(kind: &str) -> Option<&'static Plugin> {
    PLUGINS.iter().find(|p| p.args == Some(kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_plugin_with_a_filter_or_score_implements_that_point() {
        for p in PLUGINS {
            assert_eq!(
                p.filter.is_some(),
                p.implements(Point::Filter),
                "{}",
                p.name
            );
            assert_eq!(p.score.is_some(), p.implements(Point::Score), "{}", p.name);
        }
    }

    #[test]
    fn names_are_found_and_unknown_ones_are_not() {
        assert!(lookup("NodeResourcesFit").is_some());
        assert!(lookup("nodeResourcesFit").is_none());
        assert!(lookup("EBSLimits").is_none());
        assert_eq!(
            by_args_kind("InterPodAffinityArgs").map(|p| p.name),
            Some("InterPodAffinity")
        );
    }
}
