//! The `Retry-After` of a rejected request, as upstream's `droppedRequestsTracker`: one value per
//! priority level, starting at 1 second, doubled (up to [`MAX_RETRY_AFTER`]) when the level
//! rejected at least three times as many requests per second of it in the last `retryAfter`
//! seconds, and lowered by one second when it rejected fewer than one per second, so clients back
//! off while a level is overloaded and come back quickly once it is not.
//!
//! Time is whole seconds since the API server started, passed in by the caller.

use std::collections::VecDeque;

/// Upstream's ceiling of `Retry-After`, in seconds.
pub const MAX_RETRY_AFTER: u64 = 32;

/// The rejections of one priority level.
#[derive(Debug, Clone)]
pub struct RetryAfter {
    /// Rejections per past second, oldest first, at most [`MAX_RETRY_AFTER`] seconds back.
    history: VecDeque<(u64, u64)>,
    /// The second being counted and its rejections so far.
    current: (u64, u64),
    retry_after: u64,
    /// When `retry_after` was last raised.
    raised_at: Option<u64>,
}

impl Default for RetryAfter {
    fn default() -> Self {
        RetryAfter {
            history: VecDeque::new(),
            current: (0, 0),
            retry_after: 1,
            raised_at: None,
        }
    }
}

impl RetryAfter {
    /// The `Retry-After` to send now, in seconds.
    pub fn get(&self) -> u64 {
        self.retry_after
    }

    /// Counts a rejection at second `now`.
    pub fn record(&mut self, now: u64) {
        if self.current.0 == now && self.current.1 > 0 {
            self.current.1 += 1;
            return;
        }
        if self.current.1 > 0 {
            self.history.push_back(self.current);
        }
        while self
            .history
            .front()
            .is_some_and(|&(t, _)| now.saturating_sub(t) > MAX_RETRY_AFTER)
        {
            self.history.pop_front();
        }
        self.current = (now, 1);
        self.update(now);
    }

    /// Recomputes the value from the seconds before `now`, when a new second starts.
    fn update(&mut self, now: u64) {
        let window = self.retry_after;
        let rejected: u64 = self
            .history
            .iter()
            .filter(|&&(t, _)| t < now && now - t <= window)
            .map(|&(_, n)| n)
            .sum();
        let may_raise = self
            .raised_at
            .is_none_or(|at| now.saturating_sub(at) >= window);
        if may_raise && rejected >= 3 * window {
            self.retry_after = (window * 2).min(MAX_RETRY_AFTER);
            self.raised_at = Some(now);
        } else if rejected < window && window > 1 {
            self.retry_after = window - 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_starts_at_one_second() {
        let mut r = RetryAfter::default();
        assert_eq!(r.get(), 1);
        r.record(10);
        assert_eq!(r.get(), 1);
    }

    #[test]
    fn a_burst_of_rejections_doubles_it_up_to_the_ceiling_and_quiet_lowers_it() {
        let mut r = RetryAfter::default();
        let mut now = 100;
        for _ in 0..40 {
            for _ in 0..200 {
                r.record(now);
            }
            now += 1;
        }
        assert_eq!(r.get(), MAX_RETRY_AFTER);
        // One rejection a minute: each lowers it by a second.
        let before = r.get();
        for _ in 0..5 {
            now += 60;
            r.record(now);
        }
        assert_eq!(r.get(), before - 5);
    }
}
