//! MostRequestedPriority: favours nodes with more requested cpu and memory (bin packing). Under a
//! profile it is NodeResourcesFit's `MostAllocated` strategy over cpu and memory with equal
//! weights at 1.35's 0..100 (see [`plugin_score`]).

use super::requested;
use super::unit::{Hot, PriorityUnit};
use super::{Prio, ScoreScale};
use crate::ctx::PodCtx;
use crate::node_info::NodeHot;
use crate::pod_info::PodInfo;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PriorityUnit = PriorityUnit {
    name: "MostRequestedPriority",
    argument: None,
    hot: Some(Hot::Most),
};

/// The score every node gets when it does not depend on the node, if so.
pub(crate) fn uniform(_c: &PodCtx, _p: &Prio) -> Option<i64> {
    None
}

/// The registry's entry point: 0..10 (policy) or 0..100 (profile) per feasible node.
pub(crate) fn score_nodes(
    c: &PodCtx,
    _p: &Prio,
    feasible: &[u32],
    _counts: &mut Vec<i64>,
    out: &mut [i64],
) {
    let hot = &c.cache.hot;
    let f = match c.scale {
        ScoreScale::Priority => score,
        ScoreScale::Plugin => plugin_score,
    };
    for (o, &ix) in out.iter_mut().zip(feasible) {
        *o = f(c.pod, &hot[ix as usize]);
    }
}

#[inline]
fn used(req: i64, cap: i64) -> i64 {
    if cap == 0 || req > cap {
        0
    } else {
        super::div10(req, cap)
    }
}

/// `(s_cpu + s_mem) / 2` with `s = requested * 10 / alloc`.
#[inline]
pub(crate) fn score(pod: &PodInfo, n: &NodeHot) -> i64 {
    let (cpu, mem) = requested(pod, n);
    (used(cpu, n.alloc_cpu) + used(mem, n.alloc_mem)) / 2
}

/// 1.35's `mostRequestedScore`: `requested * 100 / allocatable` with the request capped at
/// allocatable (pods without requests count the non-zero defaults, which may exceed it);
/// `None` for a resource the node does not offer.
#[inline]
fn used_of_100(req: i64, cap: i64) -> Option<i64> {
    (cap != 0).then(|| super::div100(req.min(cap), cap))
}

/// 1.35's MostAllocated over cpu and memory with equal weights (`mostResourceScorer`).
#[inline]
pub(crate) fn plugin_score(pod: &PodInfo, n: &NodeHot) -> i64 {
    let (cpu, mem) = requested(pod, n);
    super::least_requested_priority::mean_of_offered(
        used_of_100(cpu, n.alloc_cpu),
        used_of_100(mem, n.alloc_mem),
    )
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    #[test]
    fn vectors() {
        let mr = builtin_prio(R::MostRequestedPriority);
        let cpu_mem = pod(
            json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1000m", "memory": "2000"}}}, {"name": "b", "resources": {"requests": {"cpu": "2000m", "memory": "3000"}}}]}}),
        );
        assert_eq!(
            scores_of(
                mr.clone(),
                vec![cm("m1", "4000m", "10000"), cm("m2", "6000m", "10000")],
                vec![],
                cpu_mem
            ),
            vec![6, 5]
        );
        assert_eq!(
            scores_of(
                mr.clone(),
                vec![cm("m1", "4000m", "10000")],
                vec![],
                pod(json!({}))
            ),
            vec![0]
        );
        let big = pod(
            json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "5000m", "memory": "5000"}}}]}}),
        );
        assert_eq!(
            scores_of(mr, vec![cm("m1", "4000m", "10000")], vec![], big),
            vec![2]
        );
    }
}
