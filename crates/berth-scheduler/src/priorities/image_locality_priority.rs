//! ImageLocalityPriority: favours nodes that already have the pod's images.
//!
//! Under a seed Policy it is 1.11's priority: the sizes of the pod's (regular containers')
//! images present on the node, summed and bucketed onto 0..10. Under a profile it is 1.35's
//! ImageLocality plugin ([`plugin_scores`]): each image of the pod (init containers included, a
//! name without a tag read as `:latest`) present on the node counts its size times the share of
//! all nodes that have it, and the sum is spread over 0..100 between 23 MB and 1000 MB per
//! container. berth takes the size the node reports (upstream keeps the first node's).

use super::unit::PriorityUnit;
use super::Prio;
use super::{ScoreScale, MAX_NODE_SCORE, MAX_PRIORITY};
use crate::ctx::PodCtx;
use crate::node_info::NodeInfo;
use crate::pod_info::PodInfo;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PriorityUnit = PriorityUnit {
    name: "ImageLocalityPriority",
    argument: None,
    hot: None,
};

/// The score every node gets when it does not depend on the node, if so: 0 when no node reports
/// any image (both releases score a node without the pod's images 0).
pub(crate) fn uniform(c: &PodCtx, _p: &Prio) -> Option<i64> {
    c.cache.image_nodes.is_empty().then_some(0)
}

/// The registry's entry point: 0..10 (policy) or 0..100 (profile) per feasible node.
pub(crate) fn score_nodes(
    c: &PodCtx,
    _p: &Prio,
    feasible: &[u32],
    _counts: &mut Vec<i64>,
    out: &mut [i64],
) {
    if c.scale == ScoreScale::Plugin {
        return plugin_scores(c, feasible, out);
    }
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

/// upstream's `normalizedImageName`: a name whose last `:` is not after its last `/` has no
/// tag and means `:latest`.
fn normalized(name: &str) -> std::borrow::Cow<'_, str> {
    let colon = name.rfind(':').map_or(-1, |x| x as i64);
    let slash = name.rfind('/').map_or(-1, |x| x as i64);
    if colon <= slash {
        format!("{name}:latest").into()
    } else {
        name.into()
    }
}

/// 1.35's ImageLocality over the feasible nodes: `sumImageScores` then `calculatePriority`.
fn plugin_scores(c: &PodCtx, feasible: &[u32], out: &mut [i64]) {
    let pod = c.pod;
    let total = c.cache.order.len().max(1) as f64;
    // each image of the pod the cluster has: its symbol and the share of nodes having it
    let images: Vec<(crate::intern::Sym, f64)> = pod
        .init_images
        .iter()
        .chain(&pod.images)
        .filter_map(|&img| {
            let sym = c.i.get(&normalized(c.i.resolve(img)))?;
            let nodes = *c.cache.image_nodes.get(&sym)?;
            Some((sym, nodes as f64 / total))
        })
        .collect();
    let containers = (pod.init_images.len() + pod.images.len()) as i64;
    let max_threshold = MAX * containers;
    for (o, &ix) in out.iter_mut().zip(feasible) {
        let n = &c.cache.nodes[ix as usize];
        let mut sum = 0i64;
        for &(img, spread) in &images {
            if let Ok(k) = n.images.binary_search_by_key(&img, |(name, _)| *name) {
                sum += (n.images[k].1 as f64 * spread) as i64;
            }
        }
        *o = plugin_priority(sum, max_threshold);
    }
}

/// upstream's `calculatePriority`: the sum clamped to `[23 MB, 1000 MB × containers]`, spread
/// linearly over 0..100 (integer division).
fn plugin_priority(sum: i64, max_threshold: i64) -> i64 {
    let sum = if sum < MIN {
        MIN
    } else if sum > max_threshold {
        max_threshold
    } else {
        sum
    };
    let span = max_threshold - MIN;
    if span == 0 {
        return 0;
    }
    MAX_NODE_SCORE * (sum - MIN) / span
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
