//! InterPodAffinityPriority: preferred (anti-)affinity of the pod, and the symmetric terms of
//! placed pods (required affinity × hardPodAffinitySymmetricWeight, preferred ±weight), summed
//! per topology domain and normalised over the feasible nodes: to 0..10 from 0 as 1.11 does
//! (policy), or to 0..100 between the lowest and highest sums as 1.35's InterPodAffinity does
//! (profile).

use super::unit::PriorityUnit;
use super::Prio;
use super::ScoreScale;
use crate::cache::TermKind;
use crate::ctx::PodCtx;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PriorityUnit = PriorityUnit {
    name: "InterPodAffinityPriority",
    argument: None,
    hot: None,
};

/// The score every node gets when it does not depend on the node, if so. With InterPodAffinity's
/// `ignorePreferredTermsOfExistingPods`, a pod without preferred terms of its own is not scored
/// at all (upstream's PreScore returns Skip), placed pods' terms included.
pub(crate) fn uniform(c: &PodCtx, _p: &Prio) -> Option<i64> {
    let pod = c.pod;
    let own = !pod.preferred_affinity.is_empty() || !pod.preferred_anti_affinity.is_empty();
    if !own && c.plugin_args.ignore_preferred_terms_of_existing_pods {
        return Some(0);
    }
    (!own
        && [
            TermKind::RequiredAffinity,
            TermKind::PreferredAffinity,
            TermKind::PreferredAnti,
        ]
        .iter()
        .all(|k| c.cache.term_kind_pods[*k as usize] == 0))
    .then_some(0)
}

/// The registry's entry point: 0..10 (policy) or 0..100 (profile) per feasible node.
pub(crate) fn score_nodes(
    c: &PodCtx,
    _p: &Prio,
    feasible: &[u32],
    counts: &mut Vec<i64>,
    out: &mut [i64],
) {
    score(c, feasible, counts, out);
}

