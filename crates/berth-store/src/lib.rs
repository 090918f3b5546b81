//! Revisioned key-value store with watch, with etcd's semantics.
//!
//! The API server keeps every Kubernetes object as JSON bytes under a key such as
//! `/registry/pods/default/p1`. Every write (create, update, delete) gets the next global
//! [`Revision`]; an object's `resourceVersion` is its `mod_revision`. On top of that the store
//! offers what list+watch needs:
//!
//! - [`Store::range`]: keys under a prefix, sorted, paged (`start_after` + `limit`), read at the
//!   current revision or at any past revision back to the compacted one (MVCC history in memory);
//! - compare-and-swap [`Store::update`] / [`Store::delete`] on `mod_revision`;
//! - [`Store::watch`]: every change under a prefix after a revision, history first and then live
//!   changes, in revision order with no gap and no duplicate;
//! - [`Store::compact`]: forget history, cheaply (cost is proportional to the changes forgotten).
//!
//! Two backends share one in-memory engine: [`Store::memory`] (tests, simulation) and
//! [`Store::open`], an embedded durable store on redb. In the durable backend one writer thread
//! owns the database and group-commits every queued write in one fsync'ed transaction, so an
//! acknowledged write survives `kill -9` and power loss.
//!
//! What it is not: a general database. It knows nothing about Kubernetes objects (values are
//! opaque bytes), has no leases/TTLs and no multi-key transactions, and keeps the whole current
//! state plus retained history in memory. After a reopen the durable backend has no history: the
//! compacted revision is the reopened current revision.
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use berth_store::{EventKind, Store};
//!
//! let store = Store::memory();
//! let mut events = store.watch("/registry/pods/", 0)?;
//! let created = store.create("/registry/pods/default/p1", "{}".into()).await?;
//! let updated = store
//!     .update("/registry/pods/default/p1", "{\"a\":1}".into(), Some(created.mod_revision))
//!     .await?;
//! assert!(updated.mod_revision > created.mod_revision);
//!
//! let page = store.range("/registry/pods/", None, 10, None)?;
//! assert_eq!(page.kvs, vec![updated]);
//! assert_eq!(events.recv().await.map(|e| e.kind), Some(EventKind::Put));
//! # Ok::<(), berth_store::Error>(())
//! # }).unwrap();
//! ```

mod durable;
mod engine;
mod mvcc;
mod watch;

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::mpsc::UnboundedReceiver;

use durable::Durable;
use engine::Engine;
use mvcc::WriteOp;

/// A store revision. The first write gets revision 1; an empty store is at revision 0.
pub type Revision = i64;

/// A key with its value and the revisions that created and last modified it.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyValue {
    /// The full key, e.g. `/registry/pods/default/p1`.
    pub key: String,
    /// The opaque value (the object's JSON).
    pub value: Bytes,
    /// Revision of the write that created the key.
    pub create_revision: Revision,
    /// Revision of the last write to the key (its `resourceVersion`).
    pub mod_revision: Revision,
}

/// What a [`WatchEvent`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// The key was created or updated.
    Put,
    /// The key was deleted.
    Delete,
}

/// One change seen by a watch.
///
/// For Delete: `kv` is the last value with `mod_revision` = the deletion's revision.
#[derive(Clone, Debug)]
pub struct WatchEvent {
    /// Put or Delete.
    pub kind: EventKind,
    /// The new value (Put) or the last value, stamped with the deletion's revision (Delete).
    pub kv: KeyValue,
    /// The value before this change, if the key existed.
    pub prev: Option<KeyValue>,
}

/// The answer to [`Store::range`].
#[derive(Clone, Debug)]
pub struct RangeResult {
    /// The keys found, sorted by key.
    pub kvs: Vec<KeyValue>,
    /// Whether more keys under the prefix remain after the last one returned.
    pub more: bool,
    /// The revision the range was read at.
    pub revision: Revision,
}

