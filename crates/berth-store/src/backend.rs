//! The storage backend contract: what every backend (memory, redb, later etcd) provides, with
//! etcd's semantics. [`crate::Store`] is a cheap handle over one `Arc<dyn Backend>`.

use std::future::Future;
use std::pin::Pin;

use crate::{KeyValue, RangeResult, Result, Revision, Watch};
use bytes::Bytes;

/// The answer to a write, once the backend has committed (or refused) it.
pub type Pending<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

/// A revisioned key-value store with watch, with etcd's semantics. Object-safe.
///
/// Writes are asynchronous: a durable or remote backend answers after its commit. Reads, watch
/// registration and compaction answer at once: the API server reads from synchronous code
/// (admission caches), and the memory path stays a lock and a lookup. A remote backend such as
/// etcd serves them from a local mirror kept current by its own watch (as the upstream API
/// server's watch cache does), acknowledges a write only once the mirror has applied it, so a
/// caller reads its own writes, and sends compaction on in the background.
///
/// Every method but [`Backend::current_revision`] and [`Backend::compacted_revision`] fails
/// with [`crate::Error::Closed`] after [`Backend::close`]. A backend closes itself when dropped.
pub trait Backend: Send + Sync {
    /// The revision of the last write (0 for an empty store).
    fn current_revision(&self) -> Revision;

    /// The oldest revision that can still be read or watched from.
    fn compacted_revision(&self) -> Revision;

    /// The current value of `key`, if it exists.
    fn get(&self, key: &str) -> Result<Option<KeyValue>>;

    /// Keys with `prefix`, sorted, strictly after `start_after` if given, at most `limit`
    /// (0 = no limit), read at `at` (None = current; Compacted below the compacted revision,
    /// FutureRevision above the current one). `more` says whether keys remain.
    fn range(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
        at: Option<Revision>,
    ) -> Result<RangeResult>;

    /// How many keys [`Backend::range`] would return without a limit (the API's
    /// `remainingItemCount` of a list page). A backend that keeps an index counts in it
    /// without reading values.
    fn count(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        at: Option<Revision>,
    ) -> Result<usize> {
        self.range(prefix, start_after, 0, at).map(|r| r.kvs.len())
    }

    /// Creates `key` at the next revision; AlreadyExists if it exists.
    fn create<'a>(&'a self, key: &'a str, value: Bytes) -> Pending<'a, KeyValue>;

    /// Replaces the value of `key`. `expected` = Some(mod_revision) compares first (Conflict),
    /// None writes unconditionally. NotFound if absent.
    fn update<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
        expected: Option<Revision>,
    ) -> Pending<'a, KeyValue>;

    /// Deletes `key`, answering its last value with mod_revision = the deletion's revision.
    /// NotFound / Conflict as for [`Backend::update`].
    fn delete<'a>(&'a self, key: &'a str, expected: Option<Revision>) -> Pending<'a, KeyValue>;

    /// Every change under `prefix` with a revision above `after`: history first, then live
    /// changes, in revision order with no gap and no duplicate. Compacted if `after` is below
    /// the compacted revision; an `after` in the future starts once the store passes it. The
    /// receiver ends when the backend closes (or can no longer continue the stream: the caller
    /// then lists again), or when its reader falls behind past the watch queue's bounds
    /// ([`crate::Limits`]; the caller then watches again from the last revision it received);
    /// dropping it cancels the watch.
    fn watch(&self, prefix: &str, after: Revision) -> Result<Watch>;

    /// Forgets history at or below `revision`; the state as of `revision` stays readable. At or
    /// below the compacted revision does nothing; above the current one is FutureRevision.
    fn compact(&self, revision: Revision) -> Result<()>;

    /// Refuses further calls and ends every watch; queued writes finish first, and a backend
    /// holding a file releases it before returning.
    fn close(&self);

    /// What the in-memory history holds, for metrics. None where the backend keeps none.
    fn history(&self) -> Option<History> {
        None
    }

    /// What the backend holds on to, for the conformance suite's leak checks. None where the
    /// backend cannot tell (it then skips those checks).
    #[doc(hidden)]
    fn footprint(&self) -> Option<Footprint> {
        None
    }
}

/// What an in-process backend holds on to (see [`Backend::footprint`]).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footprint {
    /// Watches still registered.
    pub watchers: usize,
    /// Keys with any retained version (live, or deleted but still in history).
    pub indexed_keys: usize,
}

/// What a backend's in-memory history holds (see [`Backend::history`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct History {
    /// Bytes of keys and values of the retained changes.
    pub bytes: usize,
    /// Retained changes.
    pub changes: usize,
    /// The bound on `bytes` ([`crate::Limits::history_bytes`]).
    pub limit_bytes: usize,
}
