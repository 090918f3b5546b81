//! Work reuse across decisions (an equivalence cache): for pods whose fit and score on a node
//! depend only on the node's dense data (`NodeHot`) and the pod's requests, each node's result is
//! remembered with the generation of the node data it was computed from, and recomputed only for
//! nodes that changed since. Consecutive pods of one shape (a ReplicaSet's) then cost one
//! comparison per unchanged node.

use super::filter::{check_node, fast_ok, FastPlan};
use super::PodCtx;
use crate::predicates::{match_inter_pod_affinity, Pred, Reason};
use crate::priorities::{
    balanced, balanced_allocation, least_allocated, least_requested, most_allocated,
    most_requested, ScoreScale,
};

/// What a memoised result depends on besides the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MemoKey {
    request: (i64, i64, i64),
    nonzero: (i64, i64),
    plan: FastPlan,
    weights: (i64, i64, i64),
    scale: ScoreScale,
}

impl MemoKey {
    pub(crate) fn new(c: &PodCtx, plan: FastPlan, weights: (i64, i64, i64)) -> MemoKey {
        let req = &c.pod.request;
        MemoKey {
            request: (req.cpu, req.memory, req.ephemeral),
            nonzero: c.pod.nonzero,
            // the remembered results never include the spread check (it is applied per
            // decision), so pods with and without constraints share them
            plan: FastPlan {
                spread: false,
                ..plan
            },
            weights,
            scale: c.scale,
        }
    }
}

/// Per-node-slot `(generation, value)`: value ≥ 0 is the fused priority score of a node that
/// passes the fast test; -1 means the node must run the predicates.
#[derive(Debug, Default)]
pub(crate) struct Memo {
    /// The incremental layer.
    pub inc: super::incremental::Incremental,
    key: Option<MemoKey>,
    vals: Vec<(u64, i64)>,
    /// Feasible node slots of the last run (name order), reused across decisions.
    pub feasible: Vec<u32>,
    /// Their fused scores.
    pub scores: Vec<i64>,
}

/// Summary of a memo run: failures (for the FitError), the max score and its tie count.
pub(crate) struct MemoRun {
    pub failed: Vec<(u32, Reason)>,
    pub max: i64,
    pub ties: usize,
}

const AFF_EXISTING: u8 = 1;

/// The weighted resource scores of one node, `w` = (least, most, balanced) weights, on the
/// decision's scale: 1.11's priorities under a policy file, 1.35's plugins under a profile.
#[inline]
pub(crate) fn fused(c: &PodCtx, w: (i64, i64, i64), h: &crate::node_info::NodeHot) -> i64 {
    let mut s = 0;
    match c.scale {
        ScoreScale::Priority => {
            if w.0 != 0 {
                s += w.0 * least_requested(c.pod, h);
            }
            if w.1 != 0 {
                s += w.1 * most_requested(c.pod, h);
            }
            if w.2 != 0 {
                s += w.2 * balanced(c.pod, h);
            }
        }
        ScoreScale::Plugin => {
            if w.0 != 0 {
                s += w.0 * least_allocated(c.pod, h);
            }
            if w.1 != 0 {
                s += w.1 * most_allocated(c.pod, h);
            }
            if w.2 != 0 {
                s += w.2 * balanced_allocation(c.pod, h);
            }
        }
    }
    s
}

/// Filters every node and returns the feasible nodes with their fused scores (without the
/// uniform priorities' constant). `weights` are (least, most, balanced).
pub(crate) fn run(
    c: &PodCtx,
    preds: &[Pred],
    always: bool,
    plan: FastPlan,
    weights: (i64, i64, i64),
    memo: &mut Memo,
) -> Result<MemoRun, String> {
    let cache = c.cache;
    let req = &c.pod.request;
    let key = MemoKey::new(c, plan, weights);
    if memo.key != Some(key) || memo.vals.len() != cache.nodes.len() {
        memo.key = Some(key);
        memo.vals.clear();
        memo.vals.resize(cache.nodes.len(), (u64::MAX, -1));
    }
    let mut feasible = std::mem::take(&mut memo.feasible);
    let mut scores = std::mem::take(&mut memo.scores);
    feasible.clear();
    scores.clear();
    let mut out = MemoRun {
        failed: Vec::new(),
        max: i64::MIN,
        ties: 0,
    };
    let mut note = |s: i64| {
        if s > out.max {
            out.max = s;
            out.ties = 1;
        } else if s == out.max {
            out.ties += 1;
        }
    };
    let aff = &c.affinity;
    let mut reasons = Vec::new();
    for &ix in &cache.order {
        let i = ix as usize;
        let g = cache.hot_gen[i];
        let m = &mut memo.vals[i];
        if m.0 != g {
            let h = &cache.hot[i];
            m.1 = if fast_ok(&plan, req, h) {
                fused(c, weights, h)
            } else {
                -1
            };
            m.0 = g;
        }
        if m.1 >= 0 {
            let fl = if plan.affinity { aff.flags[i] } else { 0 };
            if fl == 0 {
                feasible.push(ix);
                scores.push(m.1);
                note(m.1);
            } else {
                // every other predicate passes; MatchInterPodAffinity (last in order) fails
                out.failed
                    .push((ix, match_inter_pod_affinity::AFFINITY_NOT_MATCH.reason()));
                out.failed.push((
                    ix,
                    if fl & AFF_EXISTING != 0 {
                        match_inter_pod_affinity::EXISTING_ANTI_AFFINITY_NOT_MATCH.reason()
                    } else {
                        match_inter_pod_affinity::ANTI_AFFINITY_RULES_NOT_MATCH.reason()
                    },
                ));
            }
            continue;
        }
        reasons.clear();
        if check_node(c, preds, always, ix, &[], &mut reasons)? {
            let s = fused(c, weights, &cache.hot[i]);
            feasible.push(ix);
            scores.push(s);
            note(s);
        } else {
            out.failed.extend(reasons.iter().map(|r| (ix, *r)));
        }
    }
    memo.feasible = feasible;
    memo.scores = scores;
    Ok(out)
}
