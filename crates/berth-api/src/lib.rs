//! berth-api
