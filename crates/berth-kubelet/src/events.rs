//! The kubelet's events (`Pulling`, `Pulled`, `Created`, `Started`, `Killing`, `BackOff`,
//! `Evicted`, the node's `Starting`/`NodeReady`/...), written off the pod and housekeeping
//! paths.
//!
//! Recording is one channel send ([`Events::record`]); a writer task posts them through the
//! node's own client, as upstream's event broadcaster does: a bounded queue (a full queue drops
//! the event and says so, at the first and every 1000th drop), a token bucket over all the
//! simulated nodes of the process (upstream rate-limits each kubelet's events, `eventRecordQPS`;
//! a thousand simulated kubelets share one), and repeats of an event (same object, reason and
//! message) bump its `count` instead of adding one, as upstream's aggregation does.
//!
//! The sink is an interface ([`EventSink`]) so that a shared recorder can replace the writer.

use berth_core::clock::Clock;
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// How many batches of events may wait to be written (upstream `maxQueuedEvents`: 1000).
pub const QUEUED_BATCHES: usize = 1000;
/// Events written per second over all the simulated nodes, after a burst.
pub const EVENT_QPS: u32 = 100;
/// The burst the writer may spend at once.
pub const EVENT_BURST: u32 = 200;
/// Events remembered for aggregation; past this the memory starts over.
const REMEMBERED: usize = 4096;

/// One event, as the kubelet of `host` records it about `involved`.
#[derive(Clone, Debug, PartialEq)]
pub struct KubeletEvent {
    pub host: String,
    /// The event's namespace (`default` for the node's own events, as upstream).
    pub namespace: String,
    /// The `involvedObject` (kind, name, namespace, uid, fieldPath...).
    pub involved: Value,
    pub type_: &'static str,
    pub reason: String,
    pub message: String,
    pub annotations: BTreeMap<String, String>,
    /// When it happened (RFC 3339, the injected clock's).
    pub at: String,
}

impl KubeletEvent {
    /// A Normal event about the pod `ns/name` (uid), its container `container` if given.
    pub fn pod(
        host: &str,
        pod: (&str, &str, &str),
        container: Option<&str>,
        type_: &'static str,
        reason: &str,
        message: String,
        at: String,
    ) -> KubeletEvent {
        let (ns, name, uid) = pod;
        let mut involved =
            json!({"kind": "Pod", "apiVersion": "v1", "namespace": ns, "name": name, "uid": uid});
        if let Some(c) = container {
            involved["fieldPath"] = json!(format!("spec.containers{{{c}}}"));
        }
        KubeletEvent {
            host: host.to_string(),
            namespace: ns.to_string(),
            involved,
            type_,
            reason: reason.to_string(),
            message,
            annotations: BTreeMap::new(),
            at,
        }
    }

    /// An event about the node `host` itself.
    pub fn node(
        host: &str,
        type_: &'static str,
        reason: &str,
        message: String,
        at: String,
    ) -> Self {
        KubeletEvent {
            host: host.to_string(),
            namespace: "default".into(),
            involved: json!({"kind": "Node", "name": host, "uid": host}),
            type_,
            reason: reason.to_string(),
            message,
            annotations: BTreeMap::new(),
            at,
        }
    }
}

/// Where recorded events go.
pub trait EventSink: Send + Sync {
    /// Takes events to write, in order; must not block.
    fn record(&self, events: Vec<KubeletEvent>);
}

/// The kubelets' handle on their event sink. Cloning shares it.
#[derive(Clone)]
pub struct Events(Arc<dyn EventSink>);

impl Events {
    pub fn new(sink: Arc<dyn EventSink>) -> Events {
        Events(sink)
    }

    /// Records events (one queue slot for the lot, written in order).
    pub fn record(&self, events: Vec<KubeletEvent>) {
        if !events.is_empty() {
            self.0.record(events);
        }
    }

    /// Records one event.
    pub fn one(&self, event: KubeletEvent) {
        self.0.record(vec![event]);
    }
}

/// A sink that forgets everything (components that post no events).
pub struct Discard;

impl EventSink for Discard {
    fn record(&self, _: Vec<KubeletEvent>) {}
}

/// The queued writer: [`QueuedWriter::start`] spawns the task that posts what is recorded.
pub struct QueuedWriter {
    queue: mpsc::Sender<Vec<KubeletEvent>>,
    dropped: AtomicU64,
}

impl EventSink for QueuedWriter {
    fn record(&self, events: Vec<KubeletEvent>) {
        if self.queue.try_send(events).is_err() {
            let n = self.dropped.fetch_add(1, Ordering::Relaxed);
            if n.is_multiple_of(1000) {
                tracing::warn!(dropped = n + 1, "kubelet event queue full: events dropped");
            }
        }
    }
}

