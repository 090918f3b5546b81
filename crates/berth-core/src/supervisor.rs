//! Keeps control loops running: each loop is started from a factory, and when it stops
//! (panics, returns, or returns an error) the supervisor logs it with the loop's name, counts
//! it in the shared [`LoopHealth`] (`berth_control_loop_restarts_total{loop}` on `/metrics`),
//! marks it down there (so `/readyz` fails) and starts it again after an exponential back-off
//! on tokio's clock. A loop that panics on some input therefore never stays dead silently.
//!
//! Every long-running loop of berth's processes runs under one: the controllers, the
//! scheduler, the descheduler, the simulated kubelets' loops and the leader elections.
//! Per-item tasks (one per pod, per node, per request) are not supervised one by one: the loop
//! that starts them is.

use crate::clock::Clock;
use crate::loop_health::LoopHealth;
use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// The first wait before restarting a loop that stopped: short, so that a one-off panic costs
/// about a second of that loop's work.
pub const INITIAL_BACKOFF: Duration = Duration::from_secs(1);

/// The longest wait between restarts: a loop that panics at once on every start (the same
/// hostile object each time) is retried once a minute, not in a hot loop that floods the log.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// A loop that ran at least this long before stopping starts its back-off over from
/// [`INITIAL_BACKOFF`]: its failure is a new one, not the previous one repeating.
pub const RESET_BACKOFF_AFTER: Duration = Duration::from_secs(120);

/// What a loop's future ends with: nothing, or a result whose error is logged.
pub trait LoopEnd: Send + 'static {
    /// The error the loop stopped with, if it reports one.
    fn error(self) -> Option<String>;
}

impl LoopEnd for () {
    fn error(self) -> Option<String> {
        None
    }
}

impl<E: Display + Send + 'static> LoopEnd for Result<(), E> {
    fn error(self) -> Option<String> {
        // `{:#}` prints an anyhow error's whole chain of causes.
        self.err().map(|e| format!("{e:#}"))
    }
}

/// Starts control loops and restarts them when they stop. Cloning shares the health handle.
#[derive(Clone, Debug)]
pub struct Supervisor {
    health: LoopHealth,
    clock: Clock,
}

impl Supervisor {
    /// A supervisor counting restarts in and reporting down loops to `health`, timing its
    /// back-off on `clock` (tokio's: a paused runtime advances it).
    pub fn new(health: LoopHealth, clock: Clock) -> Supervisor {
        Supervisor { health, clock }
    }

    /// The handle it reports to.
    pub fn health(&self) -> &LoopHealth {
        &self.health
    }

    /// Runs the loop `make()` builds under the name `name` (as logs, `/readyz` and `/metrics`
    /// show it), building and starting a fresh one each time it stops. The returned task
    /// supervises until aborted (or its runtime shuts down), which also aborts the running
    /// loop and forgets that it was down: a loop stopped on purpose is not failing.
    pub fn spawn<F, Fut>(&self, name: impl Into<String>, mut make: F) -> tokio::task::JoinHandle<()>
    where
        F: FnMut() -> Fut + Send + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: LoopEnd,
    {
        let this = self.clone();
        let name: Arc<str> = Arc::from(name.into());
        tokio::spawn(async move {
            let _forget = ForgetOnDrop {
                health: this.health.clone(),
                name: name.clone(),
            };
            let mut backoff = INITIAL_BACKOFF;
            loop {
                this.health.up(&name);
                let started = this.clock.instant();
                let mut running = AbortOnDrop(tokio::spawn(make()));
                let stopped = (&mut running.0).await;
                let ran = this.clock.instant().saturating_duration_since(started);
                this.health.down(&name);
                match stopped {
                    Err(e) if e.is_cancelled() => return,
                    Err(e) => {
                        let panic = panic_message(e.into_panic());
                        tracing::error!(%name, %panic, ?backoff, "control loop panicked; restarting it after a back-off");
                    }
                    Ok(end) => match end.error() {
                        Some(error) => {
                            tracing::error!(%name, %error, ?backoff, "control loop failed; restarting it after a back-off");
                        }
                        None => {
                            tracing::error!(%name, ?backoff, "control loop returned; restarting it after a back-off");
                        }
                    },
                }
                if ran >= RESET_BACKOFF_AFTER {
                    backoff = INITIAL_BACKOFF;
                }
                tokio::time::sleep(backoff).await;
                this.health.restarted(&name);
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        })
    }
}

/// Aborts the task when dropped, so aborting the supervisor stops its loop too.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Marks the loop as not down when its supervisor ends (aborted, or its runtime shut down
/// at the end of a leadership term), so that `/readyz` does not report it forever.
struct ForgetOnDrop {
    health: LoopHealth,
    name: Arc<str>,
}

impl Drop for ForgetOnDrop {
    fn drop(&mut self) {
        self.health.up(&self.name);
    }
}

/// The text a panic was raised with (`panic!("...")` or a formatted message).
fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A supervisor, the handle its restarts are counted in, and the one `/readyz` reads
    /// (the same, as in every process).
    fn supervisor() -> (Supervisor, LoopHealth, LoopHealth) {
        let health = LoopHealth::new();
        let clock = Clock::starting_at(
            chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default(),
        );
        (
            Supervisor::new(health.clone(), clock),
            health.clone(),
            health,
        )
    }

