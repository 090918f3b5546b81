//! CheckNodePIDPressure: nodes under PID pressure reject every pod (1.12+).

use super::unit::{FastClass, PredicateUnit, ReasonDef, VictimsClass};
use super::{NodeView, Pred, Reason};
use crate::ctx::PodCtx;
use crate::node_info::flag;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PredicateUnit = PredicateUnit {
    name: "CheckNodePIDPressure",
    aliases: &[],
    order: 19,
    argument: None,
    reasons: &[&PID_PRESSURE],
    fast: FastClass::Flags(flag::PID_PRESSURE),
    victims: VictimsClass::NodeOnly,
};

/// `node(s) had pid pressure` (preemption cannot resolve it).
pub(crate) static PID_PRESSURE: ReasonDef = ReasonDef {
    text: "node(s) had pid pressure",
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

/// PID pressure rejects every pod.
pub(crate) fn check(n: &NodeView, out: &mut Vec<Reason>) -> bool {
    if n.info.conditions.pid_pressure {
        out.push(PID_PRESSURE.reason());
        return false;
    }
    true
}
