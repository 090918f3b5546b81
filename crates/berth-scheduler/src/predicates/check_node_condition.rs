//! CheckNodeCondition: Ready, OutOfDisk, NetworkUnavailable and `spec.unschedulable`.

use super::{NodeView, Reason};

/// Collects every failing condition (no early stop).
pub(crate) fn check(n: &NodeView, out: &mut Vec<Reason>) -> bool {
    let info = n.info;
    if !info.exists {
        out.push(Reason::NodeUnknownCondition);
        return false;
    }
    let c = info.conditions;
    let before = out.len();
    if c.not_ready {
        out.push(Reason::NodeNotReady);
    }
    if c.out_of_disk {
        out.push(Reason::NodeOutOfDisk);
    }
    if c.network_unavailable {
        out.push(Reason::NodeNetworkUnavailable);
    }
    if info.unschedulable {
        out.push(Reason::NodeUnschedulable);
    }
    out.len() == before
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    #[test]
    fn vectors() {
        let cases = [
            (json!([{"type": "Ready", "status": "True"}]), false, vec![]),
            (
                json!([{"type": "Ready", "status": "Unknown"}, {"type": "NetworkUnavailable", "status": "True"}]),
                false,
                vec!["node(s) were not ready", "node(s) had unavailable network"],
            ),
            (json!([]), false, vec![]),
            (
                json!([{"type": "OutOfDisk", "status": "True"}]),
                false,
                vec!["node(s) were out of disk space"],
            ),
            (
                json!([{"type": "Ready", "status": "True"}]),
                true,
                vec!["node(s) were unschedulable"],
            ),
        ];
        for (conds, unsched, want) in cases {
            let n = node_json(
                json!({"metadata": {"name": "n1"}, "spec": {"unschedulable": unsched},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}, "conditions": conds}}),
            );
            let got = reasons_of(
                builtin(P::CheckNodeCondition),
                vec![n],
                vec![],
                pod(json!({})),
            );
            assert_eq!(
                got,
                vec![want.iter().map(|s| s.to_string()).collect::<Vec<_>>()]
            );
        }
    }
}
