//! Rows of `apiregistration.k8s.io` APIServices (`kubectl get apiservices`), as the
//! aggregator's own table convertor prints them: `Local` for a group version this server
//! serves itself, else the Service's `namespace/name`; `True`, or `False (Reason)` with the
//! reason of the `Available` condition, or `Unknown` while there is none.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{age, col, str_at, Column, AGE, NAME};

pub(super) const API_SERVICE_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Service",
        "string",
        "The reference to the service that hosts this API endpoint.",
    ),
    col("Available", "string", "Whether this service is available."),
    AGE,
];

pub(super) fn api_service_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(service(obj)),
        json!(available(obj)),
        json!(age(obj, now)),
    ]
}

fn service(obj: &Value) -> String {
    match obj.pointer("/spec/service").filter(|s| s.is_object()) {
        None => "Local".to_string(),
        Some(s) => format!(
            "{}/{}",
            s["namespace"].as_str().unwrap_or(""),
            s["name"].as_str().unwrap_or("")
        ),
    }
}

fn available(obj: &Value) -> String {
    let condition = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Available");
    match condition {
        None => "Unknown".to_string(),
        Some(c) if c["status"] == "True" => "True".to_string(),
        Some(c) => format!(
            "{} ({})",
            c["status"].as_str().unwrap_or(""),
            c["reason"].as_str().unwrap_or("")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_and_remote_api_services() {
        let local = json!({"metadata": {"name": "v1.apps"}, "spec": {"service": null},
            "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Local"}]}});
        assert_eq!(service(&local), "Local");
        assert_eq!(available(&local), "True");
        let remote = json!({"metadata": {"name": "v1.wardle.example.com"},
            "spec": {"service": {"namespace": "sample", "name": "api"}},
            "status": {"conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]}});
        assert_eq!(service(&remote), "sample/api");
        assert_eq!(available(&remote), "False (MissingEndpoints)");
        assert_eq!(available(&json!({"spec": {}})), "Unknown");
    }
}
