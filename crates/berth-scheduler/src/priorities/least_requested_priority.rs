//! LeastRequestedPriority: favours nodes with more unrequested cpu and memory. Under a profile it
//! is NodeResourcesFit's default `LeastAllocated` strategy (cpu and memory, weight 1 each) at
//! 1.35's 0..100 (see [`plugin_score`]).

use super::requested;
use super::unit::{Hot, PriorityUnit};
use super::{Prio, ScoreScale};
use crate::ctx::PodCtx;
use crate::node_info::NodeHot;
use crate::pod_info::PodInfo;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PriorityUnit = PriorityUnit {
    name: "LeastRequestedPriority",
    argument: None,
    hot: Some(Hot::Least),
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
fn unused(req: i64, cap: i64) -> i64 {
    if cap == 0 || req > cap {
        0
    } else {
        super::div10(cap - req, cap)
    }
}

/// `(s_cpu + s_mem) / 2` with `s = (alloc - requested) * 10 / alloc`.
#[inline]
pub(crate) fn score(pod: &PodInfo, n: &NodeHot) -> i64 {
    let (cpu, mem) = requested(pod, n);
    (unused(cpu, n.alloc_cpu) + unused(mem, n.alloc_mem)) / 2
}

/// 1.35's `leastRequestedScore`: `(allocatable - requested) * 100 / allocatable`, 0 when the
/// request exceeds it; `None` for a resource the node does not offer (left out of the mean).
#[inline]
fn unused_of_100(req: i64, cap: i64) -> Option<i64> {
    if cap == 0 {
        None
    } else if req > cap {
        Some(0)
    } else {
        Some(super::div100(cap - req, cap))
    }
}

/// 1.35's LeastAllocated over cpu and memory with weight 1 each (`leastResourceScorer`): the
/// mean of the resources the node offers (integer division), 0 if it offers neither. Requested
/// counts non-zero requests (100m and 200Mi for a container without any).
#[inline]
pub(crate) fn plugin_score(pod: &PodInfo, n: &NodeHot) -> i64 {
    let (cpu, mem) = requested(pod, n);
    mean_of_offered(
        unused_of_100(cpu, n.alloc_cpu),
        unused_of_100(mem, n.alloc_mem),
    )
}

/// The mean of the per-resource scores of the resources a node offers, as
/// `resourceAllocationScorer` divides `Σ score × weight` by `Σ weight` (weights 1).
#[inline]
pub(crate) fn mean_of_offered(cpu: Option<i64>, mem: Option<i64>) -> i64 {
    match (cpu, mem) {
        (Some(a), Some(b)) => (a + b) / 2,
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => 0,
    }
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    #[test]
    fn vectors() {
        let cpu_only = json!([{"name": "a", "resources": {"requests": {"cpu": "1000m", "memory": "0"}}}, {"name": "b", "resources": {"requests": {"cpu": "2000m", "memory": "0"}}}]);
        let cpu_mem = json!([{"name": "a", "resources": {"requests": {"cpu": "1000m", "memory": "2000"}}}, {"name": "b", "resources": {"requests": {"cpu": "2000m", "memory": "3000"}}}]);
        let lr = builtin_prio(R::LeastRequestedPriority);
        let none = pod(json!({}));
        assert_eq!(
            scores_of(
                lr.clone(),
                vec![cm("m1", "4000m", "10000"), cm("m2", "4000m", "10000")],
                vec![],
                none.clone()
            ),
            vec![10, 10]
        );
        assert_eq!(
            scores_of(
                lr.clone(),
                vec![cm("m1", "4000m", "10000"), cm("m2", "6000m", "10000")],
                vec![],
                pod(json!({"spec": {"containers": cpu_mem}}))
            ),
            vec![3, 5]
        );
        let on = |name: &str, node: &str, cs: &serde_json::Value| {
            pod(json!({"metadata": {"name": name}, "spec": {"nodeName": node, "containers": cs}}))
        };
        assert_eq!(
            scores_of(
                lr.clone(),
                vec![cm("m1", "10000m", "20000"), cm("m2", "10000m", "20000")],
                vec![
                    on("a", "m1", &cpu_only),
                    on("b", "m1", &cpu_only),
                    on("c", "m2", &cpu_only),
                    on("d", "m2", &cpu_mem)
                ],
                none.clone()
            ),
            vec![7, 5]
        );
        assert_eq!(
            scores_of(
                lr.clone(),
                vec![cm("m1", "4000m", "10000"), cm("m2", "4000m", "10000")],
                vec![on("a", "m1", &cpu_only), on("b", "m2", &cpu_mem)],
                pod(json!({"spec": {"containers": cpu_only}}))
            ),
            vec![5, 2]
        );
        assert_eq!(
            scores_of(
                lr.clone(),
                vec![cm("m1", "0", "0"), cm("m2", "0", "0")],
                vec![],
                none
            ),
            vec![0, 0]
        );
        assert_eq!(
            scores_of(
                lr,
                vec![cm("m1", "1000m", "2Gi")],
                vec![],
                pod(json!({"spec": {"containers": [{"name": "c"}]}}))
            ),
            vec![9]
        );
    }
}
