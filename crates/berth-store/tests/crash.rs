//! `kill -9` in the middle of writing loses no acknowledged write and leaves nothing half-written.
//!
//! The test re-executes its own binary running only `child_writer`, which writes keys with
//! several concurrent tasks and prints `ACK <key>` for each acknowledged create. The parent kills
//! it with SIGKILL after some acknowledgements, reopens the store and checks it.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use berth_store::Store;
use bytes::Bytes;

const DIR_ENV: &str = "BERTH_STORE_CRASH_DIR";
const TASKS: usize = 8;

/// The value written under `key`: long enough to span pages, and checkable.
fn value_for(key: &str) -> Bytes {
    Bytes::from(format!("{key}|").repeat(200))
}

/// The writer run in the child process; does nothing when run as an ordinary test.
#[test]
fn child_writer() {
    let Ok(dir) = std::env::var(DIR_ENV) else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async move {
        let store = Store::open(std::path::Path::new(&dir)).expect("open");
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

#[test]
fn kill_9_keeps_every_acknowledged_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = std::env::current_exe().expect("test binary");
    let mut child = Command::new(exe)
        .args(["child_writer", "--exact", "--nocapture", "--test-threads=1"])
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

    let store = Store::open(dir.path()).expect("reopen after kill -9");
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
