//! selectVictimsOnNode (§7.4) for one node, the general way: remove every lower-priority pod,
//! check the pod fits (two-pass nominated rule), then reprieve as many as possible —
//! budget-violating ones first, each group highest priority first.
//!
//! Two ways to evaluate "the node without these pods":
//! * **copy** ([`by_copy`]): when the pod's fit cannot depend on which pods are elsewhere or on
//!   the pods' own terms (see [`copy_ok`]), a copy of the node's info is rebuilt from the kept
//!   pods and the predicates run on it — the cache is not touched;
//! * **cache** ([`by_cache`]): otherwise the victims are removed from the cache, the per-pod state
//!   is prepared again for each check, and the victims are put back afterwards.
//!
//! Both return the chosen victims as indexes into the node's potential victims, in reprieve
//! order, with the number of budget violations. The fast path (`fast.rs`) falls back to these for
//! the nodes it cannot decide itself; the reference path (tests) uses them for every node.

use super::{violates, CompiledPdb};
use crate::cache::{ClusterCache, TermKind};
use crate::engine::filter::{add_pod_to, check_node, run_predicates};
use crate::engine::{Nominated, PodCtx, Scheduler};
use crate::node_info::NodeInfo;
use crate::pod_info::PodInfo;
use crate::predicates::{NodeView, Pred, PredicateName};

/// A potential victim: its cache slot, priority, start time and whether evicting it violates a
/// budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Potential {
    pub slot: u32,
    pub priority: i32,
    pub start: Option<i64>,
    pub violating: bool,
}

/// Chosen victims (indexes into the potential victims, reprieve order) and budget violations.
pub(super) type Chosen = Option<(Vec<usize>, usize)>;

/// A victim taken out of the cache, to be put back as it was.
struct Owned {
    info: PodInfo,
    assumed: bool,
}

/// True when "the node without these pods" can be evaluated on a copy of the node: no required
/// pod (anti-)affinity on the pod, no placed pod with required anti-affinity, and no service
/// affinity predicate that could read placed pods. Then no predicate reads pods on other nodes
/// or the victims' own terms. (serviceAffinity reads placed pods only to find the first peer of
/// a service selecting the pod; with no such service, its constraint is the pod's own
/// nodeSelector.)
///
/// Topology spread constraints read every node's pods too: a pod with `DoNotSchedule`
/// constraints (its own, or defaults when `hard_defaults`) goes through the cache, where
/// removing the victims updates the counts.
pub(super) fn copy_ok(
    cache: &ClusterCache,
    preds: &[Pred],
    pod: &PodInfo,
    hard_defaults: bool,
) -> bool {
    let spread = preds
        .iter()
        .any(|p| p.name == PredicateName::PodTopologySpread)
        && (pod.has_hard_spread() || (pod.spread.is_empty() && hard_defaults));
    !spread
        && pod.affinity.is_empty()
        && pod.anti_affinity.is_empty()
        && cache.term_kind_pods[TermKind::RequiredAnti as usize] == 0
        && (!preds
            .iter()
            .any(|p| p.name == PredicateName::CheckServiceAffinity)
            || cache.matching_services(pod).next().is_none())
}

/// An unknown start time sorts as the latest: upstream takes "now" for a pod without
/// `status.startTime`, which is later than any recorded start.
pub(super) fn start_or_latest(start: Option<i64>) -> i64 {
    start.unwrap_or(i64::MAX)
}

/// Fills `out` with the pods on node `ix` of lower priority than `pod`, highest priority first
/// (ties: earlier start first, then key). Reuses `out`'s allocation.
pub(super) fn potential_victims(
    cache: &ClusterCache,
    pod: &PodInfo,
    ix: u32,
    pdbs: &[CompiledPdb],
    out: &mut Vec<Potential>,
) {
    out.clear();
    for &p in &cache.nodes[ix as usize].pods {
        let Some(s) = cache.pod_slot(p) else {
            continue;
        };
        if s.info.priority < pod.priority {
            out.push(Potential {
                slot: p,
                priority: s.info.priority,
                start: s.info.start,
                violating: !pdbs.is_empty() && violates(cache, pdbs, &s.info),
            });
        }
    }
    sort_potential(cache, out);
}

/// The potential victims' order (MoreImportantPod, then key for determinism).
pub(super) fn sort_potential(cache: &ClusterCache, v: &mut [Potential]) {
    let key = |p: &Potential| cache.pod_slot(p.slot).map_or("", |s| s.info.key.as_str());
    v.sort_by(|a, b| {
        b.priority
            .cmp(&a.priority)
            .then(start_or_latest(a.start).cmp(&start_or_latest(b.start)))
            .then_with(|| key(a).cmp(key(b)))
    });
}

