//! The controllers' notion of wall time, derived from tokio's clock so that a paused,
//! auto-advancing runtime (`berth simulate`, tests) moves it too.

use chrono::{DateTime, Utc};
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

    /// The tokio instant at which the wall clock reads `at` (now, if `at` is past).
    pub fn instant_at(&self, at: DateTime<Utc>) -> Instant {
        let now = self.now();
        let ahead = (at - now).to_std().unwrap_or_default();
        Instant::now() + ahead
    }
}
