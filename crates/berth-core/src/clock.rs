//! Wall time for components (DESIGN.md: time is injected), derived from tokio's clock so that a paused,
//! auto-advancing runtime (`berth simulate`, tests) moves it too.
//!
//! This is the one module that reads the system clock: `clippy.toml` bans `Utc::now`,
//! `SystemTime::now`, `Instant::now` and `thread::sleep` everywhere else. Components take a
//! [`Clock`]; benchmarks, which measure real elapsed time on purpose, use a [`Stopwatch`].

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use tokio::time::Instant;

/// The longest wait a [`Clock`] schedules at once: about 30 years, tokio's own "far future".
/// A deadline further out (a toleration or grace period of `i64::MAX` seconds) waits this long
/// instead of overflowing tokio's instant; the loop that waits re-checks when it wakes anyway.
pub const FAR_FUTURE: std::time::Duration = std::time::Duration::from_secs(86_400 * 365 * 30);

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
    /// Saturates at [`FAR_FUTURE`] from now, so no user-given number can overflow it.
    pub fn instant_after(&self, cluster: std::time::Duration) -> Instant {
        let now = tokio_now();
        let wait = self.tokio_duration(cluster).min(FAR_FUTURE);
        now.checked_add(wait).unwrap_or(now)
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

/// The earliest time saturating arithmetic yields: `0000-01-01T00:00:00Z`, the first time
/// Kubernetes can write as a `Time` (RFC 3339 has four-digit years).
pub fn earliest() -> DateTime<Utc> {
    DateTime::from_timestamp(EARLIEST_SECONDS, 0).unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// The latest time saturating arithmetic yields: `9999-12-31T23:59:59Z`, the last time
/// Kubernetes can write as a `Time` (Go's encoder refuses five-digit years), so a saturated
/// deadline can still be stored and read back by every client.
pub fn latest() -> DateTime<Utc> {
    DateTime::from_timestamp(LATEST_SECONDS, 0).unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// Unix seconds of [`earliest`].
const EARLIEST_SECONDS: i64 = -62_167_219_200;
/// Unix seconds of [`latest`].
const LATEST_SECONDS: i64 = 253_402_300_799;

/// `secs` seconds as a duration, saturating at [`TimeDelta::MIN`]/[`TimeDelta::MAX`] instead of
/// panicking as `TimeDelta::seconds` does beyond ±`i64::MAX` milliseconds: how every number
/// of seconds a user wrote (`tolerationSeconds`, `activeDeadlineSeconds`,
/// `gracePeriodSeconds`, ...) becomes a duration.
pub fn seconds(secs: i64) -> TimeDelta {
    TimeDelta::try_seconds(secs).unwrap_or(if secs < 0 {
        TimeDelta::MIN
    } else {
        TimeDelta::MAX
    })
}

/// `t + d`, saturating at [`earliest`] and [`latest`] instead of panicking on overflow.
pub fn add(t: DateTime<Utc>, d: TimeDelta) -> DateTime<Utc> {
    let sum = t.checked_add_signed(d).unwrap_or(if d < TimeDelta::zero() {
        earliest()
    } else {
        latest()
    });
    sum.clamp(earliest(), latest())
}

/// `t - d`, saturating at [`earliest`] and [`latest`] instead of panicking on overflow.
pub fn sub(t: DateTime<Utc>, d: TimeDelta) -> DateTime<Utc> {
    // `TimeDelta::MIN` is `-TimeDelta::MAX`, so negation cannot overflow.
    add(t, -d)
}

/// `t` plus `secs` seconds, saturating: [`add`] of [`seconds`].
pub fn add_seconds(t: DateTime<Utc>, secs: i64) -> DateTime<Utc> {
    add(t, seconds(secs))
}

/// `secs` seconds as a wait: zero if negative, at most [`FAR_FUTURE`].
pub fn wait_seconds(secs: i64) -> std::time::Duration {
    std::time::Duration::from_secs(secs.max(0).unsigned_abs()).min(FAR_FUTURE)
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

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(secs, 0).unwrap_or_default()
    }

    #[test]
    fn seconds_saturate_instead_of_panicking() {
        assert_eq!(seconds(90), TimeDelta::seconds(90));
        assert_eq!(seconds(-90), TimeDelta::seconds(-90));
        assert_eq!(seconds(i64::MAX), TimeDelta::MAX);
        assert_eq!(seconds(i64::MIN), TimeDelta::MIN);
    }

    #[test]
    fn adding_to_a_time_saturates_at_the_years_kubernetes_can_write() {
        let now = at(1_700_000_000);
        let cases = [
            ("a small number adds", 60, "2023-11-14T22:14:20Z"),
            (
                "i64::MAX stops at the last writable second",
                i64::MAX,
                "9999-12-31T23:59:59Z",
            ),
            (
                "i64::MIN stops at the first writable second",
                i64::MIN,
                "0000-01-01T00:00:00Z",
            ),
            (
                "a sum past year 9999 stops there",
                300_000_000_000,
                "9999-12-31T23:59:59Z",
            ),
        ];
        for (name, secs, want) in cases {
            assert_eq!(timestamp(add_seconds(now, secs)), want, "{name}");
        }
        assert_eq!(
            timestamp(sub(now, seconds(i64::MAX))),
            "0000-01-01T00:00:00Z"
        );
        assert_eq!(
            timestamp(sub(now, seconds(i64::MIN))),
            "9999-12-31T23:59:59Z"
        );
        assert_eq!(add(now, TimeDelta::MAX), latest());
        assert_eq!(add(now, TimeDelta::MIN), earliest());
    }

    #[test]
    fn waits_are_never_negative_nor_beyond_the_far_future() {
        assert_eq!(wait_seconds(-5), std::time::Duration::ZERO);
        assert_eq!(wait_seconds(i64::MIN), std::time::Duration::ZERO);
        assert_eq!(wait_seconds(7), std::time::Duration::from_secs(7));
        assert_eq!(wait_seconds(i64::MAX), FAR_FUTURE);
    }

    #[tokio::test(start_paused = true)]
    async fn an_instant_after_an_enormous_wait_is_the_far_future() {
        let clock = Clock::starting_at(at(1_700_000_000));
        let far = clock.instant_after(std::time::Duration::MAX);
        assert_eq!(far - tokio_now(), FAR_FUTURE);
        let year_9999 = clock.instant_at(latest());
        assert_eq!(year_9999 - tokio_now(), FAR_FUTURE);
    }

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
