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
//! Memory is bounded whatever clients do ([`Limits`]): each watch's queue of events not yet
//! received (a watch whose reader falls behind past it ends, and its reader resumes), and the
//! bytes of the in-memory history (the oldest changes are forgotten past it, as by a
//! compaction).
//!
//! [`Store`] is the handle the API server holds: a cheap clone over one `Arc<dyn` [`Backend`]`>`,
//! the trait that carries these semantics. Two backends share one in-memory engine:
//! [`Store::memory`] (tests, simulation) and [`Store::open`], an embedded durable store on redb.
//! In the durable backend one writer thread owns the database and group-commits every queued
//! write in one fsync'ed transaction, so an acknowledged write survives `kill -9` and power loss.
//! [`Store::etcd`] keeps the data in etcd v3 instead, with the same engine as a local mirror fed
//! by one etcd watch, so several API servers on one etcd serve one cluster.
//!
//! What it is not: a general database. It knows nothing about Kubernetes objects (values are
//! opaque bytes), has no leases/TTLs and no multi-key transactions, and keeps the whole current
//! state plus retained history in memory. After a reopen the durable backend has no history: the
//! compacted revision is the reopened current revision.
//!
//! # Adding a backend
//!
//! 1. Implement [`Backend`] (writes are async; reads are answered at once, from a local mirror
//!    where the data lives elsewhere) and hand it to [`Store::from_backend`].
//! 2. Run the conformance suite against it: implement `conformance::Fixture` (how to open a
//!    store in a directory, and what a reopen keeps), then one line in a test module,
//!    `berth_store::conformance_suite!(my_backend, MyFixture);`, expands to one `#[test]` per
//!    check: the behaviour checks, the model-based property test, and for a backend that keeps
//!    data across a reopen, the reopen and `kill -9` checks. Outside this crate the suite needs
//!    the `conformance` feature (a dev-dependency on `berth-store` with that feature).
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

mod backend;
#[cfg(any(test, feature = "conformance"))]
pub mod conformance;
mod durable;
mod engine;
mod etcd;
mod limits;
mod memory;
mod mvcc;
mod store;
mod watch;

use bytes::Bytes;

#[doc(hidden)]
pub use backend::Footprint;
pub use backend::{Backend, History, Pending};
pub use etcd::EtcdConfig;
pub use limits::{Limits, HISTORY_BYTES, WATCH_QUEUE_BYTES, WATCH_QUEUE_EVENTS};
pub use store::Store;
pub use watch::Watch;

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

#[cfg(test)]
mod tests;
