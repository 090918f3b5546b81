//! berth-scheduler
