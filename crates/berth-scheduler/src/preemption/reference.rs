//! The reference path (tests only): §7 as written, every candidate through the general
//! per-node evaluation ([`victims::by_copy`] or [`victims::by_cache`]), every result collected,
//! then [`pick_one_node`]. The fast path must return the same outcome.

use super::victims::{self, Potential};
use super::*;

impl Scheduler {
    /// [`Scheduler::preempt`], the slow and plain way.
    pub(crate) fn preempt_reference(
        &mut self,
        cache: &mut ClusterCache,
        pod: &PodInfo,
        err: &FitError,
        input: PreemptionInput,
    ) -> PreemptionOutcome {
        if !eligible(cache, pod) {
            return PreemptionOutcome::NotEligible;
        }
        let candidates = candidate_nodes(cache, err);
        if candidates.is_empty() {
            return PreemptionOutcome::NoCandidates;
        }
        let pdbs = compile_pdbs(cache, input.pdbs);
        let results = self.select_victims_reference(cache, pod, err, &candidates, &pdbs, input);
        let Some(chosen) = pick_one_node(&results) else {
            return PreemptionOutcome::NoNode;
        };
        let node = chosen.node.clone();
        PreemptionOutcome::Preempt(Preemption {
            lower_nominated: lower_nominated(pod, &node, input.nominated),
            node,
            victims: chosen.victims.iter().map(|v| v.key.clone()).collect(),
        })
    }

    /// Victims per candidate node (nodes where the pod cannot fit are left out).
    fn select_victims_reference(
        &mut self,
        cache: &mut ClusterCache,
        pod: &PodInfo,
        err: &FitError,
        candidates: &[String],
        pdbs: &[CompiledPdb],
        input: PreemptionInput,
    ) -> Vec<NodeVictims> {
        let units = self.take_units(pod);
        let preds = &units.preds;
        let always = self.always_check_all;
        let mut work = Vec::new();
        for name in candidates {
            let Some(ix) = cache.node_index(name) else {
                continue;
            };
            let mut potential = Vec::new();
            victims::potential_victims(cache, pod, ix, pdbs, &mut potential);
            // nothing to remove and the node already failed: nothing changes
            let nominated_here = input.nominated.iter().any(|n| n.node == name);
            if potential.is_empty() && err.failed_predicates.contains_key(name) && !nominated_here {
                continue;
            }
            // victims are named before any leaves the cache
            let named: Vec<Victim> = potential.iter().map(|p| victim(cache, p)).collect();
            work.push((name, ix, potential, named));
        }
        let mut out = Vec::new();
        let mut push = |name: &String, named: &[Victim], r: victims::Chosen| {
            if let Some((chosen, pdb_violations)) = r {
                out.push(NodeVictims {
                    node: name.clone(),
                    victims: chosen.iter().map(|&i| named[i].clone()).collect(),
                    pdb_violations,
                });
            }
        };
        if victims::copy_ok(cache, preds, pod, self.spread_args.has_hard_defaults()) {
            if let Ok(ctx) = self.prepare(preds, cache, pod) {
                for (name, ix, potential, named) in &work {
                    let r = victims::by_copy(&ctx, preds, always, *ix, input.nominated, potential);
                    push(name, named, r);
                }
            }
        } else {
            for (name, ix, potential, named) in &work {
                let r = victims::by_cache(
                    self,
                    preds,
                    always,
                    cache,
                    pod,
                    *ix,
                    input.nominated,
                    potential,
                );
                push(name, named, r);
            }
        }
        self.put_units(units);
        out
    }
}

fn victim(cache: &ClusterCache, p: &Potential) -> Victim {
    Victim {
        key: cache
            .pod_slot(p.slot)
            .map_or_else(String::new, |s| s.info.key.clone()),
        priority: p.priority,
        start: p.start,
    }
}