    fn restarts(metrics: &LoopHealth, name: &str) -> Option<String> {
        let prefix = format!("berth_control_loop_restarts_total{{loop=\"{name}\"}} ");
        metrics
            .render_metrics()
            .lines()
            .find_map(|l| l.strip_prefix(&prefix).map(str::to_string))
    }

    /// A loop that counts a tick each second, forever.
    async fn tick_forever(ticks: Arc<AtomicU32>) {
        loop {
            ticks.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// A loop that panics at once.
    async fn panics() {
        panic!("boom")
    }

    /// Lets spawned tasks run up to their next wait.
    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_loop_that_panics_twice_is_restarted_twice_with_back_off_and_readiness_follows() {
        let (supervisor, metrics, health) = supervisor();
        let starts = Arc::new(AtomicU32::new(0));
        let counted = starts.clone();
        let task = supervisor.spawn("taint-manager", move || {
            let n = counted.fetch_add(1, Ordering::SeqCst);
            async move {
                if n < 2 {
                    panic!("TimeDelta::seconds out of bounds");
                }
                std::future::pending::<()>().await;
            }
        });
        settle().await;
        // The first run panicked at once: down, waiting 1s.
        assert_eq!(starts.load(Ordering::SeqCst), 1);
        assert_eq!(health.failing(), ["taint-manager"]);
        assert_eq!(restarts(&metrics, "taint-manager"), None);
        tokio::time::sleep(INITIAL_BACKOFF).await;
        settle().await;
        // Restarted once, panicked again: now waiting 2s.
        assert_eq!(starts.load(Ordering::SeqCst), 2);
        assert_eq!(restarts(&metrics, "taint-manager").as_deref(), Some("1"));
        assert!(!health.healthy());
        tokio::time::sleep(INITIAL_BACKOFF).await;
        settle().await;
        assert_eq!(
            starts.load(Ordering::SeqCst),
            2,
            "the second back-off is twice the first"
        );
        tokio::time::sleep(INITIAL_BACKOFF).await;
        settle().await;
        // The third run keeps running: up again, two restarts counted.
        assert_eq!(starts.load(Ordering::SeqCst), 3);
        assert_eq!(restarts(&metrics, "taint-manager").as_deref(), Some("2"));
        assert!(health.healthy());
        task.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn a_loop_that_returns_is_restarted_and_the_back_off_is_capped() {
        let (supervisor, metrics, _health) = supervisor();
        let starts = Arc::new(AtomicU32::new(0));
        let counted = starts.clone();
        let _task = supervisor.spawn("job-controller", move || {
            counted.fetch_add(1, Ordering::SeqCst);
            async {}
        });
        // 1 + 2 + 4 + 8 + 16 + 32 + 60 + 60 seconds: eight restarts.
        tokio::time::sleep(Duration::from_secs(190)).await;
        settle().await;
        assert_eq!(starts.load(Ordering::SeqCst), 9);
        assert_eq!(restarts(&metrics, "job-controller").as_deref(), Some("8"));
    }

    #[tokio::test(start_paused = true)]
    async fn aborting_the_supervisor_stops_its_loop() {
        let (supervisor, _metrics, _health) = supervisor();
        let alive = Arc::new(AtomicU32::new(0));
        let flag = alive.clone();
        let task = supervisor.spawn("podgc", move || tick_forever(flag.clone()));
        tokio::time::sleep(Duration::from_millis(1500)).await;
        task.abort();
        settle().await;
        let seen = alive.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert_eq!(alive.load(Ordering::SeqCst), seen);
    }

    /// A driver like the scheduler's: it returns a `Result`, and its error is a stop too.
    async fn scheduler_like(attempt: u32) -> Result<(), String> {
        match attempt {
            0 => panic!("index out of bounds: the len is 0 but the index is 0"),
            1 => Err("the pod watch ended".to_string()),
            _ => std::future::pending().await,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_scheduler_like_driver_that_panics_then_fails_is_restarted_and_readiness_follows() {
        let (supervisor, metrics, health) = supervisor();
        let starts = Arc::new(AtomicU32::new(0));
        let counted = starts.clone();
        let task = supervisor.spawn(String::from("scheduler"), move || {
            scheduler_like(counted.fetch_add(1, Ordering::SeqCst))
        });
        settle().await;
        assert_eq!(health.failing(), ["scheduler"]);
        tokio::time::sleep(INITIAL_BACKOFF).await;
        settle().await;
        // Restarted; its error stopped it again: still down.
        assert_eq!(starts.load(Ordering::SeqCst), 2);
        assert_eq!(health.failing(), ["scheduler"]);
        tokio::time::sleep(INITIAL_BACKOFF * 2).await;
        settle().await;
        assert_eq!(starts.load(Ordering::SeqCst), 3);
        assert!(health.healthy());
        assert_eq!(restarts(&metrics, "scheduler").as_deref(), Some("2"));
        task.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn a_loop_stopped_on_purpose_while_down_is_no_longer_reported_down() {
        let (supervisor, _metrics, health) = supervisor();
        let task = supervisor.spawn("descheduler", panics);
        settle().await;
        assert!(!health.healthy());
        // A leadership term ends: its supervisors are aborted while the loop waits.
        task.abort();
        settle().await;
        assert!(health.healthy());
    }
}
