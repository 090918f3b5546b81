//! Explanations: per node, the failed predicates' reasons, or each priority's raw score,
//! weight and the total. Computed only on request (`Scheduler::explain`).

use crate::cache::ClusterCache;
use crate::engine::{filter, score_all, Nominated, Scheduler};
use crate::pod_info::PodInfo;
use crate::predicates::{NodeView, PredicateResult};
use serde::Serialize;

/// One priority's contribution on one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PriorityScore {
    /// Priority name as configured.
    pub name: String,
    /// Raw score: 0..10 under a policy file, 0..100 under a profile.
    pub score: i64,
    /// Weight.
    pub weight: i64,
}

/// What happened on one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeExplanation {
    /// Node name.
    pub node: String,
    /// Predicate result.
    pub result: PredicateResult,
    /// Priority scores (feasible nodes only).
    pub priorities: Vec<PriorityScore>,
    /// Weighted total (feasible nodes only).
    pub total: Option<i64>,
}

/// A full explanation of a decision for one pod (nodes in name order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Explanation {
    /// `namespace/name`.
    pub pod: String,
    /// Per node.
    pub nodes: Vec<NodeExplanation>,
    /// Error that aborts the decision, if any.
    pub error: Option<String>,
}

impl Scheduler {
    /// Evaluates every node for `pod` and explains the outcome. Does not change the selection
    /// state (RNG, start index).
    pub fn explain(&mut self, cache: &ClusterCache, pod: &PodInfo) -> Explanation {
        self.explain_with_nominated(cache, pod, &[])
    }

    /// Like [`Scheduler::explain`] with nominated pods.
    pub fn explain_with_nominated(
        &mut self,
        cache: &ClusterCache,
        pod: &PodInfo,
        nominated: &[Nominated],
    ) -> Explanation {
        let units = self.take_units(pod);
        let (preds, prios) = (&units.preds, &units.prios);
        let mut counts = std::mem::take(&mut self.counts);
        let always = self.always_check_all;
        let mut ex = Explanation {
            pod: pod.key.clone(),
            nodes: Vec::new(),
            error: None,
        };
        match self.prepare(preds, cache, pod) {
            Err(e) => ex.error = Some(e),
            Ok(ctx) => {
                let mut feasible = Vec::new();
                for &ix in &cache.order {
                    let mut reasons = Vec::new();
                    let info = &cache.nodes[ix as usize];
                    let result = match filter::check_node(
                        &ctx,
                        preds,
                        always,
                        ix,
                        nominated,
                        &mut reasons,
                    ) {
                        Err(e) => PredicateResult::Error(e),
                        Ok(true) => {
                            feasible.push(ix);
                            PredicateResult::Fit
                        }
                        Ok(false) => PredicateResult::Unschedulable {
                            resolvable: reasons.iter().all(|r| r.resolvable()),
                            reasons: reasons.iter().map(|r| r.text(&cache.interner)).collect(),
                        },
                    };
                    ex.nodes.push(NodeExplanation {
                        node: info.name.clone(),
                        result,
                        priorities: Vec::new(),
                        total: None,
                    });
                }
                let totals = score_all(&ctx, prios, &feasible, &mut counts);
                let mut raw = vec![0; feasible.len()];
                let mut per: Vec<Vec<PriorityScore>> = vec![Vec::new(); feasible.len()];
                for (p, w, name) in prios {
                    match p.uniform(&ctx) {
                        Some(u) => raw.fill(u),
                        None => p.score(&ctx, &feasible, &mut counts, &mut raw),
                    }
                    for (j, r) in raw.iter().enumerate() {
                        per[j].push(PriorityScore {
                            name: name.clone(),
                            score: *r,
                            weight: *w,
                        });
                    }
                }
                let mut j = 0;
                for ne in ex.nodes.iter_mut() {
                    if ne.result == PredicateResult::Fit {
                        ne.priorities = std::mem::take(&mut per[j]);
                        ne.total = Some(totals[j]);
                        j += 1;
                    }
                }
            }
        }
        self.put_units(units);
        self.counts = counts;
        ex
    }

    /// Runs the configured predicates on one node (by name). `None` if the node is unknown.
    pub fn check_node(
        &mut self,
        cache: &ClusterCache,
        pod: &PodInfo,
        node: &str,
    ) -> Option<PredicateResult> {
        let ix = cache.node_index(node)?;
        if !cache.nodes[ix as usize].exists {
            return None;
        }
        let ex = self.explain(cache, pod);
        if let Some(e) = ex.error {
            return Some(PredicateResult::Error(e));
        }
        let _ = NodeView {
            info: &cache.nodes[ix as usize],
            ix,
            added: &[],
        };
        ex.nodes
            .into_iter()
            .find(|n| n.node == node)
            .map(|n| n.result)
    }
}
