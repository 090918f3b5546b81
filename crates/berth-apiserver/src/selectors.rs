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
    /// The field labels the resource accepts beyond `metadata.name` and `metadata.namespace`.
    selectable: &'static [Field],
}

/// How a selectable field reads when the object does not have it. Upstream selects on the
/// typed object, where an absent member is its type's zero value: `spec.unschedulable=false`
/// selects the nodes that never wrote the field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Absent {
    /// A string: `""`.
    Empty,
    /// A boolean: `false`.
    False,
    /// An integer: `0`.
    Zero,
}

impl Absent {
    fn value(self) -> String {
        match self {
            Absent::Empty => String::new(),
            Absent::False => "false".into(),
            Absent::Zero => "0".into(),
        }
    }
}

/// A field label a kind accepts in field selectors, and where its value is read.
#[derive(Debug)]
struct Field {
    label: &'static str,
    /// Dotted paths into the object as served; the first that holds a non-empty value is
    /// the field's value (an Event's `source` falls back to its reporting controller).
    paths: &'static [&'static str],
    absent: Absent,
}

const fn text(label: &'static str) -> Field {
    Field {
        label,
        paths: &[],
        absent: Absent::Empty,
    }
}

impl Field {
    /// Where the value is read when it is not at the path the label names.
    const fn at(self, paths: &'static [&'static str]) -> Field {
        Field { paths, ..self }
    }

    const fn or_absent(self, absent: Absent) -> Field {
        Field { absent, ..self }
    }

    fn paths(&self) -> &[&'static str] {
        if self.paths.is_empty() {
            std::slice::from_ref(&self.label)
        } else {
            self.paths
        }
    }
}

/// Pod fields, as upstream's pod `ToSelectableFields`. `status.podIPs` is accepted by the
/// field label conversion but is not among the selectable fields: it always reads `""`.
const POD_FIELDS: &[Field] = &[
    text("spec.nodeName"),
    // What old v1 clients send for `spec.nodeName`.
    text("spec.host").at(&["spec.nodeName"]),
    text("spec.restartPolicy"),
    text("spec.schedulerName"),
    text("spec.serviceAccountName"),
    text("spec.hostNetwork").or_absent(Absent::False),
    text("status.phase"),
    text("status.podIP"),
    text("status.podIPs").at(&[]),
    text("status.nominatedNodeName"),
];

/// Core `v1` Event fields; `source` is the source component, else the reporting controller.
const EVENT_FIELDS: &[Field] = &[
    text("involvedObject.kind"),
    text("involvedObject.namespace"),
    text("involvedObject.name"),
    text("involvedObject.uid"),
    text("involvedObject.apiVersion"),
    text("involvedObject.resourceVersion"),
    text("involvedObject.fieldPath"),
    text("reason"),
    text("reportingComponent"),
    text("source").at(&["source.component", "reportingComponent"]),
    text("type"),
];

/// `events.k8s.io/v1` Event fields: the core ones under their `events.k8s.io` names.
const EVENTS_V1_FIELDS: &[Field] = &[
    text("regarding.kind"),
    text("regarding.namespace"),
    text("regarding.name"),
    text("regarding.uid"),
    text("regarding.apiVersion"),
    text("regarding.resourceVersion"),
    text("regarding.fieldPath"),
    text("reason"),
    text("reportingController"),
    text("source").at(&["deprecatedSource.component", "reportingController"]),
    text("type"),
];

const NODE_FIELDS: &[Field] = &[text("spec.unschedulable").or_absent(Absent::False)];
const NAMESPACE_FIELDS: &[Field] = &[text("status.phase")];
const SECRET_FIELDS: &[Field] = &[text("type")];
const SERVICE_FIELDS: &[Field] = &[text("spec.clusterIP"), text("spec.type")];
const REPLICAS_FIELDS: &[Field] = &[text("status.replicas").or_absent(Absent::Zero)];
/// A Job's `status.successful` is the count of its succeeded pods.
const JOB_FIELDS: &[Field] = &[text("status.successful")
    .at(&["status.succeeded"])
    .or_absent(Absent::Zero)];

