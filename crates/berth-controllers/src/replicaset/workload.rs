//! What the workload controllers (ReplicaSet, ReplicationController, Deployment) share: a pod
//! as their engines read it, and a new pod made from a template with a controller reference.

use crate::model::to_chrono;
use crate::replicaset::{Phase, PodView};
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The annotation that ranks pods for deletion (lower goes first).
pub const DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

/// The owner a new object is created for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
}

impl Owner {
    /// The controller reference to this owner (`controller` and `blockOwnerDeletion` set).
    pub fn controller_ref(&self) -> Value {
        json!({"apiVersion": self.api_version, "kind": self.kind, "name": self.name,
               "uid": self.uid, "controller": true, "blockOwnerDeletion": true})
    }
}

/// A pod for `owner` from its template: the template's labels, annotations and spec, named
/// `<owner>-<random>` by the API server (upstream `GetPodFromTemplate`).
pub fn pod_from_template(template: &PodTemplateSpec, namespace: &str, owner: &Owner) -> Value {
    let meta = template.metadata.as_ref();
    let spec = template
        .spec
        .as_ref()
        .and_then(|s| serde_json::to_value(s).ok())
        .unwrap_or_else(|| json!({}));
    let labels = meta.and_then(|m| m.labels.clone()).unwrap_or_default();
    let annotations = meta.and_then(|m| m.annotations.clone()).unwrap_or_default();
    let mut metadata = json!({
        "generateName": format!("{}-", owner.name),
        "namespace": namespace,
        "ownerReferences": [owner.controller_ref()],
    });
    if !labels.is_empty() {
        metadata["labels"] = json!(labels);
    }
    if !annotations.is_empty() {
        metadata["annotations"] = json!(annotations);
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})
}

/// The pod as the ReplicaSet engine reads it.
pub fn pod_view(pod: &Pod) -> PodView {
    let meta = &pod.metadata;
    let status = pod.status.as_ref();
    let ready_since = status
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
        .filter(|c| c.status == "True")
        .map(|c| {
            c.last_transition_time
                .as_ref()
                .or(meta.creation_timestamp.as_ref())
                .map(to_chrono)
                .unwrap_or(DateTime::<Utc>::MIN_UTC)
        });
    let max_restarts = status
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.iter().map(|c| c.restart_count).max())
        .unwrap_or(0);
    PodView {
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        labels: meta.labels.clone().unwrap_or_default(),
        node_name: pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default(),
        phase: Phase::parse(status.and_then(|s| s.phase.as_deref()).unwrap_or("")),
        ready_since,
        max_restarts,
        created: meta.creation_timestamp.as_ref().map(to_chrono),
        deleting: meta.deletion_timestamp.is_some(),
        deletion_cost: meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(DELETION_COST))
            .and_then(|c| c.parse().ok())
            .unwrap_or(0),
        controller_uid: controller_uid(meta.owner_references.as_deref()),
    }
}

/// The uid of the controller among `refs`.
pub fn controller_uid(
    refs: Option<&[k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference]>,
) -> Option<String> {
    refs?
        .iter()
        .find(|r| r.controller == Some(true))
        .map(|r| r.uid.clone())
}

/// Labels as a map lookup for selectors.
pub fn label_of<'a>(labels: &'a BTreeMap<String, String>) -> impl Fn(&str) -> Option<&'a str> {
    move |k| labels.get(k).map(String::as_str)
}

/// Starts the workload loops of [`crate::Controllers`].
#[cfg(test)]
mod tests {
    use super::*;

    fn owner() -> Owner {
        Owner {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: "web-abc".into(),
            uid: "u1".into(),
        }
    }

    #[test]
    fn a_pod_from_a_template_carries_the_controller_reference_and_the_templates_labels() {
        let template: PodTemplateSpec = serde_json::from_value(json!({
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}
        }))
        .unwrap();
        let pod = pod_from_template(&template, "ns", &owner());
        assert_eq!(pod["metadata"]["generateName"], "web-abc-");
        assert_eq!(pod["metadata"]["labels"]["app"], "web");
        assert_eq!(pod["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(
            pod["metadata"]["ownerReferences"][0]["blockOwnerDeletion"],
            true
        );
        assert_eq!(pod["spec"]["containers"][0]["image"], "nginx");
    }

    #[test]
    fn a_pod_is_ready_since_its_ready_conditions_transition() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "uid": "u", "creationTimestamp": "2026-01-01T00:00:00Z",
                         "annotations": {DELETION_COST: "7"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                             "name": "rs", "uid": "r", "controller": true}]},
            "spec": {"nodeName": "n1", "containers": []},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True",
                "lastTransitionTime": "2026-01-01T00:00:05Z"}]}
        }))
        .unwrap();
        let v = pod_view(&pod);
        assert_eq!(v.phase, Phase::Running);
        assert_eq!(v.node_name, "n1");
        assert_eq!(v.deletion_cost, 7);
        assert_eq!(v.controller_uid.as_deref(), Some("r"));
        assert_eq!(
            v.ready_since.map(|t| t.to_rfc3339()),
            Some("2026-01-01T00:00:05+00:00".to_string())
        );
    }
}
