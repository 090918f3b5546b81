//! Which revision the compactor may forget up to when history is kept for a time.

use std::collections::VecDeque;
use std::time::Duration;
use tokio::time::Instant;

/// The store's revision at each compaction tick, oldest first: what "the revision of `age`
/// ago" was. Marks older than the age are dropped as they are used, so it holds at most
/// one mark per tick within the age.
#[derive(Debug, Default)]
pub struct Ages {
    marks: VecDeque<(Instant, i64)>,
}

impl Ages {
    /// Remembers the store's `revision` at `now`.
    pub fn mark(&mut self, now: Instant, revision: i64) {
        self.marks.push_back((now, revision));
    }

    /// The newest revision marked at least `age` before `now` (0 if none), forgetting the
    /// marks up to it: everything at or below it is older than `age`.
    pub fn older_than(&mut self, now: Instant, age: Duration) -> i64 {
        let mut revision = 0;
        while let Some(&(at, rev)) = self.marks.front() {
            if now.duration_since(at) < age {
                break;
            }
            revision = rev;
            self.marks.pop_front();
        }
        revision
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_older_than_the_age_is_given_up_and_newer_history_is_kept() {
        let age = Duration::from_secs(300);
        let mut ages = Ages::default();
        let start = berth_core::clock::Clock::system().instant();
        assert_eq!(ages.older_than(start, age), 0, "nothing marked yet");
        ages.mark(start, 10);
        ages.mark(start + Duration::from_secs(200), 20);
        assert_eq!(ages.older_than(start + Duration::from_secs(299), age), 0);
        assert_eq!(ages.older_than(start + Duration::from_secs(300), age), 10);
        assert_eq!(
            ages.older_than(start + Duration::from_secs(400), age),
            0,
            "forgotten"
        );
        assert_eq!(ages.older_than(start + Duration::from_secs(500), age), 20);
        assert!(ages.marks.is_empty());
    }
}
