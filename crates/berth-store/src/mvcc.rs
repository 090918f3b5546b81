//! The in-memory MVCC index: every key's versions back to the compacted revision, and the log
//! of changes (one per revision) that watches replay.
//!
//! `State` is plain data with no locking; [`crate::engine::Engine`] wraps it.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Bound;

use bytes::Bytes;

use crate::watch::event_bytes;
use crate::{Error, EventKind, KeyValue, RangeResult, Result, Revision, WatchEvent};

/// A write asked for by a caller, before it is checked and given a revision.
#[derive(Debug)]
pub(crate) enum WriteOp {
    Create {
        key: String,
        value: Bytes,
    },
    Update {
        key: String,
        value: Bytes,
        expected: Option<Revision>,
    },
    Delete {
        key: String,
        expected: Option<Revision>,
    },
}

impl WriteOp {
    fn key(&self) -> &str {
        match self {
            WriteOp::Create { key, .. }
            | WriteOp::Update { key, .. }
            | WriteOp::Delete { key, .. } => key,
        }
    }
}

/// One version of a key. `value: None` is a deletion (tombstone).
#[derive(Clone, Debug)]
struct Version {
    mod_revision: Revision,
    create_revision: Revision,
    value: Option<Bytes>,
}

/// The store's data: current state, history and change log.
#[derive(Debug, Default)]
pub(crate) struct State {
    /// Each key's versions, oldest first, all newer than the compacted revision except the
    /// first, which may be the version visible at the compacted revision.
    keys: BTreeMap<String, Vec<Version>>,
    /// The change of every revision in `compacted + 1 ..= current`, in order.
    log: VecDeque<WatchEvent>,
    /// What `log` holds, as [`event_bytes`] counts it.
    log_bytes: usize,
    current: Revision,
    compacted: Revision,
}

impl State {
    /// A state holding `kvs` at revision `revision`, with no history (compacted = current).
    pub(crate) fn restored(kvs: Vec<KeyValue>, revision: Revision) -> State {
        let current = kvs
            .iter()
            .map(|kv| kv.mod_revision)
            .fold(revision.max(0), Revision::max);
        let keys = kvs
            .into_iter()
            .map(|kv| {
                let version = Version {
                    mod_revision: kv.mod_revision,
                    create_revision: kv.create_revision,
                    value: Some(kv.value),
                };
                (kv.key, vec![version])
            })
            .collect();
        State {
            keys,
            log: VecDeque::new(),
            log_bytes: 0,
            current,
            compacted: current,
        }
    }

    pub(crate) fn current(&self) -> Revision {
        self.current
    }

    pub(crate) fn compacted(&self) -> Revision {
        self.compacted
    }

    /// The value of `key` at revision `at`.
    fn visible(&self, key: &str, versions: &[Version], at: Revision) -> Option<KeyValue> {
        let idx = versions.partition_point(|v| v.mod_revision <= at);
        let version = versions.get(idx.checked_sub(1)?)?;
        Some(KeyValue {
            key: key.to_owned(),
            value: version.value.clone()?,
            create_revision: version.create_revision,
            mod_revision: version.mod_revision,
        })
    }

    pub(crate) fn get(&self, key: &str) -> Option<KeyValue> {
        let versions = self.keys.get(key)?;
        self.visible(key, versions, self.current)
    }

    /// Checks that `at` is a readable revision and resolves None to the current one.
    pub(crate) fn read_revision(&self, at: Option<Revision>) -> Result<Revision> {
        let at = at.unwrap_or(self.current);
        if at > self.current {
            return Err(Error::FutureRevision {
                requested: at,
                current: self.current,
            });
        }
        if at < self.compacted {
            return Err(Error::Compacted {
                requested: at,
                compacted: self.compacted,
            });
        }
        Ok(at)
    }

    pub(crate) fn range(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
        at: Option<Revision>,
    ) -> Result<RangeResult> {
        let at = self.read_revision(at)?;
        let start = match start_after {
            Some(after) if after >= prefix => Bound::Excluded(after),
            _ => Bound::Included(prefix),
        };
        let mut kvs = Vec::new();
        let mut more = false;
        let candidates = self
            .keys
            .range::<str, _>((start, Bound::Unbounded))
            .take_while(|(key, _)| key.starts_with(prefix));
        for (key, versions) in candidates {
            let Some(kv) = self.visible(key, versions, at) else {
                continue;
            };
            if limit > 0 && kvs.len() == limit {
                more = true;
                break;
            }
            kvs.push(kv);
        }
        Ok(RangeResult {
            kvs,
            more,
            revision: at,
        })
    }

    /// How many keys with `prefix` exist at `at`, strictly after `start_after` if given: what
    /// [`State::range`] would return without a limit, counted without copying any value.
    pub(crate) fn count(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        at: Option<Revision>,
    ) -> Result<usize> {
        let at = self.read_revision(at)?;
        let start = match start_after {
            Some(after) if after >= prefix => Bound::Excluded(after),
            _ => Bound::Included(prefix),
        };
        Ok(self
            .keys
            .range::<str, _>((start, Bound::Unbounded))
            .take_while(|(key, _)| key.starts_with(prefix))
            .filter(|(_, versions)| {
                let idx = versions.partition_point(|v| v.mod_revision <= at);
                idx.checked_sub(1)
                    .and_then(|i| versions.get(i))
                    .is_some_and(|v| v.value.is_some())
            })
            .count())
    }

