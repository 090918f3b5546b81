//! PodToleratesNodeNoExecuteTaints: NoExecute taints only; the check is `pod_tolerates_node_taints`'s.

use super::unit::{FastClass, PredicateUnit, VictimsClass};
use super::{NodeView, Pred, Reason};
use crate::ctx::PodCtx;
use crate::node_info::flag;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PredicateUnit = PredicateUnit {
    name: "PodToleratesNodeNoExecuteTaints",
    aliases: &[],
    order: 9,
    argument: None,
    reasons: &[
        &super::check_node_condition::UNKNOWN_CONDITION,
        &super::pod_tolerates_node_taints::TAINTS_NOT_TOLERATED,
    ],
    fast: FastClass::Flags(flag::MISSING | flag::HARD_TAINTS),
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
    Ok(super::pod_tolerates_node_taints::check(c, n, true, out))
}
