//! What to write for an `events.k8s.io/v1` event, given the ones written before: the series
//! logic of upstream's new event broadcaster (client-go `tools/events/event_broadcaster.go`),
//! a pure engine.
//!
//! - Events that agree on everything but their note and time (type, action, reason, reporting
//!   controller and instance, regarding and related object) are *isomorphic*. The first one is
//!   created; the second makes it a series (`series.count: 2`, `series.lastObservedTime`) and
//!   patches it; later ones only bump the cached series, which is written when it ends.
//! - Every [`FINISH_TIME`] (6 minutes) the cache is swept: a series not observed for 6 minutes
//!   is written once more with its final count and forgotten; a single event older than that
//!   is forgotten (its next isomorphic event starts afresh).
//! - Every [`REFRESH_TIME`] (30 minutes) the live series are written again, so a long series
//!   is never older on the server than that.
//!
//! The note of a series is its first event's, as upstream: the isomorphism ignores it.

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use std::collections::BTreeMap;
use std::time::Duration;

/// How long a series lives without a new observation (upstream `finishTime`); also the period
/// of the sweep that ends them.
pub const FINISH_TIME: Duration = Duration::from_secs(6 * 60);
/// How often live series are written again (upstream `refreshTime`).
pub const REFRESH_TIME: Duration = Duration::from_secs(30 * 60);
/// Events remembered at once. Upstream's map is unbounded (entries leave after 6 minutes);
/// berth bounds it: an event arriving at a full cache is written on its own, not remembered.
pub const SERIES_ENTRIES: usize = 4096;

/// `at` as an API `MicroTime` (microsecond precision on the wire).
pub fn micro_time(at: DateTime<Utc>) -> MicroTime {
    let ts = k8s_openapi::jiff::Timestamp::new(at.timestamp(), at.timestamp_subsec_nanos() as i32)
        .unwrap_or_default();
    MicroTime(ts)
}

fn micros(t: &MicroTime) -> i64 {
    t.0.as_microsecond()
}

/// The isomorphism of upstream's `getKey`: everything but the note, the name and the times.
pub fn isomorphism_key(e: &Event) -> String {
    let s = |v: &Option<String>| v.clone().unwrap_or_default();
    let reference = |r: &ObjectReference| {
        [
            s(&r.api_version),
            s(&r.kind),
            s(&r.namespace),
            s(&r.name),
            s(&r.uid),
            s(&r.resource_version),
            s(&r.field_path),
        ]
        .join("\u{1}")
    };
    let regarding = e.regarding.as_ref().map(reference).unwrap_or_default();
    let related = e.related.as_ref().map(reference).unwrap_or_default();
    [
        s(&e.type_),
        s(&e.action),
        s(&e.reason),
        s(&e.reporting_controller),
        s(&e.reporting_instance),
        regarding,
        related,
    ]
    .join("\u{0}")
}

/// The isomorphic events seen in the last [`FINISH_TIME`], by key.
#[derive(Debug, Default)]
pub struct SeriesCache {
    events: BTreeMap<String, Event>,
}

impl SeriesCache {
    /// What to write for `event` (named, with its `eventTime`) observed at `now`: the event
    /// itself when it is new (create), the cached event turned into a series of 2 (patch), or
    /// nothing when the series already exists (its count is bumped in the cache).
    pub fn record(&mut self, event: Event, now: DateTime<Utc>) -> Option<Event> {
        let key = isomorphism_key(&event);
        if let Some(cached) = self.events.get_mut(&key) {
            let observed = micro_time(now);
            return match &mut cached.series {
                Some(series) => {
                    series.count = series.count.saturating_add(1);
                    series.last_observed_time = observed;
                    None
                }
                None => {
                    cached.series = Some(EventSeries {
                        count: 2,
                        last_observed_time: observed,
                    });
                    Some(cached.clone())
                }
            };
        }
        if self.events.len() < SERIES_ENTRIES {
            self.events.insert(key, event.clone());
        }
        Some(event)
    }

    /// The sweep at `now`: the series that ended (last observed [`FINISH_TIME`] ago or more),
    /// to be written with their final count; they and the old single events are forgotten.
    pub fn finish(&mut self, now: DateTime<Utc>) -> Vec<Event> {
        let horizon = micros(&micro_time(now)) - FINISH_TIME.as_micros() as i64;
        let mut ended = Vec::new();
        self.events.retain(|_, e| {
            let (last, series) = match &e.series {
                Some(s) => (micros(&s.last_observed_time), true),
                None => (e.event_time.as_ref().map_or(i64::MIN, micros), false),
            };
            if last >= horizon {
                return true;
            }
            if series {
                ended.push(e.clone());
            }
            false
        });
        ended
    }

    /// The live series, to be written again (upstream's 30-minute refresh).
    pub fn refresh(&self) -> Vec<Event> {
        self.events
            .values()
            .filter(|e| e.series.is_some())
            .cloned()
            .collect()
    }

    /// Events remembered.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

#[cfg(test)]
mod tests;
