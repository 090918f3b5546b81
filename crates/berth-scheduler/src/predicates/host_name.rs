//! HostName: `spec.nodeName` must be empty or equal the node's name.

use super::unit::{FastClass, PredicateUnit, ReasonDef, VictimsClass};
use super::Pred;
use super::{NodeView, Reason};
use crate::ctx::PodCtx;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PredicateUnit = PredicateUnit {
    name: "HostName",
    aliases: &[],
    order: 3,
    argument: None,
    reasons: &[&NOT_MATCH_HOST_NAME],
    fast: FastClass::HostName,
    victims: VictimsClass::NodeOnly,
};

/// `node(s) didn't match the requested hostname` (preemption cannot resolve it).
pub(crate) static NOT_MATCH_HOST_NAME: ReasonDef = ReasonDef {
    text: "node(s) didn't match the requested hostname",
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
    Ok(check(c, n, out))
}

/// Checks `spec.nodeName`.
pub(crate) fn check(c: &PodCtx, n: &NodeView, out: &mut Vec<Reason>) -> bool {
    if c.pod.node_name.is_empty() || c.pod.node_name == n.info.name {
        return true;
    }
    out.push(NOT_MATCH_HOST_NAME.reason());
    false
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    #[test]
    fn vectors() {
        let nodes = vec![
            simple_node("n1", "4", "8Gi", 10),
            simple_node("n2", "4", "8Gi", 10),
        ];
        let p = pod(json!({"spec": {"nodeName": "n2"}}));
        let got = reasons_of(builtin(P::HostName), nodes, vec![], p);
        assert_eq!(
            got,
            vec![
                vec!["node(s) didn't match the requested hostname".to_string()],
                vec![]
            ]
        );
    }
}
