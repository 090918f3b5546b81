//! TaintTolerationPriority: fewer intolerable PreferNoSchedule taints score higher.

use super::unit::PriorityUnit;
use super::Prio;
use crate::compiled::Effect;
use crate::ctx::PodCtx;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PriorityUnit = PriorityUnit {
    name: "TaintTolerationPriority",
    argument: None,
    hot: None,
};

/// The score every node gets when it does not depend on the node, if so.
pub(crate) fn uniform(c: &PodCtx, _p: &Prio) -> Option<i64> {
    (c.cache.soft_taint_nodes == 0).then_some(c.scale.max())
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
    let tols: Vec<&crate::compiled::CToleration> = c
        .pod
        .tolerations
        .iter()
        .filter(|t| t.effect.is_none_or(|e| e == Effect::PreferNoSchedule))
        .collect();
    for (o, &ix) in out.iter_mut().zip(feasible) {
        let n = &c.cache.nodes[ix as usize];
        *o = if !n.soft_taints {
            0
        } else {
            n.taints
                .iter()
                .filter(|t| {
                    t.effect == Effect::PreferNoSchedule && !tols.iter().any(|x| x.tolerates(t))
                })
                .count() as i64
        };
    }
    // NormalizeScore: reversed, 0..10 under a policy, 0..100 under a profile
    super::default_normalize(c.scale.max(), true, out);
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    fn n(name: &str, taints: serde_json::Value) -> crate::model::Node {
        node_json(json!({"metadata": {"name": name}, "spec": {"taints": taints}}))
    }

    #[test]
    fn vectors() {
        let tp = builtin_prio(R::TaintTolerationPriority);
        let p1 = pod(
            json!({"spec": {"tolerations": [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}]}}),
        );
        let got = scores_of(
            tp.clone(),
            vec![
                n(
                    "n1",
                    json!([{"key": "foo", "value": "bar", "effect": "PreferNoSchedule"}]),
                ),
                n(
                    "n2",
                    json!([{"key": "foo", "value": "blah", "effect": "PreferNoSchedule"}]),
                ),
            ],
            vec![],
            p1,
        );
        assert_eq!(got, vec![10, 0]);
        let nodes = vec![
            n(
                "n1",
                json!([{"key": "a", "effect": "PreferNoSchedule"}, {"key": "b", "effect": "PreferNoSchedule"}, {"key": "c", "effect": "NoSchedule"}]),
            ),
            n("n2", json!([{"key": "a", "effect": "PreferNoSchedule"}])),
            n("n3", json!([])),
        ];
        assert_eq!(
            scores_of(tp.clone(), nodes.clone(), vec![], pod(json!({}))),
            vec![0, 5, 10]
        );
        let p3 = pod(json!({"spec": {"tolerations": [{"key": "a", "operator": "Exists"}]}}));
        assert_eq!(scores_of(tp, nodes, vec![], p3), vec![0, 10, 10]);
    }
}
