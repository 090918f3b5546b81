//! What to write for an event, given the events written before: upstream's `EventCorrelator`
//! (client-go `tools/record/events_cache.go`), a pure engine.
//!
//! In order, as upstream:
//! 1. **Aggregation.** Events that differ only in their message (same source, object, type,
//!    reason, reporting controller and instance) are *similar*. From the 10th distinct message
//!    within 10 minutes of the previous one, they become one event whose message is
//!    `(combined from similar events): <latest message>`.
//! 2. **Counting.** An event seen before (same source, object with field path, type, reason and
//!    message) is written as a patch of the first one: `count` + 1, `lastTimestamp`, `message`.
//! 3. **Spam filter.** A token bucket per source and object (burst 25, one token every 5
//!    minutes): an event past the budget is dropped.

use crate::lru::Lru;
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::collections::BTreeSet;
use std::time::Duration;

/// Entries each cache keeps (upstream `maxLruCacheEntries`).
pub const CACHE_ENTRIES: usize = 4096;
/// Distinct messages of similar events before they are combined (`defaultAggregateMaxEvents`).
pub const AGGREGATE_MAX_EVENTS: usize = 10;
/// How long a similar event keeps the group open (`defaultAggregateIntervalInSeconds`).
pub const AGGREGATE_INTERVAL: Duration = Duration::from_secs(600);
/// Events a source may write about one object at once (`defaultSpamBurst`).
pub const SPAM_BURST: f64 = 25.0;
/// The budget's refill: one event every 5 minutes (`defaultSpamQPS`).
pub const SPAM_QPS: f64 = 1.0 / 300.0;
/// The message prefix of a combined event (`EventAggregatorByReasonMessageFunc`).
pub const COMBINED_PREFIX: &str = "(combined from similar events): ";

/// The correlator's limits; [`Options::default`] is upstream's.
#[derive(Debug, Clone)]
pub struct Options {
    pub cache_entries: usize,
    pub burst: f64,
    pub qps: f64,
    pub aggregate_max_events: usize,
    pub aggregate_interval: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            cache_entries: CACHE_ENTRIES,
            burst: SPAM_BURST,
            qps: SPAM_QPS,
            aggregate_max_events: AGGREGATE_MAX_EVENTS,
            aggregate_interval: AGGREGATE_INTERVAL,
        }
    }
}

/// The decision about one event.
#[derive(Debug, Clone, PartialEq)]
pub enum Correlated {
    /// Over the source's budget for the object: not written.
    Skip,
    /// A new event: create it.
    Create(Event),
    /// A repeat: patch the existing event `name` with this `count`, `lastTimestamp` and
    /// `message` (the whole event is given, so a patch of a deleted one can create it instead).
    Patch(Event),
}

/// A token bucket as `golang.org/x/time/rate`'s: full at first, refilled continuously.
#[derive(Debug, Clone)]
struct Bucket {
    tokens: f64,
    at: DateTime<Utc>,
}

#[derive(Debug, Clone)]
struct Aggregate {
    messages: BTreeSet<String>,
    last: DateTime<Utc>,
}

/// What was last written for an event key.
#[derive(Debug, Clone)]
struct Observation {
    count: i32,
    first_timestamp: Option<Time>,
    name: String,
    resource_version: Option<String>,
}

/// Upstream's correlator: aggregation, counting and the spam filter, with bounded memory.
#[derive(Debug)]
pub struct Correlator {
    options: Options,
    spam: Lru<Bucket>,
    aggregates: Lru<Aggregate>,
    observed: Lru<Observation>,
}

fn s(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("")
}

fn source(e: &Event) -> (&str, &str) {
    e.source
        .as_ref()
        .map_or(("", ""), |src| (s(&src.component), s(&src.host)))
}

/// Source, object, type, reason and message (upstream `getEventKey`).
pub fn event_key(e: &Event) -> String {
    let (component, host) = source(e);
    let o = &e.involved_object;
    [
        component,
        host,
        s(&o.kind),
        s(&o.namespace),
        s(&o.name),
        s(&o.field_path),
        s(&o.uid),
        s(&o.api_version),
        s(&e.type_),
        s(&e.reason),
        s(&e.message),
    ]
    .concat()
}

/// Source and object (upstream `getSpamKey`).
pub fn spam_key(e: &Event) -> String {
    let (component, host) = source(e);
    let o = &e.involved_object;
    [
        component,
        host,
        s(&o.kind),
        s(&o.namespace),
        s(&o.name),
        s(&o.uid),
        s(&o.api_version),
    ]
    .concat()
}

/// The group of similar events and the event's place in it (`EventAggregatorByReasonFunc`).
pub fn aggregate_key(e: &Event) -> (String, String) {
    let (component, host) = source(e);
    let o = &e.involved_object;
    let group = [
        component,
        host,
        s(&o.kind),
        s(&o.namespace),
        s(&o.name),
        s(&o.uid),
        s(&o.api_version),
        s(&e.type_),
        s(&e.reason),
        s(&e.reporting_component),
        s(&e.reporting_instance),
    ]
    .concat();
    (group, s(&e.message).to_string())
}

