//! The scheduling queue: which pending pod the scheduler tries next, and when a pod that
//! failed is tried again (scheduler spec §8, the three-queue design berth adopts).
//!
//! * **active**: pods ready to be tried, highest pod priority first, then earliest arrival
//!   (the time the pod entered the queue, or its last failure).
//! * **backoff**: pods that failed and wait out their per-pod backoff, `1s × 2^(attempts−1)`
//!   capped at 10s; they move to active when it expires.
//! * **unschedulable**: pods that no node fits; they wait for a cluster event that may help
//!   them ([`SchedulingQueue::move_on_event`]) or at most `unschedulable_timeout` (60s), and then
//!   go to backoff if still backing off, else to active.
//!
//! A popped pod is *in flight*: the queue remembers it, and the driver reports the outcome with
//! [`SchedulingQueue::done`] (bound), [`SchedulingQueue::add_unschedulable`] (no node fits) or
//! [`SchedulingQueue::add_backoff`] (an error worth retrying). A pod deleted while in flight is
//! forgotten and its outcome ignored; a pod updated while in flight goes straight back to active
//! with its backoff reset, since the failure was computed on its old spec.
//!
//! The queue is a pure data structure: time is passed in as a [`Duration`] since any epoch the
//! driver chooses, and [`SchedulingQueue::next_ready_at`] tells the driver how long to sleep.
//! The same key is never in two places at once.
//!
//! ```
//! # use std::time::Duration;
//! # use berth_scheduler::queue::SchedulingQueue;
//! let s = Duration::from_secs;
//! let mut queue: SchedulingQueue<&str, ()> = SchedulingQueue::default();
//! queue.add("default/low", (), 0, s(0));
//! queue.add("default/high", (), 1000, s(1));
//! let pod = queue.pop(s(2)).unwrap();
//! assert_eq!(pod.key, "default/high");
//! queue.add_unschedulable(pod, s(2)); // no node fits
//! assert_eq!(queue.pop(s(3)).unwrap().key, "default/low");
//! assert!(queue.pop(s(3)).is_none());
//! // Without any cluster event, the unschedulable pod is retried after 60s.
//! assert_eq!(queue.next_ready_at(s(3)), Some(s(62)));
//! assert_eq!(queue.pop(s(62)).unwrap().key, "default/high");
//! ```

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};
use std::hash::Hash;
use std::time::Duration;

/// Timing of the queue. [`QueueConfig::default`] is upstream's (1s, 10s, 60s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueConfig {
    /// Backoff after the first failed attempt; doubled after each further failure.
    pub initial_backoff: Duration,
    /// The longest backoff.
    pub max_backoff: Duration,
    /// The longest a pod waits in the unschedulable set without a helpful event.
    pub unschedulable_timeout: Duration,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(10),
            unschedulable_timeout: Duration::from_secs(60),
        }
    }
}

impl QueueConfig {
    /// The backoff after `attempts` failed attempts: `initial × 2^(attempts−1)`, at most
    /// `max_backoff`; zero when nothing failed yet.
    pub fn backoff(&self, attempts: u32) -> Duration {
        if attempts == 0 {
            return Duration::ZERO;
        }
        let factor = 1u32.checked_shl(attempts - 1).unwrap_or(u32::MAX);
        self.initial_backoff
            .checked_mul(factor)
            .map_or(self.max_backoff, |d| d.min(self.max_backoff))
    }
}

/// A pod handed out by [`SchedulingQueue::pop`]; give it back with
/// [`SchedulingQueue::add_unschedulable`] or [`SchedulingQueue::add_backoff`] if the attempt fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedPod<K, P> {
    /// The pod's key (for instance namespace/name).
    pub key: K,
    /// The pod as the queue last saw it.
    pub payload: P,
    /// The pod's priority (`spec.priority`).
    pub priority: i32,
    /// Failed attempts so far (before this one).
    pub attempts: u32,
    /// The scheduling cycle this attempt belongs to (counts pops from 1).
    pub cycle: u64,
}

/// Where a known pod is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// In the active queue.
    Active,
    /// In the backoff queue until `backoff_until`.
    Backoff,
    /// In the unschedulable set since the given time.
    Unschedulable(Duration),
    /// Popped; `updated` when an update arrived meanwhile.
    InFlight { updated: bool },
}

