//! The filter loop: predicates in static order over the nodes, with the two-pass nominated-pod
//! rule and optional rayon split.

use super::{Nominated, PodCtx};
use crate::node_info::NodeInfo;
use crate::pod_info::PodInfo;
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

fn run_range(
    c: &PodCtx,
    preds: &[Pred],
    always: bool,
    nominated: &[Nominated],
    nodes: &[u32],
    limit: usize,
) -> Result<Filtered, String> {
    let mut f = Filtered {
        feasible: Vec::with_capacity(nodes.len().min(limit)),
        failed: Vec::new(),
        visited: 0,
    };
    let mut reasons = Vec::new();
    for &ix in nodes {
        if f.feasible.len() >= limit {
            break;
        }
        f.visited += 1;
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
    if parallel {
        let chunk = order
            .len()
            .div_ceil(rayon::current_num_threads().max(1) * 2)
            .max(512);
        let parts: Vec<Result<Filtered, String>> = order
            .par_chunks(chunk)
            .map(|nodes| run_range(c, preds, always, nominated, nodes, usize::MAX))
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
        return run_range(c, preds, always, nominated, order, to_find);
    }
    let mut a = run_range(c, preds, always, nominated, &order[start..], to_find)?;
    if a.feasible.len() < to_find {
        let b = run_range(
            c,
            preds,
            always,
            nominated,
            &order[..start],
            to_find - a.feasible.len(),
        )?;
        a.feasible.extend_from_slice(&b.feasible);
        a.failed.extend_from_slice(&b.failed);
        a.visited += b.visited;
    }
    Ok(a)
}
