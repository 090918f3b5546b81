//! Writing events off the hot path, as upstream's event broadcaster does: recording is one
//! channel send into a bounded queue (a full queue drops the event and logs it); one task runs
//! the [`Correlator`] over the queue and hands each write to one of a few writers, chosen by
//! the event's name so the patches of an event follow its creation in order.

use crate::correlator::{event_name, time, Correlated, Correlator};
use crate::outstanding::{Outstanding, Ticket};
use berth_core::clock::Clock;
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
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
    event: Event,
    at: DateTime<Utc>,
    _pending: Ticket,
}

/// A correlated write, with the ticket it carries on.
struct Write {
    decision: Correlated,
    _pending: Ticket,
}

struct Inner {
    queue: mpsc::Sender<Queued>,
    source: EventSource,
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

impl Recorder {
    /// A recorder writing through `client` as `component` on `host` (empty for controllers,
    /// as kube-controller-manager's); starts its tasks on the current runtime.
    pub fn start(client: kube::Client, component: &str, host: &str, clock: Clock) -> Recorder {
        let (queue, queued) = mpsc::channel(QUEUED_EVENTS);
        let correlator = Arc::new(Mutex::new(Correlator::default()));
        let mut writers = Vec::with_capacity(WRITERS);
        for _ in 0..WRITERS {
            let (tx, rx) = mpsc::channel(WRITER_QUEUE);
            writers.push(tx);
            tokio::spawn(write_all(client.clone(), correlator.clone(), rx));
        }
        tokio::spawn(correlate_all(correlator, queued, writers));
        Recorder(Arc::new(Inner {
            queue,
            source: EventSource {
                component: Some(component.to_string()),
                host: (!host.is_empty()).then(|| host.to_string()),
            },
            clock,
            outstanding: Outstanding::process(),
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

    /// Records an event about `involved`; never waits (a full queue drops it).
    pub fn event(
        &self,
        involved: ObjectReference,
        type_: EventType,
        reason: &str,
        message: impl Into<String>,
    ) {
        let inner = &self.0;
        let at = inner.clock.now();
        let seq = inner.seq.fetch_add(1, Ordering::Relaxed);
        let event = make_event(
            &inner.source,
            involved,
            type_,
            reason,
            message.into(),
            at,
            seq,
        );
        let queued = Queued {
            event,
            at,
            _pending: inner.outstanding.start(),
        };
        if let Err(mpsc::error::TrySendError::Full(queued)) = inner.queue.try_send(queued) {
            let dropped = inner.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if dropped % 1000 == 1 {
                tracing::warn!(
                    object = queued.event.involved_object.name.as_deref().unwrap_or(""),
                    reason = queued.event.reason.as_deref().unwrap_or(""),
                    dropped,
                    "event queue full; dropping events"
                );
            }
        }
    }
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
    let namespace = involved
        .namespace
        .clone()
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| "default".to_string());
    let object = involved.name.clone().unwrap_or_default();
    let unique = at + chrono::Duration::nanoseconds((seq % 1_000_000) as i64);
    Event {
        metadata: kube::api::ObjectMeta {
            name: Some(event_name(&object, unique)),
            namespace: Some(namespace),
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

/// The correlating task: decides each event's write and hands it to its writer.
async fn correlate_all(
    correlator: Arc<Mutex<Correlator>>,
    mut queued: mpsc::Receiver<Queued>,
    writers: Vec<mpsc::Sender<Write>>,
) {
    while let Some(Queued {
        event,
        at,
        _pending,
    }) = queued.recv().await
    {
        let decision = match correlator.lock() {
            Ok(mut c) => c.correlate(event, at),
            Err(_) => return,
        };
        let name = match &decision {
            Correlated::Skip => continue,
            Correlated::Create(e) | Correlated::Patch(e) => e.metadata.name.as_deref(),
        };
        let mut h = DefaultHasher::new();
        name.hash(&mut h);
        let writer = &writers[(h.finish() % WRITERS as u64) as usize];
        if writer.send(Write { decision, _pending }).await.is_err() {
            return;
        }
    }
}

/// One writer: creates and patches events in the order it was given them.
async fn write_all(
    client: kube::Client,
    correlator: Arc<Mutex<Correlator>>,
    mut writes: mpsc::Receiver<Write>,
) {
    while let Some(Write { decision, _pending }) = writes.recv().await {
        let written = match decision {
            Correlated::Skip => continue,
            Correlated::Create(event) => create(&client, event).await,
            Correlated::Patch(event) => patch(&client, event).await,
        };
        if let Some(written) = written {
            if let Ok(mut c) = correlator.lock() {
                c.update_state(&written);
            }
        }
    }
}

fn api(client: &kube::Client, event: &Event) -> Api<Event> {
    Api::namespaced(
        client.clone(),
        event.metadata.namespace.as_deref().unwrap_or("default"),
    )
}

async fn create(client: &kube::Client, mut event: Event) -> Option<Event> {
    event.metadata.resource_version = None;
    match api(client, &event)
        .create(&PostParams::default(), &event)
        .await
    {
        Ok(e) => Some(e),
        Err(e) => {
            // Upstream abandons an event the server refused (409 AlreadyExists, a terminating
            // namespace, invalid); so does berth, and it does not retry transport errors.
            tracing::debug!(
                event = event.metadata.name.as_deref().unwrap_or(""),
                reason = event.reason.as_deref().unwrap_or(""),
                error = %e,
                "writing event failed"
            );
            None
        }
    }
}

/// A repeat: `count`, `lastTimestamp` and `message` of the first event; created anew when it
/// is gone (expired or deleted), as upstream.
async fn patch(client: &kube::Client, event: Event) -> Option<Event> {
    let name = event.metadata.name.clone().unwrap_or_default();
    let body = json!({
        "count": event.count,
        "lastTimestamp": event.last_timestamp,
        "message": event.message,
    });
    match api(client, &event)
        .patch(&name, &PatchParams::default(), &Patch::Merge(&body))
        .await
    {
        Ok(e) => Some(e),
        Err(kube::Error::Api(s)) if s.code == 404 => create(client, event).await,
        Err(e) => {
            tracing::debug!(event = %name, error = %e, "updating event failed");
            None
        }
    }
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
}
