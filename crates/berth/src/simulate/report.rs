//! `report.json`: what a simulation observed, built from its records (pure).
//!
//! The recorder writes [`Record`]s in the order it saw them, each stamped with the virtual time
//! since the start; [`build`] turns them into a [`Report`]. Everything in it is a function of
//! the records: no wall-clock time, maps sorted, so the same records give the same bytes.

use serde::Serialize;
use std::collections::BTreeMap;

/// Virtual milliseconds since the start of the simulation.
pub type Millis = u64;

/// One observation of the recorder.
#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    /// A timeline action was carried out (its description).
    Action { at: Millis, what: String },
    /// The pod was bound to the node.
    Scheduled {
        at: Millis,
        pod: String,
        node: String,
    },
    /// A scheduling attempt failed with this message (`0/2 nodes are available: ...`),
    /// `times` attempts since the previous record of the same event.
    FailedScheduling {
        at: Millis,
        pod: String,
        message: String,
        times: u32,
    },
    /// A pod was preempted (the `Preempted` event on the victim).
    Preempted {
        at: Millis,
        pod: String,
        message: String,
    },
    /// A pod was evicted: by its kubelet (`Evicted`), the taint manager
    /// (`TaintManagerEviction`) or the descheduler (`Descheduled`).
    Evicted {
        at: Millis,
        pod: String,
        reason: String,
        message: String,
    },
    /// The descheduler chose to evict the pod: where the scheduler would put it (`to`), or
    /// nowhere (then it was not evicted; `message` says why).
    Moved {
        at: Millis,
        pod: String,
        from: String,
        to: Option<String>,
        strategy: String,
        message: Option<String>,
    },
    /// `--explain`: a decision of a chosen pod, node by node.
    Explained {
        at: Millis,
        pod: String,
        explanation: berth_scheduler::Explanation,
    },
    /// The cluster at a sampling instant.
    Sample(Sample),
}

/// What the cluster held at one sampling instant.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sample {
    pub at: Millis,
    /// Pods not bound to a node and not terminating.
    pub pending: u32,
    /// Per node (sorted by name).
    pub nodes: Vec<NodeSample>,
}

/// One node at a sampling instant: requests of its pods (bound, not finished) and allocatable.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeSample {
    pub name: String,
    pub cpu_requested_milli: i64,
    pub cpu_allocatable_milli: i64,
    pub memory_requested: i64,
    pub memory_allocatable: i64,
    pub pods: u32,
}

/// The whole report, as written to `report.json`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Report {
    pub simulation: Settings,
    pub totals: Totals,
    /// Scheduling decisions and failures in the order they happened.
    pub decisions: Vec<Decision>,
    /// Where each pod was last placed.
    pub placements: BTreeMap<String, String>,
    /// Requested over allocatable per node at each sampling instant.
    pub utilisation: Utilisation,
    /// Pending pods at each sampling instant.
    pub pending: Series,
    pub evictions: Vec<Disruption>,
    pub preemptions: Vec<Disruption>,
    /// Each reason of the failure messages (`Insufficient cpu`), with how many nodes it
    /// was given for, summed over every failed attempt.
    pub unschedulable_reasons: BTreeMap<String, u64>,
    /// The timeline's actions as carried out.
    pub actions: Vec<Happening>,
    /// With `--descheduler-policy`: each eviction the descheduler chose and where the pod
    /// would go (`to`), or why it fits nowhere and was left where it is.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub descheduler_moves: Vec<Move>,
    /// With `--explain POD`: the pod's decisions, node by node (each node's filter result, or
    /// its priorities' scores and total).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub explanations: Vec<Explained>,
}

/// One explained decision.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Explained {
    pub t: f64,
    pub pod: String,
    pub nodes: Vec<berth_scheduler::NodeExplanation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One eviction the descheduler chose, previewed.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Move {
    pub t: f64,
    pub pod: String,
    pub from: String,
    /// The node the scheduler would bind it to; none: it fits nowhere and was not evicted.
    pub to: Option<String>,
    pub strategy: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Move {
    /// `pod X: node A -> node B`, or `pod X: fits nowhere: not evicted`.
    pub fn line(&self) -> String {
        match &self.to {
            Some(to) => format!("pod {}: node {} -> node {to}", self.pod, self.from),
            None => format!("pod {}: fits nowhere: not evicted", self.pod),
        }
    }
}

/// The inputs that decide the outcome, for the reader.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Settings {
    pub until_seconds: u64,
    pub seed: u64,
    pub sample_interval_seconds: u64,
    pub scheduler: String,
    pub nodes: usize,
}

