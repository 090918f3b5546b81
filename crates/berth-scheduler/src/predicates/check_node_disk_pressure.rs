//! CheckNodeDiskPressure: nodes under disk pressure reject every pod.

use super::unit::{FastClass, PredicateUnit, ReasonDef, VictimsClass};
use super::{NodeView, Pred, Reason};
use crate::ctx::PodCtx;
use crate::node_info::flag;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PredicateUnit = PredicateUnit {
    name: "CheckNodeDiskPressure",
    aliases: &[],
    order: 20,
    argument: None,
    reasons: &[&DISK_PRESSURE],
    fast: FastClass::Flags(flag::DISK_PRESSURE),
    victims: VictimsClass::NodeOnly,
};

/// `node(s) had disk pressure` (preemption cannot resolve it).
pub(crate) static DISK_PRESSURE: ReasonDef = ReasonDef {
    text: "node(s) had disk pressure",
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

/// Disk pressure rejects every pod.
pub(crate) fn check(n: &NodeView, out: &mut Vec<Reason>) -> bool {
    if n.info.conditions.disk_pressure {
        out.push(DISK_PRESSURE.reason());
        return false;
    }
    true
}
