//! One conformance suite for every backend: the behaviour tests, the model-based property test
//! and the durability (reopen, `kill -9`) tests, each a function taking a [`Fixture`].
//!
//! A backend's tests are one line, which expands into one `#[test]` per check:
//!
//! ```ignore
//! berth_store::conformance_suite!(redb, berth_store::conformance::RedbFixture);
//! ```
//!
//! Compiled for this crate's own tests and, for other crates, with the `conformance` feature.

mod behaviour;
mod durability;
mod etcd;
mod model;

use std::future::Future;
use std::path::Path;

use crate::{Result, Store};

pub use behaviour::*;
pub use durability::*;
pub use etcd::{EtcdFixture, LocalEtcd};
pub use model::*;

/// What a reopen of the same directory keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Persistence {
    /// Nothing: every open starts empty (the memory backend).
    Nothing,
    /// The current state and revision, with no history: after a reopen the compacted revision
    /// is the current one (the redb backend).
    CurrentState,
}

/// How the suite gets stores of one backend.
pub trait Fixture: Sync {
    /// Opens the store kept in `dir`, an empty directory on the first open. A backend that
    /// keeps nothing ignores `dir`.
    fn open(&self, dir: &Path) -> Result<Store>;

    /// What a reopen of the same `dir` keeps; the reopen and `kill -9` checks run only for a
    /// backend that keeps something.
    fn persistence(&self) -> Persistence;

    /// How many random operation sequences the model test tries, and the most operations in
    /// one (a slow backend asks for fewer).
    fn model_cases(&self) -> (u32, usize) {
        (12, 40)
    }

    /// Why this backend's checks cannot run here (an external server not installed), printed
    /// instead of running them; None runs them.
    fn skip_reason(&self) -> Option<String> {
        None
    }
}

/// The memory backend ([`Store::memory`]).
pub struct MemoryFixture;

impl Fixture for MemoryFixture {
    fn open(&self, _dir: &Path) -> Result<Store> {
        Ok(Store::memory())
    }

    fn persistence(&self) -> Persistence {
        Persistence::Nothing
    }

    fn model_cases(&self) -> (u32, usize) {
        (128, 60)
    }
}

/// The embedded durable backend on redb ([`Store::open`]).
pub struct RedbFixture;

impl Fixture for RedbFixture {
    fn open(&self, dir: &Path) -> Result<Store> {
        Store::open(dir)
    }

    fn persistence(&self) -> Persistence {
        Persistence::CurrentState
    }
}

/// Runs `check` on a fresh store of `fixture` in a single-threaded runtime.
fn with_store<F, Fut>(fixture: &dyn Fixture, check: F)
where
    F: FnOnce(Store) -> Fut,
    Fut: Future<Output = ()>,
{
    let dir = tempfile::tempdir().expect("tempdir");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let store = fixture.open(dir.path()).expect("open");
    runtime.block_on(check(store));
}

/// As [`with_store`], in a runtime with `workers` threads.
fn with_store_threaded<F, Fut>(fixture: &dyn Fixture, workers: usize, check: F)
where
    F: FnOnce(Store) -> Fut,
    Fut: Future<Output = ()>,
{
    let dir = tempfile::tempdir().expect("tempdir");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("runtime");
    let store = fixture.open(dir.path()).expect("open");
    runtime.block_on(check(store));
}

/// The name the test harness knows a test by: `module` (from `module_path!()`) without the
/// crate's name, then `test`.
#[doc(hidden)]
pub fn test_name(module: &str, test: &str) -> String {
    match module.split_once("::") {
        Some((_, path)) => format!("{path}::{test}"),
        None => test.to_owned(),
    }
}

/// Expands to a module `$name` with one `#[test]` per conformance check, run against the
/// fixture `$fixture` (an expression whose type implements [`Fixture`]).
#[macro_export]
macro_rules! conformance_suite {
    ($name:ident, $fixture:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            fn fixture() -> impl $crate::conformance::Fixture {
                $fixture
            }

            $crate::conformance_suite!(@checks
                create_then_already_exists,
                update_cas,
                delete_with_and_without_cas,
                range_prefix_limit_and_paging,
                range_at_past_revision,
                compaction_errors_and_keeps_state,
                watch_replays_history_then_streams_live,
                watch_filters_by_prefix,
                watch_from_the_future_starts_later,
                watch_ends_on_close_and_dropped_receivers_are_forgotten,
                receiver_ends_when_last_store_handle_drops,
                concurrent_writers_get_unique_increasing_revisions,
                batched_cas_sees_earlier_writes_of_the_same_batch,
                store_matches_model,
                reopen_restores_contents_and_revision
            );

            /// The writer that `kill_9_keeps_every_acknowledged_write` runs in a child process.
            #[test]
            fn crash_child_writer() {
                let fixture = fixture();
                if $crate::conformance::Fixture::skip_reason(&fixture).is_some() {
                    return;
                }
                $crate::conformance::crash_child_writer(&fixture);
            }

            #[test]
            fn kill_9_keeps_every_acknowledged_write() {
                let fixture = fixture();
                if let Some(reason) = $crate::conformance::Fixture::skip_reason(&fixture) {
                    eprintln!("skipped: {reason}");
                    return;
                }
                let child = $crate::conformance::test_name(module_path!(), "crash_child_writer");
                $crate::conformance::kill_9_keeps_every_acknowledged_write(&fixture, &child);
            }
        }
    };
    (@checks $($check:ident),* $(,)?) => {
        $(
            #[test]
            fn $check() {
                let fixture = fixture();
                if let Some(reason) = $crate::conformance::Fixture::skip_reason(&fixture) {
                    eprintln!("skipped: {reason}");
                    return;
                }
                $crate::conformance::$check(&fixture);
            }
        )*
    };
}
