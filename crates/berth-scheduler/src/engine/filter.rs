//! The filter loop: predicates in static order over the nodes, with the two-pass nominated-pod
//! rule and optional rayon split.

use super::{Nominated, PodCtx};
use crate::node_info::NodeInfo;
use crate::pod_info::PodInfo;
use crate::predicates::unit::FastClass;
use crate::predicates::{NodeView, Pred, Reason};
use rayon::prelude::*;

/// Filter output: feasible node slots (in visiting order) and failures per node slot.
pub(crate) struct Filtered {
    pub feasible: Vec<u32>,
    pub failed: Vec<(u32, Reason)>,
    pub visited: usize,
}

/// Runs the configured predicates on one node view; reasons are appended to `out`.
#[inline]
pub(crate) fn run_predicates(
    c: &PodCtx,
    preds: &[Pred],
    always: bool,
    v: &NodeView,
    out: &mut Vec<Reason>,
) -> Result<bool, String> {
    let mut fit = true;
    for p in preds {
        if !p.check(c, v, out)? {
            fit = false;
            if !always {
                break;
            }
        }
    }
    Ok(fit)
}

/// Applies a pod's aggregates to a node copy (used for nominated pods and, later, preemption).
pub(crate) fn add_pod_to(
    info: &mut NodeInfo,
    p: &PodInfo,
    attach: &[(crate::node_info::AttachKind, u32, u32)],
) {
    info.requested.add(&p.container_request, 1);
    info.nonzero.0 += p.nonzero.0;
    info.nonzero.1 += p.nonzero.1;
    info.pod_count += 1;
    info.ports.extend_from_slice(&p.host_ports);
    info.disks.extend(
        p.volumes
            .iter()
            .filter(|v| {
                !matches!(
                    v,
                    crate::pod_info::CVolume::Pvc { .. }
                        | crate::pod_info::CVolume::Csi { .. }
                        | crate::pod_info::CVolume::Azure { .. }
                )
            })
            .cloned(),
    );
    for &(kind, driver, id) in attach {
        match info
            .attached
            .iter_mut()
            .find(|a| a.kind == kind && a.driver == driver && a.id == id)
        {
            Some(a) => a.count += 1,
            None => info.attached.push(crate::node_info::Attached {
                kind,
                driver,
                id,
                count: 1,
            }),
        }
    }
}

/// Evaluates one node with the two-pass rule; returns fit and pushes reasons.
pub(crate) fn check_node(
    c: &PodCtx,
    preds: &[Pred],
    always: bool,
    ix: u32,
    nominated: &[Nominated],
    out: &mut Vec<Reason>,
) -> Result<bool, String> {
    let info = &c.cache.nodes[ix as usize];
    let base = NodeView {
        info,
        ix,
        added: &[],
    };
    if nominated.is_empty() || !nominated.iter().any(|nm| nm.node == info.name) {
        return run_predicates(c, preds, always, &base, out);
    }
    // pass 0: nominated pods with priority >= the pod's, added as if running
    let added: Vec<&PodInfo> = nominated
        .iter()
        .filter(|nm| {
            nm.node == info.name && nm.pod.priority >= c.pod.priority && nm.pod.key != c.pod.key
        })
        .map(|nm| nm.pod)
        .collect();
    let mut copy = info.clone();
    for p in &added {
        add_pod_to(&mut copy, p, &c.cache.attach_ids(p));
    }
    let v0 = NodeView {
        info: &copy,
        ix,
        added: &added,
    };
    let fit0 = run_predicates(c, preds, always, &v0, out)?;
    if !fit0 {
        return Ok(false);
    }
    run_predicates(c, preds, always, &base, out)
}

/// A per-decision plan for the fast path: nodes whose flags avoid `slow_mask`, whose
/// inter-pod-affinity state is clean and whose resources fit are feasible without running the
/// predicates; every other node runs the predicates (which also yields its reasons).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FastPlan {
    pub slow_mask: u32,
    pub affinity: bool,
    pub resources: bool,
    /// The pod's topology spread constraints are checked per node from the decision's domain
    /// counts (only in [`run`]'s own plan: results that depend on the counts are never reused
    /// across pods).
    pub spread: bool,
}

/// The fast plan for this pod and predicate list, if every configured predicate can be decided
/// from node flags, the affinity state and the hot resource numbers.
pub(crate) fn plan(c: &PodCtx, preds: &[Pred], nominated: &[Nominated]) -> Option<FastPlan> {
    plan_for(c, preds, nominated, false)
}

/// [`plan`], with `spread` also deciding PodTopologySpread in the fast path.
pub(crate) fn plan_for(
    c: &PodCtx,
    preds: &[Pred],
    nominated: &[Nominated],
    spread: bool,
) -> Option<FastPlan> {
    if !nominated.is_empty() {
        return None;
    }
    let mut p = FastPlan {
        slow_mask: 0,
        affinity: false,
        resources: false,
        spread: false,
    };
    for pred in preds {
        if !add_class(&mut p, &pred.name.unit().fast, pred, c, spread) {
            return None;
        }
    }
    Some(p)
}

