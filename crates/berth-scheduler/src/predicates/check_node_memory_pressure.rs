//! CheckNodeMemoryPressure: nodes under memory pressure reject BestEffort pods.

use super::unit::{FastClass, PredicateUnit, ReasonDef, VictimsClass};
use super::{NodeView, Pred, Reason};
use crate::ctx::PodCtx;
use crate::node_info::flag;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PredicateUnit = PredicateUnit {
    name: "CheckNodeMemoryPressure",
    aliases: &[],
    order: 18,
    argument: None,
    reasons: &[&MEMORY_PRESSURE],
    fast: FastClass::FlagsForBestEffort(flag::MEMORY_PRESSURE),
    victims: VictimsClass::NodeOnly,
};

/// `node(s) had memory pressure` (preemption cannot resolve it).
pub(crate) static MEMORY_PRESSURE: ReasonDef = ReasonDef {
    text: "node(s) had memory pressure",
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

/// Memory pressure rejects BestEffort pods only.
pub(crate) fn check(c: &PodCtx, n: &NodeView, out: &mut Vec<Reason>) -> bool {
    if c.pod.best_effort && n.info.conditions.memory_pressure {
        out.push(MEMORY_PRESSURE.reason());
        return false;
    }
    true
}
