//! BalancedResourceAllocation: favours nodes whose cpu and memory fractions are close.
//!
//! Two releases' formulas, by the scheduler's [`ScoreScale`]: 1.11's priority (a seed Policy)
//! scores `(1 - |f_cpu - f_mem|) * 10` over non-zero requests, 0 when either fraction reaches 1;
//! 1.35's NodeResourcesBalancedAllocation plugin (a profile) scores `(1 - std) * 100`, the
//! standard deviation of the fractions of actual requests (`useRequested`), each fraction capped
//! at 1 and a resource the node does not offer left out, and skips best-effort pods (every node
//! 0, upstream's PreScore `Skip`).

use super::unit::{Hot, PriorityUnit};
use super::{requested, requested_actual, MAX_NODE_SCORE, MAX_PRIORITY};
use super::{Prio, ScoreScale};
use crate::ctx::PodCtx;
use crate::node_info::NodeHot;
use crate::pod_info::PodInfo;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PriorityUnit = PriorityUnit {
    name: "BalancedResourceAllocation",
    argument: None,
    hot: Some(Hot::Balanced),
};

/// The score every node gets when it does not depend on the node, if so: under a profile, 0 for a
/// best-effort pod (1.35 skips the plugin for it).
pub(crate) fn uniform(c: &PodCtx, _p: &Prio) -> Option<i64> {
    (c.scale == ScoreScale::Plugin && best_effort(c.pod)).then_some(0)
}

/// upstream's `isBestEffortPod` over cpu and memory: the pod requests neither.
#[inline]
fn best_effort(pod: &PodInfo) -> bool {
    pod.request.cpu == 0 && pod.request.memory == 0
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
fn fraction(req: i64, cap: i64) -> f64 {
    if cap == 0 {
        1.0
    } else {
        req as f64 / cap as f64
    }
}

/// `int((1 - |f_cpu - f_mem|) * 10)`, 0 if either fraction is ≥ 1.
#[inline]
pub(crate) fn score(pod: &PodInfo, n: &NodeHot) -> i64 {
    let (cpu, mem) = requested(pod, n);
    let (fc, fm) = (fraction(cpu, n.alloc_cpu), fraction(mem, n.alloc_mem));
    if fc >= 1.0 || fm >= 1.0 {
        return 0;
    }
    ((1.0 - (fc - fm).abs()) * MAX_PRIORITY as f64) as i64
}

/// 1.35's fraction of one resource: `None` when the node does not offer it, else
/// `requested / allocatable` capped at 1.
#[inline]
fn capped_fraction(req: i64, cap: i64) -> Option<f64> {
    (cap != 0).then(|| (req as f64 / cap as f64).min(1.0))
}

/// 1.35's `balancedResourceScorer` over cpu and memory: `int64((1 - std) * 100)`, with
/// `std = |f_cpu - f_mem| / 2` for two fractions and 0 for fewer; 0 for a best-effort pod.
#[inline]
pub(crate) fn plugin_score(pod: &PodInfo, n: &NodeHot) -> i64 {
    if best_effort(pod) {
        return 0;
    }
    let (cpu, mem) = requested_actual(pod, n);
    let std = match (
        capped_fraction(cpu, n.alloc_cpu),
        capped_fraction(mem, n.alloc_mem),
    ) {
        (Some(a), Some(b)) => ((a - b) / 2.0).abs(),
        _ => 0.0,
    };
    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    #[test]
    fn vectors() {
        let cpu_only = json!([{"name": "a", "resources": {"requests": {"cpu": "1000m", "memory": "0"}}}, {"name": "b", "resources": {"requests": {"cpu": "2000m", "memory": "0"}}}]);
        let cpu_mem = json!([{"name": "a", "resources": {"requests": {"cpu": "1000m", "memory": "2000"}}}, {"name": "b", "resources": {"requests": {"cpu": "2000m", "memory": "3000"}}}]);
        let on = |name: &str, node: &str, cs: &serde_json::Value| {
            pod(json!({"metadata": {"name": name}, "spec": {"nodeName": node, "containers": cs}}))
        };
        let ba = builtin_prio(R::BalancedResourceAllocation);
        let p = pod(json!({"spec": {"containers": cpu_mem}}));
        assert_eq!(
            scores_of(
                ba.clone(),
                vec![cm("m1", "4000m", "10000"), cm("m2", "6000m", "10000")],
                vec![],
                p
            ),
            vec![7, 10]
        );
        assert_eq!(
            scores_of(
                ba.clone(),
                vec![cm("m1", "10000m", "20000"), cm("m2", "10000m", "20000")],
                vec![
                    on("a", "m1", &cpu_only),
                    on("b", "m1", &cpu_only),
                    on("c", "m2", &cpu_only),
                    on("d", "m2", &cpu_mem)
                ],
                pod(json!({}))
            ),
            vec![4, 6]
        );
        assert_eq!(
            scores_of(
                ba,
                vec![cm("m1", "4000m", "10000")],
                vec![on("a", "m1", &cpu_only)],
                pod(json!({"spec": {"containers": cpu_only}}))
            ),
            vec![0]
        );
    }
}
