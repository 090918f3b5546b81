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