/// Scores the feasible nodes; `counts` is a per-node-slot scratch buffer.
pub(crate) fn score(c: &PodCtx, feasible: &[u32], counts: &mut Vec<i64>, out: &mut [i64]) {
    let cache = c.cache;
    let pod = c.pod;
    counts.clear();
    counts.resize(cache.nodes.len(), 0);
    let mut touched = false;
    // weights summed per topology domain first, then spread once per domain
    let mut per_domain: crate::intern::FxMap<(u32, u32), i64> = Default::default();
    let mut add = |src: u32, key: u32, identity: bool, w: i64| {
        touched = true;
        if identity {
            // hostname-like key: the domain is the node itself
            if cache.rank.get(src as usize).is_some_and(|r| *r != u32::MAX) {
                counts[src as usize] += w;
            }
        } else if let Some(d) = cache.domain_of(src, key) {
            *per_domain.entry((key, d)).or_insert(0) += w;
        }
    };
    for (sign, list) in [
        (1i64, &pod.preferred_affinity),
        (-1, &pod.preferred_anti_affinity),
    ] {
        for (w, t) in list {
            let identity = cache.identity_topology(t.topology_key);
            cache.for_each_term_match(t, |src, k| {
                add(src, t.topology_key, identity, sign * w * k as i64)
            });
        }
    }
    let hard = c.hard_weight;
    let kinds: &[TermKind] = if hard > 0 {
        &[
            TermKind::RequiredAffinity,
            TermKind::PreferredAffinity,
            TermKind::PreferredAnti,
        ]
    } else {
        &[TermKind::PreferredAffinity, TermKind::PreferredAnti]
    };
    cache.for_each_existing_term_matching(pod, kinds, |id| {
        let et = &cache.terms[id as usize];
        let w = match et.kind {
            TermKind::RequiredAffinity => hard,
            TermKind::PreferredAffinity => et.weight,
            _ => -et.weight,
        };
        let identity = cache.identity_topology(et.term.topology_key);
        for (&src, &k) in &et.nodes {
            add(src, et.term.topology_key, identity, w * k as i64);
        }
    });
    for (&(_, d), &w) in &per_domain {
        if w != 0 {
            for &m in &cache.domains[d as usize] {
                counts[m as usize] += w;
            }
        }
    }
    if !touched {
        out.fill(0);
        return;
    }
    // NormalizeScore. 1.11 starts the range at 0 (min ≤ 0 ≤ max); 1.35 spans the feasible
    // nodes' own scores (kubernetes#98096), so a node with the lowest positive sum scores 0.
    let (mut max, mut min) = match c.scale {
        ScoreScale::Priority => (0i64, 0i64),
        ScoreScale::Plugin => (i64::MIN, i64::MAX),
    };
    for &ix in feasible {
        max = max.max(counts[ix as usize]);
        min = min.min(counts[ix as usize]);
    }
    let top = c.scale.max() as f64;
    for (o, &ix) in out.iter_mut().zip(feasible) {
        *o = if max > min {
            (top * ((counts[ix as usize] - min) as f64 / (max - min) as f64)) as i64
        } else {
            0
        };
    }
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    fn n(name: &str, labels: serde_json::Value) -> crate::model::Node {
        node_json(json!({"metadata": {"name": name, "labels": labels}}))
    }
    fn on(name: &str, node: &str, sec: &str, aff: serde_json::Value) -> crate::model::Pod {
        pod(
            json!({"metadata": {"name": name, "labels": {"security": sec}}, "spec": {"nodeName": node, "affinity": aff}}),
        )
    }
    fn pref(w: i32, exprs: serde_json::Value, key: &str) -> serde_json::Value {
        json!({"weight": w, "podAffinityTerm": {"labelSelector": {"matchExpressions": exprs}, "topologyKey": key}})
    }
    fn e(op: &str, vals: &[&str]) -> serde_json::Value {
        json!({"key": "security", "operator": op, "values": vals})
    }

    #[test]
    fn upstream_vectors() {
        let ip = builtin_prio(R::InterPodAffinityPriority);
        let three = || {
            vec![
                n("m1", json!({"region": "China"})),
                n("m2", json!({"region": "India"})),
                n("m3", json!({"az": "az1"})),
            ]
        };
        let base = || {
            vec![
                on("a", "m1", "S1", json!(null)),
                on("b", "m2", "S2", json!(null)),
                on("c", "m3", "S1", json!(null)),
            ]
        };
        // IP-1
        let p = pod(
            json!({"metadata": {"labels": {"security": "S1"}}, "spec": {"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [pref(5, json!([e("In", &["S1"])]), "region")]}}}}),
        );
        assert_eq!(scores_of(ip.clone(), three(), base(), p), vec![10, 0, 0]);
        // IP-2
        let five = vec![
            n("m1", json!({"region": "China"})),
            n("m2", json!({"region": "India"})),
            n("m3", json!({"region": "China"})),
            n("m4", json!({"region": "China"})),
            n("m5", json!({"region": "India"})),
        ];
        let s2 = vec![
            on("a", "m1", "S2", json!(null)),
            on("b", "m1", "S2", json!(null)),
            on("c", "m2", "S2", json!(null)),
            on("d", "m3", "S2", json!(null)),
            on("e", "m4", "S2", json!(null)),
            on("f", "m5", "S2", json!(null)),
        ];
        let p = pod(
            json!({"spec": {"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [pref(6, json!([e("In", &["S2"])]), "region")]}}}}),
        );
        assert_eq!(scores_of(ip.clone(), five, s2, p), vec![10, 5, 10, 10, 5]);
        // IP-3
        let p = pod(
            json!({"spec": {"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            pref(8, json!([e("NotIn", &["S1"]), e("In", &["S2"])]), "region"),
            pref(2, json!([e("Exists", &[]), {"key": "wrongkey", "operator": "DoesNotExist"}]), "region")]}}}}),
        );
        assert_eq!(scores_of(ip.clone(), three(), base(), p), vec![2, 10, 0]);
        // IP-4: symmetric required affinity with hard weight 1
        let req = json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchExpressions": [e("In", &["S1", "value2"])]}, "topologyKey": "region"},
            {"labelSelector": {"matchExpressions": [e("Exists", &[]), {"key": "wrongkey", "operator": "DoesNotExist"}]}, "topologyKey": "region"}]}});
        let pods = vec![
            on("a", "m1", "S1", req.clone()),
            on("b", "m2", "S2", req),
            on("c", "m3", "S1", json!(null)),
        ];
        assert_eq!(
            scores_of(
                ip.clone(),
                three(),
                pods,
                pod(json!({"metadata": {"labels": {"security": "S1"}}}))
            ),
            vec![10, 10, 0]
        );
        // IP-5
        let two = vec![
            n("m1", json!({"az": "az1"})),
            n("m2", json!({"region": "China"})),
        ];
        let p = pod(
            json!({"spec": {"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [pref(5, json!([e("In", &["S1"])]), "az")]}}}}),
        );
        assert_eq!(
            scores_of(
                ip,
                two,
                vec![
                    on("a", "m1", "S1", json!(null)),
                    on("b", "m2", "S2", json!(null))
                ],
                p
            ),
            vec![0, 10]
        );
    }
}
