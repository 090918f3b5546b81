//! selectVictimsOnNode over every candidate and pickOneNodeForPreemption, without the general
//! path's per-node cost where the answer cannot differ from it.
//!
//! Why it is the same answer: for a pod without host ports and volumes whose fit cannot depend
//! on pods elsewhere ([`victims::copy_ok`]), only `PodFitsResources` (alone or inside
//! `GeneralPredicates`) reads the pods placed on the node. Every other configured predicate gives
//! the same result on the node with or without the potential victims, so it runs once, on the
//! cached node, instead of once per reprieve step on a cloned node; and the reprieve steps only
//! move the requested resources and the pod count of one reusable scratch `NodeInfo`, checked
//! by `PodFitsResources` itself. Nodes with nominated pods, other pods, and the case where the
//! cache must be changed fall back to [`victims::by_copy`] / [`victims::by_cache`].
//!
//! The node choice streams: candidates come in name order, a node with zero victims ends the
//! search at once, and otherwise a node replaces the best so far only when its [`PickKey`] is
//! strictly smaller — the reference's "first by name among the best". Only the best node's
//! victims are named (keys cloned), once per improvement.

use super::pick::PickKey;
use super::victims::{self, start_or_latest, Potential};
use super::{CompiledPdb, Victim};
use crate::cache::ClusterCache;
use crate::compiled::Resources;
use crate::engine::filter::{self, FastPlan};
use crate::engine::{FitError, Nominated, PodCtx, Scheduler};
use crate::node_info::NodeInfo;
use crate::pod_info::PodInfo;
use crate::predicates::{host_name, match_node_selector, pod_fits_resources, NodeView, Pred};

/// The node chosen and its victims in reprieve order.
pub(super) struct Choice {
    pub node: u32,
    pub victims: Vec<Victim>,
}

/// The best node so far.
#[derive(Default)]
struct Best {
    found: Option<(PickKey, u32)>,
    victims: Vec<Victim>,
}

impl Best {
    /// Offers node `ix` whose victims have this key; `name` lists them, called only when the
    /// node becomes the best. Returns true when the search is over (zero victims).
    fn offer(&mut self, ix: u32, key: PickKey, name: impl FnOnce(&mut Vec<Victim>)) -> bool {
        if self.found.is_none_or(|(best, _)| key < best) {
            self.found = Some((key, ix));
            self.victims.clear();
            name(&mut self.victims);
        }
        key.is_empty()
    }

    fn into_choice(self) -> Option<Choice> {
        self.found.map(|(_, node)| Choice {
            node,
            victims: self.victims,
        })
    }
}

/// The key of a node whose victims are `chosen` (indexes into `potential`).
fn key_of(potential: &[Potential], chosen: &[usize], violations: usize) -> PickKey {
    PickKey::of(
        violations,
        chosen
            .iter()
            .map(|&i| (potential[i].priority, potential[i].start)),
    )
}

/// Names the victims at positions `chosen` of the node's potential victims in their full order
/// (see [`Fast::node`] for why positions found in the cheap order carry over).
fn name_victims(
    cache: &ClusterCache,
    potential: &[Potential],
    chosen: &[usize],
    out: &mut Vec<Victim>,
) {
    let mut full = potential.to_vec();
    victims::sort_potential(cache, &mut full);
    out.extend(chosen.iter().map(|&i| {
        Victim {
            key: cache
                .pod_slot(full[i].slot)
                .map_or_else(String::new, |s| s.info.key.clone()),
            priority: full[i].priority,
            start: full[i].start,
        }
    }));
}

/// What the fast per-node check needs, built once per decision.
struct Fast {
    /// A configured predicate checks resources.
    resources: bool,
    /// The filter's fast plan for this pod, if any: a node whose flags and inter-pod affinity
    /// state pass it passes every predicate but the resource check.
    plan: Option<FastPlan>,
    /// Scratch node: only `alloc`, `alloc_pods`, `requested` and `pod_count` are read.
    scratch: NodeInfo,
    reasons: Vec<crate::predicates::Reason>,
}

/// `dst += sign * src` without touching the scalar list when `src` has none (the common case).
#[inline]
fn add(dst: &mut Resources, src: &Resources, sign: i64) {
    if src.scalars.is_empty() {
        dst.cpu += sign * src.cpu;
        dst.memory += sign * src.memory;
        dst.ephemeral += sign * src.ephemeral;
    } else {
        dst.add(src, sign);
    }
}

