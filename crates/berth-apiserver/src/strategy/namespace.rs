//! Namespaces: the `kubernetes` finalizer and phase Active on create; deleting one marks it
//! `Terminating` until the namespace controller has emptied it and removed its `kubernetes`
//! finalizer through the `finalize` subresource.

use super::{causes, Deletion, Strategy};
use crate::error::Cause;
use berth_api::registry::ResourceType;
use serde_json::{json, Value};

pub struct Namespace;

impl Strategy for Namespace {
    fn prepare_for_create(&self, ns: &mut Value) {
        if ns["spec"]["finalizers"].is_null() {
            ns["spec"]["finalizers"] = json!(["kubernetes"]);
        }
        ns["status"] = json!({"phase": "Active"});
    }

    fn validate(&self, _rt: &ResourceType, ns: &Value, _old: Option<&Value>) -> Vec<Cause> {
        causes(berth_core::validation::validate_namespace(ns))
    }

    fn deletion(&self, ns: &Value, _grace_period_seconds: Option<i64>) -> Deletion {
        if spec_finalizers(ns).is_empty() {
            Deletion::Immediate
        } else {
            Deletion::Cascade
        }
    }

    /// A terminating namespace goes when its last finalizer of either kind does (upstream
    /// `ShouldDeleteNamespaceDuringUpdate`).
    fn removed_with_last_finalizer(&self, ns: &Value) -> bool {
        spec_finalizers(ns).is_empty()
    }
}

/// `spec.finalizers`: what must finish before a terminating namespace may go.
pub fn spec_finalizers(ns: &Value) -> Vec<&str> {
    ns["spec"]["finalizers"]
        .as_array()
        .map(|f| f.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// What a write to `namespaces/<name>/finalize` stores: the namespace as it is, with the
/// request's `spec.finalizers`.
pub fn finalized(old: &Value, request: &Value) -> Value {
    let mut ns = old.clone();
    let finalizers = match &request["spec"]["finalizers"] {
        Value::Null => json!([]),
        f => f.clone(),
    };
    ns["spec"]["finalizers"] = finalizers;
    if let Some(rv) = request["metadata"].get("resourceVersion") {
        ns["metadata"]["resourceVersion"] = rv.clone();
    }
    ns
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terminating(finalizers: Value) -> Value {
        json!({"metadata": {"name": "ns", "deletionTimestamp": "2026-01-01T00:00:00Z"},
               "spec": {"finalizers": finalizers}, "status": {"phase": "Terminating"}})
    }

    #[test]
    fn a_namespace_with_the_kubernetes_finalizer_waits_for_its_content() {
        let ns = terminating(json!(["kubernetes"]));
        assert_eq!(Namespace.deletion(&ns, None), Deletion::Cascade);
        assert!(!Namespace.removed_with_last_finalizer(&ns));
    }

    #[test]
    fn a_namespace_without_spec_finalizers_goes_at_once() {
        let ns = terminating(json!([]));
        assert_eq!(Namespace.deletion(&ns, None), Deletion::Immediate);
        assert!(Namespace.removed_with_last_finalizer(&ns));
        assert!(Namespace.removed_with_last_finalizer(&json!({"spec": {}})));
    }

    #[test]
    fn finalize_changes_spec_finalizers_and_nothing_else() {
        let old = terminating(json!(["kubernetes", "example.com/x"]));
        let mut request = old.clone();
        request["spec"]["finalizers"] = json!(["example.com/x"]);
        request["metadata"]["labels"] = json!({"a": "b"});
        request["status"]["phase"] = json!("Active");
        let ns = finalized(&old, &request);
        assert_eq!(ns["spec"]["finalizers"], json!(["example.com/x"]));
        assert_eq!(ns["metadata"].get("labels"), None);
        assert_eq!(ns["status"]["phase"], "Terminating");
        assert_eq!(
            finalized(&old, &json!({"spec": {}}))["spec"]["finalizers"],
            json!([])
        );
    }
}
