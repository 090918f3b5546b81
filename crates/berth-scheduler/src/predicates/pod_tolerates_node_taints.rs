//! PodToleratesNodeTaints (NoSchedule + NoExecute) and PodToleratesNodeNoExecuteTaints.

use super::unit::{FastClass, PredicateUnit, ReasonDef, VictimsClass};
use super::Pred;
use super::{NodeView, Reason};
use crate::compiled::{tolerated, Effect};
use crate::ctx::PodCtx;
use crate::node_info::flag;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PredicateUnit = PredicateUnit {
    name: "PodToleratesNodeTaints",
    aliases: &[],
    order: 8,
    argument: None,
    reasons: &[
        &super::check_node_condition::UNKNOWN_CONDITION,
        &TAINTS_NOT_TOLERATED,
    ],
    fast: FastClass::Flags(flag::MISSING | flag::HARD_TAINTS),
    victims: VictimsClass::NodeOnly,
};

/// `node(s) had taints that the pod didn't tolerate` (preemption cannot resolve it).
pub(crate) static TAINTS_NOT_TOLERATED: ReasonDef = ReasonDef {
    text: "node(s) had taints that the pod didn't tolerate",
    resolvable: false,
};

/// The registry's entry point.
#[inline]
pub(crate) fn filter(
    c: &PodCtx,
    _p: &Pred,
    n: &NodeView,
    out: &mut Vec<Reason>,
) -> Result<bool, String> {
    Ok(check(c, n, false, out))
}

/// Every considered taint must be tolerated by some toleration.
#[inline]
pub(crate) fn check(
    c: &PodCtx,
    n: &NodeView,
    no_execute_only: bool,
    out: &mut Vec<Reason>,
) -> bool {
    if !n.info.exists {
        out.push(super::check_node_condition::UNKNOWN_CONDITION.reason());
        return false;
    }
    if !n.info.hard_taints {
        return true;
    }
    for t in &n.info.taints {
        let considered = match t.effect {
            Effect::NoExecute => true,
            Effect::NoSchedule => !no_execute_only,
            _ => false,
        };
        if considered && !tolerated(&c.pod.tolerations, t) {
            out.push(TAINTS_NOT_TOLERATED.reason());
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    fn tainted(taints: serde_json::Value) -> crate::model::Node {
        node_json(json!({"metadata": {"name": "n1"}, "spec": {"taints": taints}}))
    }

    #[test]
    fn vectors() {
        let t1 = json!([{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}]);
        let cases = vec![
            (t1.clone(), json!([]), false),
            (
                t1.clone(),
                json!([{"key": "dedicated", "operator": "Equal", "value": "user1", "effect": "NoSchedule"}]),
                true,
            ),
            (
                t1.clone(),
                json!([{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}]),
                false,
            ),
            (
                json!([{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}, {"key": "foo", "value": "bar", "effect": "NoExecute"}]),
                json!([{"operator": "Exists"}]),
                true,
            ),
            (
                json!([{"key": "a", "value": "b", "effect": "PreferNoSchedule"}]),
                json!([]),
                true,
            ),
            // seed 16.11.2.1: three taints, two tolerated
            (
                json!([{"key": "key1", "value": "value1", "effect": "NoSchedule"}, {"key": "key1", "value": "value1", "effect": "NoExecute"}, {"key": "key2", "value": "value2", "effect": "NoSchedule"}]),
                json!([{"key": "key1", "operator": "Equal", "value": "value1", "effect": "NoSchedule"}, {"key": "key1", "operator": "Equal", "value": "value1", "effect": "NoExecute"}]),
                false,
            ),
        ];
        for (taints, tols, fit) in cases {
            let got = reasons_of(
                builtin(P::PodToleratesNodeTaints),
                vec![tainted(taints.clone())],
                vec![],
                pod(json!({"spec": {"tolerations": tols}})),
            );
            let w: Vec<String> = if fit {
                vec![]
            } else {
                vec!["node(s) had taints that the pod didn't tolerate".into()]
            };
            assert_eq!(got, vec![w], "{taints} {tols}");
        }
        // TT-6: NoExecute-only variant, toleration effect mismatch
        let got = reasons_of(
            builtin(P::PodToleratesNodeNoExecuteTaints),
            vec![tainted(
                json!([{"key": "foo", "value": "bar", "effect": "NoExecute"}]),
            )],
            vec![],
            pod(
                json!({"spec": {"tolerations": [{"key": "foo", "operator": "Exists", "effect": "NoSchedule"}]}}),
            ),
        );
        assert_eq!(
            got,
            vec![vec![
                "node(s) had taints that the pod didn't tolerate".to_string()
            ]]
        );
    }
}
