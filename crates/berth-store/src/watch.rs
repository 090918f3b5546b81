//! Live watchers: who wants which changes, and delivery to them.
//!
//! Ordering is the engine's job: it replays history and registers a watcher while holding the
//! state lock that writers need to apply (and notify) changes, so history and live changes meet
//! with no gap and no duplicate.
//!
//! Each watch's queue of events not yet received is bounded by [`Limits::watch_queue_events`]
//! and [`Limits::watch_queue_bytes`]. A watcher whose queue would pass either bound has fallen
//! behind: it is dropped, so its receiver ends after the events already queued, and
//! [`Watch::fell_behind`] says why. Its client resumes from the last revision it received (or
//! relists if that is compacted), as upstream's cacher terminates a watcher whose buffer stays
//! full; nothing is buffered without limit for a reader that does not read.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio::sync::Notify;

use crate::{Limits, Revision, WatchEvent};

/// What one event counts against a byte bound: its key and the value it carries (its previous
/// value is, as a rule, the value of an earlier event, counted there), plus the event itself.
pub(crate) fn event_bytes(event: &WatchEvent) -> usize {
    std::mem::size_of::<WatchEvent>() + event.kv.key.len() + event.kv.value.len()
}

/// What a watch's sender and receiver share: the size of its queue and how it ended.
#[derive(Default)]
struct Backlog {
    events: AtomicUsize,
    bytes: AtomicUsize,
    /// Set when the store dropped the watcher for falling behind.
    fell_behind: AtomicBool,
    /// Set when the store dropped the watcher, for whatever reason.
    ended: AtomicBool,
    /// Woken when `ended` is set.
    woken: Notify,
}

/// The receiving end of [`crate::Store::watch`]: the changes, in revision order. Ends (None)
/// when the store closes, or drops the watch because its reader fell behind
/// ([`Watch::fell_behind`]); the reader then watches again from the last revision it received.
/// Dropping it cancels the watch.
pub struct Watch {
    rx: UnboundedReceiver<WatchEvent>,
    backlog: Arc<Backlog>,
}

impl Watch {
    /// The next change; None once the watch has ended and every queued change was received.
    /// Cancel-safe.
    pub async fn recv(&mut self) -> Option<WatchEvent> {
        let event = self.rx.recv().await?;
        self.took(&event);
        Some(event)
    }

    /// The next change if one is queued.
    pub fn try_recv(&mut self) -> Result<WatchEvent, TryRecvError> {
        let event = self.rx.try_recv()?;
        self.took(&event);
        Ok(event)
    }

    fn took(&self, event: &WatchEvent) {
        self.backlog.events.fetch_sub(1, Ordering::Relaxed);
        self.backlog
            .bytes
            .fetch_sub(event_bytes(event), Ordering::Relaxed);
    }

    /// Bytes of the changes queued (as the bound counts them).
    #[cfg(test)]
    fn queued_bytes(&self) -> usize {
        self.backlog.bytes.load(Ordering::Relaxed)
    }

    /// Whether no change is queued.
    pub fn is_empty(&self) -> bool {
        self.rx.is_empty()
    }

    /// Whether the store ended this watch because its queue passed its bounds: the events
    /// still queued are delivered, then the watch ends.
    pub fn fell_behind(&self) -> bool {
        self.backlog.fell_behind.load(Ordering::Acquire)
    }

    /// Resolves once the store has ended this watch (it fell behind, or the store closed),
    /// whether or not queued events remain: a reader blocked elsewhere learns that it may stop.
    /// Cancel-safe.
    pub async fn ended(&self) {
        loop {
            let woken = self.backlog.woken.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if self.backlog.ended.load(Ordering::Acquire) {
                return;
            }
            woken.await;
        }
    }
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("queued", &self.backlog.events.load(Ordering::Relaxed))
            .field("fell_behind", &self.fell_behind())
            .finish_non_exhaustive()
    }
}

/// One watch: changes under `prefix` with a revision above `after`.
pub(crate) struct Watcher {
    prefix: String,
    after: Revision,
    tx: UnboundedSender<WatchEvent>,
    backlog: Arc<Backlog>,
    max_events: usize,
    max_bytes: usize,
}

