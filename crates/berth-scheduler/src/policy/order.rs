//! Predicate evaluation order (scheduler spec §2.4).

use std::sync::OnceLock;

use super::{PredicateConfig, PredicateKind, PredicateName};

/// The slot of a predicate in upstream's static order (the registry's); lower runs first.
fn slot(kind: &PredicateKind) -> u8 {
    kind.predicate().unit().order
}

/// The mandatory `CheckNodeCondition` entry, used when the policy does not list it.
fn mandatory() -> &'static PredicateConfig {
    static CHECK_NODE_CONDITION: OnceLock<PredicateConfig> = OnceLock::new();
    CHECK_NODE_CONDITION.get_or_init(|| PredicateConfig {
        name: PredicateName::CheckNodeCondition.as_str().to_string(),
        kind: PredicateKind::Builtin(PredicateName::CheckNodeCondition),
    })
}

/// `predicates` in evaluation order, with the mandatory predicate added if missing.
pub(crate) fn ordered(predicates: &[PredicateConfig]) -> Vec<&PredicateConfig> {
    let mut out: Vec<&PredicateConfig> = Vec::with_capacity(predicates.len() + 1);
    let has_mandatory = predicates
        .iter()
        .any(|p| p.kind == PredicateKind::Builtin(PredicateName::CheckNodeCondition));
    if !has_mandatory {
        out.push(mandatory());
    }
    out.extend(predicates.iter());
    // Stable: entries of one slot keep their file order.
    out.sort_by_key(|p| slot(&p.kind));
    out
}
