//! [`Store`]: the handle the API server holds, over one shared [`Backend`].

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use crate::backend::{Backend, History};
use crate::durable::Durable;
use crate::etcd::{Etcd, EtcdConfig};
use crate::memory::Memory;
use crate::{KeyValue, Limits, RangeResult, Result, Revision, Watch};

/// A revisioned key-value store with watch. Cheap to clone; clones share one backend.
///
/// The store closes when [`Store::close`] is called or the last handle to its backend is
/// dropped; watch receivers then end.
#[derive(Clone)]
pub struct Store {
    pub(crate) backend: Arc<dyn Backend>,
}

impl Store {
    /// A store that lives in memory only.
    pub fn memory() -> Store {
        Store::memory_with_limits(Limits::default())
    }

    /// A store that lives in memory only, with bounds of its own (tests use small ones).
    pub fn memory_with_limits(limits: Limits) -> Store {
        Store::from_backend(Arc::new(Memory::new(limits)))
    }

    /// Embedded durable backend (redb file `<dir>/berth.redb`), creating it if absent; reloads
    /// state on reopen.
    ///
    /// The directory is created if needed. Only one `Store` may have a directory open at a time.
    pub fn open(dir: &Path) -> Result<Store> {
        Ok(Store::from_backend(Arc::new(Durable::open(dir)?)))
    }

    /// The etcd backend: objects in etcd v3, reads and watches from a local mirror kept by one
    /// etcd watch. Connects and lists the prefix before returning (blocking the thread).
    pub fn etcd(config: &EtcdConfig) -> Result<Store> {
        Ok(Store::from_backend(Arc::new(Etcd::open(config)?)))
    }

    /// A store over any backend.
    pub fn from_backend(backend: Arc<dyn Backend>) -> Store {
        Store { backend }
    }

    /// The revision of the last write (0 for an empty store).
    pub fn current_revision(&self) -> Revision {
        self.backend.current_revision()
    }

    /// The oldest revision that can still be read or watched from.
    pub fn compacted_revision(&self) -> Revision {
        self.backend.compacted_revision()
    }

    /// The current value of `key`, if it exists.
    pub fn get(&self, key: &str) -> Result<Option<KeyValue>> {
        self.backend.get(key)
    }

    /// Keys with `prefix`, sorted, strictly after `start_after` if given, at most `limit`
    /// (0 = no limit), read at `at` (None = current). `more` says whether keys remain.
    pub fn range(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
        at: Option<Revision>,
    ) -> Result<RangeResult> {
        self.backend.range(prefix, start_after, limit, at)
    }

    /// How many keys [`Store::range`] would return without a limit, read at `at` (None =
    /// current).
    pub fn count(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        at: Option<Revision>,
    ) -> Result<usize> {
        self.backend.count(prefix, start_after, at)
    }

    /// Creates `key`; [`crate::Error::AlreadyExists`] if it exists.
    pub async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue> {
        self.backend.create(key, value).await
    }

    /// `expected` = Some(mod_revision) compares before writing (Conflict), None = unconditional.
    /// NotFound if absent.
    pub async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Option<Revision>,
    ) -> Result<KeyValue> {
        self.backend.update(key, value, expected).await
    }

    /// Returns the deleted kv with mod_revision = the deletion revision. NotFound / Conflict as
    /// for [`Store::update`].
    pub async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<KeyValue> {
        self.backend.delete(key, expected).await
    }

    /// Events for keys with `prefix` whose revision is > `after`, in revision order, then live
    /// ones. Compacted if `after` < compacted_revision. The receiver ends (None) when the store
    /// closes.
    ///
    /// `after` may be in the future: events then start once the store passes it. Dropping the
    /// receiver cancels the watch. A receiver whose reader falls behind past the watch queue's
    /// bounds ([`Limits`]) ends too ([`Watch::fell_behind`]): watch again from the last
    /// revision received.
    pub fn watch(&self, prefix: &str, after: Revision) -> Result<Watch> {
        self.backend.watch(prefix, after)
    }

    /// What the in-memory history holds (bytes, changes, and its byte bound); None where the
    /// backend keeps none.
    pub fn history(&self) -> Option<History> {
        self.backend.history()
    }

    /// Forget history at or below `revision` (ranges at older revisions and watches from before
    /// it then get Compacted). The state as of `revision` stays readable. Compacting at or below
    /// the compacted revision does nothing; above the current revision is FutureRevision.
    pub fn compact(&self, revision: Revision) -> Result<()> {
        self.backend.compact(revision)
    }

    /// Closes the store: later calls fail with [`crate::Error::Closed`] and watch receivers
    /// end. Writes already queued are finished first. The durable backend releases its file
    /// before this returns, so the directory can be reopened.
    pub fn close(&self) {
        self.backend.close();
    }
}
