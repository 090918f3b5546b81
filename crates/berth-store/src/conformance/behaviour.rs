//! Behaviour checks: writes, reads, compaction and watches on a fresh store.
//!
//! Revisions are read relative to `base`, the store's revision when opened: 0 for a new
//! embedded store, wherever etcd is for the etcd backend (whose fresh member is at 1).

use std::collections::BTreeSet;

use bytes::Bytes;

use super::{with_store, with_store_threaded, Fixture};
use crate::{Error, EventKind, WatchEvent};

pub(super) fn v(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

pub(super) async fn next(rx: &mut crate::Watch) -> WatchEvent {
    tokio::time::timeout(std::time::Duration::from_secs(5), rx.recv())
        .await
        .expect("watch event in time")
        .expect("watch still open")
}

pub fn create_then_already_exists(fixture: &dyn Fixture) {
    with_store(fixture, |s| async move {
        let base = s.current_revision();
        let kv = s.create("/a", v("1")).await.unwrap();
        assert_eq!(kv.create_revision, base + 1);
        assert_eq!(kv.mod_revision, base + 1);
        assert_eq!(s.get("/a").unwrap(), Some(kv));
        let err = s.create("/a", v("2")).await.unwrap_err();
        assert!(
            matches!(err, Error::AlreadyExists { ref key } if key == "/a"),
            "{err}"
        );
        assert_eq!(
            s.current_revision(),
            base + 1,
            "a failed write takes no revision"
        );
        assert_eq!(s.get("/missing").unwrap(), None);
    });
}

pub fn update_cas(fixture: &dyn Fixture) {
    with_store(fixture, |s| async move {
        let base = s.current_revision();
        let created = s.create("/a", v("1")).await.unwrap();
        let updated = s
            .update("/a", v("2"), Some(created.mod_revision))
            .await
            .unwrap();
        assert_eq!(updated.create_revision, created.create_revision);
        assert_eq!(updated.mod_revision, base + 2);
        assert_eq!(updated.value, v("2"));
        match s.update("/a", v("3"), Some(created.mod_revision)).await {
            Err(Error::Conflict {
                key,
                expected,
                actual,
            }) => assert_eq!((key.as_str(), expected, actual), ("/a", base + 1, base + 2)),
            other => panic!("expected Conflict, got {other:?}"),
        }
        let unconditional = s.update("/a", v("4"), None).await.unwrap();
        assert_eq!(unconditional.mod_revision, base + 3);
        assert!(matches!(
            s.update("/b", v("x"), None).await,
            Err(Error::NotFound { .. })
        ));
        assert!(matches!(
            s.update("/b", v("x"), Some(1)).await,
            Err(Error::NotFound { .. })
        ));
    });
}

pub fn delete_with_and_without_cas(fixture: &dyn Fixture) {
    with_store(fixture, |s| async move {
        let base = s.current_revision();
        let a = s.create("/a", v("1")).await.unwrap();
        s.create("/b", v("2")).await.unwrap();
        assert!(matches!(
            s.delete("/a", Some(a.mod_revision + 7)).await,
            Err(Error::Conflict { .. })
        ));
        let deleted = s.delete("/a", Some(a.mod_revision)).await.unwrap();
        assert_eq!(deleted.mod_revision, base + 3);
        assert_eq!(deleted.value, v("1"));
        assert_eq!(deleted.create_revision, base + 1);
        assert_eq!(s.get("/a").unwrap(), None);
        let deleted = s.delete("/b", None).await.unwrap();
        assert_eq!(deleted.mod_revision, base + 4);
        assert!(matches!(
            s.delete("/b", None).await,
            Err(Error::NotFound { .. })
        ));
        // Re-creating a deleted key starts a new life.
        let again = s.create("/a", v("new")).await.unwrap();
        assert_eq!(again.create_revision, base + 5);
    });
}

pub fn range_prefix_limit_and_paging(fixture: &dyn Fixture) {
    with_store(fixture, |s| async move {
        for i in 0..25 {
            s.create(&format!("/registry/pods/ns/p{i:02}"), v("x"))
                .await
                .unwrap();
        }
        s.create("/registry/pods0", v("not under the prefix"))
            .await
            .unwrap();
        s.create("/registry/nodes/n1", v("x")).await.unwrap();
        let all = s.range("/registry/pods/", None, 0, None).unwrap();
        assert_eq!(all.kvs.len(), 25);
        assert!(!all.more);
        assert_eq!(all.revision, s.current_revision());

        let mut paged = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = s
                .range("/registry/pods/", after.as_deref(), 7, None)
                .unwrap();
            assert!(page.kvs.len() <= 7);
            after = page.kvs.last().map(|kv| kv.key.clone());
            paged.extend(page.kvs);
            if !page.more {
                break;
            }
        }
        assert_eq!(paged, all.kvs);
        let keys: Vec<_> = paged.iter().map(|kv| kv.key.clone()).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);

        let exact = s.range("/registry/pods/", None, 25, None).unwrap();
        assert!(!exact.more, "no keys remain after exactly `limit` keys");
        let empty = s.range("/nothing/", None, 0, None).unwrap();
        assert!(empty.kvs.is_empty() && !empty.more);
    });
}