    /// Decides each write in order against the current state, as amended by the earlier writes
    /// of the same batch, giving each accepted write the next revision. Changes nothing.
    pub(crate) fn plan(&self, ops: Vec<WriteOp>) -> Vec<Result<WatchEvent>> {
        let mut next = self.current;
        let mut overlay: HashMap<String, Option<KeyValue>> = HashMap::new();
        ops.into_iter()
            .map(|op| {
                let latest = match overlay.get(op.key()) {
                    Some(kv) => kv.clone(),
                    None => self.get(op.key()),
                };
                let event = decide(op, latest, next + 1)?;
                next += 1;
                let after = match event.kind {
                    EventKind::Put => Some(event.kv.clone()),
                    EventKind::Delete => None,
                };
                overlay.insert(event.kv.key.clone(), after);
                Ok(event)
            })
            .collect()
    }

    /// Applies changes in revision order. The local backends carry the revisions `current + 1,
    /// current + 2, ...`; a mirror of etcd sees only its prefix, so its revisions may skip (other
    /// prefixes' writes) or repeat (a foreign multi-key transaction).
    pub(crate) fn apply(&mut self, events: &[WatchEvent]) {
        for event in events {
            let kv = &event.kv;
            debug_assert!(kv.mod_revision >= self.current);
            let value = match event.kind {
                EventKind::Put => Some(kv.value.clone()),
                EventKind::Delete => None,
            };
            let version = Version {
                mod_revision: kv.mod_revision,
                create_revision: kv.create_revision,
                value,
            };
            match self.keys.get_mut(kv.key.as_str()) {
                Some(versions) => versions.push(version),
                None => {
                    self.keys.insert(kv.key.clone(), vec![version]);
                }
            }
            self.log_bytes += event_bytes(event);
            self.log.push_back(event.clone());
            self.current = kv.mod_revision;
        }
    }

    /// Bytes of the retained history (see [`event_bytes`]).
    pub(crate) fn history_bytes(&self) -> usize {
        self.log_bytes
    }

    /// Changes in the retained history.
    pub(crate) fn history_len(&self) -> usize {
        self.log.len()
    }

    /// Forgets the oldest history, as [`State::compact`] does, until at most `max_bytes` are
    /// left. Whole revisions go, so the compacted revision stays a state as it was.
    pub(crate) fn trim_history(&mut self, max_bytes: usize) {
        if self.log_bytes <= max_bytes {
            return;
        }
        let mut left = self.log_bytes;
        let mut upto = self.compacted;
        for event in &self.log {
            if left <= max_bytes && event.kv.mod_revision > upto {
                break;
            }
            left -= event_bytes(event);
            upto = event.kv.mod_revision;
        }
        self.compact(upto);
    }

    /// `event` completed from this state as it stands before it: its previous value, and for
    /// a deletion the deleted value and create revision. A mirror of etcd fills these in itself
    /// rather than asking etcd to read and send every previous value with each watch event.
    pub(crate) fn with_prev(&self, mut event: WatchEvent) -> WatchEvent {
        let prev = self.get(&event.kv.key);
        if event.kind == EventKind::Delete {
            if let Some(last) = &prev {
                event.kv.value = last.value.clone();
                event.kv.create_revision = last.create_revision;
            }
        }
        event.prev = prev;
        event
    }

    /// The version of `key` written at exactly `revision`, if it is a live value still retained.
    pub(crate) fn written_at(&self, key: &str, revision: Revision) -> Option<KeyValue> {
        let versions = self.keys.get(key)?;
        self.visible(key, versions, revision)
            .filter(|kv| kv.mod_revision == revision)
    }

    /// The logged changes after revision `after`, oldest first. `after` must not be below the
    /// compacted revision. Searched by revision, not counted, since a mirror's log may skip
    /// revisions.
    pub(crate) fn changes_after(&self, after: Revision) -> impl Iterator<Item = &WatchEvent> {
        let skip = self
            .log
            .partition_point(|event| event.kv.mod_revision <= after);
        self.log.range(skip..)
    }

    /// Forgets history at or below `revision` (which must be in `compacted..=current`). Only keys
    /// changed in the forgotten revisions are visited.
    pub(crate) fn compact(&mut self, revision: Revision) {
        while self
            .log
            .front()
            .is_some_and(|event| event.kv.mod_revision <= revision)
        {
            let Some(event) = self.log.pop_front() else {
                break;
            };
            self.log_bytes -= event_bytes(&event);
            let key = event.kv.key;
            let Some(versions) = self.keys.get_mut(key.as_str()) else {
                continue;
            };
            // Keep the version visible at `revision` (if any) and everything newer.
            let visible = versions.partition_point(|v| v.mod_revision <= revision);
            if visible > 1 {
                versions.drain(..visible - 1);
            }
            if versions
                .first()
                .is_some_and(|v| v.value.is_none() && v.mod_revision <= revision)
            {
                versions.remove(0);
            }
            if versions.is_empty() {
                self.keys.remove(key.as_str());
            }
        }
        self.compacted = revision;
    }

