//! Writing events off the hot path, as upstream's event broadcasters do: recording is one
//! channel send into a bounded queue (a full queue drops the event and logs it); one task runs
//! the [`Correlator`] (core/v1 recorders) or the [`SeriesCache`] (`events.k8s.io/v1`
//! recorders) over the queue and hands each write to one of a few writers, chosen by the
//! event's name so the patches of an event follow its creation in order. A writer tries a
//! write again while the server cannot be reached ([`crate::retry`]); its bounded queue makes
//! the recorder's queue fill, and then drop, while the server is away.

use crate::correlator::{event_name, time, Correlated, Correlator};
use crate::outstanding::{Outstanding, Ticket};
use crate::retry::{self, After};
use crate::series::{micro_time, SeriesCache, FINISH_TIME, REFRESH_TIME};
use berth_core::clock::Clock;
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::api::events::v1::Event as SeriesEvent;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::mpsc;

/// How many events may wait to be correlated (upstream `maxQueuedEvents`).
pub const QUEUED_EVENTS: usize = 1000;
/// How many events are written at once.
const WRITERS: usize = 4;
/// How many correlated writes each writer holds.
const WRITER_QUEUE: usize = 256;

/// `Normal` or `Warning` (upstream `v1.EventTypeNormal`/`EventTypeWarning`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }

    /// `"Warning"` is a warning; anything else is normal.
    pub fn parse(s: &str) -> EventType {
        if s == "Warning" {
            EventType::Warning
        } else {
            EventType::Normal
        }
    }
}

/// An event waiting to be correlated, with its ticket of the process's outstanding work.
struct Queued {
    event: Recorded,
    at: DateTime<Utc>,
    _pending: Ticket,
}

/// An event as its API writes it.
enum Recorded {
    Core(Event),
    EventsV1(SeriesEvent),
}

/// A decided write, with the ticket it carries on.
struct Write {
    job: Job,
    _pending: Ticket,
}

enum Job {
    Core(Correlated),
    /// Created when it has no series, else its series patched (created if missing).
    EventsV1(SeriesEvent),
}

impl Job {
    fn name(&self) -> Option<&str> {
        match self {
            Job::Core(Correlated::Skip) => None,
            Job::Core(Correlated::Create(e) | Correlated::Patch(e)) => e.metadata.name.as_deref(),
            Job::EventsV1(e) => e.metadata.name.as_deref(),
        }
    }
}

/// The decision engines of one recorder.
#[derive(Default)]
struct Engines {
    correlator: Correlator,
    series: SeriesCache,
}

/// Where an `events.k8s.io/v1` recorder reports from.
struct Reporter {
    controller: String,
    instance: String,
}

struct Inner {
    queue: mpsc::Sender<Queued>,
    source: EventSource,
    /// Set for an `events.k8s.io/v1` recorder.
    reporter: Option<Reporter>,
    clock: Clock,
    outstanding: Outstanding,
    /// Events dropped because the queue was full; logged on the first and every 1000th.
    dropped: AtomicU64,
    /// Makes the names of events recorded at one instant distinct (a paused clock stands
    /// still), while keeping upstream's `<object>.<hex>` form.
    seq: AtomicU64,
}

/// Records events as one component (`source.component`, the reporting controller) on one
/// host (`source.host`, the reporting instance). Cloning shares the queue and correlator.
#[derive(Clone)]
pub struct Recorder(Arc<Inner>);

/// The host name, as upstream's `os.Hostname()` (`berth` when it cannot be read).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "berth".into())
}

impl Recorder {
    /// A core/v1 recorder writing through `client` as `component` on `host` (empty for
    /// controllers, as kube-controller-manager's); starts its tasks on the current runtime.
    pub fn start(client: kube::Client, component: &str, host: &str, clock: Clock) -> Recorder {
        let source = EventSource {
            component: Some(component.to_string()),
            host: (!host.is_empty()).then(|| host.to_string()),
        };
        Recorder::spawn(client, source, None, clock)
    }

    /// An `events.k8s.io/v1` recorder, as upstream's scheduler and descheduler use: events
    /// reported by `controller` from `instance` (upstream `<controller>-<hostname>`), with an
    /// `action`, repeated ones written as a `series`.
    pub fn start_events_v1(
        client: kube::Client,
        controller: &str,
        instance: &str,
        clock: Clock,
    ) -> Recorder {
        let source = EventSource {
            component: Some(controller.to_string()),
            host: None,
        };
        let reporter = Reporter {
            controller: controller.to_string(),
            instance: instance.to_string(),
        };
        Recorder::spawn(client, source, Some(reporter), clock)
    }

