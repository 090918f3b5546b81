//! The CronJob engine, as upstream's `pkg/controller/cronjob` (v2). So far: schedules
//! ([`schedule`]): parsing as upstream's standard parser and the most recent start time that is
//! due. Pure; not wired to a driver yet.

pub mod schedule;
