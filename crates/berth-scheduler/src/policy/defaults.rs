//! The default policy: seed 002, 16.2.4 (OpenShift 3.11's shipped `scheduler.json`).

use super::{
    PredicateConfig, PredicateKind, PredicateName, PriorityConfig, PriorityKind, PriorityName,
};

/// `hardPodAffinitySymmetricWeight` when the file gives none (or 0): upstream's flag default.
pub(crate) const HARD_POD_AFFINITY_SYMMETRIC_WEIGHT: i32 = 1;

/// The default predicates, in the seed's order.
pub(crate) fn predicates() -> Vec<PredicateConfig> {
    use PredicateName::*;
    let mut out: Vec<PredicateConfig> = [
        NoVolumeZoneConflict,
        MaxEBSVolumeCount,
        MaxGCEPDVolumeCount,
        MaxAzureDiskVolumeCount,
        MatchInterPodAffinity,
        NoDiskConflict,
        GeneralPredicates,
        PodToleratesNodeTaints,
    ]
    .into_iter()
    .map(|n| PredicateConfig {
        name: n.as_str().to_string(),
        kind: PredicateKind::Builtin(n),
    })
    .collect();
    out.push(PredicateConfig {
        name: "Region".to_string(),
        kind: PredicateKind::ServiceAffinity {
            labels: vec!["region".to_string()],
        },
    });
    out
}

/// The default priorities and weights, in the seed's order.
pub(crate) fn priorities() -> Vec<PriorityConfig> {
    use PriorityName::*;
    let mut out: Vec<PriorityConfig> = [
        (SelectorSpreadPriority, 1),
        (InterPodAffinityPriority, 1),
        (LeastRequestedPriority, 1),
        (BalancedResourceAllocation, 1),
        (NodePreferAvoidPodsPriority, 10000),
        (NodeAffinityPriority, 1),
        (TaintTolerationPriority, 1),
    ]
    .into_iter()
    .map(|(n, weight)| PriorityConfig {
        name: n.as_str().to_string(),
        weight,
        kind: PriorityKind::Builtin(n),
    })
    .collect();
    out.push(PriorityConfig {
        name: "Zone".to_string(),
        weight: 2,
        kind: PriorityKind::ServiceAntiAffinity {
            label: "zone".to_string(),
        },
    });
    out
}
