//! Which pods of a set to delete first when it scales down (upstream `ActivePodsWithRanks`, with
//! the `PodDeletionCost` and `LogarithmicScaleDown` features on, as in 1.32).
//!
//! The most deletable pod comes first:
//! 1. unscheduled before scheduled;
//! 2. Pending before Unknown before Running;
//! 3. not ready before ready;
//! 4. lower `pod-deletion-cost` first;
//! 5. more pods of the family on the same node first (doubled-up pods go first);
//! 6. both ready: ready more recently first, compared in powers of two of the time since
//!    (pods in the same bucket are ordered by uid, a stable pseudo-random choice);
//! 7. more container restarts first;
//! 8. created more recently first (no creation time first), in the same buckets.

use std::cmp::Ordering;
use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::{Phase, PodView};

fn phase_ordinal(phase: Phase) -> u8 {
    match phase {
        Phase::Pending => 0,
        Phase::Unknown => 1,
        Phase::Running => 2,
        // Inactive pods are never ranked; upstream's map gives them 0 too.
        Phase::Succeeded | Phase::Failed => 0,
    }
}

/// `floor(log2(now - t))` in nanoseconds, -1 when `t` is not in the past.
fn log_bucket(t: DateTime<Utc>, now: DateTime<Utc>) -> i64 {
    match (now - t).num_nanoseconds() {
        Some(d) if d > 0 => 63 - i64::from(d.leading_zeros()),
        Some(_) => -1,
        // More than 292 years ago: the largest bucket.
        None => 63,
    }
}

/// Newer first, a missing time before any time; in log buckets with a uid tie-break.
fn newer_first(
    a: Option<DateTime<Utc>>,
    b: Option<DateTime<Utc>>,
    (a_uid, b_uid): (&str, &str),
    now: DateTime<Utc>,
) -> Option<Ordering> {
    match (a, b) {
        (x, y) if x == y => None,
        (None, _) => Some(Ordering::Less),
        (_, None) => Some(Ordering::Greater),
        (Some(x), Some(y)) => {
            // A larger bucket means older, which comes later.
            let diff = log_bucket(x, now) - log_bucket(y, now);
            Some(match diff.cmp(&0) {
                Ordering::Equal => a_uid.cmp(b_uid),
                other => other,
            })
        }
    }
}

/// `Less` if `a` should be deleted before `b`. `rank_*` is the number of active pods of the
/// family on the pod's node.
pub fn deletion_order(
    a: &PodView,
    rank_a: usize,
    b: &PodView,
    rank_b: usize,
    now: DateTime<Utc>,
) -> Ordering {
    let (a_unassigned, b_unassigned) = (a.node_name.is_empty(), b.node_name.is_empty());
    if a.node_name != b.node_name && (a_unassigned || b_unassigned) {
        return b_unassigned.cmp(&a_unassigned);
    }
    let phases = phase_ordinal(a.phase).cmp(&phase_ordinal(b.phase));
    if phases != Ordering::Equal {
        return phases;
    }
    if a.is_ready() != b.is_ready() {
        return a.is_ready().cmp(&b.is_ready());
    }
    if a.deletion_cost != b.deletion_cost {
        return a.deletion_cost.cmp(&b.deletion_cost);
    }
    if rank_a != rank_b {
        return rank_b.cmp(&rank_a);
    }
    let uids = (a.uid.as_str(), b.uid.as_str());
    if a.is_ready() && b.is_ready() {
        if let Some(order) = newer_first(a.ready_since, b.ready_since, uids, now) {
            return order;
        }
    }
    if a.max_restarts != b.max_restarts {
        return b.max_restarts.cmp(&a.max_restarts);
    }
    newer_first(a.created, b.created, uids, now).unwrap_or(Ordering::Equal)
}

/// The `diff` pods of `pods` to delete first; `family` (a superset of `pods`: every active pod
/// of the set and its siblings) decides how doubled up each node is.
pub fn pods_to_delete<'a>(
    pods: &[&'a PodView],
    family: &[&PodView],
    diff: usize,
    now: DateTime<Utc>,
) -> Vec<&'a PodView> {
    if diff >= pods.len() {
        return pods.to_vec();
    }
    let mut on_node: HashMap<&str, usize> = HashMap::new();
    for pod in family.iter().filter(|p| p.is_active()) {
        *on_node.entry(pod.node_name.as_str()).or_default() += 1;
    }
    let mut ranked: Vec<(&PodView, usize)> = pods
        .iter()
        .map(|&p| (p, on_node.get(p.node_name.as_str()).copied().unwrap_or(0)))
        .collect();
    // Upstream's order is not transitive (exactly equal ready times fall through to restarts,
    // nearby ones go by uid), which `sort_by` may panic on: pick the first `diff` by scans.
    let mut chosen = Vec::with_capacity(diff);
    for _ in 0..diff {
        let first = (0..ranked.len()).min_by(|&i, &j| {
            let ((a, ra), (b, rb)) = (ranked[i], ranked[j]);
            deletion_order(a, ra, b, rb, now)
        });
        let Some(first) = first else { break };
        chosen.push(ranked.remove(first).0);
    }
    chosen
}
