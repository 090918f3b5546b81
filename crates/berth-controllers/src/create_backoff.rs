//! Back-off for workload objects whose pod creates were refused (403 from RBAC or admission,
//! 422, quota), as upstream's controllers requeue them: the workqueue's `AddRateLimited` with
//! the per-item exponential limiter (5 ms, doubling, at most 1000 s) and `Forget` after a pass
//! that succeeds. Without it a refused set would wait for its next watch event, which may
//! never come once the cause (a missing binding, a quota) is lifted elsewhere.
//!
//! A change to the object itself (a new `resourceVersion`) retries at once, as upstream's
//! update handler adds the key to the queue without waiting.

use chrono::{DateTime, Duration, Utc};
use std::collections::BTreeMap;

/// The first retry's delay (upstream `DefaultControllerRateLimiter`'s base).
pub const BASE_DELAY: Duration = Duration::milliseconds(5);
/// The longest delay between retries.
pub const MAX_DELAY: Duration = Duration::seconds(1000);

/// The event reason of a refused create (upstream `FailedCreatePodReason`).
pub const FAILED_CREATE: &str = "FailedCreate";

/// The delay before the retry that follows `failures` earlier failures (0 for the first).
pub fn delay(failures: u32) -> Duration {
    // 5 ms * 2^18 is past 1000 s already: larger exponents only risk overflow.
    let factor = 1i64 << failures.min(20);
    (BASE_DELAY * factor as i32).min(MAX_DELAY)
}

/// Per object (by uid): how often its creates failed in a row, and when it may try again.
#[derive(Debug, Default)]
pub struct CreateBackoff {
    items: BTreeMap<String, Item>,
}

#[derive(Debug)]
struct Item {
    failures: u32,
    retry_at: DateTime<Utc>,
    /// The object's `resourceVersion` when it failed: a newer one retries at once.
    version: Option<String>,
    /// Whether the retry is still ahead: the loop must wake for it even if its time has
    /// already passed while the pass was running.
    waiting: bool,
}

impl CreateBackoff {
    /// Whether the object may create pods now: it never failed, its delay has passed, or it
    /// changed since. A yes is its retry: the loop need not wake for it again.
    pub fn may_create(&mut self, uid: &str, version: Option<&str>, now: DateTime<Utc>) -> bool {
        let Some(item) = self.items.get_mut(uid) else {
            return true;
        };
        let may = now >= item.retry_at || item.version.as_deref() != version;
        if may {
            item.waiting = false;
        }
        may
    }

    /// Records a refused create; returns when the object may try again.
    pub fn failed(
        &mut self,
        uid: &str,
        version: Option<&str>,
        now: DateTime<Utc>,
    ) -> DateTime<Utc> {
        let item = self.items.entry(uid.to_string()).or_insert(Item {
            failures: 0,
            retry_at: now,
            version: None,
            waiting: true,
        });
        item.retry_at = now + delay(item.failures);
        item.failures = item.failures.saturating_add(1);
        item.version = version.map(str::to_string);
        item.waiting = true;
        item.retry_at
    }

    /// Forgets the object's failures (a pass without a refused create).
    pub fn forget(&mut self, uid: &str) {
        self.items.remove(uid);
    }

    /// How many creates of the object failed in a row.
    pub fn failures(&self, uid: &str) -> u32 {
        self.items.get(uid).map_or(0, |i| i.failures)
    }

    /// The earliest retry not yet made: when the loop must wake (at once when it is past).
    pub fn next_retry(&self) -> Option<DateTime<Utc>> {
        self.items
            .values()
            .filter(|i| i.waiting)
            .map(|i| i.retry_at)
            .min()
    }

    /// Forgets objects that are gone.
    pub fn retain(&mut self, live: impl Fn(&str) -> bool) {
        self.items.retain(|uid, _| live(uid));
    }
}

/// The `FailedCreate` message of the pod controllers (upstream `controller_utils.go`).
pub fn error_creating(error: &kube::Error) -> String {
    format!("Error creating: {}", api_message(error))
}

/// What the API server said, as Go's `%v` of a `StatusError` prints it: its message.
pub fn api_message(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(e) => e.message.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_ms(ms: i64) -> DateTime<Utc> {
        DateTime::<Utc>::from_timestamp(1_700_000_000, 0).unwrap() + Duration::milliseconds(ms)
    }

    #[test]
    fn the_delay_starts_at_5ms_and_doubles_up_to_1000s() {
        assert_eq!(delay(0), Duration::milliseconds(5));
        assert_eq!(delay(1), Duration::milliseconds(10));
        assert_eq!(delay(10), Duration::milliseconds(5 * 1024));
        assert_eq!(delay(17), Duration::milliseconds(655_360));
        assert_eq!(delay(18), MAX_DELAY);
        assert_eq!(delay(u32::MAX), MAX_DELAY);
    }

    #[test]
    fn an_object_that_never_failed_may_create() {
        let mut b = CreateBackoff::default();
        assert!(b.may_create("rs", Some("1"), at_ms(0)));
        assert_eq!(b.next_retry(), None);
    }

    #[test]
    fn a_refused_object_waits_for_its_delay_which_doubles() {
        let mut b = CreateBackoff::default();
        assert_eq!(b.failed("rs", Some("1"), at_ms(0)), at_ms(5));
        assert!(!b.may_create("rs", Some("1"), at_ms(4)));
        assert_eq!(b.next_retry(), Some(at_ms(5)));
        assert!(b.may_create("rs", Some("1"), at_ms(5)));
        assert_eq!(b.next_retry(), None, "retried: nothing to wake for");
        assert_eq!(b.failed("rs", Some("1"), at_ms(5)), at_ms(15));
        assert_eq!(b.failed("rs", Some("1"), at_ms(15)), at_ms(35));
        assert_eq!(b.failures("rs"), 3);
    }

    #[test]
    fn a_changed_object_retries_at_once() {
        let mut b = CreateBackoff::default();
        b.failed("rs", Some("1"), at_ms(0));
        assert!(b.may_create("rs", Some("2"), at_ms(1)));
    }

    #[test]
    fn success_forgets_the_failures() {
        let mut b = CreateBackoff::default();
        b.failed("rs", Some("1"), at_ms(0));
        b.failed("rs", Some("1"), at_ms(5));
        b.forget("rs");
        assert_eq!(b.failures("rs"), 0);
        assert_eq!(b.failed("rs", Some("1"), at_ms(100)), at_ms(105));
    }

    #[test]
    fn the_loop_wakes_for_the_earliest_retry_not_yet_made_even_if_past() {
        let mut b = CreateBackoff::default();
        b.failed("a", None, at_ms(0));
        b.failed("a", None, at_ms(0));
        b.failed("b", None, at_ms(0));
        assert_eq!(b.next_retry(), Some(at_ms(5)));
        assert!(b.may_create("b", None, at_ms(5)));
        assert_eq!(b.next_retry(), Some(at_ms(10)));
        b.retain(|uid| uid == "b");
        assert_eq!(b.next_retry(), None);
    }
}
