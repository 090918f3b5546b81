//! The etcd backend: every object lives in etcd v3; this process serves reads and watches from
//! a local mirror (see [`mirror`]) and sends writes to etcd as compare-and-swap transactions
//! (see [`writes`]). Several API servers on one etcd serve one cluster: a write through one
//! reaches the others' mirrors through their own etcd watch, in revision order.
//!
//! resourceVersion is etcd's mod revision. The mirror starts at the revision it listed at, so
//! its history (for ranges at a past revision and watches from one) begins there: older
//! revisions answer Compacted (410 Gone at the API, and clients relist, as after an upstream
//! watch cache's restart).
//!
//! The backend runs its client and mirror on a small runtime of its own, so it can be opened
//! and used from any thread or runtime (the conformance suite opens stores outside one).

mod compaction;
mod config;
mod keys;
mod mirror;
mod writes;

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::runtime::{Handle, Runtime};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::backend::{Backend, Footprint, Pending};
use crate::engine::Engine;
use crate::{Error, KeyValue, RangeResult, Result, Revision};

use compaction::Compactor;
pub use config::EtcdConfig;
use keys::KeyMap;
use writes::{Write, Writer};

/// Worker threads of the backend's own runtime (gRPC and the mirror; the work is light, and a
/// second thread only added switches: bench e2e through etcd ran 2-7% faster with one).
const WORKERS: usize = 1;

/// A store whose data lives in etcd.
pub(crate) struct Etcd {
    engine: Arc<Engine>,
    writer: Writer,
    handle: Handle,
    runtime: Mutex<Option<Runtime>>,
    mirror: Mutex<Option<JoinHandle<()>>>,
}

impl Etcd {
    /// Connects, lists the prefix and starts following it. Blocks the calling thread until the
    /// list is loaded.
    pub(crate) fn open(config: &EtcdConfig) -> Result<Etcd> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(WORKERS)
            .thread_name("berth-etcd")
            .enable_all()
            .build()
            .map_err(|e| Error::Io(format!("starting the etcd client runtime: {e}")))?;
        let keys = KeyMap::new(&config.store_root, &config.prefix);
        let (tx, rx) = std::sync::mpsc::channel();
        let connect_config = config.clone();
        let connect_keys = keys.clone();
        runtime.spawn(async move {
            let loaded = async {
                let members = connect_config.members().await?;
                let state = mirror::load(&members, &connect_keys).await?;
                Ok::<_, Error>((Arc::new(members), state))
            };
            let _ = tx.send(loaded.await);
        });
        let (members, state) = rx
            .recv()
            .map_err(|_| Error::Io("the etcd client runtime stopped".into()))??;
        let revision = state.current();
        let engine = Arc::new(Engine::new(state));
        let (applied_tx, applied) = watch::channel(revision);
        if let Some(interval) = config.compaction_interval {
            let compactor = Compactor::new(
                Arc::clone(&members),
                Arc::clone(&engine),
                keys.compaction_key(),
            );
            runtime.spawn(compactor.run(interval));
        }
        let mirror = runtime.spawn(mirror::follow(
            Arc::clone(&members),
            keys.clone(),
            Arc::clone(&engine),
            applied_tx,
            revision,
        ));
        Ok(Etcd {
            writer: Writer {
                members,
                keys: keys.clone(),
                applied,
                engine: Arc::clone(&engine),
            },
            engine,
            handle: runtime.handle().clone(),
            runtime: Mutex::new(Some(runtime)),
            mirror: Mutex::new(Some(mirror)),
        })
    }

    /// Runs `write` on the backend's runtime and waits for its outcome from any runtime.
    fn submit(&self, write: Write) -> Pending<'_, KeyValue> {
        if let Err(closed) = self.engine.check_open() {
            return Box::pin(std::future::ready(Err(closed)));
        }
        let task = self.handle.spawn(self.writer.clone().run(write));
        Box::pin(async move { task.await.map_err(|_| Error::Closed)? })
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.close();
    }
}

impl Backend for Etcd {
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
        self.submit(Write::Create {
            key: key.to_owned(),
            value,
        })
    }

    fn update<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
        expected: Option<Revision>,
    ) -> Pending<'a, KeyValue> {
        self.submit(Write::Update {
            key: key.to_owned(),
            value,
            expected,
        })
    }

    fn delete<'a>(&'a self, key: &'a str, expected: Option<Revision>) -> Pending<'a, KeyValue> {
        self.submit(Write::Delete {
            key: key.to_owned(),
            expected,
        })
    }

    fn watch(&self, prefix: &str, after: Revision) -> Result<crate::Watch> {
        self.engine.watch(prefix, after)
    }

    /// Forgets the mirror's history; etcd's own history is compacted on its own interval (see
    /// [`Compactor`]).
    fn compact(&self, revision: Revision) -> Result<()> {
        self.engine.compact(revision)
    }

    /// Stops following etcd and ends every watch. Writes still in flight fail with Closed
    /// (etcd may or may not have applied them, as with any lost connection).
    fn close(&self) {
        if let Some(mirror) = self.mirror.lock().unwrap_or_else(|e| e.into_inner()).take() {
            mirror.abort();
        }
        self.engine.close();
        let runtime = self
            .runtime
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(runtime) = runtime {
            runtime.shutdown_background();
        }
    }

    fn history(&self) -> Option<crate::backend::History> {
        Some(self.engine.history())
    }

    fn footprint(&self) -> Option<Footprint> {
        Some(self.engine.footprint())
    }
}
