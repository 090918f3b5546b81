//! berth's event recorder, shared by the controllers, the scheduler and the descheduler.
//!
//! Start with [`Recorder`]: one per component (`replicaset-controller`, `default-scheduler`,
//! ...), made with [`Recorder::start`]. [`Recorder::event`] never waits: the event goes into a
//! bounded queue ([`recorder::QUEUED_EVENTS`]; a full queue drops it and logs), and a task runs
//! upstream's [`Correlator`] over it before a few writers create or patch the core/v1 Events:
//!
//! - identical events bump the first one's `count` and `lastTimestamp`;
//! - ten or more events differing only in their message within ten minutes are combined into
//!   one, `(combined from similar events): ...`;
//! - a source may write 25 events about one object at once, then one every 5 minutes.
//!
//! The engines decide what to record (reasons, types and messages, as upstream's controllers
//! word them); the drivers hand it to their recorder. Time comes from the injected
//! [`berth_core::clock::Clock`]. Every queued event holds a ticket of the process's
//! [`Outstanding`] work, so a stopping process can wait for its events ([`flush_events`]).
//!
//! ```no_run
//! # async fn demo(client: kube::Client) {
//! use berth_events::{EventType, Recorder};
//! let recorder = Recorder::start(client, "replicaset-controller", "", berth_core::clock::Clock::system());
//! let pod = k8s_openapi::api::core::v1::ObjectReference::default();
//! recorder.event(pod, EventType::Normal, "SuccessfulCreate", "Created pod: web-abc12");
//! # }
//! ```
//!
//! A recorder made with [`Recorder::start_events_v1`] writes through `events.k8s.io/v1`
//! instead, as upstream's scheduler and descheduler do (`tools/events`): events carry an
//! `action` and a reporting instance, and a repeated event becomes a `series`
//! ([`SeriesCache`]: the second isomorphic event patches `series.count: 2` in, later ones are
//! counted and written when the series ends, 6 minutes after its last repeat, or every 30).
//!
//! Writes the server could not receive are tried again, up to 12 times, 10 s apart
//! ([`retry`]); an answer from the server (a `Status`) ends them.
//!
//! Design decisions: controllers write through core/v1 (the API their upstream recorders use;
//! the events.k8s.io/v1 view is the same objects); the engines are pure (unit-tested with
//! client-go's scenarios) behind a mutex the writers update after each write.

#![deny(clippy::disallowed_methods)]

pub mod correlator;
mod lru;
pub mod outstanding;
pub mod recorder;
pub mod retry;
pub mod series;

pub use correlator::{Correlated, Correlator};
pub use outstanding::{flush_events, Outstanding, Ticket, EVENT_FLUSH_LIMIT};
pub use recorder::{host_name, EventType, Recorder};
pub use series::SeriesCache;
