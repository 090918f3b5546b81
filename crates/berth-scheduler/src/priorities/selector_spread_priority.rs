//! SelectorSpreadPriority (Services, RCs, ReplicaSets, StatefulSets selecting the pod) and
//! ServiceSpreadingPriority (Services only): fewer matching pods on the node and in its zone
//! score higher (zone weighting 2/3).

use super::unit::PriorityUnit;
use super::Prio;
use super::MAX_PRIORITY;
use crate::compiled::Selector;
use crate::ctx::PodCtx;
use crate::intern::EMPTY;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PriorityUnit = PriorityUnit {
    name: "SelectorSpreadPriority",
    argument: None,
    hot: None,
};

/// The score every node gets when it does not depend on the node, if so.
pub(crate) fn uniform(c: &PodCtx, _p: &Prio) -> Option<i64> {
    let pod = c.pod;
    (c.cache.matching_services(pod).next().is_none()
        && !c
            .cache
            .controllers
            .values()
            .any(|w| w.ns == pod.ns && w.selector.matches(&pod.labels, c.i)))
    .then_some(MAX_PRIORITY)
}

/// The registry's entry point: 0..10 per feasible node.
pub(crate) fn score_nodes(
    c: &PodCtx,
    _p: &Prio,
    feasible: &[u32],
    counts: &mut Vec<i64>,
    out: &mut [i64],
) {
    score(c, true, feasible, counts, out);
}

/// Scores the feasible nodes; `counts` is a per-node-slot scratch buffer.
pub(crate) fn score(
    c: &PodCtx,
    controllers: bool,
    feasible: &[u32],
    counts: &mut Vec<i64>,
    out: &mut [i64],
) {
    let pod = c.pod;
    let cache = c.cache;
    let mut selectors: Vec<&Selector> = cache.matching_services(pod).collect();
    if controllers {
        selectors.extend(
            cache
                .controllers
                .values()
                .filter(|w| w.ns == pod.ns && w.selector.matches(&pod.labels, c.i))
                .map(|w| &w.selector),
        );
    }
    if selectors.is_empty() {
        out.fill(MAX_PRIORITY);
        return;
    }
    counts.clear();
    counts.resize(cache.nodes.len(), 0);
    // candidate pods: the posting of the single selector's index pair, else the namespace
    let single = if selectors.len() == 1 {
        selectors[0].index_pair()
    } else {
        None
    };
    let mut visit = |ix: u32| {
        if let Some(s) = cache.pod_slot(ix) {
            if !s.info.terminating && selectors.iter().any(|sel| sel.matches(&s.info.labels, c.i)) {
                counts[s.node as usize] += 1;
            }
        }
    };
    match single {
        Some((k, v)) => cache
            .postings
            .get(&(pod.ns, k, v))
            .into_iter()
            .flat_map(|p| p.pods.iter())
            .for_each(|&ix| visit(ix)),
        None => cache
            .ns_pods
            .get(&pod.ns)
            .into_iter()
            .flat_map(|s| s.iter())
            .for_each(|&ix| visit(ix)),
    }
    reduce(c, feasible, counts, out);
}