pub fn range_at_past_revision(fixture: &dyn Fixture) {
    with_store(fixture, |s| async move {
        let base = s.current_revision();
        let a = s.create("/k/a", v("a1")).await.unwrap();
        let b = s.create("/k/b", v("b1")).await.unwrap();
        let snapshot = s.current_revision();
        s.update("/k/a", v("a2"), None).await.unwrap();
        s.delete("/k/b", None).await.unwrap();
        s.create("/k/c", v("c1")).await.unwrap();

        let past = s.range("/k/", None, 0, Some(snapshot)).unwrap();
        assert_eq!(past.kvs, vec![a.clone(), b]);
        assert_eq!(past.revision, snapshot);
        let first = s.range("/k/", None, 0, Some(a.mod_revision)).unwrap();
        assert_eq!(first.kvs, vec![a]);
        let now: Vec<_> = s
            .range("/k/", None, 0, None)
            .unwrap()
            .kvs
            .into_iter()
            .map(|kv| (kv.key, kv.value))
            .collect();
        assert_eq!(
            now,
            vec![("/k/a".to_owned(), v("a2")), ("/k/c".to_owned(), v("c1"))]
        );
        // Counting answers what an unlimited range would, at any revision, after any key.
        assert_eq!(s.count("/k/", None, Some(snapshot)).unwrap(), 2);
        assert_eq!(s.count("/k/", Some("/k/a"), Some(snapshot)).unwrap(), 1);
        assert_eq!(s.count("/k/", None, None).unwrap(), 2);
        assert_eq!(s.count("/k/", Some("/k/a"), None).unwrap(), 1);
        assert_eq!(s.count("/k/", Some("/k/c"), None).unwrap(), 0);
        assert_eq!(s.count("/j/", None, None).unwrap(), 0);
        let (requested, current) = (base + 99, base + 5);
        assert!(matches!(
            s.range("/k/", None, 0, Some(requested)),
            Err(Error::FutureRevision { requested: r, current: c }) if (r, c) == (requested, current)
        ));
    });
}

pub fn compaction_errors_and_keeps_state(fixture: &dyn Fixture) {
    with_store(fixture, |s| async move {
        let base = s.current_revision();
        let r = |n: i64| base + n;
        s.create("/a", v("1")).await.unwrap(); // 1
        s.create("/b", v("1")).await.unwrap(); // 2
        s.update("/a", v("2"), None).await.unwrap(); // 3
        s.delete("/b", None).await.unwrap(); // 4
        s.create("/c", v("1")).await.unwrap(); // 5
        let at3 = s.range("/", None, 0, Some(r(3))).unwrap().kvs;
        s.compact(r(3)).unwrap();
        assert_eq!(s.compacted_revision(), r(3));
        assert!(matches!(
            s.range("/", None, 0, Some(r(2))),
            Err(Error::Compacted { requested, compacted }) if (requested, compacted) == (r(2), r(3))
        ));
        assert_eq!(s.range("/", None, 0, Some(r(3))).unwrap().kvs, at3);
        assert!(matches!(
            s.watch("/", r(2)),
            Err(Error::Compacted { requested, compacted }) if (requested, compacted) == (r(2), r(3))
        ));
        let mut rx = s.watch("/", r(3)).unwrap();
        assert_eq!(next(&mut rx).await.kv.mod_revision, r(4));
        assert_eq!(next(&mut rx).await.kv.mod_revision, r(5));
        // Compacting backwards is a no-op; into the future is an error.
        s.compact(r(1)).unwrap();
        assert_eq!(s.compacted_revision(), r(3));
        assert!(matches!(s.compact(r(6)), Err(Error::FutureRevision { .. })));
        s.compact(r(5)).unwrap();
        if let Some(footprint) = s.backend.footprint() {
            assert_eq!(footprint.indexed_keys, 2, "tombstone of /b forgotten");
        }
        let keys: Vec<_> = s
            .range("/", None, 0, None)
            .unwrap()
            .kvs
            .into_iter()
            .map(|kv| kv.key)
            .collect();
        assert_eq!(keys, ["/a", "/c"]);
    });
}

pub fn watch_replays_history_then_streams_live(fixture: &dyn Fixture) {
    with_store(fixture, |s| async move {
        let base = s.current_revision();
        s.create("/w/a", v("1")).await.unwrap(); // 1
        s.update("/w/a", v("2"), None).await.unwrap(); // 2
        s.create("/w/b", v("1")).await.unwrap(); // 3
        let mut rx = s.watch("/w/", base + 1).unwrap();
        let writer = s.clone();
        let live = tokio::spawn(async move {
            writer.delete("/w/a", None).await.unwrap(); // 4
            for i in 0..50 {
                writer.create(&format!("/w/n{i}"), v("x")).await.unwrap();
            }
        });
        let e = next(&mut rx).await;
        assert_eq!(
            (e.kind, e.kv.mod_revision, e.prev.map(|p| p.value)),
            (EventKind::Put, base + 2, Some(v("1")))
        );
        assert_eq!(next(&mut rx).await.kv.mod_revision, base + 3);
        let e = next(&mut rx).await;
        assert_eq!(e.kind, EventKind::Delete);
        assert_eq!(e.kv.mod_revision, base + 4);
        assert_eq!(e.kv.value, v("2"));
        assert_eq!(e.kv.create_revision, base + 1);
        assert_eq!(e.prev.map(|p| p.mod_revision), Some(base + 2));
        for expected in 5..55 {
            assert_eq!(next(&mut rx).await.kv.mod_revision, base + expected);
        }
        live.await.unwrap();
    });
}