impl QueuedWriter {
    /// Spawns the writer; each event is posted through `client(host)`.
    pub fn start(
        client: impl Fn(&str) -> kube::Client + Send + Sync + 'static,
        clock: Clock,
    ) -> Events {
        let (tx, rx) = mpsc::channel(QUEUED_BATCHES);
        tokio::spawn(write_loop(rx, Box::new(client), clock));
        Events::new(Arc::new(QueuedWriter {
            queue: tx,
            dropped: AtomicU64::new(0),
        }))
    }
}

/// A token bucket on the injected clock.
struct Bucket {
    tokens: f64,
    at: tokio::time::Instant,
}

impl Bucket {
    /// How long to wait before the next write (zero when a token is left), taking it.
    fn take(&mut self, now: tokio::time::Instant) -> Duration {
        let refill = now.saturating_duration_since(self.at).as_secs_f64() * f64::from(EVENT_QPS);
        self.tokens = (self.tokens + refill).min(f64::from(EVENT_BURST));
        self.at = now;
        self.tokens -= 1.0;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / f64::from(EVENT_QPS))
        }
    }
}

/// What aggregation remembers of an event written: its name and count.
type Written = HashMap<(String, String, String), (String, i32)>;

/// The aggregation key: the involved object, the reason and the message (upstream's
/// aggregator keys on the source, object, type and reason, and counts identical messages).
fn key(e: &KubeletEvent) -> (String, String, String) {
    let object = format!(
        "{}/{}/{}/{}",
        e.involved["kind"].as_str().unwrap_or(""),
        e.namespace,
        e.involved["name"].as_str().unwrap_or(""),
        e.involved["fieldPath"].as_str().unwrap_or("")
    );
    (object, e.reason.clone(), e.message.clone())
}

type ClientOf = Box<dyn Fn(&str) -> kube::Client + Send + Sync>;

async fn write_loop(mut rx: mpsc::Receiver<Vec<KubeletEvent>>, client: ClientOf, clock: Clock) {
    let mut bucket = Bucket {
        tokens: f64::from(EVENT_BURST),
        at: clock.instant(),
    };
    let mut written = Written::new();
    let mut seq: u64 = 0;
    while let Some(batch) = rx.recv().await {
        for e in batch {
            // The bucket paces the machine's work: in its time, whatever the cluster's speed.
            let wait = bucket.take(clock.instant());
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            seq += 1;
            write(&client(&e.host), &e, &clock, seq, &mut written).await;
        }
    }
}

/// Posts one event, or bumps the count of the same one written before.
async fn write(
    client: &kube::Client,
    e: &KubeletEvent,
    clock: &Clock,
    seq: u64,
    written: &mut Written,
) {
    let api: Api<Event> = Api::namespaced(client.clone(), &e.namespace);
    let k = key(e);
    if let Some((name, count)) = written.get_mut(&k) {
        let patch = json!({"count": *count + 1, "lastTimestamp": e.at});
        match api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {
                *count += 1;
                return;
            }
            // Gone (its TTL passed): written anew below.
            Err(err) => {
                tracing::debug!(reason = %e.reason, error = %err, "bumping an event failed")
            }
        }
    }
    let name = format!(
        "{}.{:x}",
        e.involved["name"].as_str().unwrap_or("event"),
        clock
            .now()
            .timestamp_nanos_opt()
            .unwrap_or(0)
            .wrapping_add(seq as i64)
    );
    let ev = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": name, "namespace": e.namespace, "annotations": e.annotations},
        "involvedObject": e.involved,
        "reason": e.reason, "message": e.message, "type": e.type_,
        "source": {"component": "kubelet", "host": e.host},
        "reportingComponent": "kubelet", "reportingInstance": e.host,
        "firstTimestamp": e.at, "lastTimestamp": e.at, "count": 1,
    });
    let Ok(ev) = serde_json::from_value::<Event>(ev) else {
        return;
    };
    match api.create(&PostParams::default(), &ev).await {
        Ok(_) => {
            if written.len() >= REMEMBERED {
                written.clear();
            }
            written.insert(k, (name, 1));
        }
        Err(err) => tracing::debug!(reason = %e.reason, error = %err, "posting event failed"),
    }
}

/// The events of a pod's containers starting on its node (upstream's `Pulling`/`Pulled` or
/// "already present", `Created`, `Started`, per container in order). `present(image)` says
/// whether the node had the image before.
pub fn container_start(
    host: &str,
    pod: (&str, &str, &str),
    containers: &[(String, String)],
    present: &dyn Fn(&str) -> bool,
    at: &str,
) -> Vec<KubeletEvent> {
    let mut out = Vec::new();
    for (name, image) in containers {
        let ev = |reason: &str, message: String| {
            KubeletEvent::pod(
                host,
                pod,
                Some(name),
                "Normal",
                reason,
                message,
                at.to_string(),
            )
        };
        if present(image) {
            out.push(ev(
                "Pulled",
                format!("Container image \"{image}\" already present on machine"),
            ));
        } else {
            out.push(ev("Pulling", format!("Pulling image \"{image}\"")));
            out.push(ev(
                "Pulled",
                format!(
                    "Successfully pulled image \"{image}\" in 0s (0s including waiting). Image size: {} bytes.",
                    crate::model::DEFAULT_IMAGE_SIZE
                ),
            ));
        }
        out.push(ev("Created", format!("Created container: {name}")));
        out.push(ev("Started", format!("Started container {name}")));
    }
    out
}