/// What the queue knows of one pod.
#[derive(Debug)]
struct Entry<P> {
    /// `None` only while in flight without an update (the driver holds the payload).
    payload: Option<P>,
    priority: i32,
    attempts: u32,
    /// Arrival, for the active order: when added, or when it last failed.
    enqueued_at: Duration,
    /// Tie-break among equal arrivals, and identity in the ordered sets.
    seq: u64,
    /// When the current backoff ends (zero if none).
    backoff_until: Duration,
    place: Place,
}

/// The scheduling queue over pods keyed by `K` carrying payload `P` (see the module docs).
#[derive(Debug)]
pub struct SchedulingQueue<K, P> {
    config: QueueConfig,
    entries: HashMap<K, Entry<P>>,
    active: BTreeSet<(Reverse<i32>, Duration, u64, K)>,
    backoff: BTreeSet<(Duration, u64, K)>,
    unschedulable: BTreeSet<(Duration, u64, K)>,
    next_seq: u64,
    scheduling_cycle: u64,
    move_request_cycle: u64,
}

impl<K: Clone + Eq + Hash + Ord, P> Default for SchedulingQueue<K, P> {
    fn default() -> Self {
        SchedulingQueue::new(QueueConfig::default())
    }
}

impl<K: Clone + Eq + Hash + Ord, P> SchedulingQueue<K, P> {
    /// An empty queue with the given timing.
    pub fn new(config: QueueConfig) -> Self {
        SchedulingQueue {
            config,
            entries: HashMap::new(),
            active: BTreeSet::new(),
            backoff: BTreeSet::new(),
            unschedulable: BTreeSet::new(),
            next_seq: 0,
            scheduling_cycle: 0,
            move_request_cycle: 0,
        }
    }

    /// The queue's timing.
    pub fn config(&self) -> &QueueConfig {
        &self.config
    }

    /// A new pending pod: into the active queue. A pod the queue already knows is updated instead.
    pub fn add(&mut self, key: K, payload: P, priority: i32, now: Duration) {
        if self.entries.contains_key(&key) {
            self.update(key, payload, priority, now);
            return;
        }
        let seq = self.seq();
        let entry = Entry {
            payload: Some(payload),
            priority,
            attempts: 0,
            enqueued_at: now,
            seq,
            backoff_until: Duration::ZERO,
            place: Place::Active,
        };
        self.active
            .insert((Reverse(priority), now, seq, key.clone()));
        self.entries.insert(key, entry);
    }

    /// A pending pod changed. The driver calls this only for changes that may affect
    /// scheduling (spec or metadata, not status alone). Active and backing-off pods are updated
    /// in place; an unschedulable pod goes to active with its backoff reset; an in-flight pod
    /// is marked so that a failure sends it to active; an unknown pod is added.
    pub fn update(&mut self, key: K, payload: P, priority: i32, now: Duration) {
        let Some(entry) = self.entries.get_mut(&key) else {
            self.add(key, payload, priority, now);
            return;
        };
        match entry.place {
            Place::Active => {
                self.active.remove(&(
                    Reverse(entry.priority),
                    entry.enqueued_at,
                    entry.seq,
                    key.clone(),
                ));
                self.active
                    .insert((Reverse(priority), entry.enqueued_at, entry.seq, key));
            }
            Place::Backoff => {}
            Place::Unschedulable(since) => {
                self.unschedulable.remove(&(since, entry.seq, key.clone()));
                entry.attempts = 0;
                entry.backoff_until = Duration::ZERO;
                entry.place = Place::Active;
                self.active
                    .insert((Reverse(priority), entry.enqueued_at, entry.seq, key));
            }
            Place::InFlight { .. } => entry.place = Place::InFlight { updated: true },
        }
        entry.payload = Some(payload);
        entry.priority = priority;
    }

