//! CronJob schedules: the five-field cron syntax upstream's standard parser accepts (minute, hour,
//! day of month, month, day of week; names, ranges, steps; day of month and day of week combined
//! with OR when both are restricted), the `@yearly` .. `@hourly` descriptors and `@every <duration>`.
//! Times are UTC (the `timeZone` field is not read here).

use chrono::{DateTime, Duration, Utc};
use croner::Cron;
use thiserror::Error;

/// At most this many missed start times are reported as such; more is a `TooManyMissedTimes`
/// warning upstream.
pub const TOO_MANY_MISSED: i64 = 100;

/// A schedule that does not parse.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("unparseable schedule {schedule:?}: {reason}")]
pub struct ScheduleError {
    pub schedule: String,
    pub reason: String,
}

/// A parsed `spec.schedule`.
#[derive(Clone, Debug)]
pub enum Schedule {
    Cron(Box<Cron>),
    Every(Duration),
}

impl Schedule {
    /// Parses `spec` as upstream's `cron.ParseStandard`.
    pub fn parse(spec: &str) -> Result<Schedule, ScheduleError> {
        let bad = |reason: String| ScheduleError {
            schedule: spec.to_string(),
            reason,
        };
        let spec_trimmed = spec.trim();
        if let Some(every) = spec_trimmed.strip_prefix("@every ") {
            let d = crate::parse_duration(every.trim()).map_err(bad)?;
            let d = Duration::from_std(d).map_err(|e| bad(e.to_string()))?;
            if d < Duration::seconds(1) {
                return Err(bad("@every needs at least one second".into()));
            }
            return Ok(Schedule::Every(d));
        }
        let descriptor = spec_trimmed.starts_with('@');
        let fields = spec_trimmed.split_whitespace().count();
        if !descriptor && fields != 5 {
            return Err(bad(format!("expected exactly 5 fields, found {fields}")));
        }
        if spec_trimmed.starts_with("TZ=") || spec_trimmed.starts_with("CRON_TZ=") {
            return Err(bad("time zones are given in spec.timeZone".into()));
        }
        let cron: Cron = spec_trimmed
            .parse()
            .map_err(|e: croner::errors::CronError| bad(e.to_string()))?;
        Ok(Schedule::Cron(Box::new(cron)))
    }

    /// The first start time strictly after `t`, if there is one within croner's search horizon.
    pub fn next_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            // robfig's @every runs at t + d, rounded down to the second.
            Schedule::Every(d) => {
                let next = t + *d;
                Some(next - Duration::nanoseconds(i64::from(next.timestamp_subsec_nanos())))
            }
            Schedule::Cron(cron) => cron.find_next_occurrence(&t, false).ok(),
        }
    }
}

