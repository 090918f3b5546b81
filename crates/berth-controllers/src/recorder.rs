//! Writing the events the engines decide on (core/v1 `Event`).

use crate::model::{timestamp, EventRecord, Involved};
use crate::Clock;
use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use kube::api::{Api, PostParams};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Creates events in the involved object's namespace (`default` for nodes, as upstream).
#[derive(Clone)]
pub struct Recorder {
    client: kube::Client,
    clock: Clock,
    seq: Arc<AtomicU64>,
}

impl Recorder {
    pub fn new(client: kube::Client, clock: Clock) -> Recorder {
        Recorder {
            client,
            clock,
            seq: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Records `event` as written by `component`; failures are logged, never fatal.
    pub async fn record(&self, component: &str, event: &EventRecord) {
        let (namespace, reference) = match &event.involved {
            Involved::Pod(p) => (
                p.namespace.clone(),
                object_ref("v1", "Pod", &p.namespace, &p.name, &p.uid),
            ),
            Involved::Node { name, uid } => (
                "default".to_string(),
                object_ref("v1", "Node", "", name, uid),
            ),
            Involved::PodDisruptionBudget {
                namespace,
                name,
                uid,
            } => (
                namespace.clone(),
                object_ref("policy/v1", "PodDisruptionBudget", namespace, name, uid),
            ),
            Involved::DaemonSet {
                namespace,
                name,
                uid,
            } => (
                namespace.clone(),
                object_ref("apps/v1", "DaemonSet", namespace, name, uid),
            ),
            Involved::Workload {
                api_version,
                kind,
                namespace,
                name,
                uid,
            } => (
                namespace.clone(),
                object_ref(api_version, kind, namespace, name, uid),
            ),
        };
        let now = self.clock.now();
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let name = format!(
            "{}.{:x}{:04x}",
            reference.name.clone().unwrap_or_default(),
            now.timestamp_nanos_opt().unwrap_or(0),
            seq % 0x10000
        );
        let ts = serde_json::from_value(serde_json::json!(timestamp(now))).ok();
        let e = Event {
            metadata: kube::api::ObjectMeta {
                name: Some(name),
                namespace: Some(namespace.clone()),
                ..Default::default()
            },
            involved_object: reference,
            reason: Some(event.reason.to_string()),
            message: Some(event.message.clone()),
            type_: Some(event.type_.to_string()),
            count: Some(1),
            first_timestamp: ts.clone(),
            last_timestamp: ts,
            source: Some(EventSource {
                component: Some(component.to_string()),
                host: None,
            }),
            reporting_component: Some(component.to_string()),
            ..Default::default()
        };
        let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        if let Err(e) = api.create(&PostParams::default(), &e).await {
            tracing::debug!(reason = event.reason, error = %e, "writing event failed");
        }
    }
}

fn object_ref(
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
    uid: &str,
) -> ObjectReference {
    ObjectReference {
        api_version: Some(api_version.into()),
        kind: Some(kind.into()),
        name: Some(name.into()),
        namespace: (!namespace.is_empty()).then(|| namespace.to_string()),
        uid: (!uid.is_empty()).then(|| uid.to_string()),
        ..Default::default()
    }
}