    /// A pod was deleted (or bound by someone else): forget it wherever it is. Returns its
    /// payload if the queue held it.
    pub fn delete(&mut self, key: &K) -> Option<P> {
        let entry = self.entries.remove(key)?;
        match entry.place {
            Place::Active => {
                self.active.remove(&(
                    Reverse(entry.priority),
                    entry.enqueued_at,
                    entry.seq,
                    key.clone(),
                ));
            }
            Place::Backoff => {
                self.backoff
                    .remove(&(entry.backoff_until, entry.seq, key.clone()));
            }
            Place::Unschedulable(since) => {
                self.unschedulable.remove(&(since, entry.seq, key.clone()));
            }
            Place::InFlight { .. } => {}
        }
        entry.payload
    }

    /// The next pod to try: the highest-priority, earliest active pod, after moving completed
    /// backoffs and timed-out unschedulable pods to active. The pod is then in flight.
    pub fn pop(&mut self, now: Duration) -> Option<QueuedPod<K, P>> {
        self.flush_backoff_completed(now);
        self.flush_unschedulable_timeouts(now);
        loop {
            let (_, _, _, key) = self.active.pop_first()?;
            let Some(entry) = self.entries.get_mut(&key) else {
                continue;
            };
            let Some(payload) = entry.payload.take() else {
                continue;
            };
            self.scheduling_cycle += 1;
            entry.place = Place::InFlight { updated: false };
            return Some(QueuedPod {
                key,
                payload,
                priority: entry.priority,
                attempts: entry.attempts,
                cycle: self.scheduling_cycle,
            });
        }
    }

    /// The in-flight pod was bound: forget it. Returns whether it was in flight.
    pub fn done(&mut self, key: &K) -> bool {
        match self.entries.get(key) {
            Some(entry) if matches!(entry.place, Place::InFlight { .. }) => {
                self.entries.remove(key);
                true
            }
            _ => false,
        }
    }

    /// The attempt found no node for the pod. Its failed attempts are counted; it goes to
    /// backoff if a cluster event arrived since its cycle began (the event may have helped),
    /// otherwise to the unschedulable set. Returns false, dropping the pod, if it was deleted
    /// meanwhile or is not in flight.
    pub fn add_unschedulable(&mut self, pod: QueuedPod<K, P>, now: Duration) -> bool {
        let to_backoff = self.move_request_cycle >= pod.cycle;
        self.requeue_failed(pod, now, to_backoff)
    }

    /// The attempt failed for a reason worth retrying soon (an error, not a misfit): the pod
    /// counts a failed attempt and waits out its backoff. Returns false as
    /// [`SchedulingQueue::add_unschedulable`] does.
    pub fn add_backoff(&mut self, pod: QueuedPod<K, P>, now: Duration) -> bool {
        self.requeue_failed(pod, now, true)
    }

    /// Shared requeue of a failed in-flight pod.
    fn requeue_failed(&mut self, pod: QueuedPod<K, P>, now: Duration, to_backoff: bool) -> bool {
        let seq = self.seq();
        let Some(entry) = self.entries.get_mut(&pod.key) else {
            return false;
        };
        let Place::InFlight { updated } = entry.place else {
            return false;
        };
        entry.enqueued_at = now;
        entry.seq = seq;
        if updated {
            // The failure was computed on the old spec: retry the new one at once.
            entry.attempts = 0;
            entry.backoff_until = Duration::ZERO;
            entry.place = Place::Active;
            self.active
                .insert((Reverse(entry.priority), now, seq, pod.key));
            return true;
        }
        entry.payload = Some(pod.payload);
        entry.attempts = entry.attempts.saturating_add(1);
        entry.backoff_until = now + self.config.backoff(entry.attempts);
        if to_backoff {
            entry.place = Place::Backoff;
            self.backoff.insert((entry.backoff_until, seq, pod.key));
        } else {
            entry.place = Place::Unschedulable(now);
            self.unschedulable.insert((now, seq, pod.key));
        }
        true
    }

    /// A cluster event happened: every unschedulable pod for which `may_help` says the event
    /// may help goes to backoff (if still backing off) or active. Also records the event so that
    /// pods in flight now are retried after their failure instead of waiting for another event.
    /// Returns how many pods moved.
    pub fn move_on_event(&mut self, may_help: impl Fn(&P) -> bool, now: Duration) -> usize {
        self.move_request_cycle = self.scheduling_cycle;
        let chosen: Vec<(Duration, u64, K)> = self
            .unschedulable
            .iter()
            .filter(|(_, _, key)| {
                self.entries
                    .get(key)
                    .and_then(|e| e.payload.as_ref())
                    .is_some_and(&may_help)
            })
            .cloned()
            .collect();
        let moved = chosen.len();
        for item in chosen {
            self.unschedulable.remove(&item);
            self.leave_unschedulable(item.2, now);
        }
        moved
    }