pub fn watch_filters_by_prefix(fixture: &dyn Fixture) {
    with_store(fixture, |s| async move {
        let mut pods = s.watch("/registry/pods/", s.current_revision()).unwrap();
        s.create("/registry/pods/a", v("x")).await.unwrap();
        s.create("/registry/nodes/n", v("x")).await.unwrap();
        s.create("/registry/podsx", v("x")).await.unwrap();
        s.create("/registry/pods/b", v("x")).await.unwrap();
        assert_eq!(next(&mut pods).await.kv.key, "/registry/pods/a");
        assert_eq!(next(&mut pods).await.kv.key, "/registry/pods/b");
        assert!(pods.try_recv().is_err());
    });
}

pub fn watch_from_the_future_starts_later(fixture: &dyn Fixture) {
    with_store(fixture, |s| async move {
        let base = s.current_revision();
        let mut rx = s.watch("/", base + 2).unwrap();
        for key in ["/a", "/b", "/c"] {
            s.create(key, v("x")).await.unwrap();
        }
        assert_eq!(next(&mut rx).await.kv.mod_revision, base + 3);
    });
}

pub fn watch_ends_on_close_and_dropped_receivers_are_forgotten(fixture: &dyn Fixture) {
    with_store(fixture, |s| async move {
        let base = s.current_revision();
        let dropped = s.watch("/", base).unwrap();
        let mut rx = s.watch("/", base).unwrap();
        drop(dropped);
        s.create("/a", v("x")).await.unwrap();
        if let Some(footprint) = s.backend.footprint() {
            assert_eq!(footprint.watchers, 1);
        }
        next(&mut rx).await;
        s.close();
        assert!(rx.recv().await.is_none());
        assert!(matches!(s.create("/b", v("x")).await, Err(Error::Closed)));
        assert!(matches!(s.watch("/", base), Err(Error::Closed)));
        assert!(matches!(s.get("/a"), Err(Error::Closed)));
    });
}

pub fn receiver_ends_when_last_store_handle_drops(fixture: &dyn Fixture) {
    with_store(fixture, |s| async move {
        let mut rx = s.watch("/", s.current_revision()).unwrap();
        drop(s);
        assert!(rx.recv().await.is_none());
    });
}

pub fn concurrent_writers_get_unique_increasing_revisions(fixture: &dyn Fixture) {
    with_store_threaded(fixture, 4, |s| async move {
        let base = s.current_revision();
        let mut watch = s.watch("/c/", base).unwrap();
        let tasks: Vec<_> = (0..16)
            .map(|t| {
                let s = s.clone();
                tokio::spawn(async move {
                    let mut revisions = Vec::new();
                    for i in 0..200 {
                        let kv = s.create(&format!("/c/{t:02}/{i:03}"), v("x")).await;
                        revisions.push(kv.unwrap().mod_revision);
                    }
                    revisions
                })
            })
            .collect();
        let mut all = BTreeSet::new();
        for task in tasks {
            let revisions = task.await.unwrap();
            assert!(revisions.windows(2).all(|w| w[0] < w[1]));
            for revision in revisions {
                assert!(all.insert(revision), "duplicate revision {revision}");
            }
        }
        assert_eq!(all.len(), 3200);
        assert_eq!(all.first(), Some(&(base + 1)));
        assert_eq!(all.last(), Some(&(base + 3200)));
        assert_eq!(s.current_revision(), base + 3200);
        assert_eq!(s.range("/c/", None, 0, None).unwrap().kvs.len(), 3200);
        for expected in 1..=3200 {
            assert_eq!(next(&mut watch).await.kv.mod_revision, base + expected);
        }
    });
}

pub fn batched_cas_sees_earlier_writes_of_the_same_batch(fixture: &dyn Fixture) {
    // Many conflicting writes to one key queued at once: exactly one CAS per revision wins.
    with_store(fixture, |s| async move {
        let start = s.current_revision();
        let base = s.create("/k", v("0")).await.unwrap();
        let attempts: Vec<_> = (0..32)
            .map(|i| {
                let s = s.clone();
                tokio::spawn(async move {
                    s.update("/k", v(&i.to_string()), Some(base.mod_revision))
                        .await
                })
            })
            .collect();
        let mut won = 0;
        for attempt in attempts {
            match attempt.await.unwrap() {
                Ok(_) => won += 1,
                Err(Error::Conflict { .. }) => {}
                Err(other) => panic!("unexpected {other}"),
            }
        }
        assert_eq!(won, 1);
        assert_eq!(s.current_revision(), start + 2);
    });
}
