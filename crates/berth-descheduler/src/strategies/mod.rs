//! The strategies, one file each, each a function of the pass (control-loops §1.6–1.10; the
//! v1alpha2 plugins after them).

pub(crate) mod high_node_utilization;
pub(crate) mod inter_pod_anti_affinity;
pub(crate) mod low_node_utilization;
pub(crate) mod node_affinity;
pub(crate) mod node_taints;
pub(crate) mod pod_life_time;
pub(crate) mod remove_duplicates;
pub(crate) mod remove_failed_pods;
pub(crate) mod too_many_restarts;
pub(crate) mod topology_spread;

use crate::engine::{Options, Pass, Plan};
use crate::model::{NodeState, PodState};
use crate::policy::Policy;
use crate::Strategy;

/// Runs every enabled strategy of `policy` once over `nodes` and `pods`.
pub fn plan(nodes: &[NodeState], pods: &[PodState], policy: &Policy, options: &Options) -> Plan {
    let mut pass = Pass::new(nodes, pods, policy, options);
    if pass.nodes.len() <= 1 {
        pass.note(
            None,
            "the cluster size is 0 or 1 meaning eviction causes service disruption or degradation; nothing to do",
        );
        return pass.plan;
    }
    for s in Strategy::ALL {
        let on = match s {
            Strategy::RemoveDuplicates => policy.remove_duplicates,
            Strategy::LowNodeUtilization => policy.low_node_utilization.is_some(),
            Strategy::RemovePodsViolatingInterPodAntiAffinity => policy.inter_pod_anti_affinity,
            Strategy::RemovePodsViolatingNodeAffinity => policy.node_affinity,
            Strategy::RemovePodsViolatingNodeTaints => policy.node_taints,
            Strategy::HighNodeUtilization => policy.high_node_utilization.is_some(),
            Strategy::RemovePodsViolatingTopologySpreadConstraint => {
                policy.topology_spread.is_some()
            }
            Strategy::RemovePodsHavingTooManyRestarts => policy.too_many_restarts.is_some(),
            Strategy::PodLifeTime => policy.pod_life_time.is_some(),
            Strategy::RemoveFailedPods => policy.remove_failed_pods.is_some(),
        };
        if !on {
            continue;
        }
        pass.plan.strategies.push(s);
        match s {
            Strategy::RemoveDuplicates => remove_duplicates::run(&mut pass),
            Strategy::LowNodeUtilization => {
                if let Some(lnu) = &policy.low_node_utilization {
                    low_node_utilization::run(&mut pass, lnu)
                }
            }
            Strategy::RemovePodsViolatingInterPodAntiAffinity => {
                inter_pod_anti_affinity::run(&mut pass)
            }
            Strategy::RemovePodsViolatingNodeAffinity => node_affinity::run(&mut pass),
            Strategy::RemovePodsViolatingNodeTaints => node_taints::run(&mut pass),
            Strategy::HighNodeUtilization => {
                if let Some(a) = &policy.high_node_utilization {
                    high_node_utilization::run(&mut pass, a)
                }
            }
            Strategy::RemovePodsViolatingTopologySpreadConstraint => {
                if let Some(a) = &policy.topology_spread {
                    topology_spread::run(&mut pass, a)
                }
            }
            Strategy::RemovePodsHavingTooManyRestarts => {
                if let Some(a) = &policy.too_many_restarts {
                    too_many_restarts::run(&mut pass, a)
                }
            }
            Strategy::PodLifeTime => {
                if let Some(a) = &policy.pod_life_time {
                    pod_life_time::run(&mut pass, a)
                }
            }
            Strategy::RemoveFailedPods => {
                if let Some(a) = &policy.remove_failed_pods {
                    remove_failed_pods::run(&mut pass, a)
                }
            }
        }
    }
    pass.plan
}

#[cfg(test)]
pub(crate) mod testutil;
