//! Wall time for components (DESIGN.md: time is injected), derived from tokio's clock so that a paused,
//! auto-advancing runtime (`berth simulate`, tests) moves it too.

use chrono::{DateTime, SecondsFormat, Utc};
use tokio::time::Instant;

/// Wall time anchored once, advanced by tokio's monotonic clock.
#[derive(Clone, Debug)]
pub struct Clock {
    base_wall: DateTime<Utc>,
    base_instant: Instant,
}

impl Clock {
    /// Anchors the clock at `wall` now.
    pub fn starting_at(wall: DateTime<Utc>) -> Clock {
        Clock {
            base_wall: wall,
            base_instant: Instant::now(),
        }
    }

    /// The current wall time.
    pub fn now(&self) -> DateTime<Utc> {
        let elapsed = Instant::now().saturating_duration_since(self.base_instant);
        self.base_wall + chrono::Duration::from_std(elapsed).unwrap_or_default()
    }

    /// The current time as Kubernetes writes timestamps (`2026-11-22T19:59:15Z`).
    pub fn timestamp(&self) -> String {
        self.now().to_rfc3339_opts(SecondsFormat::Secs, true)
    }

    /// Micro-second timestamps (`MicroTime`), used by leases and events.k8s.io.
    pub fn micro_timestamp(&self) -> String {
        self.now().to_rfc3339_opts(SecondsFormat::Micros, true)
    }

    /// The tokio instant at which the wall clock reads `at` (now, if `at` is past).
    pub fn instant_at(&self, at: DateTime<Utc>) -> Instant {
        let now = self.now();
        let ahead = (at - now).to_std().unwrap_or_default();
        Instant::now() + ahead
    }
}
