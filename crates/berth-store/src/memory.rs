//! The memory backend: the engine alone, each write applied at once. For tests and simulation.

use bytes::Bytes;

use crate::backend::{Backend, Footprint, Pending};
use crate::engine::Engine;
use crate::mvcc::{State, WriteOp};
use crate::{KeyValue, Limits, RangeResult, Result, Revision};

/// A store that lives in memory only.
pub(crate) struct Memory {
    engine: Engine,
}

impl Memory {
    pub(crate) fn new(limits: Limits) -> Memory {
        Memory {
            engine: Engine::with_limits(State::default(), limits),
        }
    }

    fn write(&self, op: WriteOp) -> Pending<'_, KeyValue> {
        Box::pin(std::future::ready(self.engine.write_now(op)))
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        self.engine.close();
    }
}

impl Backend for Memory {
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
        self.write(WriteOp::Create {
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
        self.write(WriteOp::Update {
            key: key.to_owned(),
            value,
            expected,
        })
    }

    fn delete<'a>(&'a self, key: &'a str, expected: Option<Revision>) -> Pending<'a, KeyValue> {
        self.write(WriteOp::Delete {
            key: key.to_owned(),
            expected,
        })
    }

    fn watch(&self, prefix: &str, after: Revision) -> Result<crate::Watch> {
        self.engine.watch(prefix, after)
    }

    fn compact(&self, revision: Revision) -> Result<()> {
        self.engine.compact(revision)
    }

    fn close(&self) {
        self.engine.close();
    }

    fn history(&self) -> Option<crate::backend::History> {
        Some(self.engine.history())
    }

    fn footprint(&self) -> Option<Footprint> {
        Some(self.engine.footprint())
    }
}