/// Field selectors `rt` supports beyond `metadata.name` and `metadata.namespace`.
fn supported_fields(rt: &ResourceType) -> &'static [Field] {
    match (rt.group, rt.kind) {
        ("", "Pod") => POD_FIELDS,
        ("", "Event") => EVENT_FIELDS,
        ("events.k8s.io", "Event") => EVENTS_V1_FIELDS,
        ("", "Node") => NODE_FIELDS,
        ("", "Namespace") => NAMESPACE_FIELDS,
        ("", "Secret") => SECRET_FIELDS,
        ("", "Service") => SERVICE_FIELDS,
        ("", "ReplicationController") | ("apps", "ReplicaSet") => REPLICAS_FIELDS,
        ("batch", "Job") => JOB_FIELDS,
        _ => &[],
    }
}

/// Every table of [`supported_fields`] for objects of `kind`, whatever their group.
fn fields_of_kind(kind: &str) -> &'static [&'static [Field]] {
    match kind {
        "Pod" => &[POD_FIELDS],
        "Event" => &[EVENT_FIELDS, EVENTS_V1_FIELDS],
        "Node" => &[NODE_FIELDS],
        "Namespace" => &[NAMESPACE_FIELDS],
        "Secret" => &[SECRET_FIELDS],
        "Service" => &[SERVICE_FIELDS],
        "ReplicationController" | "ReplicaSet" => &[REPLICAS_FIELDS],
        "Job" => &[JOB_FIELDS],
        _ => &[],
    }
}

