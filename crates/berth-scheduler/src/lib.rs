//! berth-scheduler: berth's pure scheduling engine.
//!
//! **What it is.** The legacy-policy (Kubernetes 1.11 / OpenShift 3.11) scheduling algorithm as a
//! synchronous, deterministic library: a [`ClusterCache`] fed incrementally with Kubernetes
//! objects (decoded straight from API JSON), the predicates and priorities of
//! `shared/spec/scheduler.md`, and a [`Scheduler`] that filters, scores and selects a node for
//! one pod at a time, explains its decisions on request, and reports which [`ClusterEvent`]s
//! might help an unschedulable pod.
//!
//! **What it is not.** No I/O, no clock, no threads of its own besides rayon's pool for large
//! clusters, no API client: the driver watches the API, updates the cache, calls
//! [`Scheduler::schedule`], assumes the pod and binds it. The policy file loader and the
//! scheduling queue live in `policy` and `queue`.
//!
//! ```
//! use berth_scheduler::{ClusterCache, Decision, Scheduler};
//!
//! let mut cache = ClusterCache::new();
//! cache.upsert_node_json(br#"{"metadata":{"name":"n1"},
//!     "status":{"allocatable":{"cpu":"4","memory":"32Gi","pods":"110"}}}"#).unwrap();
//! let pod = cache.compile_pod_json(br#"{"metadata":{"name":"p","namespace":"default"},
//!     "spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"100m"}}}]}}"#).unwrap();
//! let mut scheduler = Scheduler::builder().seed(1).build().unwrap();
//! match scheduler.schedule(&cache, &pod) {
//!     Decision::Scheduled { node, .. } => cache.assume(pod, &node).unwrap(),
//!     other => panic!("{other:?}"),
//! }
//! ```

#![warn(missing_docs)]

pub mod bench;
pub mod bench_preemption;
mod cache;
pub mod compiled;
pub mod config;
mod ctx;
#[cfg(feature = "driver")]
pub mod driver;
mod engine;
mod events;
mod explain;
mod fits;
pub mod intern;
pub mod model;
mod node_info;
pub mod plugin_args;
mod pod_info;
pub mod policy;
mod predicates;
pub mod preemption;
mod priorities;
pub mod quantity;
pub mod queue;
mod score_scale;
pub(crate) mod spread_domains;
#[cfg(test)]
mod testutil;
pub mod topology_spread;

pub use cache::{CacheDump, CacheError, ClusterCache};
pub use engine::{
    BuildError, Decision, FitError, Nominated, PluginSample, Scheduler, SchedulerBuilder,
};
pub use events::{ClusterEvent, NodeChange};
pub use explain::{Explanation, NodeExplanation, PriorityScore};
pub use fits::{fits, Fit, Insufficient};
pub use node_info::NodeInfo;
pub use plugin_args::PluginArgs;
pub use pod_info::PodInfo;
pub use predicates::{PredicateResult, Reason};
pub use score_scale::ScoreScale;
pub use topology_spread::{DefaultingType, TopologySpreadArgs};
