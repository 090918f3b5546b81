//! Writing what the scheduler decided: bindings, events (aggregated like upstream's recorder)
//! and the pod's `PodScheduled` condition.

use k8s_openapi::api::core::v1::{Binding, Event, ObjectReference, Pod};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Identity of the pod a decision is about.
#[derive(Debug, Clone)]
pub struct PodRef {
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

/// Writes events and status for one scheduler.
#[derive(Clone)]
pub struct Recorder {
    client: kube::Client,
    component: String,
    /// (pod uid, reason, message) → (event name, count): repeated failures bump one event.
    seen: Arc<Mutex<HashMap<(String, String, String), (String, i32)>>>,
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

impl Recorder {
    pub fn new(client: kube::Client, component: &str) -> Recorder {
        Recorder {
            client,
            component: component.to_string(),
            seen: Default::default(),
        }
    }

    /// Binds the pod through `pods/binding`.
    pub async fn bind(&self, pod: &PodRef, node: &str) -> Result<(), kube::Error> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &pod.namespace);
        let binding: Binding = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }))
        .map_err(kube::Error::SerdeError)?;
        // The answer is a Status; only success matters.
        api.create_subresource::<Binding, serde_json::Value>(
            "binding",
            &pod.name,
            &PostParams::default(),
            &binding,
        )
        .await
        .map(|_| ())
    }

    /// `Scheduled`: "Successfully assigned ns/name to node".
    pub async fn scheduled(&self, pod: &PodRef, node: &str) {
        let message = format!(
            "Successfully assigned {}/{} to {node}",
            pod.namespace, pod.name
        );
        self.event(pod, "Normal", "Scheduled", &message).await;
    }

    /// `FailedScheduling` event plus `PodScheduled=False, reason Unschedulable` on the pod.
    pub async fn failed(&self, pod: &PodRef, message: &str, reason: &str) {
        self.event(pod, "Warning", "FailedScheduling", message)
            .await;
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &pod.namespace);
        let patch = json!({"status": {"conditions": [{
            "type": "PodScheduled", "status": "False", "reason": reason, "message": message,
            "lastProbeTime": null, "lastTransitionTime": now(),
        }]}});
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

    async fn event(&self, pod: &PodRef, type_: &str, reason: &str, message: &str) {
        let api: Api<Event> = Api::namespaced(self.client.clone(), &pod.namespace);
        let key = (pod.uid.clone(), reason.to_string(), message.to_string());
        let existing = self.seen.lock().ok().and_then(|m| m.get(&key).cloned());
        let ts = now();
        if let Some((name, count)) = existing {
            let patch = json!({"count": count + 1, "lastTimestamp": ts});
            if api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .is_ok()
            {
                if let Ok(mut m) = self.seen.lock() {
                    m.insert(key, (name, count + 1));
                }
                return;
            }
        }
        let name = format!(
            "{}.{:x}",
            pod.name,
            chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0)
        );
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
            message: Some(message.into()),
            type_: Some(type_.into()),
            count: Some(1),
            first_timestamp: serde_json::from_value(json!(ts)).ok(),
            last_timestamp: serde_json::from_value(json!(ts)).ok(),
            source: Some(k8s_openapi::api::core::v1::EventSource {
                component: Some(self.component.clone()),
                host: None,
            }),
            reporting_component: Some(self.component.clone()),
            ..Default::default()
        };
        match api.create(&PostParams::default(), &event).await {
            Ok(_) => {
                if let Ok(mut m) = self.seen.lock() {
                    m.insert(key, (name, 1));
                }
            }
            Err(e) => tracing::debug!(pod = %pod.name, error = %e, "writing event failed"),
        }
    }
}
