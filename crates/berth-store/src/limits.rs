//! The memory a store may hold for its watches and its history, whatever its clients do.

/// Most events one watch may have queued, not yet received. A watch whose reader keeps up holds
/// a handful; this is about five seconds of the whole store at berth's peak write rate
/// (~2,000 writes/s), so only a reader stalled for seconds reaches it (upstream's per-watcher
/// buffer is 10 to 1,000 events, and a watcher that cannot take more within a fraction of a
/// second is terminated). A replay from an old revision counts too: a longer one ends the watch
/// at the bound and the reader resumes from there.
pub const WATCH_QUEUE_EVENTS: usize = 10_000;

/// Most bytes (keys and values) of events one watch may have queued, not yet received:
/// forty objects at the largest size the API server stores (1.5 MiB), thousands of pods. The
/// values are shared with the history while it keeps them, so this bounds what a reader that
/// never reads can pin after the history has let them go.
pub const WATCH_QUEUE_BYTES: usize = 64 << 20;

/// Most bytes (keys and values, as [`WATCH_QUEUE_BYTES`] counts them) of the in-memory history
/// (the changes a watch or a paged list may start from an older revision in). Past it the
/// oldest changes are forgotten, as by a compaction: a watch from before them answers 410 Gone
/// (`too old resource version`) and its client relists. A few minutes of ordinary churn fit
/// (the API server also compacts to a revision count); a tenant rewriting a large object in a
/// loop fills it sooner, but memory stays flat instead of growing with the revision count.
pub const HISTORY_BYTES: usize = 256 << 20;

/// The bounds a store enforces; [`Limits::default`] has the constants above.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// See [`WATCH_QUEUE_EVENTS`].
    pub watch_queue_events: usize,
    /// See [`WATCH_QUEUE_BYTES`].
    pub watch_queue_bytes: usize,
    /// See [`HISTORY_BYTES`].
    pub history_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            watch_queue_events: WATCH_QUEUE_EVENTS,
            watch_queue_bytes: WATCH_QUEUE_BYTES,
            history_bytes: HISTORY_BYTES,
        }
    }
}
