//! The driver: runs the engine against an API server.
//!
//! `watch → cache → decide → act`: informer tasks turn list+watch streams into [`Update`]s;
//! one scheduling loop owns the cache, the queue and the engine, and is the only writer of all
//! three; binding, events and status updates go out through the API in tasks of their own, so the
//! next pod is decided while a binding is in flight. [`leader`] elects one active replica
//! through a Lease; [`published_policy`] writes the policy it runs where `berth explain` reads it;
//! [`ops`] holds the metrics and serves `/metrics`, `/healthz`, `/readyz`.

mod informers;
pub mod leader;
pub mod ops;
/// Moved to `berth-events`, shared with the controllers; kept at its old path.
pub use berth_events::outstanding;
mod preemption;
pub mod published_policy;
mod recorder;
mod scheduling_loop;

pub use berth_events::{flush_events, EVENT_FLUSH_LIMIT};
pub use leader::{LeaderElectionConfig, LeaderElector, LeaderError};
pub use ops::Ops;
pub use scheduling_loop::{run, run_with};

use crate::policy::Policy;

/// Spawns `task` in the current span: a scheduler running in a pod logs to its container's
/// log (`berth_core::container_log`) from every task it starts.
pub(crate) fn spawn<F>(task: F) -> tokio::task::JoinHandle<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(tracing::Instrument::in_current_span(task))
}
use berth_core::clock::Clock;

/// How a scheduler instance is configured.
#[derive(Debug, Clone)]
pub struct DriverConfig {
    /// Pods whose `spec.schedulerName` equals this are ours (`default-scheduler` by default).
    pub scheduler_name: String,
    /// The policy (the seed's default without a policy file).
    pub policy: Policy,
    /// `percentageOfNodesToScore` (100 = every node).
    pub percentage_of_nodes_to_score: u32,
    /// Seed for tie-breaking between equal scores.
    pub seed: u64,
    /// `--disable-preemption`: never preempt lower-priority pods.
    pub disable_preemption: bool,
    /// Where the driver reads time (the process's shared clock; a paused one in tests).
    pub clock: Clock,
    /// The KubeSchedulerConfiguration profile this instance runs (`policy` is then its compiled
    /// plugins): 1.35's messages and the configuration's back-off. `None`: the seed's Policy
    /// world, its words unchanged.
    pub profile: Option<crate::config::CompiledProfile>,
}

impl DriverConfig {
    /// The instance that runs one profile of a KubeSchedulerConfiguration.
    pub fn for_profile(profile: crate::config::CompiledProfile) -> DriverConfig {
        DriverConfig {
            policy: profile.policy.clone(),
            percentage_of_nodes_to_score: profile.percentage_of_nodes_to_score,
            disable_preemption: !profile.preemption,
            profile: Some(profile.clone()),
            ..DriverConfig::named(&profile.scheduler_name)
        }
    }

    /// The default scheduler with the seed's default policy.
    pub fn named(name: &str) -> DriverConfig {
        DriverConfig {
            scheduler_name: name.to_string(),
            policy: Policy::default_policy(),
            percentage_of_nodes_to_score: 100,
            seed: 0,
            disable_preemption: false,
            clock: Clock::system(),
            profile: None,
        }
    }
}

/// Errors that stop the driver.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// The policy could not be turned into a scheduler.
    #[error("building the scheduler: {0}")]
    Build(String),
}