    fn spawn(
        client: kube::Client,
        source: EventSource,
        reporter: Option<Reporter>,
        clock: Clock,
    ) -> Recorder {
        let (queue, queued) = mpsc::channel(QUEUED_EVENTS);
        let engines = Arc::new(Mutex::new(Engines::default()));
        let mut writers = Vec::with_capacity(WRITERS);
        for _ in 0..WRITERS {
            let (tx, rx) = mpsc::channel(WRITER_QUEUE);
            writers.push(tx);
            tokio::spawn(write_all(client.clone(), engines.clone(), rx));
        }
        let outstanding = Outstanding::process();
        if reporter.is_some() {
            tokio::spawn(sweep_series(
                Arc::downgrade(&engines),
                writers.clone(),
                clock.clone(),
                outstanding.clone(),
            ));
        }
        tokio::spawn(correlate_all(engines, queued, writers));
        Recorder(Arc::new(Inner {
            queue,
            source,
            reporter,
            clock,
            outstanding,
            dropped: AtomicU64::new(0),
            seq: AtomicU64::new(0),
        }))
    }

    /// The component events are recorded as.
    pub fn component(&self) -> &str {
        self.0.source.component.as_deref().unwrap_or("")
    }

    /// A ticket of the process's outstanding work (see [`Outstanding`]): hold it across work
    /// that ends in an event, so a stopping component waits for both.
    pub fn pending_work(&self) -> Ticket {
        self.0.outstanding.start()
    }

    /// Records an event about `involved`; never waits (a full queue drops it). An
    /// `events.k8s.io/v1` recorder records it with the reason as its action.
    pub fn event(
        &self,
        involved: ObjectReference,
        type_: EventType,
        reason: &str,
        message: impl Into<String>,
    ) {
        self.event_about(involved, None, type_, reason, reason, message);
    }

    /// Records an event about `regarding`, done for `related` (the core API has no such field
    /// and no action: a core/v1 recorder leaves them out); never waits.
    pub fn event_about(
        &self,
        regarding: ObjectReference,
        related: Option<ObjectReference>,
        type_: EventType,
        reason: &str,
        action: &str,
        message: impl Into<String>,
    ) {
        let inner = &self.0;
        let at = inner.clock.now();
        let seq = inner.seq.fetch_add(1, Ordering::Relaxed);
        let event = match &inner.reporter {
            None => Recorded::Core(make_event(
                &inner.source,
                regarding,
                type_,
                reason,
                message.into(),
                at,
                seq,
            )),
            Some(reporter) => Recorded::EventsV1(make_series_event(
                reporter,
                Described {
                    regarding,
                    related,
                    type_,
                    reason,
                    action,
                    note: message.into(),
                },
                at,
                seq,
            )),
        };
        let queued = Queued {
            event,
            at,
            _pending: inner.outstanding.start(),
        };
        if let Err(mpsc::error::TrySendError::Full(queued)) = inner.queue.try_send(queued) {
            let dropped = inner.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if dropped % 1000 == 1 {
                let (object, reason) = match &queued.event {
                    Recorded::Core(e) => (e.involved_object.name.clone(), e.reason.clone()),
                    Recorded::EventsV1(e) => (
                        e.regarding.as_ref().and_then(|r| r.name.clone()),
                        e.reason.clone(),
                    ),
                };
                tracing::warn!(
                    object = object.as_deref().unwrap_or(""),
                    reason = reason.as_deref().unwrap_or(""),
                    dropped,
                    "event queue full; dropping events"
                );
            }
        }
    }
}

/// The event's namespace: the object's, `default` for cluster-scoped objects.
fn namespace_of(involved: &ObjectReference) -> String {
    involved
        .namespace
        .clone()
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| "default".to_string())
}

/// A name unique even for events recorded at one instant.
fn unique_name(involved: &ObjectReference, at: DateTime<Utc>, seq: u64) -> String {
    let object = involved.name.clone().unwrap_or_default();
    let unique = at + chrono::Duration::nanoseconds((seq % 1_000_000) as i64);
    event_name(&object, unique)
}

