//! Preemption (scheduler.md §7): when a pod fits nowhere, find the node where evicting the
//! fewest, least important lower-priority pods lets it fit, respecting disruption budgets
//! best-effort.
//!
//! Pure like the rest of the engine: [`Scheduler::preempt`] takes the cache, the pod, its
//! [`FitError`], the nominated pods and the budgets, and returns a [`PreemptionOutcome`]. The
//! driver carries it out (nominate, delete victims, clear lower nominations).
//!
//! Every candidate node is evaluated, as in 1.11–1.18 (no sampling of candidates: the spec's
//! node choice is over all of them). `choose.rs`, `fast.rs` and `memo.rs` make that cheap;
//! `reference.rs` (tests) is the plain version they must agree with.
//!
//! Deviations from 1.11, as the spec allows: the unresolvable reasons are the 1.13 set
//! ([`Reason::resolvable`](crate::Reason::resolvable)); `preemptionPolicy: Never` (1.15) is honoured; potential victims of
//! equal priority are ordered by earlier `status.startTime` (1.16); the node choice compares the
//! victims' true highest priority and adds the 1.16 start-time criterion; remaining ties go to
//! the first node by name.

mod choose;
mod fast;
mod memo;
mod pick;
#[cfg(test)]
mod proptests;
#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;
mod victims;

pub(crate) use memo::Memo;
pub use pick::pick_one_node;

use crate::cache::ClusterCache;
use crate::compiled::Selector;
use crate::engine::{FitError, Nominated, Scheduler};
use crate::model::LabelSelector;
use crate::pod_info::PodInfo;
use crate::predicates::registry::PREDICATES;
use std::collections::BTreeSet;

/// A PodDisruptionBudget as preemption needs it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Pdb {
    /// Namespace of the budget.
    pub namespace: String,
    /// `spec.selector` (absent or empty selects nothing).
    pub selector: Option<LabelSelector>,
    /// `status.disruptionsAllowed`.
    pub disruptions_allowed: i32,
}

/// What preemption found for one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preemption {
    /// The node to nominate.
    pub node: String,
    /// Pods to delete (`namespace/name`), in reprieve order.
    pub victims: Vec<String>,
    /// Lower-priority pods nominated to `node` whose nomination is cleared.
    pub lower_nominated: Vec<String>,
}

/// The outcome of one preemption attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreemptionOutcome {
    /// The pod may not preempt (still waiting for earlier victims, or `preemptionPolicy: Never`).
    NotEligible,
    /// No node might be helped: the pod's own nomination (if any) is cleared.
    NoCandidates,
    /// Candidates existed but the pod fits on none of them even without lower-priority pods.
    NoNode,
    /// Preempt on a node.
    Preempt(Preemption),
}

/// Inputs besides the pod and the cache.
#[derive(Debug, Clone, Copy)]
pub struct PreemptionInput<'a> {
    /// Pending pods nominated to nodes (two-pass rule).
    pub nominated: &'a [Nominated<'a>],
    /// Disruption budgets.
    pub pdbs: &'a [Pdb],
}

/// The victims chosen on one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeVictims {
    /// Node name.
    pub node: String,
    /// Victims in reprieve order.
    pub victims: Vec<Victim>,
    /// Victims whose eviction violates a budget.
    pub pdb_violations: usize,
}

/// One victim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Victim {
    /// `namespace/name`.
    pub key: String,
    /// Priority.
    pub priority: i32,
    /// `status.startTime` (Unix seconds), if known.
    pub start: Option<i64>,
}

/// podEligibleToPreemptOthers (§7.2): false if the pod has `preemptionPolicy: Never` or if it is
/// nominated to a node that still holds a terminating pod of lower priority.
pub fn eligible(cache: &ClusterCache, pod: &PodInfo) -> bool {
    if pod.preempt_never {
        return false;
    }
    if pod.nominated_node.is_empty() {
        return true;
    }
    let Some(node) = cache.node(&pod.nominated_node) else {
        return true;
    };
    !node.pods.iter().any(|&ix| {
        cache
            .pod_slot(ix)
            .is_some_and(|s| s.info.terminating && s.info.priority < pod.priority)
    })
}

/// The user-facing texts of the reasons preemption cannot resolve (1.13 set), as the
/// predicates declare them.
fn unresolvable_texts() -> BTreeSet<String> {
    PREDICATES
        .iter()
        .flat_map(|unit| unit.reasons)
        .filter(|r| !r.resolvable)
        .map(|r| r.text.to_string())
        .collect()
}

/// nodesWherePreemptionMightHelp (§7.3): nodes (by name order) whose recorded failures are all
/// resolvable; nodes without recorded failures are candidates too.
pub fn candidate_nodes(cache: &ClusterCache, err: &FitError) -> Vec<String> {
    let bad = unresolvable_texts();
    cache
        .order
        .iter()
        .map(|&ix| &cache.nodes[ix as usize].name)
        .filter(|name| {
            err.failed_predicates
                .get(name.as_str())
                .is_none_or(|rs| !rs.iter().any(|r| bad.contains(r)))
        })
        .cloned()
        .collect()
}

