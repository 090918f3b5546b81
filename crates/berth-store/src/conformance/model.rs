//! Property test: random create/update/delete/compact sequences applied to the store and to a
//! plain `BTreeMap` model agree on every get, every range (paged or not) at every retained
//! revision, on errors, and on the stream a watch from the opening revision delivers.

use std::collections::BTreeMap;

use bytes::Bytes;
use proptest::prelude::*;
use proptest::test_runner::TestRunner;

use super::Fixture;
use crate::{Error, EventKind, KeyValue, Revision, Store};

const KEYS: &[&str] = &["/a/1", "/a/2", "/a/3", "/ab", "/b/1", "/b/2"];
const PREFIXES: &[&str] = &["", "/a/", "/a", "/b/", "/c/"];

#[derive(Clone, Copy, Debug)]
enum Cas {
    None,
    Right,
    Wrong,
}

#[derive(Clone, Debug)]
enum Op {
    Create(usize, u8),
    Update(usize, u8, Cas),
    Delete(usize, Cas),
    /// Compact to this fraction (out of 255) of the way from compacted to current.
    Compact(u8),
}

fn cas() -> impl Strategy<Value = Cas> {
    prop_oneof![Just(Cas::None), Just(Cas::Right), Just(Cas::Wrong)]
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0..KEYS.len();
    prop_oneof![
        3 => (key.clone(), any::<u8>()).prop_map(|(k, v)| Op::Create(k, v)),
        3 => (key.clone(), any::<u8>(), cas()).prop_map(|(k, v, c)| Op::Update(k, v, c)),
        2 => (key, cas()).prop_map(|(k, c)| Op::Delete(k, c)),
        1 => any::<u8>().prop_map(Op::Compact),
    ]
}

/// The reference: every revision's full state, kept naively.
struct Model {
    /// The store's revision when opened (snapshot 0).
    base: Revision,
    snapshots: Vec<BTreeMap<String, KeyValue>>,
    compacted: Revision,
    events: Vec<(EventKind, KeyValue)>,
}

impl Model {
    fn current(&self) -> &BTreeMap<String, KeyValue> {
        self.snapshots.last().expect("revision 0 exists")
    }

    fn revision(&self) -> Revision {
        self.base + self.snapshots.len() as Revision - 1
    }

    fn expected_revision(&self, key: &str, cas: Cas) -> Option<Revision> {
        let actual = self.current().get(key).map_or(1, |kv| kv.mod_revision);
        match cas {
            Cas::None => None,
            Cas::Right => Some(actual),
            Cas::Wrong => Some(actual + 1000),
        }
    }

    /// Applies a write to the model; Err names the error kind the store must return.
    fn write(&mut self, op: &Op) -> Result<KeyValue, &'static str> {
        let revision = self.revision() + 1;
        let mut next = self.current().clone();
        let (kind, kv) = match *op {
            Op::Create(k, v) => {
                if next.contains_key(KEYS[k]) {
                    return Err("AlreadyExists");
                }
                let kv = KeyValue {
                    key: KEYS[k].to_owned(),
                    value: Bytes::from(vec![v]),
                    create_revision: revision,
                    mod_revision: revision,
                };
                next.insert(kv.key.clone(), kv.clone());
                (EventKind::Put, kv)
            }
            Op::Update(k, v, cas) => {
                let expected = self.expected_revision(KEYS[k], cas);
                let current = next.get(KEYS[k]).ok_or("NotFound")?;
                if expected.is_some_and(|e| e != current.mod_revision) {
                    return Err("Conflict");
                }
                let kv = KeyValue {
                    value: Bytes::from(vec![v]),
                    mod_revision: revision,
                    ..current.clone()
                };
                next.insert(kv.key.clone(), kv.clone());
                (EventKind::Put, kv)
            }
            Op::Delete(k, cas) => {
                let expected = self.expected_revision(KEYS[k], cas);
                let current = next.remove(KEYS[k]).ok_or("NotFound")?;
                if expected.is_some_and(|e| e != current.mod_revision) {
                    return Err("Conflict");
                }
                let kv = KeyValue {
                    mod_revision: revision,
                    ..current
                };
                (EventKind::Delete, kv)
            }
            Op::Compact(_) => unreachable!("compaction is not a write"),
        };
        self.snapshots.push(next);
        self.events.push((kind, kv.clone()));
        Ok(kv)
    }
}

fn error_kind(err: &Error) -> &'static str {
    match err {
        Error::AlreadyExists { .. } => "AlreadyExists",
        Error::NotFound { .. } => "NotFound",
        Error::Conflict { .. } => "Conflict",
        Error::Compacted { .. } => "Compacted",
        Error::FutureRevision { .. } => "FutureRevision",
        Error::Io(_) => "Io",
        Error::Closed => "Closed",
    }
}

