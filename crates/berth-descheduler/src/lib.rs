//! berth's descheduler: which running pods to evict so that the scheduler can place them better
//! (seed 16.3; `shared/spec/control-loops.md` §1).
//!
//! Start with [`plan`]: it takes the cluster's nodes and pods ([`NodeState`], [`PodState`], each
//! compiled once from its API JSON), a [`Policy`] (the seed's `descheduler/v1alpha1` file or
//! upstream's `descheduler/v1alpha2` profiles, [`Policy::parse`]) and the command line's
//! [`Options`], and returns a [`Plan`]: the evictions in the order to carry them out, each with
//! the [`Strategy`] that chose it and why, and per strategy what it decided not to do. The
//! engine is pure: no I/O, no clock. The `driver` feature adds [`driver`], which lists a cluster
//! through the API, runs the engine and evicts through `pods/eviction`.
//!
//! ```
//! use berth_descheduler::{plan, NodeState, Options, PodState, Policy};
//! use serde_json::json;
//! let policy = Policy::parse("policy.yaml", "apiVersion: descheduler/v1alpha1\n\
//!     kind: DeschedulerPolicy\nstrategies:\n  RemoveDuplicates:\n    enabled: true\n").unwrap();
//! let node = |n: &str| NodeState::from_json(&json!({"metadata": {"name": n},
//!     "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})).unwrap();
//! let pod = |n: &str| PodState::from_json(&json!({"metadata": {"name": n, "namespace": "d",
//!     "ownerReferences": [{"kind": "ReplicaSet", "name": "rs", "controller": true}]},
//!     "spec": {"nodeName": "n1", "containers": [{"name": "c"}]}})).unwrap();
//! let p = plan(&[node("n1"), node("n2")], &[pod("a"), pod("b")], &policy, &Options::default());
//! assert_eq!(p.evictions.len(), 1);
//! assert_eq!(p.evictions[0].name, "b");
//! ```
//!
//! Design decisions, with reasons:
//! - Every strategy asks the scheduler's exported [`berth_scheduler::fits`] whether a pod would
//!   fit another node; none carries a copy of the predicates.
//! - The plan assumes each eviction succeeds (as `--dry-run` does upstream). The driver carries
//!   it out in order and reports the ones the API refused (a PodDisruptionBudget's 429); those
//!   pods stay, and the strategies' later choices are not revisited in the same run.
//! - A pod chosen by one strategy is gone for the strategies after it in the same pass (upstream
//!   re-lists and sees it terminating).
//! - Upstream leaves orders to maps and caches; berth sorts: nodes by name, pods by
//!   (namespace, name), duplicate groups by key, overutilized nodes by usage then name.

#![deny(missing_docs)]

#[cfg(feature = "driver")]
pub mod driver;
mod engine;
mod evictable;
mod model;
mod policy;
mod preview;
mod report;
mod strategies;

pub use engine::{Eviction, Note, Options, Plan};
pub use evictable::{evictable, eviction_order, NotEvictable};
pub use model::{
    AntiAffinityTerm, ContainerFacts, ModelError, NodeState, PodState, Qos, Request,
    SpreadConstraint,
};
pub use policy::{
    EvictorArgs, HighNodeUtilization, LowNodeUtilization, PodLifeTime, PodScope, Policy,
    PolicyError, RemoveFailedPods, Thresholds, TooManyRestarts, TopologySpread,
};
pub use preview::{preview, Destination, Move};
pub use report::{metrics_text, Outcome, Report, ReportLine};
pub use strategies::plan;

/// A descheduling strategy, in the order a pass runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Strategy {
    /// One pod per owner per node (§1.6).
    RemoveDuplicates,
    /// Move pods from overutilized to underutilized nodes (§1.7).
    LowNodeUtilization,
    /// Pods that break a co-located pod's required anti-affinity (§1.8).
    RemovePodsViolatingInterPodAntiAffinity,
    /// Pods whose node no longer matches their required node affinity (§1.9).
    RemovePodsViolatingNodeAffinity,
    /// Pods that do not tolerate their node's NoSchedule taints (§1.10).
    RemovePodsViolatingNodeTaints,
    /// Empty underutilized nodes onto the others (v1alpha2).
    HighNodeUtilization,
    /// Pods whose topology spread constraint is skewed beyond maxSkew (v1alpha2).
    RemovePodsViolatingTopologySpreadConstraint,
    /// Pods whose containers restarted too often (v1alpha2).
    RemovePodsHavingTooManyRestarts,
    /// Pods older than a maximum age (v1alpha2).
    PodLifeTime,
    /// Failed pods (v1alpha2).
    RemoveFailedPods,
}

impl Strategy {
    /// Every strategy, in pass order.
    pub const ALL: [Strategy; 10] = [
        Strategy::RemoveDuplicates,
        Strategy::LowNodeUtilization,
        Strategy::RemovePodsViolatingInterPodAntiAffinity,
        Strategy::RemovePodsViolatingNodeAffinity,
        Strategy::RemovePodsViolatingNodeTaints,
        Strategy::HighNodeUtilization,
        Strategy::RemovePodsViolatingTopologySpreadConstraint,
        Strategy::RemovePodsHavingTooManyRestarts,
        Strategy::PodLifeTime,
        Strategy::RemoveFailedPods,
    ];

    /// The name policies use.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::RemoveDuplicates => "RemoveDuplicates",
            Strategy::LowNodeUtilization => "LowNodeUtilization",
            Strategy::RemovePodsViolatingInterPodAntiAffinity => {
                "RemovePodsViolatingInterPodAntiAffinity"
            }
            Strategy::RemovePodsViolatingNodeAffinity => "RemovePodsViolatingNodeAffinity",
            Strategy::RemovePodsViolatingNodeTaints => "RemovePodsViolatingNodeTaints",
            Strategy::HighNodeUtilization => "HighNodeUtilization",
            Strategy::RemovePodsViolatingTopologySpreadConstraint => {
                "RemovePodsViolatingTopologySpreadConstraint"
            }
            Strategy::RemovePodsHavingTooManyRestarts => "RemovePodsHavingTooManyRestarts",
            Strategy::PodLifeTime => "PodLifeTime",
            Strategy::RemoveFailedPods => "RemoveFailedPods",
        }
    }

    /// Only a `descheduler/v1alpha2` profile can enable it (the seed's file knows five).
    pub fn v1alpha2_only(self) -> bool {
        Strategy::ALL[5..].contains(&self)
    }

    /// The strategy a policy names.
    pub fn from_name(name: &str) -> Option<Strategy> {
        Strategy::ALL.into_iter().find(|s| s.name() == name)
    }

    /// A `balance` plugin in v1alpha2 profiles (else `deschedule`).
    pub fn balances(self) -> bool {
        matches!(
            self,
            Strategy::RemoveDuplicates
                | Strategy::LowNodeUtilization
                | Strategy::HighNodeUtilization
                | Strategy::RemovePodsViolatingTopologySpreadConstraint
        )
    }
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
