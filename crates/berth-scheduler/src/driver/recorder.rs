//! Writing what the scheduler decided: bindings (awaited, they decide the pod's fate), and
//! events and the pod's `PodScheduled` condition (off the scheduling path).
//!
//! Events go through a bounded queue to a few writer tasks, as upstream's event broadcaster
//! does (a full queue drops the event and logs it): a `Scheduled` event costs the binding path
//! one channel send. Repeated failures bump one event's `count` (upstream's aggregation); a pod
//! scheduled, or gone, is forgotten by it. Every queued job holds a ticket of the process's
//! [`Outstanding`] work until it is written, so a stopping scheduler can wait for them
//! ([`super::outstanding::flush_events`]).

use super::outstanding::{Outstanding, Ticket};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Status, Time};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// How many events may wait to be written (upstream `maxQueuedEvents`).
const QUEUED_EVENTS: usize = 1000;
/// How many events are written at once.
const WRITERS: usize = 4;

/// Identity of the pod a decision is about.
#[derive(Debug, Clone)]
pub struct PodRef {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    /// The generation the decision was made on (`observedGeneration` of `PodScheduled`).
    pub generation: Option<i64>,
}

/// Something to write about a pod, off the scheduling path.
enum Job {
    Event {
        pod: PodRef,
        type_: &'static str,
        reason: &'static str,
        message: String,
    },
    /// `PodScheduled=False` with this reason and message.
    Unschedulable {
        pod: PodRef,
        reason: &'static str,
        message: String,
    },
}

/// A job with its ticket: the work stays outstanding until the job is written or dropped.
struct Queued {
    job: Job,
    _pending: Ticket,
}

/// An event written before: its name and count, to bump on a repeat.
struct Written {
    reason: &'static str,
    message: String,
    name: String,
    count: i32,
}

/// Events written per pod uid (failures only: a pod is scheduled once).
type Seen = Arc<Mutex<HashMap<String, Vec<Written>>>>;

/// Writes bindings, events and status for one scheduler. Cloning shares the queue.
#[derive(Clone)]
pub struct Recorder {
    client: kube::Client,
    queue: mpsc::Sender<Queued>,
    seen: Seen,
    /// The process's pending writes (see [`Outstanding`]).
    outstanding: Outstanding,
    /// Events dropped because the queue was full; logged on the first and every 1000th, so a
    /// burst of thousands of pods does not become thousands of warnings.
    dropped: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}

impl Recorder {
    /// A recorder writing as `component`; starts its writer tasks.
    pub fn new(client: kube::Client, component: &str) -> Recorder {
        let (queue, jobs) = mpsc::channel(QUEUED_EVENTS);
        let seen = Seen::default();
        let writer = Writer {
            client: client.clone(),
            component: component.to_string(),
            seen: seen.clone(),
        };
        tokio::spawn(async move {
            futures::stream::unfold(jobs, |mut jobs| async move {
                jobs.recv().await.map(|job| (job, jobs))
            })
            .for_each_concurrent(WRITERS, |queued: Queued| {
                let writer = &writer;
                // The ticket lives until the write has finished.
                async move {
                    let Queued { job, _pending } = queued;
                    writer.write(job).await;
                }
            })
            .await
        });
        Recorder {
            client,
            queue,
            seen,
            outstanding: Outstanding::process(),
            dropped: Default::default(),
        }
    }

    /// A ticket of outstanding work: a stopping scheduler waits for it to be dropped (hold it
    /// across a binding and its `Scheduled` event).
    pub fn pending_work(&self) -> Ticket {
        self.outstanding.start()
    }

    /// Binds the pod through `pods/binding`.
    pub async fn bind(&self, pod: &PodRef, node: &str) -> Result<(), kube::Error> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &pod.namespace);
        let binding = k8s_openapi::api::core::v1::Binding {
            metadata: kube::api::ObjectMeta {
                name: Some(pod.name.clone()),
                namespace: Some(pod.namespace.clone()),
                uid: Some(pod.uid.clone()),
                ..Default::default()
            },
            target: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Node".into()),
                name: Some(node.to_string()),
                ..Default::default()
            },
        };
        // The answer is a Status; only success matters.
        api.create_subresource::<_, Status>("binding", &pod.name, &PostParams::default(), &binding)
            .await
            .map(|_| ())
    }

    /// `Scheduled`: "Successfully assigned ns/name to node"; the pod's failures are forgotten.
    pub fn scheduled(&self, pod: &PodRef, node: &str) {
        self.forget(&pod.uid);
        let message = format!(
            "Successfully assigned {}/{} to {node}",
            pod.namespace, pod.name
        );
        self.enqueue(Job::Event {
            pod: pod.clone(),
            type_: "Normal",
            reason: "Scheduled",
            message,
        });
    }

    /// `FailedScheduling` event plus `PodScheduled=False` with `reason` on the pod.
    pub fn failed(&self, pod: &PodRef, message: &str, reason: &'static str) {
        self.enqueue(Job::Event {
            pod: pod.clone(),
            type_: "Warning",
            reason: "FailedScheduling",
            message: message.to_string(),
        });
        self.enqueue(Job::Unschedulable {
            pod: pod.clone(),
            reason,
            message: message.to_string(),
        });
    }

    /// Forgets the events written about a pod (it was scheduled or deleted).
    pub fn forget(&self, uid: &str) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.remove(uid);
        }
    }

    fn enqueue(&self, job: Job) {
        let queued = Queued {
            job,
            _pending: self.outstanding.start(),
        };
        if let Err(mpsc::error::TrySendError::Full(queued)) = self.queue.try_send(queued) {
            let pod = match &queued.job {
                Job::Event { pod, .. } | Job::Unschedulable { pod, .. } => pod,
            };
            let dropped = self
                .dropped
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                + 1;
            if dropped % 1000 == 1 {
                tracing::warn!(pod = %pod.name, dropped, "event queue full; dropping events");
            }
        }
    }
}