    /// Number of keys with any retained version (live, deleted-but-retained).
    pub(crate) fn indexed_keys(&self) -> usize {
        self.keys.len()
    }
}

/// Decides one write against the key's latest value, at revision `revision`.
fn decide(op: WriteOp, latest: Option<KeyValue>, revision: Revision) -> Result<WatchEvent> {
    fn check(key: &str, current: &KeyValue, expected: Option<Revision>) -> Result<()> {
        match expected {
            Some(expected) if expected != current.mod_revision => Err(Error::Conflict {
                key: key.to_owned(),
                expected,
                actual: current.mod_revision,
            }),
            _ => Ok(()),
        }
    }
    match (op, latest) {
        (WriteOp::Create { key, .. }, Some(_)) => Err(Error::AlreadyExists { key }),
        (WriteOp::Create { key, value }, None) => Ok(WatchEvent {
            kind: EventKind::Put,
            kv: KeyValue {
                key,
                value,
                create_revision: revision,
                mod_revision: revision,
            },
            prev: None,
        }),
        (WriteOp::Update { key, .. } | WriteOp::Delete { key, .. }, None) => {
            Err(Error::NotFound { key })
        }
        (
            WriteOp::Update {
                key,
                value,
                expected,
            },
            Some(current),
        ) => {
            check(&key, &current, expected)?;
            Ok(WatchEvent {
                kind: EventKind::Put,
                kv: KeyValue {
                    key,
                    value,
                    create_revision: current.create_revision,
                    mod_revision: revision,
                },
                prev: Some(current),
            })
        }
        (WriteOp::Delete { key, expected }, Some(current)) => {
            check(&key, &current, expected)?;
            Ok(WatchEvent {
                kind: EventKind::Delete,
                kv: KeyValue {
                    mod_revision: revision,
                    ..current.clone()
                },
                prev: Some(current),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use crate::{Error, Limits, Store};

    fn store(history_bytes: usize) -> Store {
        Store::memory_with_limits(Limits {
            history_bytes,
            ..Limits::default()
        })
    }

    fn value(len: usize) -> Bytes {
        Bytes::from(vec![b'x'; len])
    }

    #[tokio::test]
    async fn the_history_forgets_its_oldest_changes_past_its_byte_bound() {
        let store = store(8 << 10);
        store.create("/quiet", value(10)).await.unwrap();
        let mut revision = store
            .create("/big", value(1 << 10))
            .await
            .unwrap()
            .mod_revision;
        for _ in 0..100 {
            let updated = store.update("/big", value(1 << 10), None).await.unwrap();
            revision = updated.mod_revision;
            let history = store.history().unwrap();
            assert!(history.bytes <= 8 << 10, "{history:?}");
        }
        let history = store.history().unwrap();
        assert!(history.changes >= 4 && history.changes < 10, "{history:?}");
        assert_eq!(
            store.compacted_revision(),
            revision - history.changes as i64
        );
        // The current state is whole: keys not rewritten for long are still there.
        assert_eq!(store.get("/quiet").unwrap().unwrap().value, value(10));
        assert_eq!(store.range("/", None, 0, None).unwrap().kvs.len(), 2);
    }

    #[tokio::test]
    async fn a_watch_from_a_forgotten_revision_is_told_it_is_compacted() {
        let store = store(4 << 10);
        for _ in 0..20 {
            store.create_or_update("/big", value(1 << 10)).await;
        }
        let compacted = store.compacted_revision();
        assert!(compacted > 1);
        assert!(matches!(
            store.watch("/", 1),
            Err(Error::Compacted { requested: 1, compacted: c }) if c == compacted
        ));
        assert!(matches!(
            store.range("/", None, 0, Some(1)),
            Err(Error::Compacted { .. })
        ));
        let mut watch = store.watch("/", compacted).unwrap();
        assert_eq!(
            watch.recv().await.unwrap().kv.mod_revision,
            compacted + 1,
            "what is kept is replayed in full"
        );
    }

    #[tokio::test]
    async fn one_change_larger_than_the_bound_leaves_the_history_empty_not_the_state() {
        let store = store(1 << 10);
        let kv = store.create("/big", value(4 << 10)).await.unwrap();
        assert_eq!(store.history().unwrap().changes, 0);
        assert_eq!(store.compacted_revision(), kv.mod_revision);
        assert_eq!(store.get("/big").unwrap(), Some(kv));
    }

    impl Store {
        async fn create_or_update(&self, key: &str, value: Bytes) {
            if self.get(key).unwrap().is_some() {
                self.update(key, value, None).await.unwrap();
            } else {
                self.create(key, value).await.unwrap();
            }
        }
    }
}
