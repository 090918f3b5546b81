//! ImageLocalityPriority (1.11): sum of the sizes of the pod's images present on the node, bucketed.

use super::unit::PriorityUnit;
use super::Prio;
use super::MAX_PRIORITY;
use crate::ctx::PodCtx;
use crate::node_info::NodeInfo;
use crate::pod_info::PodInfo;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PriorityUnit = PriorityUnit {
    name: "ImageLocalityPriority",
    argument: None,
    hot: None,
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
    let nodes = &c.cache.nodes;
    for (o, &ix) in out.iter_mut().zip(feasible) {
        *o = score(c.pod, &nodes[ix as usize]);
    }
}

const MB: i64 = 1024 * 1024;
const MIN: i64 = 23 * MB;
const MAX: i64 = 1000 * MB;

/// Scores one node.
#[inline]
pub(crate) fn score(pod: &PodInfo, n: &NodeInfo) -> i64 {
    if n.images.is_empty() {
        return 0;
    }
    let sum: i64 = pod.images.iter().map(|&img| n.image_size(img)).sum();
    if sum < MIN {
        0
    } else if sum >= MAX {
        MAX_PRIORITY
    } else {
        MAX_PRIORITY * (sum - MIN) / (MAX - MIN) + 1
    }
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    #[test]
    fn vectors() {
        let mb = 1024 * 1024i64;
        let m1 = node_json(json!({"metadata": {"name": "m1"}, "status": {"images": [
            {"names": ["gcr.io/40"], "sizeBytes": 40 * mb}, {"names": ["gcr.io/140"], "sizeBytes": 140 * mb}, {"names": ["gcr.io/2000"], "sizeBytes": 2000 * mb}]}}));
        let m2 = node_json(json!({"metadata": {"name": "m2"}, "status": {"images": [
            {"names": ["gcr.io/250"], "sizeBytes": 250 * mb}, {"names": ["gcr.io/10"], "sizeBytes": 10 * mb}]}}));
        let p = |a: &str, b: &str| {
            pod(
                json!({"spec": {"containers": [{"name": "a", "image": a}, {"name": "b", "image": b}]}}),
            )
        };
        let il = builtin_prio(R::ImageLocalityPriority);
        assert_eq!(
            scores_of(
                il.clone(),
                vec![m1.clone(), m2.clone()],
                vec![],
                p("gcr.io/40", "gcr.io/250")
            ),
            vec![1, 3]
        );
        assert_eq!(
            scores_of(
                il.clone(),
                vec![m1.clone(), m2.clone()],
                vec![],
                p("gcr.io/40", "gcr.io/140")
            ),
            vec![2, 0]
        );
        assert_eq!(
            scores_of(il, vec![m1, m2], vec![], p("gcr.io/10", "gcr.io/2000")),
            vec![10, 0]
        );
    }
}
