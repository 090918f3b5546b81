//! Keeps control loops running: each loop is started from a factory, and when it stops
//! (panics, or returns) the supervisor logs it with the loop's name, counts it in
//! `berth_control_loop_restarts_total{loop}`, marks it down in the shared
//! [`LoopHealth`] (so `/readyz` fails) and starts it again after an exponential back-off on
//! tokio's clock. A loop that panics on some input therefore never stays dead silently.

use crate::metrics::ControllerMetrics;
use berth_core::clock::Clock;
use berth_core::loop_health::LoopHealth;
use std::future::Future;
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

/// Starts control loops and restarts them when they stop. Cloning shares the metrics and the
/// health handle.
#[derive(Clone, Debug)]
pub struct Supervisor {
    metrics: ControllerMetrics,
    health: LoopHealth,
    clock: Clock,
}

impl Supervisor {
    /// A supervisor counting restarts in `metrics` and reporting down loops to `health`,
    /// timing its back-off on `clock` (tokio's: a paused runtime advances it).
    pub fn new(metrics: ControllerMetrics, health: LoopHealth, clock: Clock) -> Supervisor {
        Supervisor {
            metrics,
            health,
            clock,
        }
    }

    /// Runs the loop `make()` builds under the name `name` (as logs and `/metrics` show it),
    /// building and starting a fresh one each time it stops. The returned task supervises
    /// until aborted, which also aborts the running loop.
    pub fn spawn<F, Fut>(&self, name: &'static str, mut make: F) -> tokio::task::JoinHandle<()>
    where
        F: FnMut() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let this = self.clone();
        tokio::spawn(async move {
            let mut backoff = INITIAL_BACKOFF;
            loop {
                this.health.up(name);
                let started = this.clock.instant();
                let mut running = AbortOnDrop(tokio::spawn(make()));
                let stopped = (&mut running.0).await;
                let ran = this.clock.instant().saturating_duration_since(started);
                this.health.down(name);
                match stopped {
                    Err(e) if e.is_cancelled() => return,
                    Err(e) => {
                        let panic = panic_message(e.into_panic());
                        tracing::error!(%name, %panic, ?backoff, "control loop panicked; restarting it after a back-off");
                    }
                    Ok(()) => {
                        tracing::error!(%name, ?backoff, "control loop returned; restarting it after a back-off");
                    }
                }
                if ran >= RESET_BACKOFF_AFTER {
                    backoff = INITIAL_BACKOFF;
                }
                tokio::time::sleep(backoff).await;
                this.metrics.loop_restarted(name);
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        })
    }
}

/// Aborts the task when dropped, so aborting the supervisor stops its loop too.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
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
    use std::sync::Arc;

    fn supervisor() -> (Supervisor, ControllerMetrics, LoopHealth) {
        let metrics = ControllerMetrics::new();
        let health = LoopHealth::new();
        let clock = Clock::starting_at(
            chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default(),
        );
        (
            Supervisor::new(metrics.clone(), health.clone(), clock),
            metrics,
            health,
        )
    }

    fn restarts(metrics: &ControllerMetrics, name: &str) -> Option<String> {
        let prefix = format!("berth_control_loop_restarts_total{{loop=\"{name}\"}} ");
        metrics
            .render()
            .lines()
            .find_map(|l| l.strip_prefix(&prefix).map(str::to_string))
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
        let task = supervisor.spawn("podgc", move || {
            let flag = flag.clone();
            async move {
                loop {
                    flag.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        });
        tokio::time::sleep(Duration::from_millis(1500)).await;
        task.abort();
        settle().await;
        let seen = alive.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert_eq!(alive.load(Ordering::SeqCst), seen);
    }
}
