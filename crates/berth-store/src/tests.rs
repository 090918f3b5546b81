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
