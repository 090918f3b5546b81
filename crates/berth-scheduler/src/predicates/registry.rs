//! The predicate registry: every predicate unit, one line each, in upstream's static evaluation
//! order (scheduler.md §2.4). A line names the predicate and its file; the file declares the
//! rest (see [`PredicateUnit`]).
//!
//! Adding a predicate: write its file (a `UNIT` descriptor and a `filter` function, with its
//! test vectors) and add one line here at its place in the order.

use super::unit::PredicateUnit;
use super::{NodeView, Pred, Reason};
use crate::ctx::PodCtx;

macro_rules! registry {
    ( $( $name:ident => $unit:ident ),+ $(,)? ) => {
        /// A predicate, by the name a policy file gives it (a configurable predicate by its
        /// type's name). Declared in the static evaluation order.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum PredicateName {
            $(
                #[doc = concat!("`", stringify!($name), "` (`predicates/", stringify!($unit), ".rs`).")]
                $name
            ),+
        }

        impl PredicateName {
            /// Every predicate, registered ones with arguments included, in the static order.
            pub(crate) const EVERY: &'static [PredicateName] = &[ $( PredicateName::$name ),+ ];
        }

        /// The units, indexed by [`PredicateName`].
        pub(crate) const UNITS: [PredicateUnit; PredicateName::EVERY.len()] = [ $( super::$unit::UNIT ),+ ];

        /// Runs one configured predicate (a static call into its file, no indirection).
        #[inline]
        pub(crate) fn check(
            p: &Pred,
            c: &PodCtx,
            n: &NodeView,
            out: &mut Vec<Reason>,
        ) -> Result<bool, String> {
            match p.name {
                $( PredicateName::$name => super::$unit::filter(c, p, n, out), )+
            }
        }
    };
}

registry! {
    CheckNodeCondition => check_node_condition,
    CheckNodeUnschedulable => check_node_unschedulable,
    GeneralPredicates => general_predicates,
    HostName => host_name,
    PodFitsHostPorts => pod_fits_host_ports,
    MatchNodeSelector => match_node_selector,
    PodFitsResources => pod_fits_resources,
    NoDiskConflict => no_disk_conflict,
    PodToleratesNodeTaints => pod_tolerates_node_taints,
    PodToleratesNodeNoExecuteTaints => pod_tolerates_node_no_execute_taints,
    CheckNodeLabelPresence => check_node_label_presence,
    CheckServiceAffinity => check_service_affinity,
    MaxEBSVolumeCount => max_ebs_volume_count,
    MaxGCEPDVolumeCount => max_gce_pd_volume_count,
    MaxCSIVolumeCountPred => max_csi_volume_count_pred,
    MaxAzureDiskVolumeCount => max_azure_disk_volume_count,
    CheckVolumeBinding => check_volume_binding,
    NoVolumeZoneConflict => no_volume_zone_conflict,
    CheckNodeMemoryPressure => check_node_memory_pressure,
    CheckNodePIDPressure => check_node_pid_pressure,
    CheckNodeDiskPressure => check_node_disk_pressure,
    MatchInterPodAffinity => match_inter_pod_affinity,
    PodTopologySpread => pod_topology_spread,
}

/// The units, indexed by [`PredicateName`].
pub(crate) static PREDICATES: [PredicateUnit; PredicateName::EVERY.len()] = UNITS;

const fn count_named() -> usize {
    let (mut i, mut n) = (0, 0);
    while i < UNITS.len() {
        if UNITS[i].argument.is_none() {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The predicates a policy file names directly (those without an argument), in the static order.
pub(crate) const NAMED: [PredicateName; count_named()] = {
    let mut out = [PredicateName::CheckNodeCondition; count_named()];
    let (mut i, mut n) = (0, 0);
    while i < UNITS.len() {
        if UNITS[i].argument.is_none() {
            out[n] = PredicateName::EVERY[i];
            n += 1;
        }
        i += 1;
    }
    out
};

impl PredicateName {
    /// The predicate's unit.
    #[inline]
    pub(crate) fn unit(self) -> &'static PredicateUnit {
        &PREDICATES[self as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predicates::unit::{FastClass, VictimsClass};

    /// scheduler.md §2.4, the 1.11 static order with the 1.12 additions berth implements
    /// (MaxCinderVolumeCount is not registered), then PodTopologySpread (1.35), which no
    /// policy names: it runs last, after the legacy predicates.
    const SPEC_ORDER: &str = "CheckNodeCondition, CheckNodeUnschedulable, GeneralPredicates, \
        HostName, PodFitsHostPorts, MatchNodeSelector, PodFitsResources, NoDiskConflict, \
        PodToleratesNodeTaints, PodToleratesNodeNoExecuteTaints, CheckNodeLabelPresence, \
        CheckServiceAffinity, MaxEBSVolumeCount, MaxGCEPDVolumeCount, MaxCSIVolumeCountPred, \
        MaxAzureDiskVolumeCount, CheckVolumeBinding, NoVolumeZoneConflict, \
        CheckNodeMemoryPressure, CheckNodePIDPressure, CheckNodeDiskPressure, MatchInterPodAffinity, \
        PodTopologySpread";

    #[test]
    fn registry_order_is_upstreams_static_order() {
        let names: Vec<&str> = PREDICATES.iter().map(|u| u.name).collect();
        let spec: Vec<&str> = SPEC_ORDER.split(", ").collect();
        assert_eq!(names, spec);
    }

    #[test]
    fn every_unit_declares_every_property() {
        for (i, (u, name)) in PREDICATES.iter().zip(PredicateName::EVERY).enumerate() {
            assert_eq!(u.name, format!("{name:?}"), "line {i} names another unit");
            assert_eq!(u.order as usize, i, "{}: order", u.name);
            assert!(!u.reasons.is_empty(), "{}: no reasons", u.name);
            for r in u.reasons {
                assert!(!r.text.is_empty(), "{}: a reason without text", u.name);
            }
            for a in u.aliases {
                assert!(
                    !a.is_empty() && !names_in_use(a, *name),
                    "{}: alias {a}",
                    u.name
                );
            }
            let parts = |f: &FastClass, v: &VictimsClass| match (f, v) {
                (FastClass::Parts(a), VictimsClass::Parts(b)) => Some((*a, *b)),
                _ => None,
            };
            if let Some((a, b)) = parts(&u.fast, &u.victims) {
                assert_eq!(a, b, "{}: parts differ", u.name);
                for p in a {
                    let pu = p.unit();
                    assert!(
                        !matches!(pu.fast, FastClass::Parts(_)),
                        "{}: nested group",
                        u.name
                    );
                    for r in pu.reasons {
                        assert!(
                            u.reasons.contains(r),
                            "{}: misses {}'s reasons",
                            u.name,
                            pu.name
                        );
                    }
                }
            } else {
                assert!(
                    !matches!(u.fast, FastClass::Parts(_))
                        && !matches!(u.victims, VictimsClass::Parts(_)),
                    "{}: a group must be one in both classes",
                    u.name
                );
            }
        }
    }

    fn names_in_use(alias: &str, owner: PredicateName) -> bool {
        PREDICATES
            .iter()
            .zip(PredicateName::EVERY)
            .any(|(u, n)| *n != owner && (u.name == alias || u.aliases.contains(&alias)))
    }
}
