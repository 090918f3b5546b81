//! NodePreferAvoidPodsPriority: 0 on nodes whose preferAvoidPods annotation names the pod's
//! ReplicationController/ReplicaSet controller, else 10.

use super::unit::PriorityUnit;
use super::Prio;
use super::MAX_PRIORITY;
use crate::ctx::PodCtx;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PriorityUnit = PriorityUnit {
    name: "NodePreferAvoidPodsPriority",
    argument: None,
    hot: None,
};

/// The score every node gets when it does not depend on the node, if so.
pub(crate) fn uniform(c: &PodCtx, _p: &Prio) -> Option<i64> {
    (!c.pod
        .controller
        .as_ref()
        .is_some_and(|(k, _)| k == "ReplicationController" || k == "ReplicaSet"))
    .then_some(MAX_PRIORITY)
}

/// The registry's entry point: 0..10 per feasible node.
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
    let ctrl = c
        .pod
        .controller
        .as_ref()
        .filter(|(k, _)| k == "ReplicationController" || k == "ReplicaSet");
    for (o, &ix) in out.iter_mut().zip(feasible) {
        let n = &c.cache.nodes[ix as usize];
        *o = match ctrl {
            Some((kind, uid)) if n.avoid.iter().any(|(k, u)| k == kind && u == uid) => 0,
            _ => MAX_PRIORITY,
        };
    }
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    #[test]
    fn vectors() {
        let ann = |kind: &str, uid: &str| json!({"scheduler.alpha.kubernetes.io/preferAvoidPods": serde_json::to_string(&json!({"preferAvoidPods": [{"podSignature": {"podController": {"kind": kind, "uid": uid, "name": "x", "controller": true}}}]})).unwrap()});
        let owned = |kind: &str| {
            pod(
                json!({"metadata": {"ownerReferences": [{"kind": kind, "uid": "abc", "name": "x", "controller": true}]}}),
            )
        };
        let cases = [
            ("ReplicationController", "ReplicationController", "abc", 0),
            ("ReplicationController", "ReplicationController", "def", 10),
            ("ReplicaSet", "ReplicationController", "abc", 10),
            ("StatefulSet", "StatefulSet", "abc", 10),
        ];
        for (pk, nk, nu, want) in cases {
            let n = node_json(json!({"metadata": {"name": "n1", "annotations": ann(nk, nu)}}));
            assert_eq!(
                scores_of(
                    builtin_prio(R::NodePreferAvoidPodsPriority),
                    vec![n],
                    vec![],
                    owned(pk)
                ),
                vec![want],
                "{pk} {nk} {nu}"
            );
        }
    }
}
