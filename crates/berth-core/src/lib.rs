//! berth-core