/// The writer tasks' side.
struct Writer {
    client: kube::Client,
    component: String,
    seen: Seen,
}

impl Writer {
    async fn write(&self, job: Job) {
        match job {
            Job::Event {
                pod,
                type_,
                reason,
                message,
            } => self.event(&pod, type_, reason, message).await,
            Job::Unschedulable {
                pod,
                reason,
                message,
            } => {
                let api: Api<Pod> = Api::namespaced(self.client.clone(), &pod.namespace);
                let mut condition = json!({
                    "type": "PodScheduled", "status": "False", "reason": reason, "message": message,
                    "lastProbeTime": null, "lastTransitionTime": now(),
                });
                if let Some(g) = pod.generation {
                    condition["observedGeneration"] = json!(g);
                }
                let patch = json!({"status": {"conditions": [condition]}});
                if let Err(e) = api
                    .patch_status(
                        &pod.name,
                        &PatchParams::default(),
                        &Patch::Strategic(&patch),
                    )
                    .await
                {
                    tracing::debug!(pod = %pod.name, error = %e, "updating PodScheduled failed");
                }
            }
        }
    }

    /// The event written before for the same pod, reason and message: (name, count).
    fn seen(&self, pod: &PodRef, reason: &str, message: &str) -> Option<(String, i32)> {
        let seen = self.seen.lock().ok()?;
        seen.get(&pod.uid)?
            .iter()
            .find(|w| w.reason == reason && w.message == message)
            .map(|w| (w.name.clone(), w.count))
    }

    fn remember(
        &self,
        pod: &PodRef,
        reason: &'static str,
        message: String,
        name: String,
        count: i32,
    ) {
        if let Ok(mut seen) = self.seen.lock() {
            let written = seen.entry(pod.uid.clone()).or_default();
            match written
                .iter_mut()
                .find(|w| w.reason == reason && w.message == message)
            {
                Some(w) => (w.name, w.count) = (name, count),
                None => written.push(Written {
                    reason,
                    message,
                    name,
                    count,
                }),
            }
        }
    }

    async fn event(&self, pod: &PodRef, type_: &str, reason: &'static str, message: String) {
        let api: Api<Event> = Api::namespaced(self.client.clone(), &pod.namespace);
        let ts = now();
        // Only failures repeat; `Scheduled` is written once and not remembered.
        let aggregate = reason != "Scheduled";
        if let Some((name, count)) = aggregate
            .then(|| self.seen(pod, reason, &message))
            .flatten()
        {
            let patch = json!({"count": count + 1, "lastTimestamp": ts});
            if api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .is_ok()
            {
                self.remember(pod, reason, message, name, count + 1);
                return;
            }
        }
        let name = format!("{}.{:x}", pod.name, ts.0.as_nanosecond());
        let event = Event {
            metadata: kube::api::ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(pod.namespace.clone()),
                ..Default::default()
            },
            involved_object: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                name: Some(pod.name.clone()),
                namespace: Some(pod.namespace.clone()),
                uid: Some(pod.uid.clone()),
                ..Default::default()
            },
            reason: Some(reason.into()),
            message: Some(message.clone()),
            type_: Some(type_.into()),
            count: Some(1),
            first_timestamp: Some(ts.clone()),
            last_timestamp: Some(ts),
            source: Some(EventSource {
                component: Some(self.component.clone()),
                host: None,
            }),
            reporting_component: Some(self.component.clone()),
            ..Default::default()
        };
        match api.create(&PostParams::default(), &event).await {
            Ok(_) if aggregate => self.remember(pod, reason, message, name, 1),
            Ok(_) => {}
            Err(e) => tracing::debug!(pod = %pod.name, error = %e, "writing event failed"),
        }
    }
}