    /// [`SchedulingQueue::move_on_event`] for an event that may help every pod.
    pub fn move_all_to_active_or_backoff(&mut self, now: Duration) -> usize {
        self.move_on_event(|_| true, now)
    }

    /// Moves pods whose backoff has ended to active. Returns how many moved.
    pub fn flush_backoff_completed(&mut self, now: Duration) -> usize {
        let mut moved = 0;
        while let Some((until, _, _)) = self.backoff.first() {
            if *until > now {
                break;
            }
            let Some((_, seq, key)) = self.backoff.pop_first() else {
                break;
            };
            if let Some(entry) = self.entries.get_mut(&key) {
                entry.place = Place::Active;
                self.active
                    .insert((Reverse(entry.priority), entry.enqueued_at, seq, key));
                moved += 1;
            }
        }
        moved
    }

    /// Moves pods that have been unschedulable for `unschedulable_timeout` or longer to backoff
    /// or active. Returns how many moved.
    pub fn flush_unschedulable_timeouts(&mut self, now: Duration) -> usize {
        let mut moved = 0;
        while let Some((since, _, _)) = self.unschedulable.first() {
            if *since + self.config.unschedulable_timeout > now {
                break;
            }
            let Some((_, _, key)) = self.unschedulable.pop_first() else {
                break;
            };
            self.leave_unschedulable(key, now);
            moved += 1;
        }
        moved
    }

    /// Places a pod just taken out of the unschedulable set.
    fn leave_unschedulable(&mut self, key: K, now: Duration) {
        let Some(entry) = self.entries.get_mut(&key) else {
            return;
        };
        if entry.backoff_until > now {
            entry.place = Place::Backoff;
            self.backoff.insert((entry.backoff_until, entry.seq, key));
        } else {
            entry.place = Place::Active;
            self.active
                .insert((Reverse(entry.priority), entry.enqueued_at, entry.seq, key));
        }
    }

    /// When [`SchedulingQueue::pop`] may next return a pod: `now` if one is ready, else the
    /// earliest backoff end or unschedulable timeout; `None` if nothing is pending.
    pub fn next_ready_at(&self, now: Duration) -> Option<Duration> {
        if !self.active.is_empty() {
            return Some(now);
        }
        let backoff = self.backoff.first().map(|(until, _, _)| *until);
        let timeout = self
            .unschedulable
            .first()
            .map(|(since, _, _)| *since + self.config.unschedulable_timeout);
        let next = match (backoff, timeout) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        next.map(|t| t.max(now))
    }

    /// Pending pods per queue: (active, backoff, unschedulable), as the
    /// `scheduler_pending_pods` metric reports them.
    pub fn pending_counts(&self) -> (usize, usize, usize) {
        (
            self.active.len(),
            self.backoff.len(),
            self.unschedulable.len(),
        )
    }

    /// Pending pods in all three queues (not counting pods in flight).
    pub fn len(&self) -> usize {
        self.active.len() + self.backoff.len() + self.unschedulable.len()
    }

    /// Whether no pod is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the queue knows the pod: pending in a queue or in flight.
    pub fn contains(&self, key: &K) -> bool {
        self.entries.contains_key(key)
    }

    /// Whether the pod was popped and its outcome not yet reported.
    pub fn is_in_flight(&self, key: &K) -> bool {
        self.entries
            .get(key)
            .is_some_and(|e| matches!(e.place, Place::InFlight { .. }))
    }

    /// Failed attempts counted for the pod since it was added or last updated.
    pub fn attempts(&self, key: &K) -> Option<u32> {
        self.entries.get(key).map(|e| e.attempts)
    }

    /// The pending pod's payload.
    pub fn get(&self, key: &K) -> Option<&P> {
        self.entries.get(key).and_then(|e| e.payload.as_ref())
    }