/// The `Killing` events of a pod's containers being stopped (upstream's words).
pub fn killing(
    host: &str,
    pod: (&str, &str, &str),
    containers: &[String],
    at: &str,
) -> Vec<KubeletEvent> {
    containers
        .iter()
        .map(|c| {
            KubeletEvent::pod(
                host,
                pod,
                Some(c),
                "Normal",
                "Killing",
                format!("Stopping container {c}"),
                at.to_string(),
            )
        })
        .collect()
}

/// The events a kubelet records as it starts and registers its node (upstream's order).
pub fn node_starting(host: &str, at: &str) -> Vec<KubeletEvent> {
    let status = |reason: &str| {
        KubeletEvent::node(
            host,
            "Normal",
            reason,
            format!("Node {host} status is now: {reason}"),
            at.to_string(),
        )
    };
    vec![
        KubeletEvent::node(
            host,
            "Normal",
            "Starting",
            "Starting kubelet.".into(),
            at.to_string(),
        ),
        status("NodeHasSufficientMemory"),
        status("NodeHasNoDiskPressure"),
        status("NodeHasSufficientPID"),
        KubeletEvent::node(
            host,
            "Normal",
            "NodeAllocatableEnforced",
            "Updated Node Allocatable limit across pods".into(),
            at.to_string(),
        ),
        // Registered Ready at once (a simulated runtime is up from the start).
        status("NodeReady"),
    ]
}

/// The event of the node's `spec.unschedulable` changing to `unschedulable` (cordon/uncordon).
pub fn schedulable(host: &str, unschedulable: bool, at: &str) -> KubeletEvent {
    let reason = if unschedulable {
        "NodeNotSchedulable"
    } else {
        "NodeSchedulable"
    };
    KubeletEvent::node(
        host,
        "Normal",
        reason,
        format!("Node {host} status is now: {reason}"),
        at.to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_start_says_pulled_or_already_present_then_created_and_started() {
        let present = |i: &str| i == "busybox";
        let events = container_start(
            "node-1",
            ("ns", "p", "u"),
            &[("a".into(), "nginx".into()), ("b".into(), "busybox".into())],
            &present,
            "t",
        );
        let words: Vec<(&str, &str)> = events
            .iter()
            .map(|e| (e.reason.as_str(), e.message.as_str()))
            .collect();
        assert_eq!(
            words,
            vec![
                ("Pulling", "Pulling image \"nginx\""),
                (
                    "Pulled",
                    "Successfully pulled image \"nginx\" in 0s (0s including waiting). Image size: 104857600 bytes."
                ),
                ("Created", "Created container: a"),
                ("Started", "Started container a"),
                ("Pulled", "Container image \"busybox\" already present on machine"),
                ("Created", "Created container: b"),
                ("Started", "Started container b"),
            ]
        );
        assert_eq!(events[0].involved["fieldPath"], "spec.containers{a}");
        assert_eq!(events[0].namespace, "ns");
    }

    #[test]
    fn node_events_name_the_node() {
        let e = node_starting("node-1", "t");
        assert_eq!(e[0].reason, "Starting");
        assert_eq!(e[0].message, "Starting kubelet.");
        assert_eq!(
            e[1].message,
            "Node node-1 status is now: NodeHasSufficientMemory"
        );
        assert_eq!(e[1].namespace, "default");
        assert_eq!(
            schedulable("node-1", true, "t").message,
            "Node node-1 status is now: NodeNotSchedulable"
        );
        let k = killing("node-1", ("ns", "p", "u"), &["c".into()], "t");
        assert_eq!(k[0].message, "Stopping container c");
    }

    #[tokio::test(start_paused = true)]
    async fn the_bucket_lets_a_burst_through_then_paces() {
        let start = Clock::system().instant();
        let mut b = Bucket {
            tokens: f64::from(EVENT_BURST),
            at: start,
        };
        for _ in 0..EVENT_BURST {
            assert_eq!(b.take(start), Duration::ZERO);
        }
        assert!(b.take(start) > Duration::ZERO);
        // A second later, a second's worth of tokens is back.
        let later = start + Duration::from_secs(1);
        let waits: Vec<bool> = (0..EVENT_QPS).map(|_| b.take(later).is_zero()).collect();
        assert!(waits[..(EVENT_QPS as usize - 2)].iter().all(|w| *w));
    }
}
