//! `managedFields` entries: decoding what a client or the store holds, encoding what is stored.

use super::set::FieldSet;
use serde_json::{json, Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Operation {
    Apply,
    Update,
}

/// One `ManagedFieldsEntry`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub manager: String,
    pub operation: Operation,
    pub api_version: String,
    pub time: Option<String>,
    /// `""` for the main resource.
    pub subresource: String,
    pub fields: FieldSet,
}

impl Entry {
    /// The manager as upstream's conflict messages name it.
    pub fn display(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            s = format!("{s} with subresource {:?}", self.subresource);
        }
        if self.operation == Operation::Update {
            s = format!("{s} using {}", self.api_version);
        }
        s
    }
}

/// Decodes `metadata.managedFields`. An entry that is not an object, an operation other than
/// `Apply`/`Update`, a `fieldsType` other than `FieldsV1` or a malformed `fieldsV1` is an error
/// (upstream then keeps the live object's entries); two entries of one manager identity too.
pub fn decode(v: &Value) -> Result<Vec<Entry>, String> {
    let items = v
        .as_array()
        .ok_or_else(|| "managedFields must be a list".to_string())?;
    let mut out: Vec<Entry> = Vec::with_capacity(items.len());
    for item in items {
        let m = item
            .as_object()
            .ok_or_else(|| format!("managedFields entry {item} is not an object"))?;
        let text = |k: &str| -> Result<String, String> {
            match m.get(k) {
                None | Some(Value::Null) => Ok(String::new()),
                Some(Value::String(s)) => Ok(s.clone()),
                Some(other) => Err(format!("managedFields {k} {other} is not a string")),
            }
        };
        let operation = match text("operation")?.as_str() {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            other => return Err(format!("unknown operation {other:?}")),
        };
        let fields_type = text("fieldsType")?;
        if fields_type != "FieldsV1" {
            return Err(format!("invalid fieldsType {fields_type:?}"));
        }
        let fields = match m.get("fieldsV1") {
            None | Some(Value::Null) => FieldSet::default(),
            Some(f) => FieldSet::from_fields_v1(f)?,
        };
        let time = Some(text("time")?).filter(|t| !t.is_empty());
        if let Some(t) = &time {
            chrono::DateTime::parse_from_rfc3339(t).map_err(|_| format!("invalid time {t:?}"))?;
        }
        let entry = Entry {
            manager: text("manager")?,
            operation,
            api_version: text("apiVersion")?,
            time,
            subresource: text("subresource")?,
            fields,
        };
        if out.iter().any(|e| same_identity(e, &entry)) {
            return Err(format!("duplicate entry for manager {}", entry.display()));
        }
        out.push(entry);
    }
    Ok(out)
}

fn same_identity(a: &Entry, b: &Entry) -> bool {
    a.manager == b.manager
        && a.operation == b.operation
        && a.subresource == b.subresource
        && (a.operation == Operation::Apply || a.api_version == b.api_version)
}

/// The stored form of entries.
pub fn encode(entries: &[Entry]) -> Value {
    Value::Array(
        entries
            .iter()
            .map(|e| {
                let mut m = Map::new();
                m.insert("manager".into(), json!(e.manager));
                m.insert(
                    "operation".into(),
                    json!(match e.operation {
                        Operation::Apply => "Apply",
                        Operation::Update => "Update",
                    }),
                );
                m.insert("apiVersion".into(), json!(e.api_version));
                if let Some(t) = &e.time {
                    m.insert("time".into(), json!(t));
                }
                m.insert("fieldsType".into(), json!("FieldsV1"));
                m.insert("fieldsV1".into(), e.fields.to_fields_v1());
                if !e.subresource.is_empty() {
                    m.insert("subresource".into(), json!(e.subresource));
                }
                Value::Object(m)
            })
            .collect(),
    )
}

/// Upstream's order: Apply before Update, then by time, manager, API version, subresource.
pub(crate) fn sort(entries: &mut [Entry]) {
    entries.sort_by(|p, q| {
        (
            p.operation,
            &p.time,
            &p.manager,
            &p.api_version,
            &p.subresource,
        )
            .cmp(&(
                q.operation,
                &q.time,
                &q.manager,
                &q.api_version,
                &q.subresource,
            ))
    });
}