/// The event upstream's recorder makes (`makeEvent`, `generateEvent`): in the object's
/// namespace (`default` for cluster-scoped objects), named `<object>.<nanos hex>`, count 1,
/// reported by the source's component and host.
fn make_event(
    source: &EventSource,
    involved: ObjectReference,
    type_: EventType,
    reason: &str,
    message: String,
    at: DateTime<Utc>,
    seq: u64,
) -> Event {
    Event {
        metadata: kube::api::ObjectMeta {
            name: Some(unique_name(&involved, at, seq)),
            namespace: Some(namespace_of(&involved)),
            ..Default::default()
        },
        involved_object: involved,
        reason: Some(reason.to_string()),
        message: Some(message),
        type_: Some(type_.as_str().to_string()),
        count: Some(1),
        first_timestamp: Some(time(at)),
        last_timestamp: Some(time(at)),
        source: Some(source.clone()),
        reporting_component: source.component.clone(),
        reporting_instance: Some(source.host.clone().unwrap_or_default()),
        ..Default::default()
    }
}

/// What an `events.k8s.io/v1` event says.
struct Described<'a> {
    regarding: ObjectReference,
    related: Option<ObjectReference>,
    type_: EventType,
    reason: &'a str,
    action: &'a str,
    note: String,
}

/// The longest note `events.k8s.io/v1` accepts (upstream `NoteLengthLimit`, 1 kB); the
/// recorder cuts longer ones, as upstream's does.
pub const NOTE_LENGTH_LIMIT: usize = 1024;

/// The event upstream's `events.k8s.io` recorder makes (`makeEvent`): named and placed as a
/// core one, with `eventTime` and no series.
fn make_series_event(
    reporter: &Reporter,
    described: Described<'_>,
    at: DateTime<Utc>,
    seq: u64,
) -> SeriesEvent {
    let Described {
        regarding,
        related,
        type_,
        reason,
        action,
        mut note,
    } = described;
    if note.len() > NOTE_LENGTH_LIMIT {
        let mut cut = NOTE_LENGTH_LIMIT;
        while !note.is_char_boundary(cut) {
            cut -= 1;
        }
        note.truncate(cut);
    }
    SeriesEvent {
        metadata: kube::api::ObjectMeta {
            name: Some(unique_name(&regarding, at, seq)),
            namespace: Some(namespace_of(&regarding)),
            ..Default::default()
        },
        event_time: Some(micro_time(at)),
        reporting_controller: Some(reporter.controller.clone()),
        reporting_instance: Some(reporter.instance.clone()),
        action: Some(action.to_string()),
        reason: Some(reason.to_string()),
        regarding: Some(regarding),
        related,
        note: Some(note),
        type_: Some(type_.as_str().to_string()),
        ..Default::default()
    }
}

/// The correlating task: decides each event's write and hands it to its writer.
async fn correlate_all(
    engines: Arc<Mutex<Engines>>,
    mut queued: mpsc::Receiver<Queued>,
    writers: Vec<mpsc::Sender<Write>>,
) {
    while let Some(Queued {
        event,
        at,
        _pending,
    }) = queued.recv().await
    {
        let job = match engines.lock() {
            Ok(mut engines) => match event {
                Recorded::Core(e) => Job::Core(engines.correlator.correlate(e, at)),
                Recorded::EventsV1(e) => match engines.series.record(e, at) {
                    Some(write) => Job::EventsV1(write),
                    None => continue,
                },
            },
            Err(_) => return,
        };
        if !hand_over(&writers, Write { job, _pending }).await {
            return;
        }
    }
}

/// Gives `write` to the writer of its event's name; false when the writers are gone.
async fn hand_over(writers: &[mpsc::Sender<Write>], write: Write) -> bool {
    let Some(name) = write.job.name() else {
        return true;
    };
    let mut h = DefaultHasher::new();
    name.hash(&mut h);
    let writer = &writers[(h.finish() % writers.len() as u64) as usize];
    writer.send(write).await.is_ok()
}

/// Ends the series that stopped every [`FINISH_TIME`] and writes the live ones again every
/// [`REFRESH_TIME`], as upstream's broadcaster; stops with its recorder.
async fn sweep_series(
    engines: Weak<Mutex<Engines>>,
    writers: Vec<mpsc::Sender<Write>>,
    clock: Clock,
    outstanding: Outstanding,
) {
    let sweeps_per_refresh = (REFRESH_TIME.as_secs() / FINISH_TIME.as_secs()).max(1);
    let mut sweeps = 0u64;
    loop {
        tokio::time::sleep(FINISH_TIME).await;
        sweeps += 1;
        let Some(engines) = engines.upgrade() else {
            return;
        };
        let writes = match engines.lock() {
            Ok(mut engines) => {
                let mut writes = if sweeps.is_multiple_of(sweeps_per_refresh) {
                    engines.series.refresh()
                } else {
                    Vec::new()
                };
                writes.extend(engines.series.finish(clock.now()));
                writes
            }
            Err(_) => return,
        };
        drop(engines);
        for event in writes {
            let write = Write {
                job: Job::EventsV1(event),
                _pending: outstanding.start(),
            };
            if !hand_over(&writers, write).await {
                return;
            }
        }
    }
}

