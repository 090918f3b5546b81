//! The registered names of the static predicates and priorities a policy file may use.

use serde::{Serialize, Serializer};

/// Declares a name enum with its canonical spellings, in one table.
macro_rules! name_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $ty:ident { $( $(#[$vmeta:meta])* $variant:ident => $text:literal ),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $ty { $( $(#[$vmeta])* $variant ),+ }

        impl $ty {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$ty] = &[ $( $ty::$variant ),+ ];

            /// The canonical name, as a policy file spells it.
            pub fn as_str(&self) -> &'static str {
                match self { $( $ty::$variant => $text ),+ }
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }
    };
}

pub use crate::predicates::PredicateName;

impl PredicateName {
    /// The predicates a policy file names directly (those without an argument), in the static
    /// evaluation order. `CheckNodeLabelPresence` and `CheckServiceAffinity` are reached
    /// through their arguments ([`PredicateKind`](super::PredicateKind)), never by name.
    pub const ALL: &'static [PredicateName] = &crate::predicates::registry::NAMED;

    /// The canonical name, as a policy file spells it.
    pub fn as_str(&self) -> &'static str {
        self.unit().name
    }

    /// Resolves a name as written in a policy file, or one of its aliases (`PodFitsPorts` is
    /// `PodFitsHostPorts`). Names are case-sensitive, as upstream.
    pub fn parse(s: &str) -> Option<Self> {
        PredicateName::ALL.iter().copied().find(|n| {
            let unit = n.unit();
            unit.name == s || unit.aliases.contains(&s)
        })
    }
}

impl std::fmt::Display for PredicateName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for PredicateName {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

name_enum! {
    /// A static (argument-less) priority registered under a fixed name (scheduler spec §6.1).
    pub enum PriorityName {
        /// `SelectorSpreadPriority`: spread pods of the same service/controller across nodes and zones.
        SelectorSpreadPriority => "SelectorSpreadPriority",
        /// `InterPodAffinityPriority`: preferred pod affinity and anti-affinity.
        InterPodAffinityPriority => "InterPodAffinityPriority",
        /// `LeastRequestedPriority`: favour nodes with more unrequested CPU and memory.
        LeastRequestedPriority => "LeastRequestedPriority",
        /// `BalancedResourceAllocation`: favour nodes whose CPU and memory fractions are close.
        BalancedResourceAllocation => "BalancedResourceAllocation",
        /// `NodePreferAvoidPodsPriority`: honour the node's preferAvoidPods annotation.
        NodePreferAvoidPodsPriority => "NodePreferAvoidPodsPriority",
        /// `NodeAffinityPriority`: preferred node affinity terms.
        NodeAffinityPriority => "NodeAffinityPriority",
        /// `TaintTolerationPriority`: fewer intolerable PreferNoSchedule taints.
        TaintTolerationPriority => "TaintTolerationPriority",
        /// `ServiceSpreadingPriority`: spread pods of the same service across nodes.
        ServiceSpreadingPriority => "ServiceSpreadingPriority",
        /// `EqualPriority`: every node scores 1.
        EqualPriority => "EqualPriority",
        /// `ImageLocalityPriority`: favour nodes that already have the pod's images.
        ImageLocalityPriority => "ImageLocalityPriority",
        /// `MostRequestedPriority`: favour nodes with more requested CPU and memory.
        MostRequestedPriority => "MostRequestedPriority",
    }
}

impl PriorityName {
    /// Resolves a name as written in a policy file (case-sensitive, as upstream).
    pub fn parse(s: &str) -> Option<Self> {
        PriorityName::ALL.iter().copied().find(|n| n.as_str() == s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_alias() {
        for n in PredicateName::ALL {
            assert_eq!(PredicateName::parse(n.as_str()), Some(*n));
        }
        for n in PriorityName::ALL {
            assert_eq!(PriorityName::parse(n.as_str()), Some(*n));
        }
        assert_eq!(
            PredicateName::parse("PodFitsPorts"),
            Some(PredicateName::PodFitsHostPorts)
        );
        assert_eq!(PredicateName::parse("CheckNodeLabelPresence"), None);
        assert_eq!(PredicateName::parse("hostname"), None);
        assert_eq!(PriorityName::parse("ServiceAntiAffinity"), None);
    }
}
