//! Priorities (scoring): one file per priority, each returning 0..10 per feasible node, with its
//! test vectors at the bottom. `score` fills `out[j]` for `feasible[j]`.

pub(crate) mod balanced_resource_allocation;
pub(crate) mod equal_priority;
pub(crate) mod image_locality_priority;
pub(crate) mod inter_pod_affinity_priority;
pub(crate) mod least_requested_priority;
pub(crate) mod most_requested_priority;
pub(crate) mod node_affinity_priority;
pub(crate) mod node_label_priority;
pub(crate) mod node_prefer_avoid_pods_priority;
pub(crate) mod selector_spread_priority;
pub(crate) mod service_anti_affinity;
pub(crate) mod taint_toleration_priority;

use crate::ctx::PodCtx;
use crate::node_info::NodeInfo;

/// The maximum score of one priority.
pub const MAX_PRIORITY: i64 = 10;

/// A configured priority function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prio {
    /// SelectorSpreadPriority.
    SelectorSpread,
    /// ServiceSpreadingPriority (services only).
    ServiceSpreading,
    /// InterPodAffinityPriority.
    InterPodAffinity,
    /// LeastRequestedPriority.
    LeastRequested,
    /// MostRequestedPriority.
    MostRequested,
    /// BalancedResourceAllocation.
    BalancedResourceAllocation,
    /// NodePreferAvoidPodsPriority.
    NodePreferAvoidPods,
    /// NodeAffinityPriority.
    NodeAffinity,
    /// TaintTolerationPriority.
    TaintToleration,
    /// EqualPriority.
    Equal,
    /// ImageLocalityPriority.
    ImageLocality,
    /// ServiceAntiAffinity (label argument slot).
    ServiceAntiAffinity { slot: usize },
    /// NodeLabelPriority (labelPreference argument slot).
    NodeLabel { slot: usize, presence: bool },
}

impl Prio {
    /// The score every node gets when it does not depend on the node, if so (skips the pass).
    pub(crate) fn uniform(&self, c: &PodCtx) -> Option<i64> {
        use crate::cache::TermKind;
        let pod = c.pod;
        match self {
            Prio::Equal => Some(1),
            Prio::NodeAffinity if pod.preferred_node_terms.is_empty() => Some(0),
            Prio::NodePreferAvoidPods
                if !pod
                    .controller
                    .as_ref()
                    .is_some_and(|(k, _)| k == "ReplicationController" || k == "ReplicaSet") =>
            {
                Some(MAX_PRIORITY)
            }
            Prio::InterPodAffinity
                if pod.preferred_affinity.is_empty()
                    && pod.preferred_anti_affinity.is_empty()
                    && [
                        TermKind::RequiredAffinity,
                        TermKind::PreferredAffinity,
                        TermKind::PreferredAnti,
                    ]
                    .iter()
                    .all(|k| c.cache.term_kind_pods[*k as usize] == 0) =>
            {
                Some(0)
            }
            Prio::SelectorSpread
                if c.cache.matching_services(pod).next().is_none()
                    && !c
                        .cache
                        .controllers
                        .values()
                        .any(|w| w.ns == pod.ns && w.selector.matches(&pod.labels, c.i)) =>
            {
                Some(MAX_PRIORITY)
            }
            Prio::ServiceSpreading if c.cache.matching_services(pod).next().is_none() => {
                Some(MAX_PRIORITY)
            }
            Prio::TaintToleration if c.cache.soft_taint_nodes == 0 => Some(MAX_PRIORITY),
            Prio::ServiceAntiAffinity { slot }
                if c.label_args
                    .get(*slot)
                    .and_then(|v| v.first().copied())
                    .flatten()
                    .is_none() =>
            {
                Some(0)
            }
            _ => None,
        }
    }