/// One writer: creates and patches events in the order it was given them.
async fn write_all(
    client: kube::Client,
    engines: Arc<Mutex<Engines>>,
    mut writes: mpsc::Receiver<Write>,
) {
    while let Some(Write { job, _pending }) = writes.recv().await {
        match job {
            Job::Core(Correlated::Skip) => {}
            Job::Core(decision) => {
                if let Some(written) = write_core(&client, decision).await {
                    if let Ok(mut engines) = engines.lock() {
                        engines.correlator.update_state(&written);
                    }
                }
            }
            // Upstream keeps the server's copy out of the cache: server-side changes would
            // upset the series.
            Job::EventsV1(event) => write_series_event(&client, event).await,
        }
    }
}

/// What one attempt at a write came to.
enum Attempt<T> {
    Written(T),
    Failed { error: kube::Error, series: bool },
}

/// Tries `attempt` until it is written, abandoned, or [`retry::MAX_TRIES`] attempts failed.
async fn with_retries<T, F, Fut>(api: retry::Api, name: &str, mut attempt: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Attempt<T>>,
{
    let mut tries = 0;
    loop {
        let (error, series) = match attempt().await {
            Attempt::Written(t) => return Some(t),
            Attempt::Failed { error, series } => (error, series),
        };
        tries += 1;
        if retry::after(&error, series) == After::Abandon {
            // Upstream abandons an event the server refused (409 AlreadyExists, a terminating
            // namespace, invalid).
            tracing::debug!(event = %name, error = %error, "server rejected event (will not retry)");
            return None;
        }
        if tries >= retry::MAX_TRIES {
            tracing::warn!(event = %name, error = %error, "unable to write event (retry limit exceeded)");
            return None;
        }
        tracing::debug!(event = %name, error = %error, "unable to write event (may retry after sleeping)");
        tokio::time::sleep(retry::delay(api, tries, rand::random::<f64>())).await;
    }
}

fn api(client: &kube::Client, event: &Event) -> Api<Event> {
    Api::namespaced(
        client.clone(),
        event.metadata.namespace.as_deref().unwrap_or("default"),
    )
}

/// Writes a core decision: a new event is created; a repeat patches `count`, `lastTimestamp`
/// and `message` of the first one, which is created anew when it is gone (expired or
/// deleted), as upstream.
async fn write_core(client: &kube::Client, decision: Correlated) -> Option<Event> {
    let (event, repeat) = match decision {
        Correlated::Skip => return None,
        Correlated::Create(e) => (e, false),
        Correlated::Patch(e) => (e, true),
    };
    let name = event.metadata.name.clone().unwrap_or_default();
    with_retries(retry::Api::Core, &name, || {
        let event = event.clone();
        let name = name.clone();
        async move {
            if repeat {
                let body = json!({
                    "count": event.count,
                    "lastTimestamp": event.last_timestamp,
                    "message": event.message,
                });
                match api(client, &event)
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&body))
                    .await
                {
                    Ok(e) => return Attempt::Written(e),
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    Err(error) => {
                        return Attempt::Failed {
                            error,
                            series: false,
                        }
                    }
                }
            }
            let mut event = event;
            event.metadata.resource_version = None;
            match api(client, &event)
                .create(&PostParams::default(), &event)
                .await
            {
                Ok(e) => Attempt::Written(e),
                Err(error) => Attempt::Failed {
                    error,
                    series: false,
                },
            }
        }
    })
    .await
}

