//! The CronJob controller, as upstream's `pkg/controller/cronjob` (v2): schedules
//! ([`schedule`]: parsing as upstream's standard parser and the most recent start time that is
//! due), one CronJob's sync ([`sync`]: Jobs to make and delete, status) and its driver.

pub(crate) mod driver;
pub mod schedule;
pub mod sync;