/// Adds one predicate's fast-path class to the plan; false when the predicate cannot be decided
/// without running it for this pod.
fn add_class(p: &mut FastPlan, class: &FastClass, pred: &Pred, c: &PodCtx, spread: bool) -> bool {
    use crate::node_info::flag::PORTS;
    let pod = c.pod;
    match class {
        FastClass::Flags(mask) => p.slow_mask |= mask,
        FastClass::FlagsForBestEffort(mask) => {
            if pod.best_effort {
                p.slow_mask |= mask
            }
        }
        FastClass::Resources => {
            if !pod.request.scalars.is_empty() {
                return false;
            }
            p.resources = true;
        }
        FastClass::HostName => return pod.node_name.is_empty(),
        FastClass::HostPorts => {
            if !pod.host_ports.is_empty() {
                p.slow_mask |= PORTS
            }
        }
        FastClass::NodeSelector => {
            return pod.node_selector.is_empty()
                && pod.required_node_terms.is_none()
                && pod.enforced_node_terms.is_none()
        }
        FastClass::InterPodAffinity => p.affinity = true,
        FastClass::ServiceAffinity => {
            return c
                .service_affinity
                .get(pred.slot)
                .is_none_or(|v| v.is_empty())
        }
        FastClass::Volumes => return pod.volumes.is_empty(),
        FastClass::TopologySpread => {
            if !c.spread.constraints.is_empty() {
                if !spread {
                    return false;
                }
                p.spread = true;
            }
        }
        FastClass::Never => return false,
        FastClass::Parts(parts) => {
            return parts
                .iter()
                .all(|part| add_class(p, &part.unit().fast, pred, c, spread))
        }
    }
    true
}

pub(crate) fn fast_ok(
    p: &FastPlan,
    req: &crate::compiled::Resources,
    h: &crate::node_info::NodeHot,
) -> bool {
    let zero_req = req.cpu == 0 && req.memory == 0 && req.ephemeral == 0;
    h.flags & p.slow_mask == 0
        && (!p.resources
            || (h.pod_count < h.alloc_pods
                && (zero_req
                    || (req.cpu.saturating_add(h.req_cpu) <= h.alloc_cpu
                        && req.memory.saturating_add(h.req_mem) <= h.alloc_mem
                        && req.ephemeral.saturating_add(h.req_eph) <= h.alloc_eph))))
}

fn run_range(
    c: &PodCtx,
    preds: &[Pred],
    always: bool,
    nominated: &[Nominated],
    nodes: &[u32],
    limit: usize,
    fast: Option<FastPlan>,
) -> Result<Filtered, String> {
    let mut f = Filtered {
        feasible: Vec::with_capacity(nodes.len().min(limit)),
        failed: Vec::new(),
        visited: 0,
    };
    let mut reasons = Vec::new();
    let hot = &c.cache.hot;
    let req = &c.pod.request;
    let zero_req = req.cpu == 0 && req.memory == 0 && req.ephemeral == 0;
    let aff = &c.affinity;
    for &ix in nodes {
        if f.feasible.len() >= limit {
            break;
        }
        f.visited += 1;
        if let Some(p) = fast {
            let h = &hot[ix as usize];
            let i = ix as usize;
            let ok = h.flags & p.slow_mask == 0
                && (!p.affinity
                    || (aff.flags[i] == 0
                        && (aff.all_terms == 0
                            || aff.first_pod
                            || aff.sat[i] & aff.all_terms == aff.all_terms)))
                && (!p.resources
                    || (h.pod_count < h.alloc_pods
                        && (zero_req
                            || (req.cpu.saturating_add(h.req_cpu) <= h.alloc_cpu
                                && req.memory.saturating_add(h.req_mem) <= h.alloc_mem
                                && req.ephemeral.saturating_add(h.req_eph) <= h.alloc_eph))))
                && (!p.spread
                    || crate::predicates::pod_topology_spread::fits_fast(
                        &c.spread,
                        &c.cache.nodes[i],
                    ));
            if ok {
                f.feasible.push(ix);
                continue;
            }
        }
        reasons.clear();
        if check_node(c, preds, always, ix, nominated, &mut reasons)? {
            f.feasible.push(ix);
        } else {
            f.failed.extend(reasons.iter().map(|r| (ix, *r)));
        }
    }
    Ok(f)
}

/// Filters the cache's nodes in name order starting at `start`, stopping after `to_find`
/// feasible nodes.
pub(crate) fn run(
    c: &PodCtx,
    preds: &[Pred],
    always: bool,
    nominated: &[Nominated],
    start: usize,
    to_find: usize,
    parallel: bool,
) -> Result<Filtered, String> {
    let order = &c.cache.order;
    let fast = plan_for(c, preds, nominated, true);
    if parallel {
        let chunk = order
            .len()
            .div_ceil(rayon::current_num_threads().max(1) * 2)
            .max(512);
        let parts: Vec<Result<Filtered, String>> = order
            .par_chunks(chunk)
            .map(|nodes| run_range(c, preds, always, nominated, nodes, usize::MAX, fast))
            .collect();
        let mut out = Filtered {
            feasible: Vec::with_capacity(order.len()),
            failed: Vec::new(),
            visited: 0,
        };
        for p in parts {
            let p = p?;
            out.feasible.extend_from_slice(&p.feasible);
            out.failed.extend_from_slice(&p.failed);
            out.visited += p.visited;
        }
        return Ok(out);
    }
    if start == 0 {
        return run_range(c, preds, always, nominated, order, to_find, fast);
    }
    let mut a = run_range(c, preds, always, nominated, &order[start..], to_find, fast)?;
    if a.feasible.len() < to_find {
        let b = run_range(
            c,
            preds,
            always,
            nominated,
            &order[..start],
            to_find - a.feasible.len(),
            fast,
        )?;
        a.feasible.extend_from_slice(&b.feasible);
        a.failed.extend_from_slice(&b.failed);
        a.visited += b.visited;
    }
    Ok(a)
}
