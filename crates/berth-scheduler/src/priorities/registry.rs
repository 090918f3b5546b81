//! The priority registry: every priority unit, one line each. A line names the priority and its
//! file; the file declares the rest (see [`PriorityUnit`]).
//!
//! Adding a priority: write its file (a `UNIT` descriptor, `uniform` and `score_nodes`, with its
//! test vectors) and add one line here.

use super::unit::PriorityUnit;
use super::Prio;
use crate::ctx::PodCtx;

macro_rules! registry {
    ( $( $name:ident => $unit:ident ),+ $(,)? ) => {
        /// A priority, by the name a policy file gives it (a configurable priority by its
        /// type's name).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum PriorityName {
            $(
                #[doc = concat!("`", stringify!($name), "` (`priorities/", stringify!($unit), ".rs`).")]
                $name
            ),+
        }

        impl PriorityName {
            /// Every priority, configurable ones included, in registry order.
            pub(crate) const EVERY: &'static [PriorityName] = &[ $( PriorityName::$name ),+ ];
        }

        /// The units, indexed by [`PriorityName`].
        pub(crate) const UNITS: [PriorityUnit; PriorityName::EVERY.len()] = [ $( super::$unit::UNIT ),+ ];

        /// The score every node gets when it does not depend on the node, if so.
        pub(crate) fn uniform(p: &Prio, c: &PodCtx) -> Option<i64> {
            match p.name {
                $( PriorityName::$name => super::$unit::uniform(c, p), )+
            }
        }

        /// Raw 0..10 scores for the feasible nodes.
        pub(crate) fn score(
            p: &Prio,
            c: &PodCtx,
            feasible: &[u32],
            counts: &mut Vec<i64>,
            out: &mut [i64],
        ) {
            match p.name {
                $( PriorityName::$name => super::$unit::score_nodes(c, p, feasible, counts, out), )+
            }
        }
    };
}

registry! {
    SelectorSpreadPriority => selector_spread_priority,
    InterPodAffinityPriority => inter_pod_affinity_priority,
    LeastRequestedPriority => least_requested_priority,
    BalancedResourceAllocation => balanced_resource_allocation,
    NodePreferAvoidPodsPriority => node_prefer_avoid_pods_priority,
    NodeAffinityPriority => node_affinity_priority,
    TaintTolerationPriority => taint_toleration_priority,
    ServiceSpreadingPriority => service_spreading_priority,
    EqualPriority => equal_priority,
    ImageLocalityPriority => image_locality_priority,
    MostRequestedPriority => most_requested_priority,
    ServiceAntiAffinity => service_anti_affinity,
    NodeLabelPriority => node_label_priority,
    PodTopologySpread => pod_topology_spread_priority,
    NodeResourcesFit => node_resources_fit,
}

/// The units, indexed by [`PriorityName`].
pub(crate) static PRIORITIES: [PriorityUnit; PriorityName::EVERY.len()] = UNITS;

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

/// The priorities a policy file names directly (those without an argument).
pub(crate) const NAMED: [PriorityName; count_named()] = {
    let mut out = [PriorityName::EqualPriority; count_named()];
    let (mut i, mut n) = (0, 0);
    while i < UNITS.len() {
        if UNITS[i].argument.is_none() {
            out[n] = PriorityName::EVERY[i];
            n += 1;
        }
        i += 1;
    }
    out
};

impl PriorityName {
    /// The priority's unit.
    #[inline]
    pub(crate) fn unit(self) -> &'static PriorityUnit {
        &PRIORITIES[self as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_declares_every_property() {
        let mut seen = std::collections::BTreeSet::new();
        for (u, name) in PRIORITIES.iter().zip(PriorityName::EVERY) {
            assert_eq!(u.name, format!("{name:?}"), "a line names another unit");
            assert!(seen.insert(u.name), "{} registered twice", u.name);
        }
        let hot: Vec<_> = PRIORITIES.iter().filter_map(|u| u.hot).collect();
        assert_eq!(hot.len(), 3, "one unit per fused resource score");
    }
}
