//! GeneralPredicates: PodFitsResources, HostName, PodFitsHostPorts and MatchNodeSelector, all run,
//! reasons collected in that order.

use super::unit::{FastClass, PredicateUnit, VictimsClass};
use super::Pred;
use super::PredicateName;
use super::{
    host_name, match_node_selector, pod_fits_host_ports, pod_fits_resources, NodeView, Reason,
};
use crate::ctx::PodCtx;

/// The predicates it groups, in the order it runs them.
const PARTS: &[PredicateName] = &[
    PredicateName::PodFitsResources,
    PredicateName::HostName,
    PredicateName::PodFitsHostPorts,
    PredicateName::MatchNodeSelector,
];

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PredicateUnit = PredicateUnit {
    name: "GeneralPredicates",
    aliases: &[],
    order: 2,
    argument: None,
    reasons: &[
        &super::pod_fits_resources::INSUFFICIENT,
        &super::host_name::NOT_MATCH_HOST_NAME,
        &super::pod_fits_host_ports::NO_FREE_PORTS,
        &super::match_node_selector::NOT_MATCH_SELECTOR,
        &super::match_node_selector::NOT_MATCH_ENFORCED,
    ],
    fast: FastClass::Parts(PARTS),
    victims: VictimsClass::Parts(PARTS),
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

/// Runs the four checks without short-circuit.
#[inline]
pub(crate) fn check(c: &PodCtx, n: &NodeView, out: &mut Vec<Reason>) -> bool {
    let a = pod_fits_resources::check(c, n, out);
    let b = host_name::check(c, n, out);
    let d = pod_fits_host_ports::check(c, n, out);
    let e = match_node_selector::check(c, n, out);
    a && b && d && e
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    #[test]
    fn collects_all_in_order() {
        let n = node_json(
            json!({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"}}}),
        );
        let p = pod(
            json!({"spec": {"nodeName": "other", "nodeSelector": {"a": "b"},
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "2", "memory": "2Gi"}}}]}}),
        );
        let got = reasons_of(builtin(P::GeneralPredicates), vec![n], vec![], p);
        assert_eq!(
            got,
            vec![vec![
                "Insufficient cpu".to_string(),
                "Insufficient memory".into(),
                "node(s) didn't match the requested hostname".into(),
                "node(s) didn't match node selector".into()
            ]]
        );
    }
}
