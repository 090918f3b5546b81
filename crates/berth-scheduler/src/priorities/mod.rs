//! Priorities (scoring): one file per priority, each returning 0..10 per feasible node, with its
//! test vectors at the bottom. Each file declares its unit (`UNIT`: name, argument, fused
//! resource class), `uniform` and `score_nodes` (fills `out[j]` for `feasible[j]`);
//! `registry.rs` lists the units, one line each.

pub(crate) mod balanced_resource_allocation;
pub(crate) mod equal_priority;
pub(crate) mod image_locality_priority;
pub(crate) mod inter_pod_affinity_priority;
pub(crate) mod least_requested_priority;
pub(crate) mod most_requested_priority;
pub(crate) mod node_affinity_priority;
pub(crate) mod node_label_priority;
pub(crate) mod node_prefer_avoid_pods_priority;
pub(crate) mod node_resources_fit;
pub(crate) mod pod_topology_spread_priority;
pub(crate) mod registry;
pub(crate) mod selector_spread_priority;
pub(crate) mod service_anti_affinity;
pub(crate) mod service_spreading_priority;
pub(crate) mod taint_toleration_priority;
pub(crate) mod unit;

pub use registry::PriorityName;

use crate::ctx::PodCtx;

/// The maximum score of one priority.
pub const MAX_PRIORITY: i64 = 10;

/// A configured priority: which one, and for a configurable one its argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prio {
    /// Which priority.
    pub name: PriorityName,
    /// For a configurable priority, its entry among the label arguments.
    pub slot: usize,
    /// For `NodeLabelPriority`: having the label is preferred (true) or lacking it is (false).
    pub presence: bool,
}

impl Prio {
    /// A priority without argument.
    pub const fn of(name: PriorityName) -> Prio {
        Prio {
            name,
            slot: 0,
            presence: false,
        }
    }

    /// The score every node gets when it does not depend on the node, if so (skips the pass).
    pub(crate) fn uniform(&self, c: &PodCtx) -> Option<i64> {
        registry::uniform(self, c)
    }

    /// Computes raw 0..10 scores for the feasible nodes.
    pub(crate) fn score(
        &self,
        c: &PodCtx,
        feasible: &[u32],
        counts: &mut Vec<i64>,
        out: &mut [i64],
    ) {
        registry::score(self, c, feasible, counts, out)
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
