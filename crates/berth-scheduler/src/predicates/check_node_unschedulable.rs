//! CheckNodeUnschedulable: cordoned nodes, unless the pod tolerates the unschedulable taint.

use super::unit::{FastClass, PredicateUnit, VictimsClass};
use super::Pred;
use super::{NodeView, Reason};
use crate::compiled::{CTaint, Effect};
use crate::ctx::PodCtx;
use crate::node_info::flag;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PredicateUnit = PredicateUnit {
    name: "CheckNodeUnschedulable",
    aliases: &[],
    order: 1,
    argument: None,
    reasons: &[&super::check_node_condition::UNSCHEDULABLE],
    fast: FastClass::Flags(flag::UNSCHEDULABLE),
    victims: VictimsClass::NodeOnly,
};

/// The registry's entry point.
#[inline]
pub(crate) fn filter(
    c: &PodCtx,
    _p: &Pred,
    n: &NodeView,
    out: &mut Vec<Reason>,
) -> Result<bool, String> {
    Ok(check(c, n, out))
}

/// Fails on `spec.unschedulable` unless the pod tolerates `node.kubernetes.io/unschedulable:NoSchedule`.
pub(crate) fn check(c: &PodCtx, n: &NodeView, out: &mut Vec<Reason>) -> bool {
    if !n.info.unschedulable {
        return true;
    }
    if let Some(key) = c.i.get("node.kubernetes.io/unschedulable") {
        let taint = CTaint {
            key,
            value: 0,
            effect: Effect::NoSchedule,
        };
        if crate::compiled::tolerated(&c.pod.tolerations, &taint) {
            return true;
        }
    }
    out.push(super::check_node_condition::UNSCHEDULABLE.reason());
    false
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    #[test]
    fn vectors() {
        let n = node_json(json!({"metadata": {"name": "n1"}, "spec": {"unschedulable": true}}));
        let got = reasons_of(
            builtin(P::CheckNodeUnschedulable),
            vec![n.clone()],
            vec![],
            pod(json!({})),
        );
        assert_eq!(got, vec![vec!["node(s) were unschedulable".to_string()]]);
        let tol = pod(
            json!({"spec": {"tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]}}),
        );
        assert_eq!(
            reasons_of(builtin(P::CheckNodeUnschedulable), vec![n], vec![], tol),
            vec![Vec::<String>::new()]
        );
    }
}
