//! NodeLabelPriority (`labelPreference` argument): 10 when the label's presence matches.

use super::unit::{Argument, PriorityUnit};
use super::Prio;
use super::MAX_PRIORITY;
use crate::ctx::PodCtx;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PriorityUnit = PriorityUnit {
    name: "NodeLabelPriority",
    argument: Some(Argument::LabelPreference),
    hot: None,
};

/// The score every node gets when it does not depend on the node, if so.
pub(crate) fn uniform(_c: &PodCtx, _p: &Prio) -> Option<i64> {
    None
}

/// The registry's entry point: 0..10 per feasible node.
pub(crate) fn score_nodes(
    c: &PodCtx,
    p: &Prio,
    feasible: &[u32],
    _counts: &mut Vec<i64>,
    out: &mut [i64],
) {
    score(c, p.slot, p.presence, feasible, out);
}

/// Scores the feasible nodes.
pub(crate) fn score(c: &PodCtx, slot: usize, presence: bool, feasible: &[u32], out: &mut [i64]) {
    let key = c
        .label_args
        .get(slot)
        .and_then(|v| v.first().copied())
        .flatten();
    for (o, &ix) in out.iter_mut().zip(feasible) {
        let has = key.is_some_and(|k| c.cache.nodes[ix as usize].labels.has(k));
        *o = if has == presence { MAX_PRIORITY } else { 0 };
    }
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    #[test]
    fn vectors() {
        let kind = |presence: bool| crate::policy::PriorityKind::LabelPreference {
            label: "zone".into(),
            presence,
        };
        let zoned = node_json(json!({"metadata": {"name": "a", "labels": {"zone": "a"}}}));
        let bare = node_json(json!({"metadata": {"name": "b"}}));
        assert_eq!(
            scores_of(
                kind(true),
                vec![zoned, bare.clone()],
                vec![],
                pod(json!({}))
            ),
            vec![10, 0]
        );
        assert_eq!(
            scores_of(kind(false), vec![bare], vec![], pod(json!({}))),
            vec![10]
        );
    }
}