impl Watcher {
    /// A watcher and its receiver.
    pub(crate) fn new(prefix: &str, after: Revision, limits: &Limits) -> (Watcher, Watch) {
        let (tx, rx) = mpsc::unbounded_channel();
        let backlog = Arc::new(Backlog::default());
        let watcher = Watcher {
            prefix: prefix.to_owned(),
            after,
            tx,
            backlog: Arc::clone(&backlog),
            max_events: limits.watch_queue_events,
            max_bytes: limits.watch_queue_bytes,
        };
        (watcher, Watch { rx, backlog })
    }

    fn wants(&self, event: &WatchEvent) -> bool {
        event.kv.mod_revision > self.after && event.kv.key.starts_with(self.prefix.as_str())
    }

    /// Queues `event`; false if the watcher is done (its receiver is gone, or its queue would
    /// pass its bounds, which marks it fallen behind). One event always fits an empty queue,
    /// however large, so a watch can always make progress.
    fn push(&self, event: &WatchEvent) -> bool {
        let size = event_bytes(event);
        let queued = self.backlog.events.load(Ordering::Relaxed);
        if queued > 0
            && (queued >= self.max_events
                || self.backlog.bytes.load(Ordering::Relaxed) + size > self.max_bytes)
        {
            self.backlog.fell_behind.store(true, Ordering::Release);
            return false;
        }
        self.backlog.events.fetch_add(1, Ordering::Relaxed);
        self.backlog.bytes.fetch_add(size, Ordering::Relaxed);
        self.tx.send(event.clone()).is_ok()
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.backlog.ended.store(true, Ordering::Release);
        self.backlog.woken.notify_waiters();
    }
}

/// The set of live watchers.
#[derive(Default)]
pub(crate) struct Watchers {
    list: Vec<Watcher>,
}

