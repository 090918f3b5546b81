//! CheckNodeUnschedulable: cordoned nodes, unless the pod tolerates the unschedulable taint.

use super::{NodeView, Reason};
use crate::compiled::{CTaint, Effect};
use crate::ctx::PodCtx;

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
    out.push(Reason::NodeUnschedulable);
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
