//! The durable backend on redb: the in-memory engine serves reads and watches, and one writer
//! thread owns the database and group-commits.
//!
//! Callers queue writes with a reply channel. The writer takes everything queued, decides each
//! write in order (earlier writes of the batch included), persists the accepted ones in ONE
//! redb transaction committed with [`Durability::Immediate`], then applies them to the engine
//! (which notifies watchers) and replies. A write is acknowledged only after its fsync.
//!
//! On disk: [`KVS`] holds the current value of every key, [`META`] the current revision. There
//! is no history on disk; a reopened store starts with compacted revision = current revision.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use bytes::Bytes;
use redb::{Database, Durability, ReadableTable, TableDefinition};
use tokio::sync::{mpsc, oneshot};

use crate::backend::{Backend, Footprint, Pending};
use crate::engine::Engine;
use crate::mvcc::{State, WriteOp};
use crate::{Error, EventKind, KeyValue, RangeResult, Result, Revision, WatchEvent};

/// The database file inside the store's directory.
pub(crate) const FILE_NAME: &str = "berth.redb";

/// key → (value, create_revision, mod_revision) for every live key.
const KVS: TableDefinition<&str, (&[u8], i64, i64)> = TableDefinition::new("kvs");

/// Store-wide values; see [`META_REVISION`].
const META: TableDefinition<&str, i64> = TableDefinition::new("meta");

/// Key in [`META`]: the revision of the last committed write.
const META_REVISION: &str = "revision";

/// Most writes committed in one transaction.
const MAX_BATCH: usize = 4096;

/// A queued write and where to send its outcome.
struct Request {
    op: WriteOp,
    reply: oneshot::Sender<Result<KeyValue>>,
}

/// The engine, shared with the writer thread, and the handle to that thread.
pub(crate) struct Durable {
    engine: Arc<Engine>,
    queue: Mutex<Option<mpsc::UnboundedSender<Request>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
}

fn backend(context: &str, err: impl Into<redb::Error>) -> Error {
    Error::Io(format!("{context}: {}", err.into()))
}

/// The page cache redb keeps of the file. Reads are answered from the engine's memory, never
/// from redb, so its cache only serves the writer's b-tree walks: redb's default of 1 GiB
/// kept every page of 700 patches of a 512 KiB ConfigMap resident (issue 30).
pub const REDB_CACHE_BYTES: usize = 64 * 1024 * 1024;

impl Durable {
    /// Opens (or creates) `<dir>/berth.redb`, loads it, and starts the writer.
    pub(crate) fn open(dir: &Path) -> Result<Durable> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        // The store holds every object, Secrets included: only the owner may read it, from
        // the moment it is created (a chmod afterwards would leave a window).
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| Error::Io(format!("creating {}: {e}", dir.display())))?;
        let path = dir.join(FILE_NAME);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .map_err(|e| Error::Io(format!("opening {}: {e}", path.display())))?;
        let db = redb::backends::FileBackend::new(file)
            .and_then(|backend| {
                Database::builder()
                    .set_cache_size(REDB_CACHE_BYTES)
                    .create_with_backend(backend)
            })
            .map_err(|e| backend(&format!("opening {}", path.display()), e))?;
        let state = load(&db)?;
        let engine = Arc::new(Engine::new(state));
        let (tx, rx) = mpsc::unbounded_channel();
        let writer_engine = Arc::clone(&engine);
        let writer = std::thread::Builder::new()
            .name("berth-store-writer".into())
            .spawn(move || Writer::new(db, writer_engine).run(rx))
            .map_err(|e| Error::Io(format!("starting the writer thread: {e}")))?;
        Ok(Durable {
            engine,
            queue: Mutex::new(Some(tx)),
            writer: Mutex::new(Some(writer)),
        })
    }

    /// Queues a write and waits until it is committed (or rejected).
    async fn submit(&self, op: WriteOp) -> Result<KeyValue> {
        let (reply, outcome) = oneshot::channel();
        {
            let queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
            let tx = queue.as_ref().ok_or(Error::Closed)?;
            tx.send(Request { op, reply }).map_err(|_| Error::Closed)?;
        }
        outcome.await.map_err(|_| Error::Closed)?
    }

    /// Stops accepting writes, lets the writer finish what is queued, and waits for it to
    /// release the database.
    fn shutdown(&self) {
        drop(self.queue.lock().unwrap_or_else(|e| e.into_inner()).take());
        let writer = self.writer.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(writer) = writer {
            if writer.join().is_err() {
                tracing::error!("berth-store writer thread panicked");
            }
        }
    }
}

impl Drop for Durable {
    fn drop(&mut self) {
        self.close();
    }
}

impl Backend for Durable {
    fn current_revision(&self) -> Revision {
        self.engine.current_revision()
    }

    fn compacted_revision(&self) -> Revision {
        self.engine.compacted_revision()
    }

    fn get(&self, key: &str) -> Result<Option<KeyValue>> {
        self.engine.get(key)
    }

    fn range(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
        at: Option<Revision>,
    ) -> Result<RangeResult> {
        self.engine.range(prefix, start_after, limit, at)
    }

    fn count(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        at: Option<Revision>,
    ) -> Result<usize> {
        self.engine.count(prefix, start_after, at)
    }

    fn create<'a>(&'a self, key: &'a str, value: Bytes) -> Pending<'a, KeyValue> {
        Box::pin(self.submit(WriteOp::Create {
            key: key.to_owned(),
            value,
        }))
    }