impl Watchers {
    /// Sends the replayed `history` to a new watcher and registers it for live changes. A
    /// replay longer than the watcher's queue bounds ends the watch once they are reached: its
    /// reader resumes from there.
    pub(crate) fn register<'a>(
        &mut self,
        watcher: Watcher,
        history: impl Iterator<Item = &'a WatchEvent>,
    ) {
        for event in history.filter(|event| watcher.wants(event)) {
            if !watcher.push(event) {
                return;
            }
        }
        self.list.push(watcher);
    }

    /// Delivers applied changes to every interested watcher, dropping watchers whose receiver
    /// is gone or whose queue is full.
    pub(crate) fn notify(&mut self, events: &[WatchEvent]) {
        if self.list.is_empty() {
            return;
        }
        self.list.retain(|watcher| {
            !watcher.tx.is_closed()
                && events
                    .iter()
                    .filter(|event| watcher.wants(event))
                    .all(|event| watcher.push(event))
        });
    }

    /// Drops every watcher, which ends their receivers.
    pub(crate) fn clear(&mut self) {
        self.list.clear();
    }

    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use proptest::prelude::*;

    use crate::{Limits, Store, Watch};

    fn limits(events: usize, bytes: usize) -> Limits {
        Limits {
            watch_queue_events: events,
            watch_queue_bytes: bytes,
            ..Limits::default()
        }
    }

    fn value(len: usize) -> Bytes {
        Bytes::from(vec![b'x'; len])
    }

    /// Everything queued, then whether the watch ended (rather than waits for more).
    fn drain(watch: &mut Watch) -> (Vec<i64>, bool) {
        let mut revisions = Vec::new();
        loop {
            match watch.try_recv() {
                Ok(event) => revisions.push(event.kv.mod_revision),
                Err(e) => {
                    let ended = e == tokio::sync::mpsc::error::TryRecvError::Disconnected;
                    return (revisions, ended);
                }
            }
        }
    }

    #[tokio::test]
    async fn a_watcher_that_never_reads_is_cut_off_at_the_event_bound_and_one_that_reads_is_not() {
        let store = Store::memory_with_limits(limits(8, usize::MAX));
        let mut reading = store.watch("/", 0).unwrap();
        let mut idle = store.watch("/", 0).unwrap();
        for i in 0..100 {
            store.create(&format!("/k{i}"), value(10)).await.unwrap();
            assert_eq!(reading.recv().await.unwrap().kv.mod_revision, i + 1);
        }
        assert!(!reading.fell_behind());
        assert!(idle.fell_behind());
        let (revisions, ended) = drain(&mut idle);
        assert_eq!(
            revisions,
            (1..=8).collect::<Vec<_>>(),
            "what was queued is delivered"
        );
        assert!(
            ended,
            "then the watch ends, and its reader resumes from revision 8"
        );
        assert_eq!(store.backend.footprint().unwrap().watchers, 1);
        let mut resumed = store.watch("/", 8).unwrap();
        assert_eq!(resumed.recv().await.unwrap().kv.mod_revision, 9);
    }

    #[tokio::test]
    async fn a_watcher_that_never_reads_is_cut_off_at_the_byte_bound() {
        let store = Store::memory_with_limits(limits(usize::MAX, 10 << 10));
        let mut idle = store.watch("/", 0).unwrap();
        for i in 0..100 {
            store
                .create(&format!("/k{i}"), value(1 << 10))
                .await
                .unwrap();
        }
        assert!(idle.fell_behind());
        let (revisions, ended) = drain(&mut idle);
        assert!(ended);
        assert!(
            !revisions.is_empty() && revisions.len() < 10,
            "{revisions:?}"
        );
    }

    #[tokio::test]
    async fn an_event_larger_than_the_byte_bound_still_reaches_its_reader() {
        let store = Store::memory_with_limits(limits(usize::MAX, 1 << 10));
        let mut watch = store.watch("/", 0).unwrap();
        store.create("/big", value(4 << 10)).await.unwrap();
        assert_eq!(watch.recv().await.unwrap().kv.key, "/big");
        store.create("/next", value(10)).await.unwrap();
        assert_eq!(watch.recv().await.unwrap().kv.key, "/next");
        assert!(!watch.fell_behind());
    }

    #[tokio::test]
    async fn a_replay_longer_than_the_bound_ends_there_and_a_resumed_watch_goes_on() {
        let store = Store::memory_with_limits(limits(8, usize::MAX));
        for i in 0..20 {
            store.create(&format!("/k{i}"), value(10)).await.unwrap();
        }
        let mut seen = Vec::new();
        let mut after = 0;
        while after < 20 {
            let mut watch = store.watch("/", after).unwrap();
            let (revisions, ended) = drain(&mut watch);
            assert!(revisions.len() <= 8);
            after = *revisions.last().unwrap();
            seen.extend(revisions);
            assert_eq!(ended, watch.fell_behind());
        }
        assert_eq!(seen, (1..=20).collect::<Vec<_>>(), "no gap, no duplicate");
    }

    #[tokio::test]
    async fn a_reader_blocked_elsewhere_learns_its_watch_ended() {
        let store = Store::memory_with_limits(limits(2, usize::MAX));
        let idle = store.watch("/", 0).unwrap();
        let ended = tokio::spawn(async move {
            idle.ended().await;
            idle.fell_behind()
        });
        for i in 0..3 {
            store.create(&format!("/k{i}"), value(10)).await.unwrap();
        }
        assert!(ended.await.unwrap());
    }

    proptest! {
        /// Memory held for a watcher that never reads stays bounded, whatever is written.
        #[test]
        fn what_is_queued_for_a_watcher_that_never_reads_stays_within_its_bounds(
            sizes in proptest::collection::vec(0usize..5_000, 1..200),
            max_events in 1usize..50,
            max_bytes in 1usize..40_000,
        ) {
            let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
            rt.block_on(async {
                let store = Store::memory_with_limits(limits(max_events, max_bytes));
                let idle = store.watch("/", 0).unwrap();
                let largest = sizes.iter().max().copied().unwrap_or(0);
                for (i, size) in sizes.iter().enumerate() {
                    store.create(&format!("/k{i:04}"), value(*size)).await.unwrap();
                    let one = std::mem::size_of::<crate::WatchEvent>() + 6 + largest;
                    prop_assert!(idle.queued_bytes() <= max_bytes.max(one));
                    prop_assert!(idle.rx.len() <= max_events);
                }
                Ok(())
            })?;
        }
    }
}