    /// A fresh sequence number.
    fn seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    fn ms(millis: u64) -> Duration {
        Duration::from_millis(millis)
    }

    type Queue = SchedulingQueue<&'static str, u32>;

    impl<K: Clone + Eq + Hash + Ord + std::fmt::Debug, P> SchedulingQueue<K, P> {
        /// Every known pod is in exactly the structure its place says, once.
        fn check_invariants(&self) {
            let mut in_sets = 0;
            for (key, e) in &self.entries {
                let in_active =
                    self.active
                        .contains(&(Reverse(e.priority), e.enqueued_at, e.seq, key.clone()));
                let in_backoff = self
                    .backoff
                    .contains(&(e.backoff_until, e.seq, key.clone()));
                let in_unsched = matches!(e.place, Place::Unschedulable(since) if self.unschedulable.contains(&(since, e.seq, key.clone())));
                let expected = match e.place {
                    Place::Active => (true, false, false),
                    Place::Backoff => (false, true, false),
                    Place::Unschedulable(_) => (false, false, true),
                    Place::InFlight { .. } => (false, false, false),
                };
                assert_eq!(
                    (in_active, in_backoff, in_unsched),
                    expected,
                    "{key:?} at {:?}",
                    e.place
                );
                in_sets +=
                    usize::from(in_active) + usize::from(in_backoff) + usize::from(in_unsched);
                if !matches!(e.place, Place::InFlight { updated: false }) {
                    assert!(e.payload.is_some(), "{key:?} lost its payload");
                }
            }
            assert_eq!(
                in_sets,
                self.len(),
                "a set holds a pod the queue does not know, or one twice"
            );
        }
    }