/// Everything that can go wrong in the store.
#[derive(thiserror::Error, Debug)]
pub enum Error {
    /// `create` of a key that exists.
    #[error("key {key} already exists")]
    AlreadyExists {
        /// The key.
        key: String,
    },
    /// `update` or `delete` of a key that does not exist.
    #[error("key {key} not found")]
    NotFound {
        /// The key.
        key: String,
    },
    /// Compare-and-swap mismatch: the key's `mod_revision` is not the expected one.
    #[error("key {key} was modified: expected revision {expected}, found {actual}")]
    Conflict {
        /// The key.
        key: String,
        /// The revision the caller expected.
        expected: Revision,
        /// The key's current `mod_revision`.
        actual: Revision,
    },
    /// The requested revision is older than the compacted revision.
    #[error("revision {requested} has been compacted (compacted revision is {compacted})")]
    Compacted {
        /// The revision asked for.
        requested: Revision,
        /// The store's compacted revision.
        compacted: Revision,
    },
    /// The requested revision is newer than the store's current revision.
    #[error("revision {requested} is in the future (current revision is {current})")]
    FutureRevision {
        /// The revision asked for.
        requested: Revision,
        /// The store's current revision.
        current: Revision,
    },
    /// The durable backend failed (I/O, corrupt file, earlier failed commit).
    #[error("storage backend failure: {0}")]
    Io(String),
    /// The store has been closed.
    #[error("store is closed")]
    Closed,
}

/// The store's result type.
pub type Result<T> = std::result::Result<T, Error>;

/// A revisioned key-value store with watch. Cheap to clone; clones share one store.
///
/// The store closes when [`Store::close`] is called or the last clone is dropped; watch
/// receivers then end.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Arc<Engine>,
    durable: Option<Durable>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(durable) = &self.durable {
            durable.shutdown();
        }
        self.engine.close();
    }
}

impl Store {
    /// A store that lives in memory only.
    pub fn memory() -> Store {
        Store {
            inner: Arc::new(Inner {
                engine: Arc::new(Engine::new(mvcc::State::default())),
                durable: None,
            }),
        }
    }

    /// Embedded durable backend (redb file `<dir>/berth.redb`), creating it if absent; reloads
    /// state on reopen.
    ///
    /// The directory is created if needed. Only one `Store` may have a directory open at a time.
    pub fn open(dir: &Path) -> Result<Store> {
        let (durable, engine) = Durable::open(dir)?;
        Ok(Store {
            inner: Arc::new(Inner {
                engine,
                durable: Some(durable),
            }),
        })
    }

    /// The revision of the last write (0 for an empty store).
    pub fn current_revision(&self) -> Revision {
        self.inner.engine.current_revision()
    }

    /// The oldest revision that can still be read or watched from.
    pub fn compacted_revision(&self) -> Revision {
        self.inner.engine.compacted_revision()
    }

    /// The current value of `key`, if it exists.
    pub fn get(&self, key: &str) -> Result<Option<KeyValue>> {
        self.inner.engine.get(key)
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
        self.inner.engine.range(prefix, start_after, limit, at)
    }

    /// Creates `key`; [`Error::AlreadyExists`] if it exists.
    pub async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue> {
        self.write(WriteOp::Create {
            key: key.to_owned(),
            value,
        })
        .await
    }

    /// `expected` = Some(mod_revision) compares before writing (Conflict), None = unconditional.
    /// NotFound if absent.
    pub async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Option<Revision>,
    ) -> Result<KeyValue> {
        self.write(WriteOp::Update {
            key: key.to_owned(),
            value,
            expected,
        })
        .await
    }

    /// Returns the deleted kv with mod_revision = the deletion revision. NotFound / Conflict as
    /// for [`Store::update`].
    pub async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<KeyValue> {
        self.write(WriteOp::Delete {
            key: key.to_owned(),
            expected,
        })
        .await
    }

    /// Events for keys with `prefix` whose revision is > `after`, in revision order, then live
    /// ones. Compacted if `after` < compacted_revision. The receiver ends (None) when the store
    /// closes.
    ///
    /// `after` may be in the future: events then start once the store passes it. Dropping the
    /// receiver cancels the watch.
    pub fn watch(&self, prefix: &str, after: Revision) -> Result<UnboundedReceiver<WatchEvent>> {
        self.inner.engine.watch(prefix, after)
    }

    /// Forget history at or below `revision` (ranges at older revisions and watches from before
    /// it then get Compacted). The state as of `revision` stays readable. Compacting at or below
    /// the compacted revision does nothing; above the current revision is FutureRevision.
    pub fn compact(&self, revision: Revision) -> Result<()> {
        self.inner.engine.compact(revision)
    }

    /// Closes the store: later calls fail with [`Error::Closed`] and watch receivers end. Writes
    /// already queued are finished first. The durable backend releases its file before this
    /// returns, so the directory can be reopened.
    pub fn close(&self) {
        if let Some(durable) = &self.inner.durable {
            durable.shutdown();
        }
        self.inner.engine.close();
    }

    async fn write(&self, op: WriteOp) -> Result<KeyValue> {
        match &self.inner.durable {
            Some(durable) => durable.submit(op).await,
            None => self.inner.engine.write_now(op),
        }
    }
}

#[cfg(test)]
mod tests;
