//! BalancedResourceAllocation: favours nodes whose cpu and memory fractions are close.

use super::unit::{Hot, PriorityUnit};
use super::Prio;
use super::{requested, MAX_PRIORITY};
use crate::ctx::PodCtx;
use crate::node_info::NodeHot;
use crate::pod_info::PodInfo;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PriorityUnit = PriorityUnit {
    name: "BalancedResourceAllocation",
    argument: None,
    hot: Some(Hot::Balanced),
};

/// The score every node gets when it does not depend on the node, if so.
pub(crate) fn uniform(_c: &PodCtx, _p: &Prio) -> Option<i64> {
    None
}

/// The registry's entry point: 0..10 per feasible node.
pub(crate) fn score_nodes(
    c: &PodCtx,
    _p: &Prio,
    feasible: &[u32],
    _counts: &mut Vec<i64>,
    out: &mut [i64],
) {
    let hot = &c.cache.hot;
    for (o, &ix) in out.iter_mut().zip(feasible) {
        *o = score(c.pod, &hot[ix as usize]);
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
