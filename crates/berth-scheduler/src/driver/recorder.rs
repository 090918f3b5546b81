//! Writing what the scheduler decided: bindings (awaited, they decide the pod's fate), and
//! events and the pod's `PodScheduled` condition (off the scheduling path).
//!
//! Events go through the shared recorder of `berth-events` as `events.k8s.io/v1` events, as
//! upstream's scheduler writes them (actions `Binding`, `Scheduling`, `Preempting`; a repeated
//! `FailedScheduling` becomes one event's `series`; a bounded queue, a full one drops and
//! logs): a `Scheduled` event costs the binding path one channel send. Status updates go through a bounded queue of their own to a
//! few writer tasks. Every queued job holds a ticket of the process's [`Outstanding`] work
//! until it is written, so a stopping scheduler can wait for them
//! ([`berth_events::flush_events`]).

use berth_core::clock::Clock;
use berth_events::{EventType, Outstanding, Ticket};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;

/// How many status updates may wait to be written (as upstream `maxQueuedEvents`).
const QUEUED_UPDATES: usize = 1000;
/// How many status updates are written at once.
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

impl PodRef {
    fn reference(&self) -> ObjectReference {
        ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            name: Some(self.name.clone()),
            namespace: Some(self.namespace.clone()),
            uid: (!self.uid.is_empty()).then(|| self.uid.clone()),
            ..Default::default()
        }
    }
}

/// `PodScheduled=False` with this reason and message, with its ticket.
struct Unschedulable {
    pod: PodRef,
    reason: &'static str,
    message: String,
    _pending: Ticket,
}

/// Writes bindings, events and status for one scheduler. Cloning shares the queues.
#[derive(Clone)]
pub struct Recorder {
    client: kube::Client,
    events: berth_events::Recorder,
    updates: mpsc::Sender<Unschedulable>,
    /// The process's pending writes (see [`Outstanding`]).
    outstanding: Outstanding,
    /// Updates dropped because the queue was full; logged on the first and every 1000th.
    dropped: Arc<AtomicU64>,
}

impl Recorder {
    /// A recorder writing as `component`; starts its writer tasks.
    pub fn new(client: kube::Client, component: &str, clock: Clock) -> Recorder {
        let (updates, queued) = mpsc::channel(QUEUED_UPDATES);
        // As upstream's scheduler: events.k8s.io/v1, reported by the profile's scheduler name
        // from `<name>-<hostname>`.
        let instance = format!("{component}-{}", berth_events::host_name());
        let events = berth_events::Recorder::start_events_v1(
            client.clone(),
            component,
            &instance,
            clock.clone(),
        );
        let writer = client.clone();
        tokio::spawn(async move {
            futures::stream::unfold(queued, |mut queued| async move {
                queued.recv().await.map(|job| (job, queued))
            })
            .for_each_concurrent(WRITERS, |job: Unschedulable| {
                let (client, clock) = (writer.clone(), clock.clone());
                // The ticket lives until the write has finished.
                async move { write_unschedulable(&client, &clock, job).await }
            })
            .await
        });
        Recorder {
            client,
            events,
            updates,
            outstanding: Outstanding::process(),
            dropped: Default::default(),
        }
    }

    /// The event recorder (shared with preemption's `Preempted` events).
    pub fn events(&self) -> &berth_events::Recorder {
        &self.events
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

    /// `Scheduled`: "Successfully assigned ns/name to node".
    pub fn scheduled(&self, pod: &PodRef, node: &str) {
        let message = format!(
            "Successfully assigned {}/{} to {node}",
            pod.namespace, pod.name
        );
        self.events.event_about(
            pod.reference(),
            None,
            EventType::Normal,
            "Scheduled",
            "Binding",
            message,
        );
    }

    /// `FailedScheduling` event plus `PodScheduled=False` with `reason` on the pod.
    pub fn failed(&self, pod: &PodRef, message: &str, reason: &'static str) {
        self.events.event_about(
            pod.reference(),
            None,
            EventType::Warning,
            "FailedScheduling",
            "Scheduling",
            message,
        );
        let update = Unschedulable {
            pod: pod.clone(),
            reason,
            message: message.to_string(),
            _pending: self.outstanding.start(),
        };
        if let Err(mpsc::error::TrySendError::Full(update)) = self.updates.try_send(update) {
            let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if dropped % 1000 == 1 {
                tracing::warn!(pod = %update.pod.name, dropped, "status queue full; dropping PodScheduled updates");
            }
        }
    }
}

async fn write_unschedulable(client: &kube::Client, clock: &Clock, job: Unschedulable) {
    let Unschedulable {
        pod,
        reason,
        message,
        _pending,
    } = job;
    let api: Api<Pod> = Api::namespaced(client.clone(), &pod.namespace);
    let mut condition = json!({
        "type": "PodScheduled", "status": "False", "reason": reason, "message": message,
        "lastProbeTime": null, "lastTransitionTime": clock.timestamp(),
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