impl Fast {
    fn new(ctx: &PodCtx, preds: &[Pred]) -> Option<Fast> {
        // nothing but resources depends on the node's pods for a pod without ports and volumes
        let pod = ctx.pod;
        (pod.host_ports.is_empty() && pod.volumes.is_empty()).then(|| Fast {
            resources: preds
                .iter()
                .any(|p| matches!(p, Pred::GeneralPredicates | Pred::PodFitsResources)),
            plan: filter::plan(ctx, preds, &[]),
            scratch: NodeInfo::default(),
            reasons: Vec::new(),
        })
    }

    /// The predicates that do not read the node's pods, on the cached node. Host ports, disks
    /// and volume counts are trivially met by a pod without ports and volumes; resources are
    /// checked apart.
    fn static_fit(&mut self, ctx: &PodCtx, preds: &[Pred], ix: u32) -> bool {
        if let Some(p) = &self.plan {
            let i = ix as usize;
            let aff = &ctx.affinity;
            // the filter's fast test without its resource part (filter::run_range)
            if ctx.cache.hot[i].flags & p.slow_mask == 0
                && (!p.affinity
                    || (aff.flags[i] == 0
                        && (aff.all_terms == 0
                            || aff.first_pod
                            || aff.sat[i] & aff.all_terms == aff.all_terms)))
            {
                return true;
            }
        }
        let v = NodeView {
            info: &ctx.cache.nodes[ix as usize],
            ix,
            added: &[],
        };
        let out = &mut self.reasons;
        preds.iter().all(|p| {
            out.clear();
            match p {
                Pred::GeneralPredicates => {
                    host_name::check(ctx, &v, out) && match_node_selector::check(ctx, &v, out)
                }
                Pred::PodFitsResources
                | Pred::PodFitsHostPorts
                | Pred::NoDiskConflict
                | Pred::MaxEBSVolumeCount
                | Pred::MaxGCEPDVolumeCount
                | Pred::MaxCSIVolumeCountPred
                | Pred::MaxAzureDiskVolumeCount => true,
                other => other.check(ctx, &v, out).unwrap_or(false),
            }
        })
    }

    /// `PodFitsResources` on the scratch node.
    fn resources_fit(&mut self, ctx: &PodCtx, ix: u32) -> bool {
        self.reasons.clear();
        let v = NodeView {
            info: &self.scratch,
            ix,
            added: &[],
        };
        !self.resources || pod_fits_resources::check(ctx, &v, &mut self.reasons)
    }

