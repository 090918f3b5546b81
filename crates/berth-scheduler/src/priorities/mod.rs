//! Priorities (scoring): one file per priority, each returning `0..=max` per feasible node (see
//! [`ScoreScale`]), with its test vectors at the bottom. Each file declares its unit (`UNIT`: name, argument, fused
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
#[cfg(test)]
mod plugin_vectors;
pub(crate) mod pod_topology_spread_priority;
pub(crate) mod registry;
pub(crate) mod selector_spread_priority;
pub(crate) mod service_anti_affinity;
pub(crate) mod service_spreading_priority;
pub(crate) mod taint_toleration_priority;
pub(crate) mod unit;

pub use registry::PriorityName;

use crate::ctx::PodCtx;

pub use crate::score_scale::{ScoreScale, MAX_NODE_SCORE, MAX_PRIORITY};

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

    /// Computes raw `0..=c.scale.max()` scores for the feasible nodes.
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

pub(crate) use balanced_resource_allocation::plugin_score as balanced_allocation;
pub(crate) use balanced_resource_allocation::score as balanced;
pub(crate) use least_requested_priority::plugin_score as least_allocated;
pub(crate) use least_requested_priority::score as least_requested;
pub(crate) use most_requested_priority::plugin_score as most_allocated;
pub(crate) use most_requested_priority::score as most_requested;

/// Requested (actual) cpu and memory on the node including the pod: 1.35's BalancedAllocation
/// (`useRequested`) counts what pods ask for, without the non-zero defaults.
#[inline]
pub(crate) fn requested_actual(
    pod: &crate::pod_info::PodInfo,
    n: &crate::node_info::NodeHot,
) -> (i64, i64) {
    (n.req_cpu + pod.request.cpu, n.req_mem + pod.request.memory)
}

/// upstream's `DefaultNormalizeScore(max, reverse, scores)`: each raw count `c` becomes
/// `max * c / highest` (integer division), reversed to `max - that` when `reverse`; when every
/// count is 0, every node gets `max` if `reverse`, else keeps 0. The same arithmetic at 0..10
/// and 0..100.
pub(crate) fn default_normalize(max: i64, reverse: bool, out: &mut [i64]) {
    let highest = out.iter().copied().max().unwrap_or(0).max(0);
    if highest == 0 {
        if reverse {
            out.fill(max);
        }
        return;
    }
    for o in out.iter_mut() {
        let s = max * *o / highest;
        *o = if reverse { max - s } else { s };
    }
}

/// `num * 10 / den` (integer division, `0 <= num <= den`, `den > 0`): see [`div_scaled`].
#[inline(always)]
pub(crate) fn div10(num: i64, den: i64) -> i64 {
    div_scaled::<MAX_PRIORITY>(num, den)
}

/// `num * 100 / den` (integer division, `0 <= num <= den`, `den > 0`): see [`div_scaled`].
#[inline(always)]
pub(crate) fn div100(num: i64, den: i64) -> i64 {
    div_scaled::<MAX_NODE_SCORE>(num, den)
}

/// `num * MAX / den` (integer division, `0 <= num <= den`, `den > 0`, `MAX <= 100`), computed in
/// f64 when that is exact: for `den < 2^40` the product stays below 2^47 (exact in f64), a
/// non-integer quotient is at least `1/den` away from the next integer, far more than f64's
/// rounding error on a quotient of at most 100, and an integer quotient is computed exactly.
#[inline(always)]
pub(crate) fn div_scaled<const MAX: i64>(num: i64, den: i64) -> i64 {
    if den < (1 << 40) && num >= 0 {
        ((num * MAX) as f64 / den as f64) as i64
    } else {
        num.saturating_mul(MAX) / den
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

    #[test]
    fn div100_matches_integer_division() {
        let mut x: u64 = 0x2545f4914f6cdd1d;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let den = (x % (1 << 40)) as i64 + 1;
            let num = ((x >> 13) as i64).rem_euclid(den + 1);
            assert_eq!(super::div100(num, den), num * 100 / den, "{num} {den}");
        }
        for den in 1..2000i64 {
            for num in 0..=den {
                assert_eq!(super::div100(num, den), num * 100 / den);
            }
        }
    }
}