#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Totals {
    pub scheduled: u64,
    pub failed_attempts: u64,
    pub preemptions: u64,
    pub evictions: u64,
    pub pending_at_end: u32,
    pub peak_pending: u32,
    /// Pods placed on each node at the end (bound, not finished).
    pub pods_per_node_at_end: BTreeMap<String, u32>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Decision {
    /// Seconds since the start.
    pub t: f64,
    pub pod: String,
    /// `Scheduled` or `FailedScheduling`.
    pub result: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "is_one")]
    pub times: u32,
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Disruption {
    pub t: f64,
    pub pod: String,
    pub reason: String,
    pub message: String,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Happening {
    pub t: f64,
    pub what: String,
}

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Series {
    /// Seconds since the start.
    pub t: Vec<f64>,
    pub values: Vec<u32>,
}

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Utilisation {
    pub t: Vec<f64>,
    pub nodes: BTreeMap<String, NodeSeries>,
}

/// One node's fractions (requested / allocatable, 0 when nothing is allocatable).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct NodeSeries {
    pub cpu: Vec<f64>,
    pub memory: Vec<f64>,
    pub pods: Vec<u32>,
}

/// Seconds with millisecond precision.
pub fn seconds(at: Millis) -> f64 {
    at as f64 / 1000.0
}

/// `part / whole` rounded to 4 decimals (0 when `whole` is 0), so the JSON stays short and
/// byte-stable.
pub fn fraction(part: i64, whole: i64) -> f64 {
    if whole <= 0 {
        return 0.0;
    }
    (part as f64 / whole as f64 * 10_000.0).round() / 10_000.0
}

/// The reasons of a scheduler failure message with their node counts:
/// `0/5 nodes are available: 3 Insufficient cpu, 2 node(s) had taints that the pod didn't
/// tolerate.` gives `[("Insufficient cpu", 3), ("node(s) had taints ...", 2)]`. A message of
/// another shape counts as one reason, itself.
pub fn reasons(message: &str) -> Vec<(String, u64)> {
    let Some((head, tail)) = message.split_once(": ") else {
        return vec![(message.trim().to_string(), 1)];
    };
    if !head.ends_with("nodes are available") {
        return vec![(message.trim().to_string(), 1)];
    }
    // Upstream appends the preemption outcome after a second sentence.
    let tail = tail.split(". preemption:").next().unwrap_or(tail);
    tail.trim()
        .trim_end_matches('.')
        .split(", ")
        .filter(|r| !r.is_empty())
        .map(|r| match r.split_once(' ') {
            Some((n, rest)) if n.parse::<u64>().is_ok() => {
                (rest.to_string(), n.parse().unwrap_or(1))
            }
            _ => (r.to_string(), 1),
        })
        .collect()
}