/// Spreading reduce with zones (shared with tests).
fn reduce(c: &PodCtx, feasible: &[u32], counts: &[i64], out: &mut [i64]) {
    let nodes = &c.cache.nodes;
    let max_node = feasible
        .iter()
        .map(|&ix| counts[ix as usize])
        .max()
        .unwrap_or(0);
    let mut zones: Vec<(u32, i64)> = Vec::new();
    for &ix in feasible {
        let z = nodes[ix as usize].zone_key;
        if z == EMPTY {
            continue;
        }
        match zones.iter_mut().find(|(k, _)| *k == z) {
            Some(e) => e.1 += counts[ix as usize],
            None => zones.push((z, counts[ix as usize])),
        }
    }
    let max_zone = zones.iter().map(|z| z.1).max().unwrap_or(0);
    for (o, &ix) in out.iter_mut().zip(feasible) {
        let cnt = counts[ix as usize];
        let mut f = if max_node > 0 {
            MAX_PRIORITY as f64 * ((max_node - cnt) as f64 / max_node as f64)
        } else {
            MAX_PRIORITY as f64
        };
        let z = nodes[ix as usize].zone_key;
        if !zones.is_empty() && z != EMPTY {
            let zc = zones.iter().find(|(k, _)| *k == z).map_or(0, |e| e.1);
            let zs = if max_zone > 0 {
                MAX_PRIORITY as f64 * ((max_zone - zc) as f64 / max_zone as f64)
            } else {
                MAX_PRIORITY as f64
            };
            f = f * (1.0 / 3.0) + (2.0 / 3.0) * zs;
        }
        *o = f as i64;
    }
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    fn on(name: &str, node: &str, labels: serde_json::Value) -> crate::model::Pod {
        pod(json!({"metadata": {"name": name, "labels": labels}, "spec": {"nodeName": node}}))
    }
    fn l1() -> serde_json::Value {
        json!({"foo": "bar", "baz": "blah"})
    }
    fn l2() -> serde_json::Value {
        json!({"bar": "foo", "baz": "blah"})
    }

    fn run(
        svc: Option<serde_json::Value>,
        rc: Option<serde_json::Value>,
        nodes: Vec<crate::model::Node>,
        pods: Vec<crate::model::Pod>,
        p: serde_json::Value,
    ) -> Vec<i64> {
        let mut cache = crate::ClusterCache::new();
        for n in nodes {
            cache.upsert_node(&n);
        }
        for p in pods {
            cache.upsert_pod(&p);
        }
        if let Some(s) = svc {
            cache.upsert_service(
                &serde_json::from_value(
                    json!({"metadata": {"name": "s"}, "spec": {"selector": s}}),
                )
                .unwrap(),
            );
        }
        if let Some(s) = rc {
            cache.upsert_replication_controller(
                &serde_json::from_value(
                    json!({"metadata": {"name": "rc"}, "spec": {"selector": s}}),
                )
                .unwrap(),
            );
        }
        scores_in(
            builtin_prio(R::SelectorSpreadPriority),
            &mut cache,
            pod(json!({"metadata": {"labels": p}})),
        )
    }

    #[test]
    fn upstream_vectors() {
        let two = || {
            vec![
                simple_node("m1", "1", "1Gi", 10),
                simple_node("m2", "1", "1Gi", 10),
            ]
        };
        assert_eq!(
            run(None, None, two(), vec![on("a", "m1", l1())], l1()),
            vec![10, 10]
        );
        assert_eq!(
            run(
                Some(l1()),
                None,
                two(),
                vec![on("a", "m1", l2()), on("b", "m2", l1())],
                l1()
            ),
            vec![10, 0]
        );
        assert_eq!(
            run(
                Some(l1()),
                None,
                two(),
                vec![
                    on("a", "m1", l2()),
                    on("b", "m1", l1()),
                    on("c", "m2", l1()),
                    on("d", "m2", l1())
                ],
                l1()
            ),
            vec![5, 0]
        );
        assert_eq!(
            run(
                Some(json!({"baz": "blah"})),
                None,
                two(),
                vec![
                    on("a", "m1", l2()),
                    on("b", "m1", l1()),
                    on("c", "m2", l1())
                ],
                l1()
            ),
            vec![0, 5]
        );
        assert_eq!(
            run(
                Some(json!({"bar": "foo"})),
                Some(json!({"foo": "bar"})),
                two(),
                vec![
                    on("a", "m1", l2()),
                    on("b", "m1", l1()),
                    on("c", "m2", l1())
                ],
                json!({"foo": "bar", "bar": "foo"})
            ),
            vec![0, 5]
        );
    }

    fn zoned() -> Vec<crate::model::Node> {
        let z = "failure-domain.beta.kubernetes.io/zone";
        ["m1.z1:z1", "m1.z2:z2", "m2.z2:z2", "m1.z3:z3", "m2.z3:z3", "m3.z3:z3"]
            .iter()
            .map(|s| {
                let (n, zone) = s.split_once(':').unwrap();
                node_json(json!({"metadata": {"name": n, "labels": {z: zone}}, "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"}}}))
            })
            .collect()
    }

    #[test]
    fn zone_vectors() {
        // nodes are scored in name order: m1.z1, m1.z2, m1.z3, m2.z2, m2.z3, m3.z3
        assert_eq!(
            run(
                Some(l1()),
                None,
                zoned(),
                vec![on("a", "m1.z2", l1())],
                l1()
            ),
            vec![10, 0, 10, 3, 10, 10]
        );
        assert_eq!(
            run(
                None,
                Some(l1()),
                zoned(),
                vec![
                    on("a", "m1.z3", l1()),
                    on("b", "m1.z3", l1()),
                    on("c", "m1.z2", l1())
                ],
                l1()
            ),
            vec![10, 5, 0, 6, 3, 3]
        );
    }
}
