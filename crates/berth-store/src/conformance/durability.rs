//! Durability checks for backends that keep something across a reopen: contents and revision
//! come back, and `kill -9` in the middle of writing loses no acknowledged write and leaves
//! nothing half-written.
//!
//! The `kill -9` check re-executes the test binary running only the suite's
//! `crash_child_writer` test, which writes keys with several concurrent tasks and prints
//! `ACK <key>` for each acknowledged create. The parent kills it with SIGKILL after some
//! acknowledgements, reopens the store and checks it.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use bytes::Bytes;

use super::behaviour::v;
use super::{Fixture, Persistence};
use crate::{Error, KeyValue};

const DIR_ENV: &str = "BERTH_STORE_CRASH_DIR";
const TASKS: usize = 8;

pub fn reopen_restores_contents_and_revision(fixture: &dyn Fixture) {
    if fixture.persistence() == Persistence::Nothing {
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let (before, revision) = {
            let s = fixture.open(dir.path()).unwrap();
            for i in 0..100 {
                s.create(&format!("/r/{i:03}"), v(&format!("value {i}")))
                    .await
                    .unwrap();
            }
            s.update("/r/005", v("changed"), None).await.unwrap();
            s.delete("/r/007", None).await.unwrap();
            let before = s.range("/", None, 0, None).unwrap().kvs;
            (before, s.current_revision())
        };
        assert_eq!(revision, 102);
        let s = fixture.open(dir.path()).unwrap();
        assert_eq!(s.current_revision(), revision);
        assert_eq!(s.compacted_revision(), revision);
        let after = s.range("/", None, 0, None).unwrap();
        assert_eq!(after.kvs, before);
        assert_eq!(after.revision, revision);
        assert!(matches!(
            s.range("/", None, 0, Some(revision - 1)),
            Err(Error::Compacted { .. })
        ));
        let next_kv = s.create("/r/new", v("x")).await.unwrap();
        assert_eq!(next_kv.mod_revision, revision + 1);
        // A delete as the last write is durable too.
        s.delete("/r/new", None).await.unwrap();
        s.close();
        let s = fixture.open(dir.path()).unwrap();
        assert_eq!(s.current_revision(), revision + 2);
        assert_eq!(s.get("/r/new").unwrap(), None);
        assert_eq!(
            s.get("/r/005").unwrap().map(|kv: KeyValue| kv.value),
            Some(v("changed"))
        );
    });
}

/// The value written under `key`: long enough to span pages, and checkable.
fn value_for(key: &str) -> Bytes {
    Bytes::from(format!("{key}|").repeat(200))
}

/// The writer run in the child process; does nothing when run as an ordinary test.
pub fn crash_child_writer(fixture: &dyn Fixture) {
    let Ok(dir) = std::env::var(DIR_ENV) else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async move {
        let store = fixture.open(std::path::Path::new(&dir)).expect("open");
        let tasks: Vec<_> = (0..TASKS)
            .map(|t| {
                let store = store.clone();
                tokio::spawn(async move {
                    for i in 0.. {
                        let key = format!("/crash/{t}/{i:08}");
                        store.create(&key, value_for(&key)).await.expect("create");
                        println!("ACK {key}");
                    }
                })
            })
            .collect();
        for task in tasks {
            let _ = task.await;
        }
    });
}

/// Kills the test `child` (which runs [`crash_child_writer`]) with SIGKILL mid-write and checks
/// the reopened store.
pub fn kill_9_keeps_every_acknowledged_write(fixture: &dyn Fixture, child: &str) {
    if fixture.persistence() == Persistence::Nothing {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = std::env::current_exe().expect("test binary");
    let mut child = Command::new(exe)
        .args([child, "--exact", "--nocapture", "--test-threads=1"])
        .env(DIR_ENV, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn child");
    let stdout = child.stdout.take().expect("child stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut acked = Vec::new();
    while acked.len() < 500 {
        let Some(line) = lines.next() else {
            panic!("child exited after {} acknowledgements", acked.len());
        };
        if let Some(key) = line.expect("read child").strip_prefix("ACK ") {
            acked.push(key.to_owned());
        }
    }
    child.kill().expect("SIGKILL the child");
    // Acknowledgements already in the pipe count too.
    for line in lines.map_while(Result::ok) {
        if let Some(key) = line.strip_prefix("ACK ") {
            acked.push(key.to_owned());
        }
    }
    child.wait().expect("reap child");

    let store = fixture.open(dir.path()).expect("reopen after kill -9");
    for key in &acked {
        let kv = store.get(key).expect("get").unwrap_or_else(|| {
            panic!("acknowledged key {key} lost");
        });
        assert_eq!(kv.value, value_for(key), "value of {key}");
    }
    let all = store.range("/crash/", None, 0, None).expect("range").kvs;
    assert!(all.len() >= acked.len());
    for kv in &all {
        assert_eq!(kv.value, value_for(&kv.key), "half-written {}", kv.key);
        assert!(kv.mod_revision <= store.current_revision());
    }
    // Each task writes its keys in order, so what survived of a task is a prefix of its keys.
    for t in 0..TASKS {
        let prefix = format!("/crash/{t}/");
        let mine: Vec<_> = all
            .iter()
            .filter(|kv| kv.key.starts_with(&prefix))
            .collect();
        for (i, kv) in mine.iter().enumerate() {
            assert_eq!(kv.key, format!("{prefix}{i:08}"), "gap in task {t}");
        }
    }
    assert_eq!(store.current_revision(), all.len() as i64);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let next = runtime
        .block_on(store.create("/after-crash", Bytes::from_static(b"x")))
        .expect("write after reopen");
    assert_eq!(next.mod_revision, all.len() as i64 + 1);
}
