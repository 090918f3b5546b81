//! ServiceAntiAffinity (`serviceAntiAffinity: {label}` argument): spread the first matching
//! service's pods over the values of a node label; unlabelled nodes score 0. "First" is the
//! service with the smallest `namespace/name` (deterministic stand-in for lister order).

use super::unit::{Argument, PriorityUnit};
use super::Prio;
use super::MAX_PRIORITY;
use crate::ctx::PodCtx;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PriorityUnit = PriorityUnit {
    name: "ServiceAntiAffinity",
    argument: Some(Argument::ServiceAntiAffinity),
    hot: None,
};

/// The score every node gets when it does not depend on the node, if so.
pub(crate) fn uniform(c: &PodCtx, p: &Prio) -> Option<i64> {
    c.label_args
        .get(p.slot)
        .and_then(|v| v.first().copied())
        .flatten()
        .is_none()
        .then_some(0)
}

/// The registry's entry point: 0..10 per feasible node.
pub(crate) fn score_nodes(
    c: &PodCtx,
    p: &Prio,
    feasible: &[u32],
    counts: &mut Vec<i64>,
    out: &mut [i64],
) {
    score(c, p.slot, feasible, counts, out);
}

/// Scores the feasible nodes.
pub(crate) fn score(
    c: &PodCtx,
    slot: usize,
    feasible: &[u32],
    counts: &mut Vec<i64>,
    out: &mut [i64],
) {
    let cache = c.cache;
    let label = c
        .label_args
        .get(slot)
        .and_then(|v| v.first().copied())
        .flatten();
    counts.clear();
    counts.resize(cache.nodes.len(), 0);
    if let Some(sel) = cache.matching_services(c.pod).next() {
        cache.for_each_selector_match(c.pod.ns, sel, &mut |n, k| counts[n as usize] += k as i64);
    }
    let total: i64 = feasible.iter().map(|&ix| counts[ix as usize]).sum();
    let mut groups: Vec<(u32, i64)> = Vec::new();
    if let Some(label) = label {
        for &ix in feasible {
            if let Some(v) = cache.nodes[ix as usize].labels.get(label) {
                match groups.iter_mut().find(|(g, _)| *g == v) {
                    Some(g) => g.1 += counts[ix as usize],
                    None => groups.push((v, counts[ix as usize])),
                }
            }
        }
    }
    for (o, &ix) in out.iter_mut().zip(feasible) {
        let v = label.and_then(|l| cache.nodes[ix as usize].labels.get(l));
        *o = match v {
            None => 0,
            Some(_) if total == 0 => MAX_PRIORITY,
            Some(v) => {
                let g = groups.iter().find(|(k, _)| *k == v).map_or(0, |g| g.1);
                (MAX_PRIORITY as f64 * ((total - g) as f64 / total as f64)) as i64
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    fn run(pods: &[(&str, bool)]) -> Vec<i64> {
        let mut cache = crate::ClusterCache::new();
        for (n, z) in [
            ("machine01", ""),
            ("machine02", ""),
            ("machine11", "zone1"),
            ("machine12", "zone1"),
            ("machine21", "zone2"),
            ("machine22", "zone2"),
        ] {
            let labels = if z.is_empty() {
                json!({})
            } else {
                json!({"zone": z})
            };
            cache.upsert_node(&node_json(
                json!({"metadata": {"name": n, "labels": labels}}),
            ));
        }
        cache.upsert_service(&serde_json::from_value(json!({"metadata": {"name": "s"}, "spec": {"selector": {"foo": "bar", "baz": "blah"}}})).unwrap());
        for (i, (node, l1)) in pods.iter().enumerate() {
            let labels = if *l1 {
                json!({"foo": "bar", "baz": "blah"})
            } else {
                json!({"bar": "foo", "baz": "blah"})
            };
            cache.upsert_pod(&pod(json!({"metadata": {"name": format!("p{i}"), "labels": labels}, "spec": {"nodeName": node}})));
        }
        let kind = crate::policy::PriorityKind::ServiceAntiAffinity {
            label: "zone".into(),
        };
        scores_in(
            kind,
            &mut cache,
            pod(json!({"metadata": {"labels": {"foo": "bar", "baz": "blah"}}})),
        )
    }

    #[test]
    fn upstream_vectors() {
        // order: machine01, 02, 11, 12, 21, 22
        assert_eq!(run(&[]), vec![0, 0, 10, 10, 10, 10]);
        assert_eq!(
            run(&[
                ("machine01", false),
                ("machine11", false),
                ("machine21", true)
            ]),
            vec![0, 0, 10, 10, 0, 0]
        );
        assert_eq!(
            run(&[
                ("machine11", false),
                ("machine11", true),
                ("machine21", true),
                ("machine21", true)
            ]),
            vec![0, 0, 6, 6, 3, 3]
        );
        assert_eq!(
            run(&[
                ("machine01", true),
                ("machine11", true),
                ("machine21", true),
                ("machine21", true)
            ]),
            vec![0, 0, 7, 7, 5, 5]
        );
    }
}