/// The name upstream's recorder gives an event about `object` at `at`: `<object>.<nanos hex>`.
pub fn event_name(object: &str, at: DateTime<Utc>) -> String {
    format!("{object}.{:x}", at.timestamp_nanos_opt().unwrap_or(0))
}

/// `at` as an API `Time`.
pub fn time(at: DateTime<Utc>) -> Time {
    let ts = k8s_openapi::jiff::Timestamp::new(at.timestamp(), at.timestamp_subsec_nanos() as i32)
        .unwrap_or_default();
    Time(ts)
}

impl Default for Correlator {
    fn default() -> Correlator {
        Correlator::new(Options::default())
    }
}

impl Correlator {
    pub fn new(options: Options) -> Correlator {
        Correlator {
            spam: Lru::new(options.cache_entries),
            aggregates: Lru::new(options.cache_entries),
            observed: Lru::new(options.cache_entries),
            options,
        }
    }

    /// Decides what to write for `event` (named, with its timestamps set) observed at `now`.
    pub fn correlate(&mut self, event: Event, now: DateTime<Utc>) -> Correlated {
        let (event, key) = self.aggregate(event, now);
        let (event, repeat) = self.observe(event, &key);
        if self.over_budget(&event, now) {
            return Correlated::Skip;
        }
        if repeat {
            Correlated::Patch(event)
        } else {
            Correlated::Create(event)
        }
    }

    /// Remembers what the server returned for a written event (its name, count and version).
    pub fn update_state(&mut self, written: &Event) {
        self.observed.put(
            event_key(written),
            Observation {
                count: written.count.unwrap_or(1),
                first_timestamp: written.first_timestamp.clone(),
                name: written.metadata.name.clone().unwrap_or_default(),
                resource_version: written.metadata.resource_version.clone(),
            },
        );
    }

    /// Step 1: the event itself, or the combined event of its group; with its cache key.
    fn aggregate(&mut self, event: Event, now: DateTime<Utc>) -> (Event, String) {
        let key = event_key(&event);
        let (group, message) = aggregate_key(&event);
        let interval = chrono::Duration::from_std(self.options.aggregate_interval)
            .unwrap_or(chrono::Duration::MAX);
        let mut record = match self.aggregates.get_mut(&group) {
            Some(r) if now - r.last <= interval => r.clone(),
            _ => Aggregate {
                messages: BTreeSet::new(),
                last: now,
            },
        };
        record.messages.insert(message);
        record.last = now;
        let similar = record.messages.len();
        if similar >= self.options.aggregate_max_events {
            // The group never grows past the threshold (upstream `PopAny`).
            record.messages.pop_first();
        }
        self.aggregates.put(group.clone(), record);
        if similar < self.options.aggregate_max_events {
            return (event, key);
        }
        let name = event_name(s(&event.involved_object.name), now);
        let combined = Event {
            metadata: kube::api::ObjectMeta {
                name: Some(name),
                namespace: event.metadata.namespace.clone(),
                ..Default::default()
            },
            count: Some(1),
            first_timestamp: Some(time(now)),
            last_timestamp: Some(time(now)),
            message: Some(format!("{COMBINED_PREFIX}{}", s(&event.message))),
            involved_object: event.involved_object,
            type_: event.type_,
            reason: event.reason,
            source: event.source,
            // Upstream's copy leaves these out; keeping them lets `reportingComponent`
            // selections find the combined event too.
            reporting_component: event.reporting_component,
            reporting_instance: event.reporting_instance,
            ..Default::default()
        };
        (combined, group)
    }

    /// Step 2: a repeat takes the first event's name, first timestamp and the next count.
    fn observe(&mut self, mut event: Event, key: &str) -> (Event, bool) {
        let last = self.observed.get_mut(key).cloned();
        let repeat = match last {
            Some(last) if last.count > 0 => {
                event.metadata.name = Some(last.name);
                event.metadata.resource_version = last.resource_version;
                event.first_timestamp = last.first_timestamp;
                event.count = Some(last.count.saturating_add(1));
                true
            }
            _ => false,
        };
        self.observed.put(
            key.to_string(),
            Observation {
                count: event.count.unwrap_or(1),
                first_timestamp: event.first_timestamp.clone(),
                name: event.metadata.name.clone().unwrap_or_default(),
                resource_version: event.metadata.resource_version.clone(),
            },
        );
        (event, repeat)
    }

    /// Step 3: whether the source has spent its budget for the object.
    fn over_budget(&mut self, event: &Event, now: DateTime<Utc>) -> bool {
        let key = spam_key(event);
        let (burst, qps) = (self.options.burst, self.options.qps);
        let mut bucket = self.spam.get_mut(&key).cloned().unwrap_or(Bucket {
            tokens: burst,
            at: now,
        });
        let elapsed = (now - bucket.at).to_std().unwrap_or_default();
        bucket.tokens = (bucket.tokens + elapsed.as_secs_f64() * qps).min(burst);
        bucket.at = bucket.at.max(now);
        let allowed = bucket.tokens >= 1.0;
        if allowed {
            bucket.tokens -= 1.0;
        }
        self.spam.put(key, bucket);
        !allowed
    }
}

#[cfg(test)]
mod tests;
