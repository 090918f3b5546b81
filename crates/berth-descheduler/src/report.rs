//! What one run did, per strategy: a table for people, JSON for tools, and the counts of
//! upstream's `descheduler_pods_evicted{result,strategy,namespace,node}` metric.

use crate::engine::{Eviction, Note, Plan};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// What became of one chosen eviction.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "result", content = "message", rename_all = "camelCase")]
pub enum Outcome {
    /// The API evicted it.
    Evicted,
    /// `--dry-run`: it would have been evicted.
    WouldEvict,
    /// The API refused with 429: a PodDisruptionBudget allows no disruption now. The pod stays.
    BlockedByDisruptionBudget(String),
    /// It was gone already (counted as success, as upstream does).
    NotFound,
    /// Any other failure.
    Failed(String),
    /// Not attempted: no node would take the pod (the scheduler's message), so evicting it
    /// would only leave it Pending (`berth simulate`'s preview, [`crate::preview`]).
    FitsNowhere(String),
}

impl Outcome {
    /// `success` or `error`, the metric's `result` label.
    pub fn result(&self) -> &'static str {
        match self {
            Outcome::Evicted | Outcome::WouldEvict | Outcome::NotFound => "success",
            Outcome::BlockedByDisruptionBudget(_)
            | Outcome::Failed(_)
            | Outcome::FitsNowhere(_) => "error",
        }
    }

    fn column(&self) -> String {
        match self {
            Outcome::Evicted => "evicted".into(),
            Outcome::WouldEvict => "would evict (dry run)".into(),
            Outcome::NotFound => "gone already".into(),
            Outcome::BlockedByDisruptionBudget(m) => format!("skipped: PodDisruptionBudget: {m}"),
            Outcome::Failed(m) => format!("failed: {m}"),
            Outcome::FitsNowhere(m) => format!("not evicted: fits nowhere: {m}"),
        }
    }
}

/// One chosen eviction and its outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReportLine {
    /// What the engine chose.
    #[serde(flatten)]
    pub eviction: Eviction,
    /// What happened.
    pub outcome: Outcome,
}

/// One run's report.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Dry run: nothing was changed.
    pub dry_run: bool,
    /// Strategies that ran.
    pub strategies: Vec<String>,
    /// Nodes considered.
    pub nodes: usize,
    /// Pods considered.
    pub pods_considered: usize,
    /// Each chosen eviction with its outcome, in order.
    pub evictions: Vec<ReportLine>,
    /// What strategies decided not to do.
    pub notes: Vec<Note>,
    /// Policy settings berth accepted without acting on them.
    pub warnings: Vec<String>,
}

impl Report {
    /// A report of `plan` whose evictions had `outcomes` (same order, same length).
    pub fn new(plan: Plan, outcomes: Vec<Outcome>, dry_run: bool, warnings: Vec<String>) -> Report {
        Report {
            dry_run,
            strategies: plan
                .strategies
                .iter()
                .map(|s| s.name().to_string())
                .collect(),
            nodes: plan.nodes,
            pods_considered: plan.pods_considered,
            evictions: plan
                .evictions
                .into_iter()
                .zip(outcomes)
                .map(|(eviction, outcome)| ReportLine { eviction, outcome })
                .collect(),
            notes: plan.notes,
            warnings,
        }
    }

    /// Evictions that took place (or would, in a dry run).
    pub fn evicted(&self) -> usize {
        self.evictions
            .iter()
            .filter(|l| l.outcome.result() == "success")
            .count()
    }

