//! selectVictimsOnNode over every candidate and pickOneNodeForPreemption, in one pass.
//!
//! Each candidate is evaluated the cheapest way that gives the reference's answer: the fast
//! check ([`Fast`]) with its results remembered across decisions ([`Memo`]) when the pod
//! allows it and no pod is nominated to the node, else the general copy or cache evaluation
//! (`victims.rs`).
//!
//! The node choice streams: candidates come in name order, a node with zero victims ends the
//! search at once, and otherwise a node replaces the best so far only when its [`PickKey`] is
//! strictly smaller — the reference's "first by name among the best". Only the best node's
//! victims are named (keys cloned), once per improvement.

use super::fast::Fast;
use super::memo::{Key, Memo};
use super::pick::PickKey;
use super::victims::{self, Potential};
use super::{CompiledPdb, Victim};
use crate::cache::ClusterCache;
use crate::engine::{FitError, Nominated, Scheduler};
use crate::pod_info::PodInfo;

/// The node chosen and its victims in reprieve order.
pub(super) struct Choice {
    pub node: u32,
    pub victims: Vec<Victim>,
}

/// The best node so far.
struct Best {
    found: Option<(PickKey, u32)>,
    victims: Vec<Victim>,
    /// Candidates found whose victims violate no budget, and those that violate one.
    non_violating: usize,
    violating: usize,
    /// DefaultPreemption's `numCandidates`: the search ends once this many candidates are
    /// found, one of them violating no budget (`usize::MAX` under a Policy: every node).
    wanted: usize,
}

impl Best {
    fn new(wanted: usize) -> Best {
        Best {
            found: None,
            victims: Vec::new(),
            non_violating: 0,
            violating: 0,
            wanted,
        }
    }

    /// Offers node `ix` whose victims have this key; `name` lists them, called only when the
    /// node becomes the best. Returns true when the search is over (zero victims, or enough
    /// candidates found as upstream's dry run stops).
    fn offer(&mut self, ix: u32, key: PickKey, name: impl FnOnce(&mut Vec<Victim>)) -> bool {
        if self.found.is_none_or(|(best, _)| key < best) {
            self.found = Some((key, ix));
            self.victims.clear();
            name(&mut self.victims);
        }
        if key.violates_budgets() {
            self.violating += 1;
        } else {
            self.non_violating += 1;
        }
        key.is_empty()
            || (self.non_violating > 0 && self.non_violating + self.violating >= self.wanted)
    }

    fn into_choice(self) -> Option<Choice> {
        self.found.map(|(_, node)| Choice {
            node,
            victims: self.victims,
        })
    }
}

fn key_of(potential: &[Potential], chosen: &[usize], violations: usize) -> PickKey {
    PickKey::of(
        violations,
        chosen
            .iter()
            .map(|&i| (potential[i].priority, potential[i].start)),
    )
}

/// Names the victims at `positions` of the node's potential victims in their full order.
fn name_victims(
    cache: &ClusterCache,
    potential: &[Potential],
    positions: impl Iterator<Item = usize>,
    out: &mut Vec<Victim>,
) {
    let mut full = potential.to_vec();
    victims::sort_potential(cache, &mut full);
    out.extend(positions.map(|i| {
        Victim {
            key: cache
                .pod_slot(full[i].slot)
                .map_or_else(String::new, |s| s.info.key.clone()),
            priority: full[i].priority,
            start: full[i].start,
        }
    }));
}

/// Node slots with a pending pod nominated to them.
fn nominated_slots(cache: &ClusterCache, nominated: &[Nominated]) -> Vec<bool> {
    let mut out = vec![false; cache.nodes.len()];
    for n in nominated {
        if let Some(ix) = cache.node_index(n.node) {
            out[ix as usize] = true;
        }
    }
    out
}

