//! Label and field selectors of list and watch requests.

use crate::error::{ApiError, ApiResult};
use crate::request::Query;
use berth_api::registry::ResourceType;
use berth_core::fields::FieldSelector;
use berth_core::labels::Selector;
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::BTreeMap;

/// The selectors of one request, checked against the resource's supported fields.
pub struct Selectors {
    labels: Option<Selector>,
    fields: Option<FieldSelector>,
    kind: &'static str,
}

/// Field selectors each kind supports beyond `metadata.name` and `metadata.namespace`.
fn supported_fields(kind: &str) -> &'static [&'static str] {
    match kind {
        "Pod" => &[
            "spec.nodeName",
            "spec.schedulerName",
            "status.phase",
            "status.nominatedNodeName",
            "spec.restartPolicy",
            "spec.serviceAccountName",
            "status.podIP",
            "spec.hostNetwork",
        ],
        "Event" => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        "Node" => &["spec.unschedulable"],
        "Namespace" => &["status.phase"],
        "Secret" => &["type"],
        "ReplicationController" | "ReplicaSet" => &["status.replicas"],
        "Job" => &["status.successful"],
        _ => &[],
    }
}

/// The value of a selectable field of `obj`, as a string ("" when absent).
pub fn field_value(kind: &str, obj: &Value, field: &str) -> String {
    let path = match (kind, field) {
        ("Event", "source") => "source.component",
        _ => field,
    };
    let mut cur = obj;
    for part in path.split('.') {
        match cur.get(part) {
            Some(v) => cur = v,
            None => return String::new(),
        }
    }
    match cur {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

/// The paths selectors of `kind` can read: name, namespace, labels and the kind's fields.
fn selectable_paths(kind: &str) -> Vec<&'static str> {
    let mut paths = vec!["metadata.name", "metadata.namespace", "metadata.labels"];
    paths.extend(supported_fields(kind).iter().map(|f| match (kind, *f) {
        ("Event", "source") => "source.component",
        (_, f) => f,
    }));
    paths
}

/// Only the members of `json` (an object as served) that selectors of `kind` can read, for
/// which [`Selectors::matches`] answers as for the whole object. A watch with selectors
/// tests every event, and this reads the few members it needs instead of the whole tree.
/// `None` if `json` is not an object.
pub fn selectable(kind: &str, json: &[u8]) -> Option<Value> {
    let json = std::str::from_utf8(json).ok()?;
    pick(json, &selectable_paths(kind))
}

/// The members of the object `json` that `paths` (dotted) reach, in a tree of their own.
fn pick(json: &str, paths: &[&str]) -> Option<Value> {
    let members: BTreeMap<String, &RawValue> = serde_json::from_str(json).ok()?;
    let mut picked = serde_json::Map::new();
    for (key, raw) in members {
        let mut whole = false;
        let mut deeper = Vec::new();
        for path in paths {
            match path.split_once('.') {
                Some((head, rest)) if head == key => deeper.push(rest),
                None if *path == key => whole = true,
                _ => {}
            }
        }
        let value = if whole {
            serde_json::from_str(raw.get()).ok()?
        } else if deeper.is_empty() {
            continue;
        } else {
            // Not an object: the paths find nothing under it, as in the whole tree.
            match pick(raw.get(), &deeper) {
                Some(value) => value,
                None => serde_json::from_str(raw.get()).ok()?,
            }
        };
        picked.insert(key, value);
    }
    Some(Value::Object(picked))
}

impl Selectors {
    pub fn from_query(rt: &'static ResourceType, q: &Query) -> ApiResult<Selectors> {
        let labels =
            match q.get("labelSelector").filter(|s| !s.trim().is_empty()) {
                Some(s) => Some(Selector::parse(s).map_err(|e| {
                    ApiError::BadRequest(format!("unable to parse requirement: {e}"))
                })?),
                None => None,
            };
        let fields = match q.get("fieldSelector").filter(|s| !s.trim().is_empty()) {
            Some(s) => {
                let sel = FieldSelector::parse(s)
                    .map_err(|e| ApiError::BadRequest(format!("invalid field selector: {e}")))?;
                let extra = supported_fields(rt.kind);
                for f in sel.fields() {
                    if f != "metadata.name" && f != "metadata.namespace" && !extra.contains(&f) {
                        return Err(ApiError::BadRequest(format!(
                            "field label not supported: {f}"
                        )));
                    }
                }
                Some(sel)
            }
            None => None,
        };
        Ok(Selectors {
            labels,
            fields,
            kind: rt.kind,
        })
    }

    /// Whether the request had no selector (every object matches).
    pub fn is_empty(&self) -> bool {
        self.labels.is_none() && self.fields.is_none()
    }

    pub fn matches(&self, obj: &Value) -> bool {
        if let Some(l) = &self.labels {
            let empty = serde_json::Map::new();
            let labels = obj["metadata"]["labels"].as_object().unwrap_or(&empty);
            if !l.matches(labels) {
                return false;
            }
        }
        if let Some(f) = &self.fields {
            if !f.matches_fn(|field| Some(field_value(self.kind, obj, field))) {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn selectors(kind: &'static str, labels: &str, fields: &str) -> Selectors {
        Selectors {
            labels: Some(Selector::parse(labels).unwrap()),
            fields: Some(FieldSelector::parse(fields).unwrap()),
            kind,
        }
    }

    /// Values the pod selectors below can meet, placed where they look and elsewhere.
    fn member() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            Just(json!("a")),
            Just(json!("n1")),
            Just(json!("Running")),
            Just(json!(true)),
            Just(json!(3)),
        ];
        let keys = prop_oneof![
            Just("metadata".to_string()),
            Just("labels".to_string()),
            Just("app".to_string()),
            Just("name".to_string()),
            Just("spec".to_string()),
            Just("nodeName".to_string()),
            Just("status".to_string()),
            Just("phase".to_string()),
            Just("hostNetwork".to_string()),
        ];
        crate::testing::json_tree(leaf.boxed(), keys.boxed(), 3)
    }

    proptest! {
        /// The picked members answer every selector as the whole object does.
        #[test]
        fn selectable_members_match_as_the_whole_object(
            obj in proptest::collection::btree_map(
                prop_oneof![Just("metadata"), Just("spec"), Just("status"), Just("kind")]
                    .prop_map(str::to_string),
                member(),
                0..4,
            ).prop_map(|m| Value::Object(m.into_iter().collect())),
        ) {
            let picked = selectable("Pod", &serde_json::to_vec(&obj).unwrap()).unwrap();
            for (labels, fields) in [
                ("app=a", "spec.nodeName=n1"),
                ("app!=a", "spec.nodeName!="),
                ("!app", "status.phase=Running,metadata.name=a"),
                ("app in (a, n1)", "spec.hostNetwork=true,metadata.namespace!=a"),
            ] {
                let s = selectors("Pod", labels, fields);
                prop_assert_eq!(s.matches(&picked), s.matches(&obj), "{} {}", labels, fields);
            }
        }
    }

    #[test]
    fn only_what_selectors_read_is_picked() {
        let event = json!({"metadata": {"name": "e", "uid": "u"}, "message": "m",
            "source": {"component": "kubelet", "host": "n1"}, "involvedObject": {"kind": "Pod"}});
        let picked = selectable("Event", &serde_json::to_vec(&event).unwrap()).unwrap();
        assert_eq!(
            picked,
            json!({"metadata": {"name": "e"}, "source": {"component": "kubelet"},
                "involvedObject": {"kind": "Pod"}})
        );
        assert_eq!(selectable("Pod", b"[1]"), None);
    }
}
