//! The registered names of the static predicates and priorities a policy file may use.

use serde::{Serialize, Serializer};

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

pub use crate::priorities::PriorityName;

impl PriorityName {
    /// The priorities a policy file names directly (those without an argument), in registry
    /// order. `ServiceAntiAffinity` and `NodeLabelPriority` are reached through their arguments
    /// ([`PriorityKind`](super::PriorityKind)), never by name.
    pub const ALL: &'static [PriorityName] = &crate::priorities::registry::NAMED;

    /// The canonical name, as a policy file spells it.
    pub fn as_str(&self) -> &'static str {
        self.unit().name
    }

    /// Resolves a name as written in a policy file (case-sensitive, as upstream).
    pub fn parse(s: &str) -> Option<Self> {
        PriorityName::ALL.iter().copied().find(|n| n.as_str() == s)
    }
}

impl std::fmt::Display for PriorityName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for PriorityName {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
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