impl Scheduler {
    /// selectVictimsOnNode on each candidate (name order) and pickOneNodeForPreemption.
    pub(super) fn choose_node(
        &mut self,
        cache: &mut ClusterCache,
        pod: &PodInfo,
        err: &FitError,
        candidates: &[u32],
        pdbs: &[CompiledPdb],
        nominated: &[Nominated],
    ) -> Option<Choice> {
        let (candidates, wanted) = self.sample_candidates(candidates);
        let candidates = &candidates[..];
        let units = self.take_units(pod);
        let preds = &units.preds;
        let always = self.always_check_all;
        let nominated_here = nominated_slots(cache, nominated);
        // the reference skips a node with nothing to remove that already failed
        let skip = |cache: &ClusterCache, ix: u32, empty: bool| {
            empty
                && !nominated_here[ix as usize]
                && err
                    .failed_predicates
                    .contains_key(&cache.nodes[ix as usize].name)
        };
        // without reuse across pods, a fresh memo serves as this decision's scratch
        let mut memo = if self.memo_enabled {
            std::mem::take(&mut self.preemption_memo)
        } else {
            Memo::default()
        };
        let mut best = Best::new(wanted);
        let (mut potential, mut chosen) = (Vec::new(), Vec::new());
        if victims::copy_ok(cache, preds, pod, self.spread_args.has_hard_defaults()) {
            if let Ok(ctx) = self.prepare(preds, cache, pod) {
                let cache = ctx.cache;
                let mut fast = Fast::new(&ctx, preds);
                if let Some(f) = &fast {
                    memo.begin(Key::new(pod, f.resources, pdbs), cache.nodes.len());
                }
                for &ix in candidates {
                    let found = match fast.as_mut() {
                        Some(f) if !nominated_here[ix as usize] => {
                            let stamp = cache.hot_gen[ix as usize];
                            let r = memo.get(ix, stamp).unwrap_or_else(|| {
                                let key = f.victims(&ctx, ix, pdbs, &mut potential, &mut chosen);
                                let empty = potential.is_empty();
                                memo.put(ix, stamp, empty, key.map(|k| (k, &chosen[..])))
                            });
                            if skip(cache, ix, r.empty) || !f.static_fit(&ctx, preds, ix) {
                                continue;
                            }
                            let Some((key, start, len)) = r.victims else {
                                continue;
                            };
                            let positions = memo.positions(start, len);
                            best.offer(ix, key, |out| {
                                victims::potential_victims(cache, pod, ix, pdbs, &mut potential);
                                let at = positions.iter().map(|&p| p as usize);
                                name_victims(cache, &potential, at, out)
                            })
                        }
                        _ => {
                            victims::potential_victims(cache, pod, ix, pdbs, &mut potential);
                            if skip(cache, ix, potential.is_empty()) {
                                continue;
                            }
                            let r =
                                victims::by_copy(&ctx, preds, always, ix, nominated, &potential);
                            let Some((c, violations)) = r else {
                                continue;
                            };
                            let key = key_of(&potential, &c, violations);
                            best.offer(ix, key, |out| {
                                name_victims(cache, &potential, c.iter().copied(), out)
                            })
                        }
                    };
                    if found {
                        break;
                    }
                }
            }
        } else {
            for &ix in candidates {
                victims::potential_victims(cache, pod, ix, pdbs, &mut potential);
                if skip(cache, ix, potential.is_empty()) {
                    continue;
                }
                // name the victims now: evaluating through the cache moves pods between slots
                let mut named = Vec::new();
                name_victims(cache, &potential, 0..potential.len(), &mut named);
                let r =
                    victims::by_cache(self, preds, always, cache, pod, ix, nominated, &potential);
                let Some((c, violations)) = r else {
                    continue;
                };
                let key = key_of(&potential, &c, violations);
                if best.offer(ix, key, |out| {
                    out.extend(c.iter().map(|&i| named[i].clone()))
                }) {
                    break;
                }
            }
        }
        if self.memo_enabled {
            self.preemption_memo = memo;
        }
        self.put_units(units);
        best.into_choice()
    }
}
