//! NodePreferAvoidPodsPriority: 0 on nodes whose preferAvoidPods annotation names the pod's
//! ReplicationController/ReplicaSet controller, else 10.

use super::MAX_PRIORITY;
use crate::ctx::PodCtx;

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
