//! NodeAffinityPriority: weights of matching preferred node-affinity terms, normalised to 0..10
//! (policy) or, as 1.35's NodeAffinity plugin, to 0..100 (profile).

use super::unit::PriorityUnit;
use super::Prio;
use crate::ctx::PodCtx;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PriorityUnit = PriorityUnit {
    name: "NodeAffinityPriority",
    argument: None,
    hot: None,
};

/// The score every node gets when it does not depend on the node, if so.
pub(crate) fn uniform(c: &PodCtx, _p: &Prio) -> Option<i64> {
    c.pod.preferred_node_terms.is_empty().then_some(0)
}

/// The registry's entry point: 0..10 (policy) or 0..100 (profile) per feasible node.
pub(crate) fn score_nodes(
    c: &PodCtx,
    _p: &Prio,
    feasible: &[u32],
    _counts: &mut Vec<i64>,
    out: &mut [i64],
) {
    score(c, feasible, out);
}

/// Scores the feasible nodes.
pub(crate) fn score(c: &PodCtx, feasible: &[u32], out: &mut [i64]) {
    let terms = &c.pod.preferred_node_terms;
    if terms.is_empty() {
        out.fill(0);
        return;
    }
    for (o, &ix) in out.iter_mut().zip(feasible) {
        let n = &c.cache.nodes[ix as usize];
        *o = terms
            .iter()
            .filter(|(_, t)| t.matches(&n.labels, n.name_sym, c.i))
            .map(|(w, _)| *w)
            .sum();
    }
    // NormalizeScore: 0..10 under a policy, 0..100 under a profile
    super::default_normalize(c.scale.max(), false, out);
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    #[test]
    fn vectors() {
        let t = |w: i32, exprs: serde_json::Value| json!({"weight": w, "preference": {"matchExpressions": exprs}});
        let e = |k: &str, v: &str| json!({"key": k, "operator": "In", "values": [v]});
        let p = pod(
            json!({"spec": {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            t(2, json!([e("foo", "bar")])), t(4, json!([e("key", "value")])), t(5, json!([e("foo", "bar"), e("key", "value"), e("az", "az1")]))]}}}}),
        );
        let nodes = vec![
            node_json(json!({"metadata": {"name": "m1", "labels": {"foo": "bar"}}})),
            node_json(json!({"metadata": {"name": "m2", "labels": {"key": "value"}}})),
            node_json(
                json!({"metadata": {"name": "m3", "labels": {"foo": "bar", "key": "value", "az": "az1"}}}),
            ),
        ];
        assert_eq!(
            scores_of(
                builtin_prio(R::NodeAffinityPriority),
                nodes.clone(),
                vec![],
                p
            ),
            vec![1, 3, 10]
        );
        assert_eq!(
            scores_of(
                builtin_prio(R::NodeAffinityPriority),
                nodes,
                vec![],
                pod(json!({}))
            ),
            vec![0, 0, 0]
        );
    }
}