/// Writes an `events.k8s.io/v1` event (upstream `recordEvent`): a series is patched in (only
/// the `series` differs from what was created), and created when the event is gone; a single
/// event is created.
async fn write_series_event(client: &kube::Client, event: SeriesEvent) {
    let name = event.metadata.name.clone().unwrap_or_default();
    let namespace = event.metadata.namespace.clone().unwrap_or_default();
    let events: Api<SeriesEvent> = Api::namespaced(client.clone(), &namespace);
    with_retries(retry::Api::EventsV1, &name, || {
        let (events, name) = (&events, &name);
        let mut event = event.clone();
        async move {
            let series = event.series.is_some();
            if let Some(s) = &event.series {
                let body =
                    json!({"series": {"count": s.count, "lastObservedTime": s.last_observed_time}});
                match events
                    .patch(name, &PatchParams::default(), &Patch::Strategic(&body))
                    .await
                {
                    Ok(e) => return Attempt::Written(e),
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    Err(error) => {
                        return Attempt::Failed {
                            error,
                            series: false,
                        }
                    }
                }
            }
            event.metadata.resource_version = None;
            match events.create(&PostParams::default(), &event).await {
                Ok(e) => Attempt::Written(e),
                Err(error) => Attempt::Failed { error, series },
            }
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod() -> ObjectReference {
        ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            name: Some("web-0".into()),
            namespace: Some("ns".into()),
            uid: Some("u".into()),
            ..Default::default()
        }
    }

    fn source() -> EventSource {
        EventSource {
            component: Some("replicaset-controller".into()),
            host: None,
        }
    }

    #[test]
    fn an_event_is_made_as_upstreams_recorder_makes_it() {
        let at = DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let e = make_event(&source(), pod(), EventType::Warning, "R", "m".into(), at, 0);
        assert_eq!(e.metadata.namespace.as_deref(), Some("ns"));
        assert_eq!(
            e.metadata.name,
            Some(format!("web-0.{:x}", at.timestamp_nanos_opt().unwrap()))
        );
        assert_eq!(e.type_.as_deref(), Some("Warning"));
        assert_eq!(e.count, Some(1));
        assert_eq!(
            e.reporting_component.as_deref(),
            Some("replicaset-controller")
        );
        assert_eq!(e.reporting_instance.as_deref(), Some(""));
        assert_eq!(e.first_timestamp, e.last_timestamp);
    }

    #[test]
    fn events_about_cluster_scoped_objects_go_to_default() {
        let node = ObjectReference {
            kind: Some("Node".into()),
            name: Some("n1".into()),
            ..Default::default()
        };
        let at = DateTime::<Utc>::UNIX_EPOCH;
        let e = make_event(&source(), node, EventType::Normal, "R", "m".into(), at, 0);
        assert_eq!(e.metadata.namespace.as_deref(), Some("default"));
    }

    #[test]
    fn events_recorded_at_one_instant_have_distinct_names() {
        let at = DateTime::<Utc>::UNIX_EPOCH;
        let a = make_event(&source(), pod(), EventType::Normal, "R", "m".into(), at, 0);
        let b = make_event(&source(), pod(), EventType::Normal, "R", "m".into(), at, 1);
        assert_ne!(a.metadata.name, b.metadata.name);
    }

    fn reporter() -> Reporter {
        Reporter {
            controller: "default-scheduler".into(),
            instance: "default-scheduler-host1".into(),
        }
    }

    fn described(note: String) -> Described<'static> {
        Described {
            regarding: pod(),
            related: None,
            type_: EventType::Normal,
            reason: "Scheduled",
            action: "Binding",
            note,
        }
    }

    #[test]
    fn an_events_v1_event_is_made_as_upstreams_new_recorder_makes_it() {
        let at = DateTime::parse_from_rfc3339("2026-01-01T00:00:00.123456Z")
            .unwrap()
            .with_timezone(&Utc);
        let e = make_series_event(
            &reporter(),
            described("Successfully assigned".into()),
            at,
            0,
        );
        assert_eq!(e.metadata.namespace.as_deref(), Some("ns"));
        assert_eq!(
            e.metadata.name,
            Some(format!("web-0.{:x}", at.timestamp_nanos_opt().unwrap()))
        );
        assert_eq!(e.event_time, Some(micro_time(at)));
        assert_eq!(e.action.as_deref(), Some("Binding"));
        assert_eq!(e.reporting_controller.as_deref(), Some("default-scheduler"));
        assert_eq!(
            e.reporting_instance.as_deref(),
            Some("default-scheduler-host1")
        );
        assert_eq!(e.regarding, Some(pod()));
        assert_eq!(e.series, None);
        assert_eq!(e.deprecated_count, None);
        let wire = serde_json::to_value(&e).unwrap();
        assert_eq!(wire["eventTime"], "2026-01-01T00:00:00.123456Z");
    }

    #[test]
    fn a_note_longer_than_one_kilobyte_is_cut() {
        let at = DateTime::<Utc>::UNIX_EPOCH;
        let long = "é".repeat(NOTE_LENGTH_LIMIT);
        let e = make_series_event(&reporter(), described(long), at, 0);
        let note = e.note.unwrap();
        assert!(note.len() <= NOTE_LENGTH_LIMIT);
        assert_eq!(note.len(), NOTE_LENGTH_LIMIT);
    }
}
