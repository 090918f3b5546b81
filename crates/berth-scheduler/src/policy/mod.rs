//! The scheduler policy file (`kind: Policy`, v1): which predicates filter nodes and which
//! weighted priorities score them.
//!
//! A policy is loaded from JSON or YAML text ([`Policy::from_str`], [`Policy::from_file`]) and
//! validated once; every problem is reported together, each naming its entry
//! (`predicates[2] (Foo): ...`) with upstream's message text. Without a file,
//! [`Policy::default_policy`] applies: the default policy the OpenShift documentation ships
//! (seed 002, 16.2.4), which includes the `Region` service-affinity predicate and the `Zone`
//! service-anti-affinity priority.
//!
//! What this module is not: it does not evaluate predicates or priorities (the engine does), and
//! it does not call scheduler extenders. `extenders` entries are parsed and validated so that a
//! policy naming one loads, and are kept in [`Policy::extenders`], but berth never calls them.
//!
//! Accepted forms (see `parse.rs`): `apiVersion: v1`, the documentation's `version: "v1"`, or no
//! version at all, always with `kind: Policy`. The documentation's samples load as printed,
//! including `...` elision lines, callout numbers after values and the "sample modified" file's
//! JSON-in-YAML layout. Unknown keys are ignored, as upstream.
//!
//! Decisions beyond upstream 1.11 (each a load error that names the entry):
//! * `predicates` / `priorities` absent means [`Policy::default_policy`]'s lists; `[]` means
//!   none (besides the mandatory `CheckNodeCondition`).
//! * `CheckNodeLabelPresence` and `checkServiceAffinity` without an argument are rejected with
//!   upstream's "Predicate type not found" message and a hint to give the argument.
//! * Configurable predicates run in their type's slot (see [`Policy::ordered_predicates`]).
//! * Duplicate names (and `PodFitsPorts` next to `PodFitsHostPorts`) are rejected.
//! * Argument label keys must be valid label keys, label lists non-empty, and `presence` must
//!   be given explicitly (upstream silently reads a missing `presence` as `false`).
//! * `weight` must be an integer (not a string, not a float).
//!
//! ```
//! # use berth_scheduler::policy::{Policy, PredicateKind};
//! let policy = Policy::from_str(r#"
//! kind: Policy
//! apiVersion: v1
//! predicates:
//!   - name: RequireRegion
//!     argument: {labelsPresence: {labels: [region], presence: true}}
//! priorities:
//!   - {name: LeastRequestedPriority, weight: 1}
//! "#).unwrap();
//! assert_eq!(policy.predicates.len(), 1);
//! assert!(matches!(policy.predicates[0].kind, PredicateKind::LabelsPresence { presence: true, .. }));
//! // CheckNodeCondition is mandatory and always evaluated first.
//! assert_eq!(policy.ordered_predicates()[0].name, "CheckNodeCondition");
//! ```

mod arguments;
mod defaults;
mod error;
mod extender;
mod names;
mod order;
mod parse;
mod serialize;
mod syntax;
mod validate;

#[cfg(test)]
mod tests;

pub use error::{PolicyEntryError, PolicyError};
pub use extender::{Extender, ExtenderManagedResource, ExtenderTlsConfig};
pub use names::{PredicateName, PriorityName};

/// A validated scheduler policy.
///
/// Serializing it (`serde_json::to_string`, or [`Policy::to_json`]) yields a `kind: Policy` v1
/// file that [`Policy::from_str`] loads back to an equal value; [`PredicateConfig`] and
/// [`PriorityConfig`] serialize as the file's entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// The configured predicates in file order (the file's list, or the defaults when the file
    /// has no `predicates` key). The mandatory `CheckNodeCondition` is not added here; see
    /// [`Policy::ordered_predicates`] for the evaluation order.
    pub predicates: Vec<PredicateConfig>,
    /// The configured priorities in file order, each with its weight.
    pub priorities: Vec<PriorityConfig>,
    /// `alwaysCheckAllPredicates`: evaluate every predicate on a node even after one fails,
    /// so that every failure reason is reported.
    pub always_check_all_predicates: bool,
    /// `hardPodAffinitySymmetricWeight` (1..=100): the weight an existing pod's *required*
    /// affinity term towards the incoming pod contributes to `InterPodAffinityPriority`.
    /// A file value of 0 or none means the default, 1.
    pub hard_pod_affinity_symmetric_weight: i32,
    /// `extenders`, parsed and validated as upstream does. berth does **not** call extenders;
    /// they are kept so that a policy naming one loads, and so tools can report them.
    pub extenders: Vec<Extender>,
}

/// One predicate of the policy: the name the file gives it and what it checks.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PredicateConfig {
    /// The name as written in the file (for a static predicate possibly an alias, e.g.
    /// `PodFitsPorts`; for a configurable one the user's name, e.g. `Region`).
    pub name: String,
    /// What the predicate checks.
    pub kind: PredicateKind,
}

