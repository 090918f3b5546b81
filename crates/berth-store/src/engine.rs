//! The shared in-memory engine: MVCC state behind a read-write lock, plus watchers.
//!
//! Lock order: `state` before `watchers`. Applying changes takes `state` for writing and
//! notifies watchers before releasing it; registering a watch takes `state` for reading, so a
//! watch sees every change exactly once, either in its replay or live.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::backend::{Footprint, History};
use crate::mvcc::{State, WriteOp};
use crate::watch::{Watch, Watcher, Watchers};
use crate::{Error, KeyValue, Limits, RangeResult, Result, Revision, WatchEvent};

/// MVCC state and watchers, shared by the store handles and the durable writer.
pub(crate) struct Engine {
    state: RwLock<State>,
    watchers: Mutex<Watchers>,
    closed: AtomicBool,
    limits: Limits,
}

impl Engine {
    pub(crate) fn new(state: State) -> Engine {
        Engine::with_limits(state, Limits::default())
    }

    pub(crate) fn with_limits(state: State, limits: Limits) -> Engine {
        Engine {
            state: RwLock::new(state),
            watchers: Mutex::new(Watchers::default()),
            closed: AtomicBool::new(false),
            limits,
        }
    }

    // A panic while holding a lock cannot leave `State` half-updated in a way later readers
    // would misread (updates are pushes), so poisoning is ignored.
    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    fn watchers(&self) -> MutexGuard<'_, Watchers> {
        self.watchers.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            Err(Error::Closed)
        } else {
            Ok(())
        }
    }

    pub(crate) fn current_revision(&self) -> Revision {
        self.read().current()
    }

    pub(crate) fn compacted_revision(&self) -> Revision {
        self.read().compacted()
    }

    pub(crate) fn get(&self, key: &str) -> Result<Option<KeyValue>> {
        self.check_open()?;
        Ok(self.read().get(key))
    }

    pub(crate) fn range(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
        at: Option<Revision>,
    ) -> Result<RangeResult> {
        self.check_open()?;
        self.read().range(prefix, start_after, limit, at)
    }

    pub(crate) fn count(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        at: Option<Revision>,
    ) -> Result<usize> {
        self.check_open()?;
        self.read().count(prefix, start_after, at)
    }

    pub(crate) fn watch(&self, prefix: &str, after: Revision) -> Result<Watch> {
        let state = self.read();
        // Checked under the lock so that `close` (which clears watchers after setting the flag)
        // cannot miss this watcher.
        self.check_open()?;
        if after < state.compacted() {
            return Err(Error::Compacted {
                requested: after,
                compacted: state.compacted(),
            });
        }
        let (watcher, watch) = Watcher::new(prefix, after, &self.limits);
        self.watchers()
            .register(watcher, state.changes_after(after));
        Ok(watch)
    }

    pub(crate) fn compact(&self, revision: Revision) -> Result<()> {
        self.check_open()?;
        let mut state = self.write();
        if revision > state.current() {
            return Err(Error::FutureRevision {
                requested: revision,
                current: state.current(),
            });
        }
        if revision > state.compacted() {
            state.compact(revision);
        }
        Ok(())
    }

    /// Checks and applies one write at once (the memory backend).
    pub(crate) fn write_now(&self, op: WriteOp) -> Result<KeyValue> {
        self.check_open()?;
        let mut state = self.write();
        let result = state.plan(vec![op]).pop().unwrap_or(Err(Error::Closed));
        if let Ok(event) = &result {
            let events = std::slice::from_ref(event);
            state.apply(events);
            state.trim_history(self.limits.history_bytes);
            self.watchers().notify(events);
        }
        result.map(|event| event.kv)
    }

    /// Decides a batch of writes against the current state without changing it (the durable
    /// writer persists the accepted ones, then calls [`Engine::apply`]). Only valid while the
    /// caller is the only writer.
    pub(crate) fn plan(&self, ops: Vec<WriteOp>) -> Vec<Result<WatchEvent>> {
        self.read().plan(ops)
    }

    /// Applies planned (and persisted) changes and notifies watchers.
    pub(crate) fn apply(&self, events: &[WatchEvent]) {
        let mut state = self.write();
        state.apply(events);
        state.trim_history(self.limits.history_bytes);
        self.watchers().notify(events);
    }

    /// Applies changes that carry no previous values (an etcd watch without prev_kv), filling
    /// them in from the state each change follows, and notifies watchers.
    pub(crate) fn apply_completing(&self, events: Vec<WatchEvent>) {
        let mut state = self.write();
        let mut completed = Vec::with_capacity(events.len());
        for event in events {
            let event = state.with_prev(event);
            state.apply(std::slice::from_ref(&event));
            completed.push(event);
        }
        state.trim_history(self.limits.history_bytes);
        self.watchers().notify(&completed);
    }

    /// The live version of `key` written at exactly `revision`, if still retained.
    pub(crate) fn written_at(&self, key: &str, revision: Revision) -> Option<KeyValue> {
        self.read().written_at(key, revision)
    }

    /// Replaces the whole state with a fresh list (a mirror that fell behind etcd's
    /// compaction) and ends every watch: their history is gone, so each watcher comes back
    /// from its last revision, is told it is compacted (410 Gone at the API) and relists.
    pub(crate) fn reset(&self, state: State) {
        let mut current = self.write();
        *current = state;
        self.watchers().clear();
    }

    /// Marks the engine closed and ends every watch.
    pub(crate) fn close(&self) {
        let _state = self.write();
        self.closed.store(true, Ordering::Release);
        self.watchers().clear();
    }

    /// Bytes and changes held in the history, and its bound.
    pub(crate) fn history(&self) -> History {
        let state = self.read();
        History {
            bytes: state.history_bytes(),
            changes: state.history_len(),
            limit_bytes: self.limits.history_bytes,
        }
    }

    /// Registered watchers and retained keys, for the conformance suite's leak checks.
    pub(crate) fn footprint(&self) -> Footprint {
        let state = self.read();
        Footprint {
            watchers: self.watchers().len(),
            indexed_keys: state.indexed_keys(),
        }
    }
}