/// Reads `prefix` at `at` in pages of `limit`, reassembled.
fn paged(store: &Store, prefix: &str, limit: usize, at: Revision) -> Result<Vec<KeyValue>, Error> {
    let mut out = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = store.range(prefix, after.as_deref(), limit, Some(at))?;
        assert_eq!(page.revision, at);
        after = page.kvs.last().map(|kv| kv.key.clone());
        out.extend(page.kvs);
        if !page.more {
            return Ok(out);
        }
    }
}

fn check_reads(store: &Store, model: &Model) {
    assert_eq!(store.current_revision(), model.revision());
    assert_eq!(store.compacted_revision(), model.compacted);
    for key in KEYS {
        assert_eq!(store.get(key).unwrap(), model.current().get(*key).cloned());
    }
    for at in model.base..=model.revision() {
        for prefix in PREFIXES {
            let expected: Vec<_> = model.snapshots[(at - model.base) as usize]
                .range(prefix.to_string()..)
                .take_while(|(k, _)| k.starts_with(prefix))
                .map(|(_, kv)| kv.clone())
                .collect();
            for limit in [0, 1, 2, 5] {
                match paged(store, prefix, limit, at) {
                    Ok(kvs) => {
                        assert!(at >= model.compacted, "read at compacted revision {at}");
                        assert_eq!(kvs, expected, "prefix {prefix:?} at {at} limit {limit}");
                    }
                    Err(Error::Compacted { .. }) => assert!(at < model.compacted),
                    Err(other) => panic!("range at {at}: {other}"),
                }
            }
        }
    }
}

fn run(store: Store, ops: Vec<Op>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let base = store.current_revision();
    let mut watch = store.watch("", base).expect("watch");
    let mut model = Model {
        base,
        snapshots: vec![BTreeMap::new()],
        compacted: base,
        events: Vec::new(),
    };
    for op in &ops {
        match op {
            Op::Compact(fraction) => {
                let span = model.revision() - model.compacted;
                let target = model.compacted + span * Revision::from(*fraction) / 255;
                store.compact(target).expect("compact");
                model.compacted = model.compacted.max(target);
            }
            Op::Create(k, v) => {
                let got = runtime.block_on(store.create(KEYS[*k], Bytes::from(vec![*v])));
                let want = model.write(op);
                assert_eq!(got.map_err(|e| error_kind(&e)), want, "{op:?}");
            }
            Op::Update(k, v, cas) => {
                let expected = model.expected_revision(KEYS[*k], *cas);
                let got = runtime.block_on(store.update(KEYS[*k], Bytes::from(vec![*v]), expected));
                let want = model.write(op);
                assert_eq!(got.map_err(|e| error_kind(&e)), want, "{op:?}");
            }
            Op::Delete(k, cas) => {
                let expected = model.expected_revision(KEYS[*k], *cas);
                let got = runtime.block_on(store.delete(KEYS[*k], expected));
                let want = model.write(op);
                assert_eq!(got.map_err(|e| error_kind(&e)), want, "{op:?}");
            }
        }
        check_reads(&store, &model);
    }
    let mut seen = Vec::new();
    while let Ok(event) = watch.try_recv() {
        seen.push((event.kind, event.kv));
    }
    assert_eq!(seen, model.events);
}

/// Sequences that once failed (kept from proptest's regression file).
fn regressions() -> Vec<Vec<Op>> {
    vec![
        vec![
            Op::Create(4, 0),
            Op::Update(4, 0, Cas::None),
            Op::Create(0, 0),
            Op::Compact(170),
        ],
        vec![
            Op::Create(0, 0),
            Op::Update(0, 0, Cas::None),
            Op::Create(1, 1),
            Op::Compact(180),
        ],
    ]
}

/// The store of `fixture` agrees with the model on the known regressions and on random
/// operation sequences (as many as [`Fixture::model_cases`] asks for).
pub fn store_matches_model(fixture: &dyn Fixture) {
    let fresh_run = |ops: Vec<Op>| {
        let dir = tempfile::tempdir().expect("tempdir");
        run(fixture.open(dir.path()).expect("open"), ops);
    };
    for ops in regressions() {
        fresh_run(ops);
    }
    let (cases, max_ops) = fixture.model_cases();
    let config = ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let outcome =
        TestRunner::new(config).run(&proptest::collection::vec(op(), 1..max_ops), |ops| {
            fresh_run(ops);
            Ok(())
        });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
}