/// What a predicate checks: a static predicate, or one configured by its `argument`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PredicateKind {
    /// A registered static predicate.
    Builtin(PredicateName),
    /// `argument.serviceAffinity`: pods of one service land on nodes with the same values of
    /// these labels (`CheckServiceAffinity`).
    ServiceAffinity {
        /// Node label keys whose values must be homogeneous across the service's pods.
        labels: Vec<String>,
    },
    /// `argument.labelsPresence`: the node must have all (`presence: true`) or none
    /// (`presence: false`) of these labels (`CheckNodeLabelPresence`).
    LabelsPresence {
        /// Node label keys checked.
        labels: Vec<String>,
        /// Whether the labels are required (true) or forbidden (false).
        presence: bool,
    },
}

/// One priority of the policy: its name, weight and what it scores.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PriorityConfig {
    /// The name as written in the file.
    pub name: String,
    /// The weight the node's 0..10 score is multiplied by; always positive.
    pub weight: i64,
    /// What the priority scores.
    pub kind: PriorityKind,
}

/// What a priority scores: a static priority, or one configured by its `argument`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PriorityKind {
    /// A registered static priority.
    Builtin(PriorityName),
    /// `argument.serviceAntiAffinity`: spread a service's pods across the values of this node label.
    ServiceAntiAffinity {
        /// The node label key whose values form the groups to spread over.
        label: String,
    },
    /// `argument.labelPreference`: prefer nodes that have (or, with `presence: false`, lack) the label.
    LabelPreference {
        /// The node label key.
        label: String,
        /// Whether having the label is preferred (true) or lacking it is (false).
        presence: bool,
    },
}

impl PredicateKind {
    /// The registered predicate that runs it (a configurable one by its type's name).
    pub fn predicate(&self) -> PredicateName {
        match self {
            PredicateKind::Builtin(name) => *name,
            PredicateKind::ServiceAffinity { .. } => PredicateName::CheckServiceAffinity,
            PredicateKind::LabelsPresence { .. } => PredicateName::CheckNodeLabelPresence,
        }
    }
}

impl PriorityKind {
    /// The registered priority that scores it (a configurable one by its type's name).
    pub fn priority(&self) -> PriorityName {
        match self {
            PriorityKind::Builtin(name) => *name,
            PriorityKind::ServiceAntiAffinity { .. } => PriorityName::ServiceAntiAffinity,
            PriorityKind::LabelPreference { .. } => PriorityName::NodeLabelPriority,
        }
    }
}

impl Policy {
    /// The policy used when no policy file is given: seed 002, 16.2.4's default
    /// `scheduler.json` (the upstream default predicates minus the pressure and volume-binding
    /// ones, plus `Region` service affinity; the seven default priorities plus `Zone` service
    /// anti-affinity with weight 2). `CheckNodeCondition` runs too, being mandatory.
    pub fn default_policy() -> Policy {
        Policy {
            predicates: defaults::predicates(),
            priorities: defaults::priorities(),
            always_check_all_predicates: false,
            hard_pod_affinity_symmetric_weight: defaults::HARD_POD_AFFINITY_SYMMETRIC_WEIGHT,
            extenders: Vec::new(),
        }
    }

    /// Loads a policy from JSON or YAML text, validating every entry.
    ///
    /// All problems are reported together in the returned [`PolicyError`].
    #[allow(clippy::should_implement_trait)]
    pub fn from_str(text: &str) -> Result<Policy, PolicyError> {
        let document = parse::document(text).map_err(|e| PolicyError::new(None, vec![e]))?;
        validate::policy(&document).map_err(|errors| PolicyError::new(None, errors))
    }

    /// Reads and loads a policy file; errors name the file.
    pub fn from_file(path: &std::path::Path) -> Result<Policy, PolicyError> {
        let file = Some(path.display().to_string());
        let text = std::fs::read_to_string(path).map_err(|e| {
            PolicyError::new(
                file.clone(),
                vec![PolicyEntryError::new("file", format!("cannot read: {e}"))],
            )
        })?;
        Policy::from_str(&text).map_err(|e| PolicyError::new(file, e.errors))
    }

    /// The predicates in the order they are evaluated on a node (scheduler spec §2.4): the static
    /// order of upstream, each configurable predicate in its type's slot (`labelsPresence` at
    /// `CheckNodeLabelPresence`, `serviceAffinity` at `CheckServiceAffinity`), same-slot entries
    /// in file order. `CheckNodeCondition` is mandatory and comes first even if not configured.
    pub fn ordered_predicates(&self) -> Vec<&PredicateConfig> {
        order::ordered(&self.predicates)
    }
}

impl std::str::FromStr for Policy {
    type Err = PolicyError;

    fn from_str(text: &str) -> Result<Policy, PolicyError> {
        Policy::from_str(text)
    }
}
