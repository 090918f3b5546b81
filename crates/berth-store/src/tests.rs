//! The conformance suite for each backend in this crate, and checks only the redb backend has.

use crate::conformance::{EtcdFixture, MemoryFixture, RedbFixture};
use crate::{Error, Store};

crate::conformance_suite!(memory, MemoryFixture);
crate::conformance_suite!(redb, RedbFixture);
crate::conformance_suite!(etcd, EtcdFixture::default());

#[test]
fn durable_open_twice_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let _first = Store::open(dir.path()).unwrap();
    assert!(matches!(Store::open(dir.path()), Err(Error::Io(_))));
}

#[test]
fn corrupt_file_is_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(crate::durable::FILE_NAME),
        b"not a database",
    )
    .unwrap();
    assert!(matches!(Store::open(dir.path()), Err(Error::Io(_))));
}

#[test]
fn the_durable_store_is_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    let _store = Store::open(&store_dir).unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&store_dir), 0o700);
    assert_eq!(mode(&store_dir.join(crate::durable::FILE_NAME)), 0o600);
}

/// The etcd mirror's engine rules: events followed without prev_kv are completed from the
/// state they follow; a reset (relist after compaction) ends watches and refuses old revisions.
mod mirror_engine {
    use bytes::Bytes;

    use crate::engine::Engine;
    use crate::mvcc::State;
    use crate::{Error, EventKind, KeyValue, WatchEvent};

    fn kv(key: &str, value: &str, create: i64, modified: i64) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Bytes::from(value.to_owned()),
            create_revision: create,
            mod_revision: modified,
        }
    }

    fn bare(kind: EventKind, kv: KeyValue) -> WatchEvent {
        WatchEvent {
            kind,
            kv,
            prev: None,
        }
    }

    fn deletion(key: &str, revision: i64) -> WatchEvent {
        bare(EventKind::Delete, kv(key, "", 0, revision))
    }

    #[test]
    fn followed_events_get_their_previous_values_from_the_mirror() {
        let engine = Engine::new(State::restored(vec![kv("/a", "1", 3, 3)], 5));
        let mut watch = engine.watch("/", 5).unwrap();
        engine.apply_completing(vec![
            bare(EventKind::Put, kv("/a", "2", 3, 6)),
            bare(EventKind::Put, kv("/b", "x", 6, 6)),
            deletion("/a", 7),
        ]);
        let update = watch.try_recv().unwrap();
        assert_eq!(update.prev, Some(kv("/a", "1", 3, 3)));
        let create = watch.try_recv().unwrap();
        assert_eq!(create.prev, None);
        // A deletion reports the deleted value, as etcd's prev_kv would have.
        let delete = watch.try_recv().unwrap();
        assert_eq!(delete.kv, kv("/a", "2", 3, 7));
        assert_eq!(delete.prev, Some(kv("/a", "2", 3, 6)));
        assert_eq!(engine.get("/a").unwrap(), None);
    }

    #[test]
    fn a_write_is_found_at_its_own_revision_only() {
        let engine = Engine::new(State::restored(vec![kv("/a", "1", 3, 3)], 3));
        engine.apply_completing(vec![bare(EventKind::Put, kv("/a", "2", 3, 4))]);
        assert_eq!(engine.written_at("/a", 4), Some(kv("/a", "2", 3, 4)));
        assert_eq!(engine.written_at("/a", 5), None);
        engine.apply_completing(vec![deletion("/a", 5)]);
        assert_eq!(engine.written_at("/a", 5), None);
    }

    #[test]
    fn a_reset_ends_watches_and_refuses_revisions_before_the_new_list() {
        let engine = Engine::new(State::restored(vec![kv("/a", "1", 3, 3)], 3));
        let mut watch = engine.watch("/", 3).unwrap();
        engine.reset(State::restored(vec![kv("/a", "9", 3, 20)], 21));
        assert!(matches!(
            watch.try_recv(),
            Err(tokio::sync::mpsc::error::TryRecvError::Disconnected)
        ));
        assert!(matches!(
            engine.watch("/", 3),
            Err(Error::Compacted { compacted: 21, .. })
        ));
        assert_eq!(engine.get("/a").unwrap(), Some(kv("/a", "9", 3, 20)));
        assert!(engine.watch("/", 21).is_ok());
    }
}