/// The start times due between `earliest` (exclusive: the last scheduled time, or the CronJob's
/// creation) and `now` (inclusive): the most recent one and how many there were
/// (upstream `mostRecentScheduleTime`). With `starting_deadline`, times older than
/// `now - deadline` are not counted.
pub fn most_recent_due(
    schedule: &Schedule,
    mut earliest: DateTime<Utc>,
    now: DateTime<Utc>,
    starting_deadline: Option<Duration>,
) -> (Option<DateTime<Utc>>, i64) {
    if let Some(deadline) = starting_deadline {
        earliest = earliest.max(berth_core::clock::sub(now, deadline));
    }
    let Some(t1) = schedule.next_after(earliest) else {
        return (None, 0);
    };
    if now < t1 {
        return (None, 0);
    }
    let Some(t2) = schedule.next_after(t1) else {
        return (Some(t1), 1);
    };
    if now < t2 {
        return (Some(t1), 1);
    }
    // Skip ahead by the interval of the first two times, then walk the last stretch exactly,
    // so that a schedule missed for a year does not take half a million steps.
    let between = (t2 - t1).num_seconds().max(1);
    let missed = (now - t1).num_seconds() / between + 1;
    let skip = (missed - 2).max(0).saturating_mul(between);
    let mut t = berth_core::clock::add_seconds(t1, skip);
    if t > now {
        t = t1;
    }
    let mut most_recent = t;
    while let Some(next) = schedule.next_after(most_recent) {
        if next > now {
            break;
        }
        most_recent = next;
    }
    (Some(most_recent), missed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(h: u32, m: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 24, h, m, s).unwrap()
    }

    #[test]
    fn five_fields_and_descriptors_parse_others_do_not() {
        for ok in [
            "*/1 * * * *",
            "0 0 * * MON-FRI",
            "30 6-16/4 * * 1-5",
            "@hourly",
            "@daily",
            "@every 90s",
        ] {
            assert!(Schedule::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "* * * * * *",
            "* * * *",
            "61 * * * *",
            "TZ=UTC * * * * *",
            "@every 0s",
            "nonsense",
        ] {
            assert!(Schedule::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_minute_starts_on_the_next_minute() {
        let s = Schedule::parse("* * * * *").unwrap();
        assert_eq!(s.next_after(at(10, 0, 30)), Some(at(10, 1, 0)));
        assert_eq!(s.next_after(at(10, 1, 0)), Some(at(10, 2, 0)));
    }

    #[test]
    fn day_of_month_and_day_of_week_combine_with_or() {
        // 2026-11-24 is a Tuesday; the 1st or any Wednesday: Wednesday the 25th comes first.
        let s = Schedule::parse("0 0 1 * WED").unwrap();
        let next = s.next_after(at(1, 0, 0)).unwrap();
        assert_eq!(next, Utc.with_ymd_and_hms(2026, 11, 25, 0, 0, 0).unwrap());
    }

    #[test]
    fn nothing_is_due_before_the_first_time() {
        let s = Schedule::parse("*/5 * * * *").unwrap();
        assert_eq!(
            most_recent_due(&s, at(10, 0, 0), at(10, 4, 59), None),
            (None, 0)
        );
        assert_eq!(
            most_recent_due(&s, at(10, 0, 0), at(10, 5, 0), None),
            (Some(at(10, 5, 0)), 1)
        );
    }

    #[test]
    fn missed_times_are_counted_and_the_latest_is_started() {
        let s = Schedule::parse("* * * * *").unwrap();
        assert_eq!(
            most_recent_due(&s, at(10, 0, 0), at(10, 7, 30), None),
            (Some(at(10, 7, 0)), 7)
        );
        // A year of minutes missed: counted without walking each one.
        let later = at(10, 0, 0) + Duration::days(365);
        let (latest, missed) = most_recent_due(&s, at(10, 0, 0), later, None);
        assert_eq!(latest, Some(later));
        assert_eq!(missed, 365 * 24 * 60);
        assert!(missed > TOO_MANY_MISSED);
    }

    #[test]
    fn a_starting_deadline_forgets_older_times() {
        let s = Schedule::parse("* * * * *").unwrap();
        let (latest, missed) =
            most_recent_due(&s, at(9, 0, 0), at(10, 7, 30), Some(Duration::seconds(200)));
        assert_eq!(latest, Some(at(10, 7, 0)));
        assert_eq!(missed, 3);
    }

    #[test]
    fn irregular_schedules_find_the_exact_latest_time() {
        // 06:30, 10:30, 14:30 on weekdays; 2026-11-24 is a Tuesday.
        let s = Schedule::parse("30 6-16/4 * * 1-5").unwrap();
        let (latest, _) = most_recent_due(&s, at(0, 0, 0), at(15, 0, 0), None);
        assert_eq!(latest, Some(at(14, 30, 0)));
    }

    proptest::proptest! {
        #[test]
        fn any_text_parses_or_is_refused_without_panicking(spec in "[ -~]{0,40}") {
            if let Ok(s) = Schedule::parse(&spec) {
                let _ = most_recent_due(&s, at(0, 0, 0), at(1, 0, 0), None);
            }
        }

        #[test]
        fn cron_like_text_parses_or_is_refused(spec in "([0-9*/,-]{1,6} ){4}[0-9A-Z*/,-]{1,6}") {
            let _ = Schedule::parse(&spec);
        }
    }
}
