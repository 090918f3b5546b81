//! Wall time for components (DESIGN.md: time is injected), derived from tokio's clock so that a paused,
//! auto-advancing runtime (`berth simulate`, tests) moves it too.
//!
//! This is the one module that reads the system clock: `clippy.toml` bans `Utc::now`,
//! `SystemTime::now`, `Instant::now` and `thread::sleep` everywhere else. Components take a
//! [`Clock`]; benchmarks, which measure real elapsed time on purpose, use a [`Stopwatch`].

use chrono::{DateTime, SecondsFormat, Utc};
use tokio::time::Instant;

/// Wall time anchored once, advanced by tokio's monotonic clock, `speed` times as fast when
/// accelerated (`berth serve --time-scale`), so that minutes of cluster time (CronJob schedules,
/// tolerationSeconds, TTLs) pass in seconds. Components wait with [`Clock::sleep`],
/// [`Clock::interval`] and [`Clock::instant_at`], which take cluster durations and times.
#[derive(Clone, Debug)]
pub struct Clock {
    base_wall: DateTime<Utc>,
    base_instant: Instant,
    speed: u32,
}

impl Clock {
    /// Anchors the clock at `wall` now.
    pub fn starting_at(wall: DateTime<Utc>) -> Clock {
        Clock {
            base_wall: wall,
            base_instant: tokio_now(),
            speed: 1,
        }
    }

    /// This clock, from now on running `speed` times as fast as tokio's (at least 1).
    pub fn accelerated(&self, speed: u32) -> Clock {
        Clock {
            base_wall: self.now(),
            base_instant: tokio_now(),
            speed: speed.max(1),
        }
    }

    /// How many cluster seconds pass per second of tokio's clock.
    pub fn speed(&self) -> u32 {
        self.speed
    }

    /// Anchors the clock at the system's wall time now: how a process starts its clock.
    pub fn system() -> Clock {
        // The process's one reading of the system wall clock; everything after follows tokio.
        #[allow(clippy::disallowed_methods)]
        let wall = Utc::now();
        Clock::starting_at(wall)
    }

    /// The current wall time.
    pub fn now(&self) -> DateTime<Utc> {
        let elapsed = tokio_now().saturating_duration_since(self.base_instant);
        let cluster = elapsed.saturating_mul(self.speed);
        self.base_wall + chrono::Duration::from_std(cluster).unwrap_or_default()
    }

    /// The current monotonic instant, for deadlines and timers (tokio's clock: paused with it).
    /// Instants are tokio's: add cluster durations with [`Clock::instant_after`].
    pub fn instant(&self) -> Instant {
        tokio_now()
    }

    /// The tokio duration that `cluster` of cluster time takes.
    pub fn tokio_duration(&self, cluster: std::time::Duration) -> std::time::Duration {
        cluster / self.speed
    }

    /// The tokio instant `cluster` of cluster time from now.
    pub fn instant_after(&self, cluster: std::time::Duration) -> Instant {
        tokio_now() + self.tokio_duration(cluster)
    }

    /// Waits `cluster` of cluster time.
    pub async fn sleep(&self, cluster: std::time::Duration) {
        tokio::time::sleep(self.tokio_duration(cluster)).await;
    }

    /// Ticks every `period` of cluster time, the first tick at once (as `tokio::time::interval`).
    pub fn interval(&self, period: std::time::Duration) -> tokio::time::Interval {
        tokio::time::interval(
            self.tokio_duration(period)
                .max(std::time::Duration::from_millis(1)),
        )
    }

    /// The current time as Kubernetes writes timestamps (`2026-11-22T19:59:15Z`).
    pub fn timestamp(&self) -> String {
        timestamp(self.now())
    }

    /// Micro-second timestamps (`MicroTime`), used by leases and events.k8s.io.
    pub fn micro_timestamp(&self) -> String {
        micro_timestamp(self.now())
    }

    /// The tokio instant at which the wall clock reads `at` (now, if `at` is past).
    pub fn instant_at(&self, at: DateTime<Utc>) -> Instant {
        let now = self.now();
        let ahead = (at - now).to_std().unwrap_or_default();
        self.instant_after(ahead)
    }
}

/// `t` as Kubernetes writes `Time` (`2026-11-22T19:59:15Z`, whole seconds).
pub fn timestamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// `t` as Kubernetes writes `MicroTime` (`2026-11-22T19:59:15.123456Z`).
pub fn micro_timestamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// Real elapsed time, for benchmarks and load generators that measure the machine, not the
/// simulation (a paused runtime does not stop it).
#[derive(Clone, Copy, Debug)]
pub struct Stopwatch {
    started: std::time::Instant,
}

impl Stopwatch {
    /// Starts measuring now.
    pub fn start() -> Stopwatch {
        Stopwatch {
            started: real_now(),
        }
    }

    /// Time since the start.
    pub fn elapsed(&self) -> std::time::Duration {
        self.started.elapsed()
    }

    /// The real instant it started at.
    pub fn started(&self) -> std::time::Instant {
        self.started
    }

    /// The real instant now, for measurements that keep many timestamps (per-request latency).
    pub fn now() -> std::time::Instant {
        real_now()
    }
}

/// Tokio's clock: the clock every [`Clock`] follows.
#[allow(clippy::disallowed_methods)]
fn tokio_now() -> Instant {
    Instant::now()
}

/// The machine's monotonic clock, for [`Stopwatch`] only.
#[allow(clippy::disallowed_methods)]
fn real_now() -> std::time::Instant {
    std::time::Instant::now()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_paused_runtime_moves_the_wall_clock() {
        let start = DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default();
        let clock = Clock::starting_at(start);
        assert_eq!(clock.timestamp(), "2023-11-14T22:13:20Z");
        tokio::time::sleep(std::time::Duration::from_secs(90)).await;
        assert_eq!(clock.timestamp(), "2023-11-14T22:14:50Z");
        assert_eq!(clock.micro_timestamp(), "2023-11-14T22:14:50.000000Z");
    }

    #[tokio::test(start_paused = true)]
    async fn an_accelerated_clock_runs_its_waits_faster_by_its_speed() {
        let start = DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default();
        let clock = Clock::starting_at(start).accelerated(60);
        let begun = tokio_now();
        clock.sleep(std::time::Duration::from_secs(120)).await;
        assert_eq!(tokio_now() - begun, std::time::Duration::from_secs(2));
        assert_eq!(clock.timestamp(), "2023-11-14T22:15:20Z");
        let in_a_minute = clock.now() + chrono::Duration::seconds(60);
        assert_eq!(
            clock.instant_at(in_a_minute) - tokio_now(),
            std::time::Duration::from_secs(1)
        );
        let mut tick = clock.interval(std::time::Duration::from_secs(30));
        tick.tick().await;
        tick.tick().await;
        assert_eq!(clock.timestamp(), "2023-11-14T22:15:50Z");
    }
}