/// The scalar at the dotted `path` of `obj`, as a selector compares it; `None` if absent,
/// null or not a scalar.
fn scalar_at(obj: &Value, path: &str) -> Option<String> {
    let mut cur = obj;
    for part in path.split('.') {
        cur = cur.get(part)?;
    }
    match cur {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The value of a selectable field of `obj`: metadata's name and namespace, or `field`'s
/// value, its zero value where the object does not have it.
fn field_value(selectable: &[Field], obj: &Value, label: &str) -> String {
    if label == "metadata.name" || label == "metadata.namespace" {
        return scalar_at(obj, label).unwrap_or_default();
    }
    let Some(field) = selectable.iter().find(|f| f.label == label) else {
        return String::new();
    };
    field
        .paths()
        .iter()
        .filter_map(|path| scalar_at(obj, path))
        .find(|v| !v.is_empty())
        .unwrap_or_else(|| field.absent.value())
}

/// The paths selectors of `kind` can read: name, namespace, labels and the kind's fields.
fn selectable_paths(kind: &str) -> Vec<&'static str> {
    let mut paths = vec!["metadata.name", "metadata.namespace", "metadata.labels"];
    for table in fields_of_kind(kind) {
        for field in table.iter() {
            paths.extend(field.paths());
        }
    }
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
                let extra = supported_fields(rt);
                for f in sel.fields() {
                    if f != "metadata.name"
                        && f != "metadata.namespace"
                        && !extra.iter().any(|e| e.label == f)
                    {
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
            selectable: supported_fields(rt),
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
            if !f.matches_fn(|field| Some(field_value(self.selectable, obj, field))) {
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
        selectors_of("v1", kind, labels, fields)
    }

    fn selectors_of(
        api_version: &str,
        kind: &'static str,
        labels: &str,
        fields: &str,
    ) -> Selectors {
        let rt = berth_api::registry::find_kind(api_version, kind).unwrap();
        Selectors {
            labels: Some(Selector::parse(labels).unwrap()),
            fields: Some(FieldSelector::parse(fields).unwrap()),
            selectable: supported_fields(rt),
        }
    }

    /// Whether `fields` selects `obj` (of `kind` in `api_version`), through the whole
    /// object and through the members [`selectable`] picks of it.
    fn selects(api_version: &str, kind: &'static str, fields: &str, obj: &Value) -> bool {
        let s = selectors_of(api_version, kind, "", fields);
        let picked = selectable(kind, &serde_json::to_vec(obj).unwrap()).unwrap();
        assert_eq!(s.matches(&picked), s.matches(obj), "{fields} on {obj}");
        s.matches(obj)
    }

    #[test]
    fn absent_fields_read_as_their_zero_value() {
        let cases = [
            (
                "v1",
                "Node",
                "spec.unschedulable=false",
                json!({"spec": {}}),
                true,
            ),
            ("v1", "Node", "spec.unschedulable!=true", json!({}), true),
            (
                "v1",
                "Node",
                "spec.unschedulable=true",
                json!({"spec": {}}),
                false,
            ),
            (
                "v1",
                "Node",
                "spec.unschedulable=true",
                json!({"spec": {"unschedulable": true}}),
                true,
            ),
            (
                "v1",
                "Pod",
                "spec.hostNetwork=false",
                json!({"spec": {}}),
                true,
            ),
            (
                "v1",
                "Pod",
                "spec.hostNetwork=true",
                json!({"spec": {"hostNetwork": true}}),
                true,
            ),
            ("v1", "Pod", "spec.nodeName=", json!({"spec": {}}), true),
            ("v1", "Pod", "status.phase!=", json!({}), false),
            (
                "v1",
                "ReplicationController",
                "status.replicas=0",
                json!({"status": {}}),
                true,
            ),
            (
                "apps/v1",
                "ReplicaSet",
                "status.replicas=0",
                json!({}),
                true,
            ),
            (
                "apps/v1",
                "ReplicaSet",
                "status.replicas=2",
                json!({"status": {"replicas": 2}}),
                true,
            ),
            (
                "batch/v1",
                "Job",
                "status.successful=0",
                json!({"status": {}}),
                true,
            ),
            (
                "batch/v1",
                "Job",
                "status.successful=3",
                json!({"status": {"succeeded": 3}}),
                true,
            ),
            ("v1", "Secret", "type=", json!({}), true),
        ];
        for (api_version, kind, fields, obj, want) in cases {
            assert_eq!(
                selects(api_version, kind, fields, &obj),
                want,
                "{kind} {fields} {obj}"
            );
        }
    }

    #[test]
    fn event_fields_are_read_under_the_names_of_the_version_asked_for() {
        let core = json!({"involvedObject": {"kind": "Pod", "name": "p"}, "reason": "Started",
            "type": "Normal", "reportingComponent": "kubelet"});
        let view = json!({"regarding": {"kind": "Pod", "name": "p"}, "reason": "Started",
            "type": "Normal", "reportingController": "kubelet"});
        let cases = [
            (
                "v1",
                "involvedObject.kind=Pod,involvedObject.name=p",
                &core,
                true,
            ),
            ("v1", "reason=Started,type=Normal", &core, true),
            ("v1", "reportingComponent=kubelet", &core, true),
            ("v1", "source=kubelet", &core, true),
            (
                "events.k8s.io/v1",
                "regarding.kind=Pod,regarding.name=p",
                &view,
                true,
            ),
            ("events.k8s.io/v1", "regarding.name=q", &view, false),
            (
                "events.k8s.io/v1",
                "reason=Started,type=Normal",
                &view,
                true,
            ),
            (
                "events.k8s.io/v1",
                "reportingController=kubelet",
                &view,
                true,
            ),
            ("events.k8s.io/v1", "source=kubelet", &view, true),
        ];
        for (api_version, fields, obj, want) in cases {
            assert_eq!(selects(api_version, "Event", fields, obj), want, "{fields}");
        }
        let source = json!({"source": {"component": "scheduler"}, "reportingComponent": "x"});
        assert!(selects("v1", "Event", "source=scheduler", &source));
    }

    #[test]
    fn each_version_accepts_its_own_field_labels() {
        let query = |s: &str| Query::parse(Some(&format!("fieldSelector={s}")));
        let cases = [
            ("v1", "Event", "involvedObject.name=p", true),
            ("v1", "Event", "regarding.name=p", false),
            ("events.k8s.io/v1", "Event", "regarding.name=p", true),
            ("events.k8s.io/v1", "Event", "involvedObject.name=p", false),
            ("v1", "Service", "spec.type=ClusterIP", true),
            ("v1", "Pod", "spec.host=n1", true),
            ("v1", "Node", "spec.nodeName=n1", false),
        ];
        for (api_version, kind, fields, ok) in cases {
            let rt = berth_api::registry::find_kind(api_version, kind).unwrap();
            let got = Selectors::from_query(rt, &query(fields));
            assert_eq!(got.is_ok(), ok, "{api_version} {kind} {fields}");
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