/// The reprieve order: violating first, then the others, each keeping the sorted order.
pub(super) fn reprieve_order(potential: &[Potential]) -> impl Iterator<Item = usize> + '_ {
    let violating = (0..potential.len()).filter(|&i| potential[i].violating);
    violating.chain((0..potential.len()).filter(|&i| !potential[i].violating))
}

/// Evaluates node `ix` on a rebuilt copy of its info.
pub(super) fn by_copy(
    ctx: &PodCtx,
    preds: &[Pred],
    always: bool,
    ix: u32,
    nominated: &[Nominated],
    potential: &[Potential],
) -> Chosen {
    let cache = ctx.cache;
    let node = &cache.nodes[ix as usize];
    let mut base = node.clone();
    base.requested = Default::default();
    base.nonzero = (0, 0);
    base.pod_count = 0;
    base.ports.clear();
    base.disks.clear();
    base.attached.clear();
    for &p in &node.pods {
        if let Some(s) = cache.pod_slot(p) {
            if s.info.priority >= ctx.pod.priority {
                add_pod_to(&mut base, &s.info, &s.attach);
            }
        }
    }
    let added: Vec<&PodInfo> = nominated
        .iter()
        .filter(|n| {
            n.node == node.name && n.pod.priority >= ctx.pod.priority && n.pod.key != ctx.pod.key
        })
        .map(|n| n.pod)
        .collect();
    let any_nominated = nominated.iter().any(|n| n.node == node.name);
    let fits = |info: &NodeInfo| -> bool {
        let mut reasons = Vec::new();
        if any_nominated {
            let mut copy = info.clone();
            for p in &added {
                add_pod_to(&mut copy, p, &cache.attach_ids(p));
            }
            let v0 = NodeView {
                info: &copy,
                ix,
                added: &added,
            };
            if !run_predicates(ctx, preds, always, &v0, &mut reasons).unwrap_or(false) {
                return false;
            }
        }
        let v = NodeView {
            info,
            ix,
            added: &[],
        };
        run_predicates(ctx, preds, always, &v, &mut reasons).unwrap_or(false)
    };
    if !fits(&base) {
        return None;
    }
    let mut victims = Vec::new();
    let mut violations = 0;
    for i in reprieve_order(potential) {
        let p = &potential[i];
        let Some(s) = cache.pod_slot(p.slot) else {
            continue;
        };
        // add it back; undo in place when it does not fit (add_pod_to only appends and sums)
        let (ports, disks) = (base.ports.len(), base.disks.len());
        let attached = (!s.attach.is_empty()).then(|| base.attached.clone());
        add_pod_to(&mut base, &s.info, &s.attach);
        if !fits(&base) {
            base.requested.add(&s.info.container_request, -1);
            base.nonzero.0 -= s.info.nonzero.0;
            base.nonzero.1 -= s.info.nonzero.1;
            base.pod_count -= 1;
            base.ports.truncate(ports);
            base.disks.truncate(disks);
            if let Some(a) = attached {
                base.attached = a;
            }
            victims.push(i);
            violations += p.violating as usize;
        }
    }
    Some((victims, violations))
}

/// Evaluates node `ix` by removing the victims from the cache; the cache is restored before
/// returning.
#[allow(clippy::too_many_arguments)]
pub(super) fn by_cache(
    s: &mut Scheduler,
    preds: &[Pred],
    always: bool,
    cache: &mut ClusterCache,
    pod: &PodInfo,
    ix: u32,
    nominated: &[Nominated],
    potential: &[Potential],
) -> Chosen {
    let fits = |s: &mut Scheduler, cache: &ClusterCache| -> bool {
        match s.prepare(preds, cache, pod) {
            Ok(ctx) => {
                let mut reasons = Vec::new();
                check_node(&ctx, preds, always, ix, nominated, &mut reasons).unwrap_or(false)
            }
            Err(_) => false,
        }
    };
    let owned: Vec<Owned> = potential
        .iter()
        .filter_map(|p| cache.pod_slot(p.slot))
        .map(|s| Owned {
            info: s.info.clone(),
            assumed: s.assumed,
        })
        .collect();
    if owned.len() != potential.len() {
        return None;
    }
    let put_back = |cache: &mut ClusterCache, p: &Owned| {
        if p.assumed {
            let _ = cache.assume(p.info.clone(), &p.info.node_name);
        } else {
            cache.upsert_pod_info(p.info.clone());
        }
    };
    for p in &owned {
        cache.remove_pod(&p.info.key);
    }
    if !fits(s, cache) {
        for p in &owned {
            put_back(cache, p);
        }
        return None;
    }
    let mut victims = Vec::new();
    let mut violations = 0;
    for i in reprieve_order(potential) {
        let p = &owned[i];
        put_back(cache, p);
        if !fits(s, cache) {
            cache.remove_pod(&p.info.key);
            victims.push(i);
            violations += potential[i].violating as usize;
        }
    }
    for &i in &victims {
        put_back(cache, &owned[i]);
    }
    Some((victims, violations))
}