/// [`candidate_nodes`] as node slots, by one merge of the name-ordered nodes with the
/// name-ordered failures (no look-up per node).
fn candidate_slots(cache: &ClusterCache, err: &FitError) -> Vec<u32> {
    use std::cmp::Ordering::*;
    let bad = unresolvable_texts();
    let mut failed = err.failed_predicates.iter().peekable();
    let mut out = Vec::with_capacity(cache.order.len());
    // most nodes of a large cluster fail for the same reasons: decide each list once
    let mut last: Option<(&Vec<String>, bool)> = None;
    for &ix in &cache.order {
        let name = cache.nodes[ix as usize].name.as_str();
        let mut reasons = None;
        while let Some((n, rs)) = failed.peek() {
            match n.as_str().cmp(name) {
                Less => {}
                Equal => reasons = Some(*rs),
                Greater => break,
            }
            failed.next();
            if reasons.is_some() {
                break;
            }
        }
        let resolvable = match (reasons, last) {
            (None, _) => true,
            (Some(rs), Some((prev, ok))) if prev == rs => ok,
            (Some(rs), _) => {
                let ok = !rs.iter().any(|r| bad.contains(r));
                last = Some((rs, ok));
                ok
            }
        };
        if resolvable {
            out.push(ix);
        }
    }
    out
}

/// A budget compiled against the cache's interner.
pub(crate) struct CompiledPdb {
    ns: crate::intern::Sym,
    selector: Selector,
    allowed: i32,
}

pub(crate) fn compile_pdbs(cache: &mut ClusterCache, pdbs: &[Pdb]) -> Vec<CompiledPdb> {
    pdbs.iter()
        .filter(|p| {
            p.selector
                .as_ref()
                .is_some_and(|s| !s.match_labels.is_empty() || !s.match_expressions.is_empty())
        })
        .map(|p| CompiledPdb {
            ns: cache.interner.intern(&p.namespace),
            selector: Selector::compile(p.selector.as_ref(), &mut cache.interner),
            allowed: p.disruptions_allowed,
        })
        .collect()
}

/// True if evicting `pod` violates some budget (one with no disruptions left selects it).
pub(crate) fn violates(cache: &ClusterCache, pdbs: &[CompiledPdb], pod: &PodInfo) -> bool {
    !pod.labels.0.is_empty()
        && pdbs.iter().any(|b| {
            b.allowed <= 0 && b.ns == pod.ns && b.selector.matches(&pod.labels, &cache.interner)
        })
}

impl Scheduler {
    /// Runs preemption for `pod` after `err` (§7 steps 2–7). The cache is changed only
    /// temporarily (victims are removed and put back when the pod's fit depends on inter-pod
    /// state).
    pub fn preempt(
        &mut self,
        cache: &mut ClusterCache,
        pod: &PodInfo,
        err: &FitError,
        input: PreemptionInput,
    ) -> PreemptionOutcome {
        if !eligible(cache, pod) {
            return PreemptionOutcome::NotEligible;
        }
        let candidates = candidate_slots(cache, err);
        if candidates.is_empty() {
            return PreemptionOutcome::NoCandidates;
        }
        let pdbs = compile_pdbs(cache, input.pdbs);
        let Some(chosen) = self.choose_node(cache, pod, err, &candidates, &pdbs, input.nominated)
        else {
            return PreemptionOutcome::NoNode;
        };
        let node = cache.nodes[chosen.node as usize].name.clone();
        let lower_nominated = lower_nominated(pod, &node, input.nominated);
        PreemptionOutcome::Preempt(Preemption {
            node,
            victims: chosen.victims.into_iter().map(|v| v.key).collect(),
            lower_nominated,
        })
    }
}

impl Scheduler {
    /// DefaultPreemption's `GetOffsetAndNumCandidates` under a profile: the candidates from a
    /// random offset (the scheduler's seeded RNG) round to the start, and how many to find.
    /// Under a Policy every candidate is evaluated in name order (1.11).
    pub(super) fn sample_candidates(&mut self, candidates: &[u32]) -> (Vec<u32>, usize) {
        let Some((percentage, absolute)) = self.plugin_args.min_candidate_nodes else {
            return (candidates.to_vec(), usize::MAX);
        };
        let n = candidates.len();
        let offset = rand::Rng::random_range(&mut self.rng, 0..n);
        let mut rotated = Vec::with_capacity(n);
        rotated.extend_from_slice(&candidates[offset..]);
        rotated.extend_from_slice(&candidates[..offset]);
        (rotated, num_candidates(n, percentage, absolute))
    }
}

/// DefaultPreemption's `calculateNumCandidates`: `minCandidateNodesPercentage` of the
/// candidates, at least `minCandidateNodesAbsolute`, at most all of them.
pub(crate) fn num_candidates(nodes: usize, percentage: i64, absolute: i64) -> usize {
    let n = (nodes as i64).saturating_mul(percentage.max(0)) / 100;
    n.max(absolute).clamp(0, nodes as i64) as usize
}

/// Pods nominated to `node` with lower priority than `pod`: their nominations are cleared.
fn lower_nominated(pod: &PodInfo, node: &str, nominated: &[Nominated]) -> Vec<String> {
    nominated
        .iter()
        .filter(|n| n.node == node && n.pod.priority < pod.priority && n.pod.key != pod.key)
        .map(|n| n.pod.key.clone())
        .collect()
}

#[cfg(test)]
mod num_candidates_tests {
    use super::num_candidates;

    /// upstream's `TestCalculateNumCandidates` cases (percentage 10, absolute 1).
    #[test]
    fn a_percentage_of_the_candidates_at_least_the_absolute_at_most_all() {
        assert_eq!(num_candidates(5, 10, 1), 1);
        assert_eq!(num_candidates(50, 10, 1), 5);
        assert_eq!(num_candidates(3, 100, 1), 3);
        assert_eq!(num_candidates(0, 10, 1), 0);
        // the defaults: 10%, at least 100
        assert_eq!(num_candidates(5000, 10, 100), 500);
        assert_eq!(num_candidates(500, 10, 100), 100);
        assert_eq!(num_candidates(20, 10, 100), 20);
    }
}