    /// selectVictimsOnNode for a node without nominated pods: fills `potential` and `chosen`
    /// (positions in `potential`), returns the budget violations, None if the pod cannot fit.
    ///
    /// The potential victims are put in a cheap order, by (priority, start) only. When the pods
    /// tied on both are interchangeable (same request, same budget standing), the reprieve
    /// keeps or evicts the same positions whatever their order among themselves, so the key
    /// order (the reference's last tie-break, string comparisons) is needed only to name the
    /// victims of the chosen node ([`name_victims`]). Otherwise the full order is used here.
    #[allow(clippy::too_many_arguments)]
    fn node(
        &mut self,
        ctx: &PodCtx,
        preds: &[Pred],
        ix: u32,
        pdbs: &[CompiledPdb],
        failed_before: impl FnOnce() -> bool,
        potential: &mut Vec<Potential>,
        chosen: &mut Vec<usize>,
    ) -> Option<usize> {
        let cache = ctx.cache;
        let node = &cache.nodes[ix as usize];
        // the kept pods (priority >= the pod's) make the base; the others are potential victims
        let s = &mut self.scratch;
        s.requested.cpu = 0;
        s.requested.memory = 0;
        s.requested.ephemeral = 0;
        s.requested.scalars.clear();
        s.pod_count = 0;
        potential.clear();
        for &p in &node.pods {
            let Some(slot) = cache.pod_slot(p) else {
                continue;
            };
            let info = &slot.info;
            if info.priority < ctx.pod.priority {
                potential.push(Potential {
                    slot: p,
                    priority: info.priority,
                    start: info.start,
                    violating: !pdbs.is_empty() && super::violates(cache, pdbs, info),
                });
            } else {
                add(&mut s.requested, &info.container_request, 1);
                s.pod_count += 1;
            }
        }
        // the reference skips these before evaluating: nothing to remove, and it failed
        if potential.is_empty() && failed_before() {
            return None;
        }
        if !self.static_fit(ctx, preds, ix) {
            return None;
        }
        let request = |p: &Potential| cache.pod_slot(p.slot).map(|s| &s.info.container_request);
        let tie = |a: &Potential, b: &Potential| {
            a.priority == b.priority && start_or_latest(a.start) == start_or_latest(b.start)
        };
        potential.sort_unstable_by(|a, b| {
            b.priority
                .cmp(&a.priority)
                .then(start_or_latest(a.start).cmp(&start_or_latest(b.start)))
        });
        let interchangeable = potential.windows(2).all(|w| {
            !tie(&w[0], &w[1])
                || (w[0].violating == w[1].violating && request(&w[0]) == request(&w[1]))
        });
        if !interchangeable {
            victims::sort_potential(cache, potential);
        }
        self.scratch.alloc.clone_from(&node.alloc);
        self.scratch.alloc_pods = node.alloc_pods;
        if !self.resources_fit(ctx, ix) {
            return None;
        }
        chosen.clear();
        let mut violations = 0;
        for i in victims::reprieve_order(potential) {
            let Some(req) = request(&potential[i]) else {
                continue;
            };
            add(&mut self.scratch.requested, req, 1);
            self.scratch.pod_count += 1;
            if !self.resources_fit(ctx, ix) {
                add(&mut self.scratch.requested, req, -1);
                self.scratch.pod_count -= 1;
                chosen.push(i);
                violations += potential[i].violating as usize;
            }
        }
        Some(violations)
    }
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
        let preds = std::mem::take(&mut self.preds);
        let always = self.always_check_all;
        let nominated_here = nominated_slots(cache, nominated);
        let failed_before = |cache: &ClusterCache, ix: u32| {
            err.failed_predicates
                .contains_key(&cache.nodes[ix as usize].name)
        };
        let mut best = Best::default();
        let (mut potential, mut chosen) = (Vec::new(), Vec::new());
        if victims::copy_ok(cache, &preds, pod) {
            if let Ok(ctx) = self.prepare(&preds, cache, pod) {
                let cache = ctx.cache;
                let mut fast = Fast::new(&ctx, &preds);
                for &ix in candidates {
                    let here = nominated_here[ix as usize];
                    let r = match fast.as_mut() {
                        Some(f) if !here => f
                            .node(
                                &ctx,
                                &preds,
                                ix,
                                pdbs,
                                || failed_before(cache, ix),
                                &mut potential,
                                &mut chosen,
                            )
                            .map(|v| (std::mem::take(&mut chosen), v)),
                        _ => {
                            victims::potential_victims(cache, pod, ix, pdbs, &mut potential);
                            if potential.is_empty() && !here && failed_before(cache, ix) {
                                continue;
                            }
                            victims::by_copy(&ctx, &preds, always, ix, nominated, &potential)
                        }
                    };
                    if let Some((c, violations)) = r {
                        let key = key_of(&potential, &c, violations);
                        let done =
                            best.offer(ix, key, |out| name_victims(cache, &potential, &c, out));
                        chosen = c;
                        if done {
                            break;
                        }
                    }
                }
            }
        } else {
            for &ix in candidates {
                victims::potential_victims(cache, pod, ix, pdbs, &mut potential);
                let here = nominated_here[ix as usize];
                if potential.is_empty() && !here && failed_before(cache, ix) {
                    continue;
                }
                // name the victims now: evaluating through the cache moves pods between slots
                let mut named = Vec::new();
                name_victims(
                    cache,
                    &potential,
                    &(0..potential.len()).collect::<Vec<_>>(),
                    &mut named,
                );
                let r =
                    victims::by_cache(self, &preds, always, cache, pod, ix, nominated, &potential);
                if let Some((c, violations)) = r {
                    let key = key_of(&potential, &c, violations);
                    let done = best.offer(ix, key, |out| {
                        out.extend(c.iter().map(|&i| named[i].clone()))
                    });
                    if done {
                        break;
                    }
                }
            }
        }
        self.preds = preds;
        best.into_choice()
    }
}
