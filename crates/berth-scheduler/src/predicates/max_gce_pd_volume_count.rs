//! MaxGCEPDVolumeCount: GCE persistent disk attach limit (`max_volume_count`).

use super::max_volume_count;
use super::unit::{FastClass, PredicateUnit, VictimsClass};
use super::{NodeView, Pred, Reason};
use crate::ctx::PodCtx;
use crate::node_info::AttachKind;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PredicateUnit = PredicateUnit {
    name: "MaxGCEPDVolumeCount",
    aliases: &[],
    order: 13,
    argument: None,
    reasons: &[&super::max_volume_count::LIMIT_EXCEEDED],
    fast: FastClass::Volumes,
    victims: VictimsClass::MetWithoutPortsAndVolumes,
};

/// The registry's entry point.
#[inline]
pub(crate) fn filter(
    c: &PodCtx,
    _p: &Pred,
    n: &NodeView,
    out: &mut Vec<Reason>,
) -> Result<bool, String> {
    Ok(max_volume_count::check(c, AttachKind::Gce, n, out))
}
