//! The one-screen text summary printed at the end of a run, and the differences between two
//! runs of `--compare` (pure: reports in, text and values out).

use super::report::Report;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// How many unschedulable reasons and disruptions the summary lists.
const TOP: usize = 5;

/// The mean and peak of a series (0 for an empty one).
fn mean_peak(values: &[f64]) -> (f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0);
    }
    let sum: f64 = values.iter().sum();
    let peak = values.iter().copied().fold(0.0, f64::max);
    (sum / values.len() as f64, peak)
}

fn percent(f: f64) -> String {
    format!("{:.0}%", f * 100.0)
}

/// The summary of one run.
pub fn text(r: &Report) -> String {
    let mut out = String::new();
    let s = &r.simulation;
    let _ = writeln!(
        out,
        "Simulated {} of {} node(s) with scheduler {} (seed {}).",
        super::driver::clock_text(s.until_seconds),
        s.nodes,
        s.scheduler,
        s.seed
    );
    let t = &r.totals;
    let _ = writeln!(
        out,
        "Pods scheduled: {}   failed attempts: {}   preemptions: {}   evictions: {}",
        t.scheduled, t.failed_attempts, t.preemptions, t.evictions
    );
    let _ = writeln!(
        out,
        "Pending at the end: {}   peak pending: {}",
        t.pending_at_end, t.peak_pending
    );
    if !r.utilisation.nodes.is_empty() {
        let _ = writeln!(
            out,
            "\n{:<24} {:>6} {:>9} {:>9} {:>9} {:>9}",
            "NODE", "PODS", "CPU MEAN", "CPU PEAK", "MEM MEAN", "MEM PEAK"
        );
        for (name, series) in &r.utilisation.nodes {
            let (cm, cp) = mean_peak(&series.cpu);
            let (mm, mp) = mean_peak(&series.memory);
            let pods = t.pods_per_node_at_end.get(name).copied().unwrap_or(0);
            let _ = writeln!(
                out,
                "{name:<24} {pods:>6} {:>9} {:>9} {:>9} {:>9}",
                percent(cm),
                percent(cp),
                percent(mm),
                percent(mp)
            );
        }
    }
    if !r.unschedulable_reasons.is_empty() {
        let _ = writeln!(
            out,
            "\nUnschedulable reasons (node count over all attempts):"
        );
        let mut reasons: Vec<_> = r.unschedulable_reasons.iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (reason, n) in reasons.into_iter().take(TOP) {
            let _ = writeln!(out, "  {n:>8}  {reason}");
        }
    }
    let disruptions: Vec<_> = r.evictions.iter().chain(&r.preemptions).collect();
    if !disruptions.is_empty() {
        let _ = writeln!(out, "\nEvictions and preemptions (first {TOP}):");
        let mut sorted = disruptions;
        sorted.sort_by(|a, b| a.t.total_cmp(&b.t).then(a.pod.cmp(&b.pod)));
        for d in sorted.into_iter().take(TOP) {
            let _ = writeln!(
                out,
                "  {}  {:<20} {}",
                super::driver::clock_text(d.t as u64),
                d.reason,
                d.pod
            );
        }
    }
    if !r.descheduler_moves.is_empty() {
        let _ = writeln!(out, "\nDescheduler preview (first {TOP}):");
        for m in r.descheduler_moves.iter().take(TOP) {
            let _ = writeln!(
                out,
                "  {}  {}",
                super::driver::clock_text(m.t as u64),
                m.line()
            );
        }
    }
    out
}

/// What differs between two runs of the same timeline.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Differences {
    pub schedulers: [String; 2],
    pub scheduled: [u64; 2],
    pub failed_attempts: [u64; 2],
    pub preemptions: [u64; 2],
    pub evictions: [u64; 2],
    pub pending_at_end: [u32; 2],
    pub peak_pending: [u32; 2],
    /// Nodes that hold at least one pod at the end.
    pub nodes_used_at_end: [usize; 2],
    /// Each node's pods at the end, in A and B.
    pub pods_per_node_at_end: BTreeMap<String, [u32; 2]>,
    /// Pods placed on different nodes (by name, as each run last placed them).
    pub placements_differing: Vec<PlacementDifference>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PlacementDifference {
    pub pod: String,
    pub a: Option<String>,
    pub b: Option<String>,
}

