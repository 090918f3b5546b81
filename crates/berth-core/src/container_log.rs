//! The log of a program berth runs inside a simulated pod (an in-pod `kube-scheduler`, a
//! descheduler Job): what `kubectl logs` shows for that container.
//!
//! Such a program runs in berth's process and logs through `tracing` like every component.
//! The kubelet opens a [`ContainerLog`], [`attach`]es it and runs the program inside the
//! returned [`Attached::span`]; the binary's log layer sends every event inside that span to the
//! container's log instead of berth's own stderr (as a real kubelet keeps a container's output
//! apart from its own). The span carries only a number: the layer finds the log by it here.
//!
//! A log is bounded ([`MAX_LINES`]): the oldest lines go first, as a runtime rotates them.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The target of the span a program runs in.
pub const SPAN_TARGET: &str = "berth_core::container_log";
/// The name of that span.
pub const SPAN_NAME: &str = "container";
/// Its field: the number [`attach`] gave the log.
pub const SPAN_FIELD: &str = "container_log";
/// Lines a container's log keeps.
pub const MAX_LINES: usize = 5000;

/// One line of a container's log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// When it was written, RFC 3339 with nanoseconds (what `kubectl logs --timestamps` prints).
    pub at: String,
    /// The line, without its newline.
    pub text: String,
}

/// A container's log: its current run's lines and the previous run's.
#[derive(Debug, Default)]
pub struct ContainerLog {
    runs: Mutex<Runs>,
}

#[derive(Debug, Default)]
struct Runs {
    current: VecDeque<Line>,
    previous: Option<Vec<Line>>,
}

impl ContainerLog {
    /// An empty log.
    pub fn new() -> Arc<ContainerLog> {
        Arc::new(ContainerLog::default())
    }

    /// Appends `text` (one line per `\n`-separated part) written at `at`.
    pub fn push(&self, at: &str, text: &str) {
        let Ok(mut runs) = self.runs.lock() else {
            return;
        };
        for line in text.lines() {
            if runs.current.len() == MAX_LINES {
                runs.current.pop_front();
            }
            runs.current.push_back(Line {
                at: at.to_string(),
                text: line.to_string(),
            });
        }
    }

    /// The container starts again: the lines so far become the previous run's.
    pub fn restarted(&self) {
        if let Ok(mut runs) = self.runs.lock() {
            let current = std::mem::take(&mut runs.current);
            runs.previous = Some(current.into());
        }
    }

    /// The current run's lines.
    pub fn lines(&self) -> Vec<Line> {
        self.runs
            .lock()
            .map(|r| r.current.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The previous run's lines, if the container started more than once.
    pub fn previous(&self) -> Option<Vec<Line>> {
        self.runs.lock().ok()?.previous.clone()
    }
}

fn open() -> &'static Mutex<HashMap<u64, Arc<ContainerLog>>> {
    static OPEN: OnceLock<Mutex<HashMap<u64, Arc<ContainerLog>>>> = OnceLock::new();
    OPEN.get_or_init(Default::default)
}

/// A log a program writes to now; detached when dropped.
#[derive(Debug)]
pub struct Attached {
    id: u64,
}

/// Makes `log` the destination of the events inside [`Attached::span`].
pub fn attach(log: Arc<ContainerLog>) -> Attached {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut open) = open().lock() {
        open.insert(id, log);
    }
    Attached { id }
}

impl Attached {
    /// The span to run the program in (and to enter in each task it spawns). At `ERROR` level
    /// so that no log filter hides it.
    pub fn span(&self) -> tracing::Span {
        tracing::error_span!(target: "berth_core::container_log", "container", container_log = self.id)
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        if let Ok(mut open) = open().lock() {
            open.remove(&self.id);
        }
    }
}

/// The log attached as `id`, while it is.
pub fn find(id: u64) -> Option<Arc<ContainerLog>> {
    open().lock().ok()?.get(&id).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_keeps_its_last_lines_and_the_previous_run() {
        let log = ContainerLog::new();
        log.push("t0", "a\nb");
        assert_eq!(log.lines().len(), 2);
        assert_eq!(log.previous(), None);
        log.restarted();
        log.push("t1", "c");
        assert_eq!(
            log.lines(),
            [Line {
                at: "t1".into(),
                text: "c".into()
            }]
        );
        assert_eq!(log.previous().map(|p| p.len()), Some(2));
        for i in 0..MAX_LINES + 3 {
            log.push("t", &i.to_string());
        }
        let lines = log.lines();
        assert_eq!(lines.len(), MAX_LINES);
        assert_eq!(lines[0].text, "3", "\"c\" and 0..=2 went first");
    }

    #[test]
    fn an_attached_log_is_found_until_dropped() {
        let log = ContainerLog::new();
        let attached = attach(log.clone());
        let id = attached.id;
        assert!(find(id).is_some_and(|l| Arc::ptr_eq(&l, &log)));
        drop(attached);
        assert!(find(id).is_none());
    }
}
