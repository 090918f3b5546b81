//! Which control loops are down right now, and how often each was restarted: a cheap shared
//! handle that the loop [`supervisor`](crate::supervisor) writes, and that a process's
//! `/readyz` (`poststarthook/berth-control-loops` in `berth serve`) and `/metrics`
//! (`berth_control_loop_restarts_total{loop}`) read.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};

/// The metric family the restarts are counted in (OpenMetrics adds `_total` to a counter's
/// samples).
pub const RESTARTS_METRIC: &str = "berth_control_loop_restarts";

#[derive(Debug, Default)]
struct Loops {
    /// Loops that stopped and wait to be restarted.
    down: BTreeSet<String>,
    /// Restarts per loop since the process started.
    restarts: BTreeMap<String, u64>,
}

/// The names of the control loops that are down (crashed and waiting to restart) and each
/// loop's restart count. Cloning shares it; every method takes a short lock and never blocks
/// on I/O.
#[derive(Clone, Debug, Default)]
pub struct LoopHealth {
    loops: Arc<Mutex<Loops>>,
}

impl LoopHealth {
    /// A handle on which no loop is down and none was restarted.
    pub fn new() -> LoopHealth {
        LoopHealth::default()
    }

    /// Records that loop `name` stopped (panicked or returned) and is not running.
    pub fn down(&self, name: &str) {
        self.lock().down.insert(name.to_string());
    }

    /// Records that loop `name` is running (again), or was stopped on purpose.
    pub fn up(&self, name: &str) {
        self.lock().down.remove(name);
    }

    /// Counts one restart of loop `name`.
    pub fn restarted(&self, name: &str) {
        *self.lock().restarts.entry(name.to_string()).or_default() += 1;
    }

    /// How many times loop `name` was restarted.
    pub fn restarts(&self, name: &str) -> u64 {
        self.lock().restarts.get(name).copied().unwrap_or(0)
    }

    /// Whether every loop is running.
    pub fn healthy(&self) -> bool {
        self.lock().down.is_empty()
    }

    /// The loops that are down, by name.
    pub fn failing(&self) -> Vec<String> {
        self.lock().down.iter().cloned().collect()
    }

    /// The restart counts in the OpenMetrics text format, one sample per loop restarted at
    /// least once, without the closing `# EOF` (so that it joins other registries' text).
    pub fn render_metrics(&self) -> String {
        let mut out = format!(
            "# HELP {RESTARTS_METRIC} Number of times a control loop stopped (panicked or returned) and was restarted by its supervisor.\n# TYPE {RESTARTS_METRIC} counter\n"
        );
        for (name, n) in &self.lock().restarts {
            out.push_str(&format!(
                "{RESTARTS_METRIC}_total{{loop=\"{}\"}} {n}\n",
                escape_label(name)
            ));
        }
        out
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Loops> {
        // Sets and counts stay consistent even if a holder panicked.
        self.loops.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A label value as the text format writes it: backslash, quote and newline escaped.
fn escape_label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_that_is_down_makes_the_whole_unhealthy_until_it_is_up() {
        let health = LoopHealth::new();
        let shared = health.clone();
        assert!(health.healthy());
        shared.down("taint-manager");
        shared.down("job-controller");
        assert!(!health.healthy());
        assert_eq!(health.failing(), ["job-controller", "taint-manager"]);
        shared.up("taint-manager");
        shared.up("job-controller");
        assert!(health.healthy());
    }

    #[test]
    fn restarts_are_rendered_as_one_counter_family_with_a_sample_per_loop() {
        let health = LoopHealth::new();
        assert!(!health.render_metrics().contains("_total{"));
        health.restarted("scheduler");
        health.restarted("scheduler");
        health.restarted("weird\"name\\");
        let text = health.render_metrics();
        assert_eq!(health.restarts("scheduler"), 2);
        assert_eq!(
            text.matches("# TYPE berth_control_loop_restarts counter")
                .count(),
            1
        );
        assert!(text.contains("berth_control_loop_restarts_total{loop=\"scheduler\"} 2\n"));
        assert!(text.contains("berth_control_loop_restarts_total{loop=\"weird\\\"name\\\\\"} 1\n"));
        assert!(!text.contains("# EOF"));
    }
}