/// The differences between `a` and `b`.
pub fn differences(a: &Report, b: &Report) -> Differences {
    let used = |r: &Report| {
        r.totals
            .pods_per_node_at_end
            .values()
            .filter(|n| **n > 0)
            .count()
    };
    let mut per_node: BTreeMap<String, [u32; 2]> = BTreeMap::new();
    for (i, r) in [a, b].into_iter().enumerate() {
        for (node, n) in &r.totals.pods_per_node_at_end {
            per_node.entry(node.clone()).or_default()[i] = *n;
        }
    }
    let mut pods: Vec<&String> = a.placements.keys().chain(b.placements.keys()).collect();
    pods.sort();
    pods.dedup();
    let placements_differing = pods
        .into_iter()
        .filter_map(|pod| {
            let (pa, pb) = (a.placements.get(pod), b.placements.get(pod));
            (pa != pb).then(|| PlacementDifference {
                pod: pod.clone(),
                a: pa.cloned(),
                b: pb.cloned(),
            })
        })
        .collect();
    Differences {
        schedulers: [
            a.simulation.scheduler.clone(),
            b.simulation.scheduler.clone(),
        ],
        scheduled: [a.totals.scheduled, b.totals.scheduled],
        failed_attempts: [a.totals.failed_attempts, b.totals.failed_attempts],
        preemptions: [a.totals.preemptions, b.totals.preemptions],
        evictions: [a.totals.evictions, b.totals.evictions],
        pending_at_end: [a.totals.pending_at_end, b.totals.pending_at_end],
        peak_pending: [a.totals.peak_pending, b.totals.peak_pending],
        nodes_used_at_end: [used(a), used(b)],
        pods_per_node_at_end: per_node,
        placements_differing,
    }
}

/// The summary of a comparison: the two runs side by side.
pub fn compare(a: &Report, b: &Report) -> String {
    let d = differences(a, b);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Compared {} and {} over {} of {} node(s) (seed {}).\n",
        d.schedulers[0],
        d.schedulers[1],
        super::driver::clock_text(a.simulation.until_seconds),
        a.simulation.nodes,
        a.simulation.seed
    );
    let w = d.schedulers[0].len().max(d.schedulers[1].len()).max(8);
    let _ = writeln!(
        out,
        "{:<22} {:>w$} {:>w$}",
        "", d.schedulers[0], d.schedulers[1]
    );
    let rows: [(&str, String, String); 8] = [
        (
            "pods scheduled",
            d.scheduled[0].to_string(),
            d.scheduled[1].to_string(),
        ),
        (
            "failed attempts",
            d.failed_attempts[0].to_string(),
            d.failed_attempts[1].to_string(),
        ),
        (
            "preemptions",
            d.preemptions[0].to_string(),
            d.preemptions[1].to_string(),
        ),
        (
            "evictions",
            d.evictions[0].to_string(),
            d.evictions[1].to_string(),
        ),
        (
            "pending at the end",
            d.pending_at_end[0].to_string(),
            d.pending_at_end[1].to_string(),
        ),
        (
            "peak pending",
            d.peak_pending[0].to_string(),
            d.peak_pending[1].to_string(),
        ),
        (
            "nodes used at the end",
            d.nodes_used_at_end[0].to_string(),
            d.nodes_used_at_end[1].to_string(),
        ),
        (
            "pods placed elsewhere",
            d.placements_differing.len().to_string(),
            String::new(),
        ),
    ];
    for (name, x, y) in rows {
        let _ = writeln!(out, "{name:<22} {x:>w$} {y:>w$}");
    }
    let _ = writeln!(out, "\npods per node at the end:");
    for (node, [x, y]) in &d.pods_per_node_at_end {
        let _ = writeln!(out, "  {node:<20} {x:>w$} {y:>w$}");
    }
    out
}
