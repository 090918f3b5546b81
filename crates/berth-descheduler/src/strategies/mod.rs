//! The strategies, one file each, each a function of the pass (control-loops §1.6–1.10).

pub(crate) mod inter_pod_anti_affinity;
pub(crate) mod low_node_utilization;
pub(crate) mod node_affinity;
pub(crate) mod node_taints;
pub(crate) mod remove_duplicates;

#[cfg(test)]
pub(crate) mod testutil;
