//! selectVictimsOnNode (§7.4): remove every lower-priority pod, check the pod fits (two-pass
//! nominated rule), then reprieve as many as possible — budget-violating ones first, each group
//! highest priority first.
//!
//! Two ways to evaluate "the node without these pods":
//! * **copy**: when the pod's fit cannot depend on which pods are elsewhere or on the pods' own
//!   terms (no required pod (anti-)affinity on the pod, no placed pod with required
//!   anti-affinity, no service affinity predicate), a copy of the node's info is rebuilt from the
//!   kept pods and the predicates run on it — the cache is not touched;
//! * **cache**: otherwise the victims are removed from the cache, the per-pod state is prepared
//!   again for each check, and the victims are put back afterwards.

use super::{violates, CompiledPdb, NodeVictims, PreemptionInput, Victim};
use crate::cache::{ClusterCache, TermKind};
use crate::engine::filter::{add_pod_to, check_node, run_predicates};
use crate::engine::{FitError, Nominated, PodCtx, Scheduler};
use crate::node_info::NodeInfo;
use crate::pod_info::PodInfo;
use crate::predicates::{NodeView, Pred};

/// A potential victim: its cache slot, priority, start time and whether evicting it violates a
/// budget.
struct Potential {
    slot: u32,
    priority: i32,
    start: Option<i64>,
    violating: bool,
}

/// A victim taken out of the cache, to be put back as it was.
struct Owned {
    info: PodInfo,
    assumed: bool,
}

impl Scheduler {
    /// Victims per candidate node (nodes where the pod cannot fit are left out).
    pub(super) fn select_victims(
        &mut self,
        cache: &mut ClusterCache,
        pod: &PodInfo,
        err: &FitError,
        candidates: &[String],
        pdbs: &[CompiledPdb],
        input: PreemptionInput,
    ) -> Vec<NodeVictims> {
        let preds = std::mem::take(&mut self.preds);
        let always = self.always_check_all;
        let copy_ok = pod.affinity.is_empty()
            && pod.anti_affinity.is_empty()
            && cache.term_kind_pods[TermKind::RequiredAnti as usize] == 0
            && !preds
                .iter()
                .any(|p| matches!(p, Pred::CheckServiceAffinity { .. }));
        let mut work = Vec::new();
        for name in candidates {
            let Some(ix) = cache.node_index(name) else {
                continue;
            };
            let potential = potential_victims(cache, pod, ix, pdbs, input);
            // nothing to remove and the node already failed: nothing changes
            let nominated_here = input.nominated.iter().any(|n| n.node == name);
            if potential.is_empty() && err.failed_predicates.contains_key(name) && !nominated_here {
                continue;
            }
            work.push((name, ix, potential));
        }
        let mut out = Vec::new();
        let mut push = |name: &String, r: Option<(Vec<Victim>, usize)>| {
            if let Some((victims, pdb_violations)) = r {
                out.push(NodeVictims {
                    node: name.clone(),
                    victims,
                    pdb_violations,
                });
            }
        };
        if copy_ok {
            if let Ok(ctx) = self.prepare(&preds, cache, pod) {
                for (name, ix, potential) in work {
                    push(
                        name,
                        by_copy(&ctx, &preds, always, ix, input.nominated, potential),
                    );
                }
            }
        } else {
            for (name, ix, potential) in work {
                let r = by_cache(
                    self,
                    &preds,
                    always,
                    cache,
                    pod,
                    ix,
                    input.nominated,
                    potential,
                );
                push(name, r);
            }
        }
        self.preds = preds;
        out
    }
}

/// Pods on node `ix` with lower priority, highest priority first (earlier start first, then key).
fn potential_victims(
    cache: &ClusterCache,
    pod: &PodInfo,
    ix: u32,
    pdbs: &[CompiledPdb],
    input: PreemptionInput,
) -> Vec<Potential> {
    let mut v: Vec<Potential> = cache.nodes[ix as usize]
        .pods
        .iter()
        .filter_map(|&p| cache.pod_slot(p).map(|s| (p, s)))
        .filter(|(_, s)| s.info.priority < pod.priority)
        .map(|(p, s)| Potential {
            slot: p,
            priority: s.info.priority,
            start: if input.start_times.is_empty() {
                None
            } else {
                input.start_times.get(&s.info.key).copied()
            },
            violating: !pdbs.is_empty() && violates(cache, pdbs, &s.info),
        })
        .collect();
    let key = |p: &Potential| cache.pod_slot(p.slot).map_or("", |s| s.info.key.as_str());
    v.sort_by(|a, b| {
        b.priority
            .cmp(&a.priority)
            .then(
                a.start
                    .unwrap_or(i64::MIN)
                    .cmp(&b.start.unwrap_or(i64::MIN)),
            )
            .then_with(|| key(a).cmp(key(b)))
    });
    v
}

/// The reprieve order: violating first, then the others, each keeping the sorted order.
fn reprieve_order(potential: &[Potential]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..potential.len())
        .filter(|&i| potential[i].violating)
        .collect();
    order.extend((0..potential.len()).filter(|&i| !potential[i].violating));
    order
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

/// Evaluates on a rebuilt copy of the node's info.
fn by_copy(
    ctx: &PodCtx,
    preds: &[Pred],
    always: bool,
    ix: u32,
    nominated: &[Nominated],
    potential: Vec<Potential>,
) -> Option<(Vec<Victim>, usize)> {
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
    for i in reprieve_order(&potential) {
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
            victims.push(victim(cache, p));
            violations += p.violating as usize;
        }
    }
    Some((victims, violations))
}

/// Evaluates by removing the victims from the cache; the cache is restored before returning.
#[allow(clippy::too_many_arguments)]
fn by_cache(
    s: &mut Scheduler,
    preds: &[Pred],
    always: bool,
    cache: &mut ClusterCache,
    pod: &PodInfo,
    ix: u32,
    nominated: &[Nominated],
    potential: Vec<Potential>,
) -> Option<(Vec<Victim>, usize)> {
    let fits = |s: &mut Scheduler, cache: &ClusterCache| -> bool {
        match s.prepare(preds, cache, pod) {
            Ok(ctx) => {
                let mut reasons = Vec::new();
                check_node(&ctx, preds, always, ix, nominated, &mut reasons).unwrap_or(false)
            }
            Err(_) => false,
        }
    };
    // victim() reads keys from the cache: record them before the pods leave it
    let chosen: Vec<Victim> = potential.iter().map(|p| victim(cache, p)).collect();
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
    let mut removed = Vec::new();
    let mut violations = 0;
    for i in reprieve_order(&potential) {
        let p = &owned[i];
        put_back(cache, p);
        if !fits(s, cache) {
            cache.remove_pod(&p.info.key);
            removed.push(i);
            victims.push(chosen[i].clone());
            violations += potential[i].violating as usize;
        }
    }
    for i in removed {
        put_back(cache, &owned[i]);
    }
    Some((victims, violations))
}
