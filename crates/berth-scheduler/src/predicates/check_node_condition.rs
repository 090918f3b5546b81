//! CheckNodeCondition: Ready, OutOfDisk, NetworkUnavailable and `spec.unschedulable`.

use super::unit::{FastClass, PredicateUnit, ReasonDef, VictimsClass};
use super::Pred;
use super::{NodeView, Reason};
use crate::ctx::PodCtx;
use crate::node_info::flag;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PredicateUnit = PredicateUnit {
    name: "CheckNodeCondition",
    aliases: &[],
    order: 0,
    argument: None,
    reasons: &[
        &UNKNOWN_CONDITION,
        &NOT_READY,
        &OUT_OF_DISK,
        &NETWORK_UNAVAILABLE,
        &UNSCHEDULABLE,
    ],
    fast: FastClass::Flags(
        flag::MISSING | flag::NOT_READY | flag::OUT_OF_DISK | flag::NETWORK | flag::UNSCHEDULABLE,
    ),
    victims: VictimsClass::NodeOnly,
};

/// `node(s) had unknown conditions` (preemption cannot resolve it).
pub(crate) static UNKNOWN_CONDITION: ReasonDef = ReasonDef {
    text: "node(s) had unknown conditions",
    resolvable: false,
};

/// `node(s) were not ready` (preemption cannot resolve it).
pub(crate) static NOT_READY: ReasonDef = ReasonDef {
    text: "node(s) were not ready",
    resolvable: false,
};

/// `node(s) were out of disk space` (preemption cannot resolve it).
pub(crate) static OUT_OF_DISK: ReasonDef = ReasonDef {
    text: "node(s) were out of disk space",
    resolvable: false,
};

/// `node(s) had unavailable network` (preemption cannot resolve it).
pub(crate) static NETWORK_UNAVAILABLE: ReasonDef = ReasonDef {
    text: "node(s) had unavailable network",
    resolvable: false,
};

/// `node(s) were unschedulable` (preemption cannot resolve it).
pub(crate) static UNSCHEDULABLE: ReasonDef = ReasonDef {
    text: "node(s) were unschedulable",
    resolvable: false,
};

/// The registry's entry point.
#[inline]
pub(crate) fn filter(
    _c: &PodCtx,
    _p: &Pred,
    n: &NodeView,
    out: &mut Vec<Reason>,
) -> Result<bool, String> {
    Ok(check(n, out))
}

/// Collects every failing condition (no early stop).
pub(crate) fn check(n: &NodeView, out: &mut Vec<Reason>) -> bool {
    let info = n.info;
    if !info.exists {
        out.push(UNKNOWN_CONDITION.reason());
        return false;
    }
    let c = info.conditions;
    let before = out.len();
    if c.not_ready {
        out.push(NOT_READY.reason());
    }
    if c.out_of_disk {
        out.push(OUT_OF_DISK.reason());
    }
    if c.network_unavailable {
        out.push(NETWORK_UNAVAILABLE.reason());
    }
    if info.unschedulable {
        out.push(UNSCHEDULABLE.reason());
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