/// Builds the report from the records, in the order the recorder wrote them.
pub fn build(settings: Settings, records: &[Record]) -> Report {
    let mut report = Report {
        simulation: settings,
        totals: Totals::default(),
        decisions: Vec::new(),
        placements: BTreeMap::new(),
        utilisation: Utilisation::default(),
        pending: Series::default(),
        evictions: Vec::new(),
        preemptions: Vec::new(),
        unschedulable_reasons: BTreeMap::new(),
        actions: Vec::new(),
        descheduler_moves: Vec::new(),
        explanations: Vec::new(),
    };
    let mut node_names: Vec<String> = Vec::new();
    let mut samples: Vec<&Sample> = Vec::new();
    for record in records {
        match record {
            Record::Action { at, what } => report.actions.push(Happening {
                t: seconds(*at),
                what: what.clone(),
            }),
            Record::Scheduled { at, pod, node } => {
                report.totals.scheduled += 1;
                report.placements.insert(pod.clone(), node.clone());
                report.decisions.push(Decision {
                    t: seconds(*at),
                    pod: pod.clone(),
                    result: "Scheduled",
                    node: Some(node.clone()),
                    message: None,
                    times: 1,
                });
            }
            Record::FailedScheduling {
                at,
                pod,
                message,
                times,
            } => {
                report.totals.failed_attempts += u64::from(*times);
                for (reason, nodes) in reasons(message) {
                    *report.unschedulable_reasons.entry(reason).or_default() +=
                        nodes * u64::from(*times);
                }
                report.decisions.push(Decision {
                    t: seconds(*at),
                    pod: pod.clone(),
                    result: "FailedScheduling",
                    node: None,
                    message: Some(message.clone()),
                    times: *times,
                });
            }
            Record::Preempted { at, pod, message } => {
                report.totals.preemptions += 1;
                report.preemptions.push(Disruption {
                    t: seconds(*at),
                    pod: pod.clone(),
                    reason: "Preempted".into(),
                    message: message.clone(),
                });
            }
            Record::Evicted {
                at,
                pod,
                reason,
                message,
            } => {
                report.totals.evictions += 1;
                report.evictions.push(Disruption {
                    t: seconds(*at),
                    pod: pod.clone(),
                    reason: reason.clone(),
                    message: message.clone(),
                });
            }
            Record::Moved {
                at,
                pod,
                from,
                to,
                strategy,
                message,
            } => report.descheduler_moves.push(Move {
                t: seconds(*at),
                pod: pod.clone(),
                from: from.clone(),
                to: to.clone(),
                strategy: strategy.clone(),
                message: message.clone(),
            }),
            Record::Explained {
                at,
                pod,
                explanation,
            } => report.explanations.push(Explained {
                t: seconds(*at),
                pod: pod.clone(),
                nodes: explanation.nodes.clone(),
                error: explanation.error.clone(),
            }),
            Record::Sample(sample) => {
                for n in &sample.nodes {
                    if !node_names.contains(&n.name) {
                        node_names.push(n.name.clone());
                    }
                }
                samples.push(sample);
            }
        }
    }
    node_names.sort();
    // What happened at the same instant is listed by pod (the order in which concurrent
    // components wrote it is not part of the outcome); one pod's records keep their order.
    let by_time_and_pod =
        |a: &Disruption, b: &Disruption| a.t.total_cmp(&b.t).then(a.pod.cmp(&b.pod));
    report.evictions.sort_by(by_time_and_pod);
    report
        .explanations
        .sort_by(|a, b| a.t.total_cmp(&b.t).then(a.pod.cmp(&b.pod)));
    report.preemptions.sort_by(by_time_and_pod);
    report
        .decisions
        .sort_by(|a, b| a.t.total_cmp(&b.t).then(a.pod.cmp(&b.pod)));
    for sample in &samples {
        let t = seconds(sample.at);
        report.pending.t.push(t);
        report.pending.values.push(sample.pending);
        report.totals.peak_pending = report.totals.peak_pending.max(sample.pending);
        report.utilisation.t.push(t);
        for name in &node_names {
            let series = report.utilisation.nodes.entry(name.clone()).or_default();
            // A node absent from a sample (not yet registered, or deleted) counts as empty.
            let n = sample.nodes.iter().find(|n| &n.name == name);
            series.cpu.push(n.map_or(0.0, |n| {
                fraction(n.cpu_requested_milli, n.cpu_allocatable_milli)
            }));
            series
                .memory
                .push(n.map_or(0.0, |n| fraction(n.memory_requested, n.memory_allocatable)));
            series.pods.push(n.map_or(0, |n| n.pods));
        }
    }
    if let Some(last) = samples.last() {
        report.totals.pending_at_end = last.pending;
        report.totals.pods_per_node_at_end = last
            .nodes
            .iter()
            .map(|n| (n.name.clone(), n.pods))
            .collect();
    }
    report
}

/// The report as `report.json` writes it (pretty, with a final newline).
pub fn to_json(report: &Report) -> String {
    let mut text = serde_json::to_string_pretty(report).unwrap_or_else(|_| "{}".into());
    text.push('\n');
    text
}

#[cfg(test)]
mod tests;
