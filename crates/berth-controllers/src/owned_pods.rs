//! Pods a workload controller makes from its pod template, owned by it (the `ownerReferences`
//! the garbage collector and `kubectl` follow), and which pods a controller owns.
//! Shared by the Job and StatefulSet controllers.

use k8s_openapi::api::core::v1::Pod;
use serde_json::{json, Value};

/// The object a pod belongs to, as its controller `ownerReference` names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner<'a> {
    pub api_version: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    pub uid: &'a str,
}

impl Owner<'_> {
    /// The controller `ownerReference` (`blockOwnerDeletion` as upstream's controllers set it).
    pub fn reference(&self) -> Value {
        json!({"apiVersion": self.api_version, "kind": self.kind, "name": self.name,
               "uid": self.uid, "controller": true, "blockOwnerDeletion": true})
    }
}

/// A pod from `template` (a `PodTemplateSpec` as JSON) in `namespace`, owned by `owner`: named
/// `name` when given, else generated from `<owner>-`.
pub fn pod_from_template(
    template: &Value,
    namespace: &str,
    owner: &Owner,
    name: Option<&str>,
) -> Value {
    let meta = &template["metadata"];
    let mut metadata = json!({"namespace": namespace, "ownerReferences": [owner.reference()]});
    match name {
        Some(n) => metadata["name"] = json!(n),
        None => metadata["generateName"] = json!(format!("{}-", owner.name)),
    }
    for field in ["labels", "annotations", "finalizers"] {
        if let Some(v) = meta.get(field).filter(|v| !v.is_null()) {
            metadata[field] = v.clone();
        }
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
           "spec": template.get("spec").cloned().unwrap_or_else(|| json!({}))})
}

/// Whether `pod`'s controller is the object with `uid`.
pub fn controlled_by(pod: &Pod, uid: &str) -> bool {
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .any(|r| r.controller == Some(true) && r.uid == uid)
}

/// The pod's phase (`Pending` when it has none yet).
pub fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending")
}

/// Whether the pod's `Ready` condition is `True`.
pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

#[cfg(test)]
mod tests {
    use super::*;

    const OWNER: Owner = Owner {
        api_version: "batch/v1",
        kind: "Job",
        name: "pi",
        uid: "u-1",
    };

    #[test]
    fn a_pod_carries_the_template_and_its_controller_reference() {
        let template = json!({"metadata": {"labels": {"job-name": "pi"}, "annotations": {"a": "b"}},
                              "spec": {"restartPolicy": "Never", "containers": [{"name": "c"}]}});
        let pod = pod_from_template(&template, "ns", &OWNER, None);
        assert_eq!(pod["metadata"]["generateName"], "pi-");
        assert_eq!(pod["metadata"]["namespace"], "ns");
        assert_eq!(pod["metadata"]["labels"]["job-name"], "pi");
        assert_eq!(pod["metadata"]["annotations"]["a"], "b");
        assert_eq!(pod["spec"]["restartPolicy"], "Never");
        let owner = &pod["metadata"]["ownerReferences"][0];
        assert_eq!(owner["uid"], "u-1");
        assert_eq!(owner["controller"], true);
        let typed: Pod = serde_json::from_value(pod).unwrap();
        assert!(controlled_by(&typed, "u-1"));
        assert!(!controlled_by(&typed, "u-2"));
    }

    #[test]
    fn a_named_pod_has_no_generated_name() {
        let pod = pod_from_template(&json!({}), "ns", &OWNER, Some("web-0"));
        assert_eq!(pod["metadata"]["name"], "web-0");
        assert!(pod["metadata"].get("generateName").is_none());
    }
}