    fn update<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
        expected: Option<Revision>,
    ) -> Pending<'a, KeyValue> {
        Box::pin(self.submit(WriteOp::Update {
            key: key.to_owned(),
            value,
            expected,
        }))
    }

    fn delete<'a>(&'a self, key: &'a str, expected: Option<Revision>) -> Pending<'a, KeyValue> {
        Box::pin(self.submit(WriteOp::Delete {
            key: key.to_owned(),
            expected,
        }))
    }

    fn watch(&self, prefix: &str, after: Revision) -> Result<crate::Watch> {
        self.engine.watch(prefix, after)
    }

    /// History lives in memory only, so compaction touches no file.
    fn compact(&self, revision: Revision) -> Result<()> {
        self.engine.compact(revision)
    }

    fn close(&self) {
        self.shutdown();
        self.engine.close();
    }

    fn history(&self) -> Option<crate::backend::History> {
        Some(self.engine.history())
    }

    fn footprint(&self) -> Option<Footprint> {
        Some(self.engine.footprint())
    }
}

/// Reads the persisted state, creating the tables in a new database.
fn load(db: &Database) -> Result<State> {
    let txn = db.begin_write().map_err(|e| backend("begin load", e))?;
    let (kvs, revision) = {
        let kvs_table = txn.open_table(KVS).map_err(|e| backend("open kvs", e))?;
        let meta = txn.open_table(META).map_err(|e| backend("open meta", e))?;
        let revision = meta
            .get(META_REVISION)
            .map_err(|e| backend("read revision", e))?
            .map(|guard| guard.value())
            .unwrap_or(0);
        let mut kvs = Vec::new();
        for entry in kvs_table.iter().map_err(|e| backend("scan kvs", e))? {
            let (key, value) = entry.map_err(|e| backend("scan kvs", e))?;
            let (bytes, create_revision, mod_revision) = value.value();
            kvs.push(KeyValue {
                key: key.value().to_owned(),
                value: Bytes::copy_from_slice(bytes),
                create_revision,
                mod_revision,
            });
        }
        (kvs, revision)
    };
    txn.commit().map_err(|e| backend("commit load", e))?;
    tracing::debug!(keys = kvs.len(), revision, "berth-store loaded");
    Ok(State::restored(kvs, revision))
}

/// The writer thread's state.
struct Writer {
    db: Database,
    engine: Arc<Engine>,
    /// Set after a failed commit: the disk may no longer match memory, so refuse all writes.
    failed: Option<String>,
}

impl Writer {
    fn new(db: Database, engine: Arc<Engine>) -> Writer {
        Writer {
            db,
            engine,
            failed: None,
        }
    }

    fn run(mut self, mut rx: mpsc::UnboundedReceiver<Request>) {
        while let Some(first) = rx.blocking_recv() {
            let mut batch = vec![first];
            while batch.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(request) => batch.push(request),
                    Err(_) => break,
                }
            }
            self.commit_batch(batch);
        }
    }

    fn commit_batch(&mut self, batch: Vec<Request>) {
        let (ops, replies): (Vec<_>, Vec<_>) = batch.into_iter().map(|r| (r.op, r.reply)).unzip();
        if let Some(reason) = &self.failed {
            for reply in replies {
                let _ = reply.send(Err(Error::Io(reason.clone())));
            }
            return;
        }
        let mut outcomes = self.engine.plan(ops);
        let accepted: Vec<WatchEvent> = outcomes
            .iter()
            .filter_map(|outcome| outcome.as_ref().ok().cloned())
            .collect();
        if let Some(last) = accepted.last() {
            let revision = last.kv.mod_revision;
            match persist(&self.db, &accepted, revision) {
                Ok(()) => self.engine.apply(&accepted),
                Err(err) => {
                    tracing::error!(error = %err, "berth-store commit failed; refusing further writes");
                    let reason = err.to_string();
                    for outcome in outcomes.iter_mut().filter(|o| o.is_ok()) {
                        *outcome = Err(Error::Io(reason.clone()));
                    }
                    self.failed = Some(reason);
                }
            }
        }
        for (reply, outcome) in replies.into_iter().zip(outcomes) {
            // The caller may have stopped waiting; the write stands anyway.
            let _ = reply.send(outcome.map(|event| event.kv));
        }
    }
}

/// Writes accepted changes and the new revision in one immediately durable transaction.
fn persist(db: &Database, changes: &[WatchEvent], revision: Revision) -> Result<()> {
    let mut txn = db.begin_write().map_err(|e| backend("begin write", e))?;
    txn.set_durability(Durability::Immediate)
        .map_err(|e| backend("set durability", e))?;
    {
        let mut kvs = txn.open_table(KVS).map_err(|e| backend("open kvs", e))?;
        for change in changes {
            let kv = &change.kv;
            match change.kind {
                EventKind::Put => {
                    let row = (kv.value.as_ref(), kv.create_revision, kv.mod_revision);
                    kvs.insert(kv.key.as_str(), row)
                        .map_err(|e| backend("insert", e))?;
                }
                EventKind::Delete => {
                    kvs.remove(kv.key.as_str())
                        .map_err(|e| backend("remove", e))?;
                }
            }
        }
        let mut meta = txn.open_table(META).map_err(|e| backend("open meta", e))?;
        meta.insert(META_REVISION, revision)
            .map_err(|e| backend("write revision", e))?;
    }
    txn.commit().map_err(|e| backend("commit", e))
}