    /// The table: per strategy, each pod, its node, what happened and why.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let verb = if self.dry_run {
            "would evict"
        } else {
            "evicted"
        };
        let _ = writeln!(
            out,
            "descheduler{}: {} nodes, {} pods considered; {verb} {} of {} chosen",
            if self.dry_run { " (dry run)" } else { "" },
            self.nodes,
            self.pods_considered,
            self.evicted(),
            self.evictions.len()
        );
        for w in &self.warnings {
            let _ = writeln!(out, "warning: {w}");
        }
        for n in self.notes.iter().filter(|n| n.strategy.is_none()) {
            let _ = writeln!(out, "{}", n.message);
        }
        for s in &self.strategies {
            let lines: Vec<&ReportLine> = self
                .evictions
                .iter()
                .filter(|l| l.eviction.strategy.name() == s)
                .collect();
            let _ = writeln!(out, "\n{s}: {} chosen", lines.len());
            for n in self
                .notes
                .iter()
                .filter(|n| n.strategy.is_some_and(|x| x.name() == s))
            {
                let _ = writeln!(out, "  {}", n.message);
            }
            if lines.is_empty() {
                continue;
            }
            let rows: Vec<[String; 4]> = lines
                .iter()
                .map(|l| {
                    [
                        format!("{}/{}", l.eviction.namespace, l.eviction.name),
                        l.eviction.node.clone(),
                        l.outcome.column(),
                        l.eviction.reason.clone(),
                    ]
                })
                .collect();
            let head = ["POD", "NODE", "RESULT", "REASON"];
            let width = |i: usize| {
                rows.iter()
                    .map(|r| r[i].len())
                    .chain([head[i].len()])
                    .max()
                    .unwrap_or(0)
            };
            let w = [width(0), width(1), width(2)];
            let _ = writeln!(
                out,
                "  {:<a$}  {:<b$}  {:<c$}  {}",
                head[0],
                head[1],
                head[2],
                head[3],
                a = w[0],
                b = w[1],
                c = w[2]
            );
            for r in rows {
                let _ = writeln!(
                    out,
                    "  {:<a$}  {:<b$}  {:<c$}  {}",
                    r[0],
                    r[1],
                    r[2],
                    r[3],
                    a = w[0],
                    b = w[1],
                    c = w[2]
                );
            }
        }
        out
    }

    /// `descheduler_pods_evicted` counts of this report by (result, strategy, namespace, node).
    pub fn metric_counts(&self) -> BTreeMap<[String; 4], u64> {
        let mut counts = BTreeMap::new();
        for l in &self.evictions {
            let key = [
                l.outcome.result().to_string(),
                l.eviction.strategy.name().to_string(),
                l.eviction.namespace.clone(),
                l.eviction.node.clone(),
            ];
            *counts.entry(key).or_insert(0) += 1;
        }
        counts
    }
}

/// Prometheus text of `descheduler_pods_evicted` for accumulated counts.
pub fn metrics_text(counts: &BTreeMap<[String; 4], u64>) -> String {
    let mut out = String::from(
        "# HELP descheduler_pods_evicted Number of evicted pods, by the result, by the strategy, by the namespace, by the node name. 'error' result means a pod could not be evicted\n# TYPE descheduler_pods_evicted counter\n",
    );
    for ([result, strategy, namespace, node], n) in counts {
        let _ = writeln!(
            out,
            "descheduler_pods_evicted{{namespace=\"{namespace}\",node=\"{node}\",result=\"{result}\",strategy=\"{strategy}\"}} {n}"
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strategy;

    fn line(name: &str, outcome: Outcome) -> (Eviction, Outcome) {
        (
            Eviction {
                namespace: "d".into(),
                name: name.into(),
                node: "n1".into(),
                strategy: Strategy::RemoveDuplicates,
                reason: "duplicate".into(),
            },
            outcome,
        )
    }

    #[test]
    fn the_table_says_what_a_budget_blocked_and_the_metric_counts_it_as_an_error() {
        let (a, oa) = line("a", Outcome::Evicted);
        let (b, ob) = line(
            "b",
            Outcome::BlockedByDisruptionBudget("Cannot evict pod".into()),
        );
        let plan = Plan {
            evictions: vec![a, b],
            strategies: vec![Strategy::RemoveDuplicates],
            nodes: 2,
            pods_considered: 3,
            ..Plan::default()
        };
        let r = Report::new(plan, vec![oa, ob], false, vec![]);
        let t = r.table();
        assert!(t.contains("evicted 1 of 2 chosen"), "{t}");
        assert!(
            t.contains("skipped: PodDisruptionBudget: Cannot evict pod"),
            "{t}"
        );
        let m = metrics_text(&r.metric_counts());
        assert!(m.contains("descheduler_pods_evicted{namespace=\"d\",node=\"n1\",result=\"error\",strategy=\"RemoveDuplicates\"} 1"), "{m}");
        let j = serde_json::to_value(&r).unwrap();
        assert_eq!(
            j["evictions"][1]["outcome"]["result"],
            "blockedByDisruptionBudget"
        );
        assert_eq!(j["evictions"][0]["strategy"], "RemoveDuplicates");
    }
}
