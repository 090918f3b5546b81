//! Event rows: `LAST SEEN TYPE REASON OBJECT MESSAGE` + wide `SUBOBJECT SOURCE FIRST SEEN COUNT
//! NAME`, for both `core/v1` events and `events.k8s.io/v1` events (whose fields are named
//! `regarding`, `note`, `deprecatedFirstTimestamp`, ...).

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{col, human_age, str_at, wide, Column, NAME};

pub(super) const COLUMNS: &[Column] = &[
    col("Last Seen", "string", "The time at which the most recent occurrence of this event was recorded."),
    col("Type", "string", "Type of this event (Normal, Warning), new types could be added in the future"),
    col("Reason", "string", "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."),
    col("Object", "string", "The object that this event is about."),
    wide("Subobject", "string", "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]."),
    wide("Source", "string", "The component reporting this event. Should be a short machine understandable string."),
    col("Message", "string", "A human-readable description of the status of this operation."),
    wide("First Seen", "string", "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)"),
    wide("Count", "string", "The number of times this event has occurred."),
    Column {
        priority: 1,
        ..NAME
    },
];

/// The string at the first of `ptrs` that holds a non-empty string.
fn first_str<'a>(v: &'a Value, ptrs: &[&str]) -> &'a str {
    ptrs.iter()
        .map(|p| str_at(v, p))
        .find(|s| !s.is_empty())
        .unwrap_or("")
}

fn first_int(v: &Value, ptrs: &[&str]) -> i64 {
    ptrs.iter()
        .filter_map(|p| v.pointer(p).and_then(Value::as_i64))
        .find(|n| *n != 0)
        .unwrap_or(0)
}

pub(super) fn cells(ev: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let first_ts = first_str(ev, &["/firstTimestamp", "/deprecatedFirstTimestamp"]);
    let first_seen = if first_ts.is_empty() {
        human_age(str_at(ev, "/eventTime"), now)
    } else {
        human_age(first_ts, now)
    };
    let last_ts = first_str(ev, &["/lastTimestamp", "/deprecatedLastTimestamp"]);
    let mut last_seen = if last_ts.is_empty() {
        first_seen.clone()
    } else {
        human_age(last_ts, now)
    };
    let mut count = first_int(ev, &["/count", "/deprecatedCount"]);
    if ev.get("series").is_some_and(|s| s.is_object()) {
        last_seen = human_age(str_at(ev, "/series/lastObservedTime"), now);
        count = first_int(ev, &["/series/count"]);
    } else if count == 0 {
        count = 1;
    }

    let regarding = ev
        .get("involvedObject")
        .filter(|v| v.is_object())
        .or_else(|| ev.get("regarding"))
        .cloned()
        .unwrap_or(Value::Null);
    let kind = str_at(&regarding, "/kind").to_lowercase();
    let name = str_at(&regarding, "/name");
    let object = if name.is_empty() {
        kind
    } else {
        format!("{kind}/{name}")
    };

    let component = first_str(
        ev,
        &[
            "/source/component",
            "/deprecatedSource/component",
            "/reportingComponent",
            "/reportingController",
        ],
    );
    let host = first_str(
        ev,
        &[
            "/source/host",
            "/deprecatedSource/host",
            "/reportingInstance",
        ],
    );
    let source = if host.is_empty() {
        component.to_string()
    } else {
        format!("{component}, {host}")
    };

    vec![
        json!(last_seen),
        json!(str_at(ev, "/type")),
        json!(str_at(ev, "/reason")),
        json!(object),
        json!(str_at(&regarding, "/fieldPath")),
        json!(source),
        json!(first_str(ev, &["/message", "/note"]).trim()),
        json!(first_seen),
        json!(count),
        json!(str_at(ev, "/metadata/name")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::tests::{ago, now};

    #[test]
    fn core_event_row() {
        let ev = json!({"metadata": {"name": "p1.1234", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "p1", "namespace": "default", "uid": "u1"},
            "reason": "Scheduled", "type": "Normal",
            "message": "Successfully assigned default/p1 to n1\n",
            "source": {"component": "default-scheduler"},
            "firstTimestamp": ago(600), "lastTimestamp": ago(60), "count": 3});
        assert_eq!(
            cells(&ev, now()),
            vec![
                json!("60s"),
                json!("Normal"),
                json!("Scheduled"),
                json!("pod/p1"),
                json!(""),
                json!("default-scheduler"),
                json!("Successfully assigned default/p1 to n1"),
                json!("10m"),
                json!(3),
                json!("p1.1234")
            ]
        );
    }

    #[test]
    fn event_time_series_and_source_host() {
        let ev = json!({"metadata": {"name": "e"},
            "involvedObject": {"kind": "Node", "name": "n1", "fieldPath": "spec"},
            "eventTime": "2025-01-01T11:00:00.000000Z",
            "series": {"count": 7, "lastObservedTime": "2025-01-01T11:59:00.000000Z"},
            "reportingComponent": "kubelet", "reportingInstance": "n1", "type": "Warning"});
        let c = cells(&ev, now());
        assert_eq!(c[0], json!("60s"));
        assert_eq!(c[3], json!("node/n1"));
        assert_eq!(c[4], json!("spec"));
        assert_eq!(c[5], json!("kubelet, n1"));
        assert_eq!(c[7], json!("60m"));
        assert_eq!(c[8], json!(7));
    }

    #[test]
    fn singleton_without_timestamps() {
        let ev = json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Namespace"}});
        let c = cells(&ev, now());
        assert_eq!(c[0], json!("<unknown>"));
        assert_eq!(c[3], json!("namespace"));
        assert_eq!(c[8], json!(1));
    }

    #[test]
    fn events_k8s_io_fields() {
        let ev = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e2"},
            "regarding": {"kind": "Pod", "name": "p2"}, "note": "evicted",
            "reason": "Evicted", "type": "Warning", "reportingController": "berth-kubelet",
            "deprecatedFirstTimestamp": ago(30), "deprecatedLastTimestamp": ago(10),
            "deprecatedCount": 2});
        let c = cells(&ev, now());
        assert_eq!(c[0], json!("10s"));
        assert_eq!(c[3], json!("pod/p2"));
        assert_eq!(c[5], json!("berth-kubelet"));
        assert_eq!(c[6], json!("evicted"));
        assert_eq!(c[7], json!("30s"));
        assert_eq!(c[8], json!(2));
    }
}