    fn pop_keys(q: &mut Queue, now: Duration) -> Vec<&'static str> {
        std::iter::from_fn(|| q.pop(now).map(|p| p.key)).collect()
    }

    #[test]
    fn active_order_is_priority_then_arrival() {
        // (key, priority, arrival) → expected pop order. Q-1 of the spec, and a low-priority
        // pod that arrived first waiting behind a high-priority one.
        type Row = (&'static [(&'static str, i32, u64)], &'static [&'static str]);
        let table: &[Row] = &[
            (
                &[("a", 10, 5), ("b", 10, 3), ("c", 100, 9)],
                &["c", "b", "a"],
            ),
            (&[("low", 0, 0), ("high", 1000, 1)], &["high", "low"]),
            (&[("x", -5, 0), ("y", 0, 0), ("z", 0, 0)], &["y", "z", "x"]),
            (&[("p", i32::MAX, 2), ("q", i32::MIN, 1)], &["p", "q"]),
        ];
        for (pods, expected) in table {
            let mut q = Queue::default();
            for (key, priority, at) in *pods {
                q.add(key, 0, *priority, s(*at));
            }
            assert_eq!(pop_keys(&mut q, s(10)), *expected);
            q.check_invariants();
        }
    }

    #[test]
    fn backoff_doubles_to_the_maximum() {
        let config = QueueConfig::default();
        let expected = [0, 1, 2, 4, 8, 10, 10, 10];
        for (attempts, secs) in expected.iter().enumerate() {
            assert_eq!(
                config.backoff(attempts as u32),
                s(*secs),
                "attempts {attempts}"
            );
        }
        assert_eq!(config.backoff(u32::MAX), s(10));

        // Through the queue: each failure waits 1, 2, 4, 8, 10, 10 s before the pod returns.
        let mut q = Queue::default();
        q.add("p", 0, 0, s(0));
        let mut now = s(0);
        for wait in [1, 2, 4, 8, 10, 10] {
            let pod = q.pop(now).unwrap();
            assert!(q.add_backoff(pod, now));
            assert_eq!(q.next_ready_at(now), Some(now + s(wait)));
            assert!(q.pop(now + s(wait) - ms(1)).is_none());
            now += s(wait);
            q.check_invariants();
        }
        assert_eq!(q.attempts(&"p"), Some(6));
    }

    #[test]
    fn unschedulable_pod_retried_after_timeout_without_events() {
        let mut q = Queue::default();
        q.add("p", 0, 0, s(0));
        let pod = q.pop(s(0)).unwrap();
        assert!(q.add_unschedulable(pod, s(0)));
        assert_eq!(q.pending_counts(), (0, 0, 1));
        assert!(q.pop(s(59)).is_none());
        assert_eq!(q.next_ready_at(s(5)), Some(s(60)));
        assert_eq!(q.pop(s(60)).unwrap().key, "p");
        q.check_invariants();
    }

    #[test]
    fn helpful_event_retries_at_once_or_after_backoff() {
        // (event time after the failure at t=10s, expected pop time)
        let table = [(ms(500), s(11)), (s(1), s(11)), (s(5), s(15))];
        for (after, expected) in table {
            let mut q = Queue::default();
            q.add("p", 0, 0, s(0));
            let pod = q.pop(s(10)).unwrap();
            q.add_unschedulable(pod, s(10));
            assert_eq!(q.move_all_to_active_or_backoff(s(10) + after), 1);
            assert_eq!(q.next_ready_at(s(10) + after), Some(expected));
            if expected > s(10) + after {
                assert!(q.pop(expected - ms(1)).is_none(), "still backing off");
            }
            assert_eq!(q.pop(expected).map(|p| p.key), Some("p"));
            q.check_invariants();
        }
    }

    #[test]
    fn event_moves_only_pods_it_may_help() {
        let mut q = Queue::default();
        for (key, payload) in [("a", 1), ("b", 2), ("c", 3)] {
            q.add(key, payload, 0, s(0));
        }
        for _ in 0..3 {
            let pod = q.pop(s(0)).unwrap();
            q.add_unschedulable(pod, s(0));
        }
        assert_eq!(q.move_on_event(|payload| payload % 2 == 1, s(5)), 2);
        assert_eq!(q.pending_counts(), (2, 0, 1));
        assert_eq!(pop_keys(&mut q, s(5)), ["a", "c"]);
        q.check_invariants();
    }

    #[test]
    fn event_during_the_attempt_sends_the_failed_pod_to_backoff() {
        // Q-4: a node was added while the pod was being scheduled.
        let mut q = Queue::default();
        q.add("p", 0, 0, s(0));
        let pod = q.pop(s(0)).unwrap();
        q.move_all_to_active_or_backoff(s(0));
        assert!(q.add_unschedulable(pod, s(0)));
        assert_eq!(q.pending_counts(), (0, 1, 0));
        assert!(q.pop(s(1) - ms(1)).is_none());
        assert_eq!(q.pop(s(1)).map(|p| p.key), Some("p"));
        q.check_invariants();
    }

    #[test]
    fn event_before_the_attempt_does_not_count() {
        let mut q = Queue::default();
        q.add("p", 0, 0, s(0));
        q.move_all_to_active_or_backoff(s(0));
        let pod = q.pop(s(0)).unwrap();
        q.add_unschedulable(pod, s(0));
        assert_eq!(q.pending_counts(), (0, 0, 1));
    }

    #[test]
    fn delete_and_update_while_in_flight() {
        let mut q = Queue::default();
        q.add("gone", 1, 0, s(0));
        q.add("changed", 1, 0, s(0));
        let gone = q.pop(s(0)).unwrap();
        let changed = q.pop(s(0)).unwrap();
        assert!(q.is_in_flight(&"gone"));
        assert_eq!(q.delete(&"gone"), None);
        assert!(!q.add_unschedulable(gone, s(1)));
        assert!(!q.contains(&"gone"));

        q.update("changed", 2, 0, s(1));
        assert!(
            q.pop(s(1)).is_none(),
            "an in-flight pod is not handed out twice"
        );
        assert!(q.add_unschedulable(changed, s(1)));
        let again = q.pop(s(1)).unwrap();
        assert_eq!(
            (again.key, again.payload, again.attempts),
            ("changed", 2, 0)
        );
        assert!(q.done(&"changed"));
        assert!(!q.contains(&"changed"));
        assert!(q.is_empty());
        q.check_invariants();
    }

    #[test]
    fn update_of_an_unschedulable_pod_resets_its_backoff() {
        let mut q = Queue::default();
        q.add("p", 1, 0, s(0));
        for t in 0..3 {
            let pod = q.pop(s(t * 100)).unwrap();
            q.add_unschedulable(pod, s(t * 100));
        }
        assert_eq!(q.attempts(&"p"), Some(3));
        q.update("p", 2, 5, s(201));
        assert_eq!(q.pending_counts(), (1, 0, 0));
        let pod = q.pop(s(201)).unwrap();
        assert_eq!((pod.payload, pod.priority, pod.attempts), (2, 5, 0));
    }

    #[test]
    fn updates_in_place_and_priority_changes_reorder() {
        let mut q = Queue::default();
        q.add("a", 0, 0, s(0));
        q.add("b", 0, 0, s(1));
        q.update("b", 7, 10, s(2));
        q.add("a", 3, 0, s(3)); // add of a known pod is an update
        assert_eq!(q.len(), 2);
        assert_eq!(q.get(&"a"), Some(&3));
        assert_eq!(pop_keys(&mut q, s(3)), ["b", "a"]);
        q.update("never-added", 1, 0, s(4));
        assert!(q.contains(&"never-added"));
        q.check_invariants();
    }

    #[test]
    fn delete_from_every_place() {
        let mut q = Queue::default();
        for key in ["active", "backoff", "unschedulable"] {
            q.add(key, 0, 0, s(0));
        }
        let first = q.pop(s(0)).unwrap();
        let second = q.pop(s(0)).unwrap();
        q.add_backoff(first, s(0));
        q.add_unschedulable(second, s(0));
        assert_eq!(q.pending_counts(), (1, 1, 1));
        for key in ["active", "backoff", "unschedulable"] {
            assert!(q.delete(&key).is_some());
        }
        assert_eq!((q.len(), q.next_ready_at(s(0))), (0, None));
        assert!(!q.done(&"active"));
        q.check_invariants();
    }

    /// One step of a random scenario.
    #[derive(Debug, Clone)]
    enum Op {
        Add(u8, i32),
        Update(u8, i32),
        Delete(u8),
        PopAndFail { unschedulable: bool },
        PopAndBind,
        Event(u8),
        Advance(u16),
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            (0u8..6, -3i32..3).prop_map(|(k, p)| Op::Add(k, p)),
            (0u8..6, -3i32..3).prop_map(|(k, p)| Op::Update(k, p)),
            (0u8..6).prop_map(Op::Delete),
            any::<bool>().prop_map(|unschedulable| Op::PopAndFail { unschedulable }),
            Just(Op::PopAndBind),
            (0u8..3).prop_map(Op::Event),
            (0u16..20_000).prop_map(Op::Advance),
        ]
    }

    proptest::proptest! {
        #[test]
        fn no_pod_appears_twice(ops in proptest::collection::vec(op(), 1..80)) {
            let mut q: SchedulingQueue<u8, u8> = SchedulingQueue::default();
            let mut now = Duration::ZERO;
            let mut in_flight: Vec<QueuedPod<u8, u8>> = Vec::new();
            for op in ops {
                match op {
                    Op::Add(k, p) => q.add(k, k, p, now),
                    Op::Update(k, p) => q.update(k, k.wrapping_add(1), p, now),
                    Op::Delete(k) => { q.delete(&k); }
                    Op::PopAndFail { unschedulable } => {
                        if let Some(pod) = q.pop(now) {
                            proptest::prop_assert!(!in_flight.iter().any(|p| p.key == pod.key));
                            in_flight.push(pod);
                        }
                        if let Some(pod) = in_flight.pop() {
                            if unschedulable { q.add_unschedulable(pod, now); } else { q.add_backoff(pod, now); }
                        }
                    }
                    Op::PopAndBind => {
                        if let Some(pod) = q.pop(now) {
                            proptest::prop_assert!(!in_flight.iter().any(|p| p.key == pod.key));
                            q.done(&pod.key);
                        }
                    }
                    Op::Event(m) => { q.move_on_event(|p| p % 3 == m, now); }
                    Op::Advance(millis) => now += Duration::from_millis(u64::from(millis)),
                }
                q.check_invariants();
                if let Some(at) = q.next_ready_at(now) {
                    proptest::prop_assert!(at >= now);
                }
            }
        }
    }
}
