//! The kubelet's out-of-resource handling (seed 001; control-loops spec §2): signals,
//! thresholds, pod ranking and the eviction manager's housekeeping pass. Pure: no I/O, no clock.

pub mod manager;
pub mod ranking;
pub mod signals;
pub mod thresholds;

pub use manager::{
    Decisions, Eviction, EvictionConfig, EvictionManager, Inputs, Reclaim, Reclaimable,
};
pub use ranking::{Amounts, Candidate, ContainerUsage, QosClass};
pub use signals::{FsStats, NodeStats};
pub use thresholds::{Condition, Resource, Signal, Threshold, ThresholdValue};
