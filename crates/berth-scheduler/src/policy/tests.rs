//! Loading tests.
