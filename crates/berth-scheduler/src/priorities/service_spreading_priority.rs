//! ServiceSpreadingPriority: SelectorSpreadPriority over Services only (the spreading itself is
//! `selector_spread_priority`'s, with its test vectors).

use super::unit::PriorityUnit;
use super::{selector_spread_priority, Prio, MAX_PRIORITY};
use crate::ctx::PodCtx;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PriorityUnit = PriorityUnit {
    name: "ServiceSpreadingPriority",
    argument: None,
    hot: None,
};

/// Every node scores 10 when no service selects the pod.
pub(crate) fn uniform(c: &PodCtx, _p: &Prio) -> Option<i64> {
    c.cache
        .matching_services(c.pod)
        .next()
        .is_none()
        .then_some(MAX_PRIORITY)
}

/// The registry's entry point: 0..10 per feasible node.
pub(crate) fn score_nodes(
    c: &PodCtx,
    _p: &Prio,
    feasible: &[u32],
    counts: &mut Vec<i64>,
    out: &mut [i64],
) {
    selector_spread_priority::score(c, false, feasible, counts, out)
}