    /// Computes raw 0..10 scores for the feasible nodes.
    pub(crate) fn score(
        &self,
        c: &PodCtx,
        feasible: &[u32],
        counts: &mut Vec<i64>,
        out: &mut [i64],
    ) {
        let nodes = &c.cache.nodes;
        #[inline(always)]
        fn per_node(
            nodes: &[NodeInfo],
            feasible: &[u32],
            out: &mut [i64],
            f: impl Fn(&NodeInfo) -> i64,
        ) {
            for (o, &ix) in out.iter_mut().zip(feasible) {
                *o = f(&nodes[ix as usize]);
            }
        }
        match self {
            Prio::LeastRequested => {
                let hot = &c.cache.hot;
                for (o, &ix) in out.iter_mut().zip(feasible) {
                    *o = least_requested_priority::score(c.pod, &hot[ix as usize]);
                }
            }
            Prio::MostRequested => {
                let hot = &c.cache.hot;
                for (o, &ix) in out.iter_mut().zip(feasible) {
                    *o = most_requested_priority::score(c.pod, &hot[ix as usize]);
                }
            }
            Prio::BalancedResourceAllocation => {
                let hot = &c.cache.hot;
                for (o, &ix) in out.iter_mut().zip(feasible) {
                    *o = balanced_resource_allocation::score(c.pod, &hot[ix as usize]);
                }
            }
            Prio::Equal => out.fill(1),
            Prio::NodePreferAvoidPods => node_prefer_avoid_pods_priority::score(c, feasible, out),
            Prio::ImageLocality => per_node(nodes, feasible, out, |n| {
                image_locality_priority::score(c.pod, n)
            }),
            Prio::NodeLabel { slot, presence } => {
                node_label_priority::score(c, *slot, *presence, feasible, out)
            }
            Prio::NodeAffinity => node_affinity_priority::score(c, feasible, out),
            Prio::TaintToleration => taint_toleration_priority::score(c, feasible, out),
            Prio::SelectorSpread => selector_spread_priority::score(c, true, feasible, counts, out),
            Prio::ServiceSpreading => {
                selector_spread_priority::score(c, false, feasible, counts, out)
            }
            Prio::ServiceAntiAffinity { slot } => {
                service_anti_affinity::score(c, *slot, feasible, counts, out)
            }
            Prio::InterPodAffinity => inter_pod_affinity_priority::score(c, feasible, counts, out),
        }
    }
}

/// Requested (non-zero) cpu and memory on the node including the pod.
#[inline]
pub(crate) fn requested(
    pod: &crate::pod_info::PodInfo,
    n: &crate::node_info::NodeHot,
) -> (i64, i64) {
    (n.nz_cpu + pod.nonzero.0, n.nz_mem + pod.nonzero.1)
}

pub(crate) use balanced_resource_allocation::score as balanced;
pub(crate) use least_requested_priority::score as least_requested;
pub(crate) use most_requested_priority::score as most_requested;

/// `num * 10 / den` (integer division, `0 <= num <= den`, `den > 0`), computed in f64 when that is
/// exact: for `den < 2^40` a non-integer quotient is at least `1/den` away from the next integer,
/// far more than f64's rounding error, and an integer quotient is computed exactly.
#[inline(always)]
pub(crate) fn div10(num: i64, den: i64) -> i64 {
    if den < (1 << 40) && num >= 0 {
        ((num * MAX_PRIORITY) as f64 / den as f64) as i64
    } else {
        num.saturating_mul(MAX_PRIORITY) / den
    }
}

#[cfg(test)]
mod div_tests {
    #[test]
    fn div10_matches_integer_division() {
        let mut x: u64 = 0x9e3779b97f4a7c15;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let den = (x % (1 << 36)) as i64 + 1;
            let num = ((x >> 20) as i64).rem_euclid(den + 1);
            assert_eq!(super::div10(num, den), num * 10 / den, "{num} {den}");
        }
        for den in 1..2000i64 {
            for num in 0..=den {
                assert_eq!(super::div10(num, den), num * 10 / den);
            }
        }
    }
}
