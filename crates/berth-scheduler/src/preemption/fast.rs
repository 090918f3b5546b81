//! selectVictimsOnNode without the general path's per-node cost, where the answer cannot differ
//! from it.
//!
//! Why it is the same answer: for a pod without host ports and volumes whose fit cannot depend
//! on pods elsewhere ([`victims::copy_ok`]), only `PodFitsResources` (alone or inside
//! `GeneralPredicates`) reads the pods placed on the node. Every other configured predicate gives
//! the same result on the node with or without the potential victims, so it runs once, on the
//! cached node ([`Fast::static_fit`]), instead of once per reprieve step on a cloned node; and the
//! reprieve steps only move the requested resources and the pod count of one reusable scratch
//! `NodeInfo`, checked by `PodFitsResources` itself ([`Fast::victims`]).

use super::pick::PickKey;
use super::victims::{self, start_or_latest, Potential};
use super::CompiledPdb;
use crate::compiled::Resources;
use crate::ctx::PodCtx;
use crate::engine::filter::{self, FastPlan};
use crate::node_info::NodeInfo;
use crate::predicates::unit::VictimsClass;
use crate::predicates::{pod_fits_resources, NodeView, Pred, Reason};

/// What the fast per-node check needs, built once per decision.
pub(super) struct Fast {
    /// A configured predicate checks resources.
    pub resources: bool,
    /// The filter's fast plan for this pod, if any: a node whose flags and inter-pod affinity
    /// state pass it passes every predicate but the resource check.
    plan: Option<FastPlan>,
    /// Scratch node: only `alloc`, `alloc_pods`, `requested` and `pod_count` are read.
    scratch: NodeInfo,
    reasons: Vec<Reason>,
}

/// `dst += sign * src` without touching the scalar list when `src` has none (the common case).
#[inline]
fn add(dst: &mut Resources, src: &Resources, sign: i64) {
    if src.scalars.is_empty() {
        dst.cpu = dst.cpu.saturating_add(sign.saturating_mul(src.cpu));
        dst.memory = dst.memory.saturating_add(sign.saturating_mul(src.memory));
        dst.ephemeral = dst
            .ephemeral
            .saturating_add(sign.saturating_mul(src.ephemeral));
    } else {
        dst.add(src, sign);
    }
}

impl Fast {
    /// The fast check for this decision, if it applies to the pod (the caller has checked
    /// [`victims::copy_ok`]): nothing but resources depends on the node's pods for a pod without
    /// host ports and volumes.
    pub(super) fn new(ctx: &PodCtx, preds: &[Pred]) -> Option<Fast> {
        let pod = ctx.pod;
        (pod.host_ports.is_empty() && pod.volumes.is_empty()).then(|| Fast {
            resources: preds
                .iter()
                .any(|p| reads_resources(&p.name.unit().victims)),
            plan: filter::plan(ctx, preds, &[]),
            scratch: NodeInfo::default(),
            reasons: Vec::new(),
        })
    }

    /// The predicates that do not read the node's pods, on the cached node. Host ports, disks
    /// and volume counts are trivially met by a pod without ports and volumes; resources are
    /// checked apart.
    pub(super) fn static_fit(&mut self, ctx: &PodCtx, preds: &[Pred], ix: u32) -> bool {
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
            static_ok(ctx, p, &p.name.unit().victims, &v, out)
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

    /// The resource part of selectVictimsOnNode on node `ix` (no nominated pods there): fills
    /// `potential` with the node's potential victims and `chosen` with the victims' positions,
    /// returns the victims' key, or None when the pod does not fit even without them all.
    ///
    /// The potential victims are put in a cheap order, by (priority, start) only. When the pods
    /// tied on both are interchangeable (same request, same budget standing), the reprieve
    /// keeps or evicts the same positions whatever their order among themselves, so `chosen`
    /// holds for the full order too, whose last tie-break (the key: string comparisons) is then
    /// needed only to name the victims of the chosen node. Otherwise the full order is used here.
    pub(super) fn victims(
        &mut self,
        ctx: &PodCtx,
        ix: u32,
        pdbs: &[CompiledPdb],
        potential: &mut Vec<Potential>,
        chosen: &mut Vec<usize>,
    ) -> Option<PickKey> {
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
        chosen.clear();
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
        Some(PickKey::of(
            violations,
            chosen
                .iter()
                .map(|&i| (potential[i].priority, potential[i].start)),
        ))
    }
}

/// True if a predicate of this class reads the node's requested resources.
fn reads_resources(class: &VictimsClass) -> bool {
    match class {
        VictimsClass::Resources => true,
        VictimsClass::MetWithoutPortsAndVolumes
        | VictimsClass::NodeOnly
        | VictimsClass::ThroughCache => false,
        VictimsClass::Parts(parts) => parts.iter().any(|p| reads_resources(&p.unit().victims)),
    }
}

/// One predicate of class `class` on the cached node, without the parts that read the node's
/// pods (checked apart) or that a pod without host ports and volumes always meets. The match
/// is exhaustive on purpose: a new class must say how preemption treats it.
fn static_ok(
    ctx: &PodCtx,
    pred: &Pred,
    class: &VictimsClass,
    v: &NodeView,
    out: &mut Vec<Reason>,
) -> bool {
    match class {
        VictimsClass::Resources
        | VictimsClass::MetWithoutPortsAndVolumes
        | VictimsClass::ThroughCache => true,
        VictimsClass::NodeOnly => pred.check(ctx, v, out).unwrap_or(false),
        VictimsClass::Parts(parts) => parts
            .iter()
            .all(|&part| static_ok(ctx, &Pred::of(part), &part.unit().victims, v, out)),
    }
}
