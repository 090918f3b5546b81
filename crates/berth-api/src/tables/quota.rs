//! Rows of the policy kinds of a namespace: resource quotas, limit ranges and pod templates.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{json, Value};

use super::workloads::format_labels;
use super::{age, arr_at, col, parse_time, str_at, Column, AGE, NAME};

pub(super) const RESOURCE_QUOTA_COLUMNS: &[Column] = &[
    NAME,
    AGE,
    col(
        "Request",
        "string",
        "Request represents a minimum amount of cpu/memory that a container may consume.",
    ),
    col(
        "Limit",
        "string",
        "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
    ),
];

/// `resource: used/hard` for every hard limit, sorted by resource name; `limits.*` resources
/// go to the Limit cell, every other to Request (upstream's `printResourceQuota`).
pub(super) fn resource_quota_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let mut request = Vec::new();
    let mut limit = Vec::new();
    if let Some(hard) = obj.pointer("/status/hard").and_then(Value::as_object) {
        let mut names: Vec<&String> = hard.keys().collect();
        names.sort();
        for name in names {
            let used = obj
                .pointer("/status/used")
                .and_then(|u| u.get(name.as_str()))
                .and_then(Value::as_str)
                .unwrap_or("0");
            let entry = format!("{name}: {used}/{}", hard[name].as_str().unwrap_or(""));
            match name.split_once('.') {
                Some(("limits", _)) => limit.push(entry),
                _ => request.push(entry),
            }
        }
    }
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(age(obj, now)),
        json!(request.join(", ")),
        json!(limit.join(", ")),
    ]
}

pub(super) const LIMIT_RANGE_COLUMNS: &[Column] = &[
    NAME,
    col("Created At", "date", "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"),
];

pub(super) fn limit_range_cells(obj: &Value, _now: DateTime<Utc>) -> Vec<Value> {
    let created = parse_time(str_at(obj, "/metadata/creationTimestamp"))
        .map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true))
        .unwrap_or_default();
    vec![json!(str_at(obj, "/metadata/name")), json!(created)]
}

pub(super) const POD_TEMPLATE_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Containers",
        "string",
        "Names of each container in the template.",
    ),
    col(
        "Images",
        "string",
        "Images referenced by each container in the template.",
    ),
    col("Pod Labels", "string", "The labels for the pod template."),
];

pub(super) fn pod_template_cells(obj: &Value, _now: DateTime<Utc>) -> Vec<Value> {
    let cs = arr_at(obj, "/template/spec/containers");
    let names: Vec<&str> = cs.iter().map(|c| str_at(c, "/name")).collect();
    let images: Vec<&str> = cs.iter().map(|c| str_at(c, "/image")).collect();
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(names.join(",")),
        json!(images.join(",")),
        json!(format_labels(obj.pointer("/template/metadata/labels"))),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::tests::now;
    use super::*;

    #[test]
    fn a_quota_row_splits_requests_from_limits_in_name_order() {
        let q = json!({"metadata": {"name": "q"}, "status": {
            "hard": {"pods": "3", "limits.cpu": "2", "requests.cpu": "1", "count/secrets": "5"},
            "used": {"pods": "3", "limits.cpu": "500m"}}});
        let cells = resource_quota_cells(&q, now());
        assert_eq!(cells[2], "count/secrets: 0/5, pods: 3/3, requests.cpu: 0/1");
        assert_eq!(cells[3], "limits.cpu: 500m/2");
    }

    #[test]
    fn a_quota_without_status_prints_empty_cells() {
        let cells = resource_quota_cells(&json!({"metadata": {"name": "q"}}), now());
        assert_eq!((cells[2].clone(), cells[3].clone()), (json!(""), json!("")));
    }

    #[test]
    fn a_limit_range_row_is_its_creation_time() {
        let lr = json!({"metadata": {"name": "l", "creationTimestamp": "2026-01-02T03:04:05Z"}});
        assert_eq!(limit_range_cells(&lr, now())[1], "2026-01-02T03:04:05Z");
    }

    #[test]
    fn a_pod_template_row_names_containers_images_and_labels() {
        let t = json!({"metadata": {"name": "t"}, "template": {"metadata": {"labels": {"b": "2", "a": "1"}},
            "spec": {"containers": [{"name": "c", "image": "i"}, {"name": "d", "image": "j"}]}}});
        let cells = pod_template_cells(&t, now());
        assert_eq!(cells[1..], [json!("c,d"), json!("i,j"), json!("a=1,b=2")]);
    }
}
