//! Label and field selectors of list and watch requests.

use crate::error::{ApiError, ApiResult};
use crate::request::Query;
use berth_api::registry::ResourceType;
use berth_core::fields::FieldSelector;
use berth_core::labels::Selector;
use serde_json::Value;

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
