//! berth-store
