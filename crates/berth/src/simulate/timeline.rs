//! The workload timeline of `berth simulate --workload`: what happens to the cluster, and when.
//!
//! ```yaml
//! timeline:
//!   - at: 0s
//!     create:                      # any manifests, as `kubectl create -f` takes them
//!       - {apiVersion: apps/v1, kind: Deployment, metadata: {name: web}, spec: ...}
//!   - at: 1h
//!     scale: [{kind: Deployment, name: web, replicas: 6}]
//!   - at: 2h
//!     fail: [node-2]               # or [{node: node-2, mode: partitioned}]
//!   - at: 3h
//!     recover: [node-2]
//!     cordon: [node-1]             # uncordon: [...]
//!     label: [{node: node-1, labels: {disktype: ssd, old: null}}]   # null removes
//!     taint: [{node: node-1, key: k, value: v, effect: NoSchedule}]
//!     untaint: [{node: node-1, key: k, effect: NoSchedule}]
//!     delete: [{kind: Deployment, name: web}]
//! ```
//!
//! Parsing is pure and complete before anything runs: a bad entry stops the simulation with
//! the entry's path (`timeline[2].scale[0].replicas: ...`), so a long run never fails half
//! way. Entries run in the order of `at`, entries with the same `at` in file order, and the
//! actions of one entry in the order of [`Action`]'s variants.

use berth_kubelet::simulate::Simulate;
use serde_json::Value;
use std::time::Duration;

/// The most entries a timeline may hold (a bound on what one file can ask for).
pub const MAX_ENTRIES: usize = 100_000;
/// The most objects one entry may create, scale, delete or change.
pub const MAX_ITEMS_PER_ACTION: usize = 10_000;

/// A parsed timeline: entries sorted by time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    pub entries: Vec<Entry>,
}

/// What happens at one instant.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// From the start of the simulation.
    pub at: Duration,
    pub actions: Vec<Action>,
}

/// An object named by kind, name and (for namespaced kinds) namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectRef {
    pub kind: String,
    /// `apps/v1`, when the kind alone is ambiguous; else found by discovery.
    pub api_version: Option<String>,
    pub name: String,
    /// `default` when not given (ignored for cluster-scoped kinds).
    pub namespace: String,
}

/// A taint to add or remove.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaintChange {
    pub node: String,
    pub key: String,
    pub value: Option<String>,
    pub effect: String,
}

/// Labels to set (`Some`) or remove (`None`).
pub type LabelChanges = Vec<(String, Option<String>)>;

/// One change to the cluster.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Create these manifests.
    Create(Vec<Value>),
    /// Set `spec.replicas` of these Deployments, StatefulSets, ReplicaSets, Jobs (parallelism).
    Scale(Vec<(ObjectRef, i64)>),
    /// Delete these objects.
    Delete(Vec<ObjectRef>),
    /// Fail these nodes (through `berth.io/simulate`).
    Fail(Vec<(String, Simulate)>),
    /// Bring these nodes back.
    Recover(Vec<String>),
    /// Mark these nodes unschedulable.
    Cordon(Vec<String>),
    /// Mark these nodes schedulable.
    Uncordon(Vec<String>),
    /// Set (a string) or remove (null) node labels, per node.
    Label(Vec<(String, LabelChanges)>),
    /// Add taints.
    Taint(Vec<TaintChange>),
    /// Remove taints (by key and effect).
    Untaint(Vec<TaintChange>),
}

/// A timeline that cannot be run, with the place of the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct TimelineError {
    /// Where: `timeline[2].scale[0].replicas`.
    pub path: String,
    pub reason: String,
}

type Result<T> = std::result::Result<T, TimelineError>;

fn err<T>(path: impl Into<String>, reason: impl Into<String>) -> Result<T> {
    Err(TimelineError {
        path: path.into(),
        reason: reason.into(),
    })
}

/// The keys an entry may have, in the order their actions run.
const ACTION_KEYS: [&str; 10] = [
    "create", "scale", "delete", "fail", "recover", "cordon", "uncordon", "label", "taint",
    "untaint",
];

/// The taint effects Kubernetes knows.
const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// Parses a workload file (YAML or JSON).
pub fn parse(text: &str) -> Result<Timeline> {
    let doc: Value = serde_saphyr::from_str(text).or_else(|yaml| {
        serde_json::from_str(text).map_err(|_| TimelineError {
            path: "workload".into(),
            reason: format!("not YAML or JSON: {yaml}"),
        })
    })?;
    from_value(&doc)
}

/// Compiles an already-decoded workload document.
pub fn from_value(doc: &Value) -> Result<Timeline> {
    let Some(top) = doc.as_object() else {
        return err("workload", "expected a mapping with a `timeline` list");
    };
    for key in top.keys() {
        if key != "timeline" {
            return err(
                format!("workload.{key}"),
                "unknown field (expected `timeline`)",
            );
        }
    }
    let items = match top.get("timeline") {
        None | Some(Value::Null) => return Ok(Timeline::default()),
        Some(Value::Array(items)) => items,
        Some(_) => return err("timeline", "expected a list of entries"),
    };
    if items.len() > MAX_ENTRIES {
        return err(
            "timeline",
            format!(
                "{} entries, more than the {MAX_ENTRIES} allowed",
                items.len()
            ),
        );
    }
    let mut entries = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        entries.push(entry(&format!("timeline[{i}]"), item)?);
    }
    // Stable: entries at the same time keep the file's order.
    entries.sort_by_key(|e| e.at);
    Ok(Timeline { entries })
}

fn entry(path: &str, item: &Value) -> Result<Entry> {
    let Some(map) = item.as_object() else {
        return err(path, "expected a mapping with `at` and actions");
    };
    for key in map.keys() {
        if key != "at" && !ACTION_KEYS.contains(&key.as_str()) {
            return err(
                format!("{path}.{key}"),
                format!("unknown action (expected at, {})", ACTION_KEYS.join(", ")),
            );
        }
    }
    let at = match map.get("at") {
        Some(v) => duration(&format!("{path}.at"), v)?,
        None => return err(path, "missing `at` (when, from the start: 0s, 90m, 1h)"),
    };
    let mut actions = Vec::new();
    for key in ACTION_KEYS {
        let Some(value) = map.get(key) else { continue };
        let p = format!("{path}.{key}");
        let list = list(&p, value)?;
        let action = match key {
            "create" => Action::Create(
                list.iter()
                    .enumerate()
                    .map(|(i, v)| manifest(&format!("{p}[{i}]"), v))
                    .collect::<Result<_>>()?,
            ),
            "scale" => Action::Scale(each(&p, list, |p, v| {
                let obj = object_ref(p, v)?;
                let replicas = match v.get("replicas") {
                    Some(Value::Number(n)) => n.as_i64().filter(|r| (0..=1_000_000).contains(r)),
                    _ => None,
                };
                let Some(replicas) = replicas else {
                    return err(
                        format!("{p}.replicas"),
                        "expected a whole number from 0 to 1000000",
                    );
                };
                Ok((obj, replicas))
            })?),
            "delete" => Action::Delete(each(&p, list, object_ref)?),
            "fail" => Action::Fail(each(&p, list, |p, v| match v {
                Value::String(node) => Ok((node_name(p, node)?, Simulate::Stopped)),
                Value::Object(m) => {
                    only(p, m, &["node", "mode"])?;
                    let node = string_field(p, m, "node")?;
                    let mode = match m.get("mode") {
                        None => Simulate::Stopped,
                        Some(Value::String(s)) => match Simulate::parse(s) {
                            Ok(Simulate::Running) | Err(_) => {
                                return err(
                                    format!("{p}.mode"),
                                    format!("unknown mode {s:?} (stopped, partitioned, not-ready)"),
                                )
                            }
                            Ok(mode) => mode,
                        },
                        Some(_) => return err(format!("{p}.mode"), "expected a string"),
                    };
                    Ok((node_name(p, &node)?, mode))
                }
                _ => err(p, "expected a node name or {node, mode}"),
            })?),
            "recover" => Action::Recover(each(&p, list, node_item)?),
            "cordon" => Action::Cordon(each(&p, list, node_item)?),
            "uncordon" => Action::Uncordon(each(&p, list, node_item)?),
            "label" => Action::Label(each(&p, list, |p, v| {
                let Some(m) = v.as_object() else {
                    return err(p, "expected {node, labels}");
                };
                only(p, m, &["node", "labels"])?;
                let node = node_name(p, &string_field(p, m, "node")?)?;
                let Some(Value::Object(labels)) = m.get("labels") else {
                    return err(
                        format!("{p}.labels"),
                        "expected a mapping of label to value",
                    );
                };
                let mut changes = Vec::new();
                for (k, v) in labels {
                    let lp = format!("{p}.labels.{k}");
                    if let Err(e) = names(berth_core::validation::names::qualified_name(k)) {
                        return err(lp, format!("invalid label key: {e}"));
                    }
                    let value = match v {
                        Value::Null => None,
                        Value::String(s) => {
                            if let Err(e) = names(berth_core::validation::names::label_value(s)) {
                                return err(lp, format!("invalid label value: {e}"));
                            }
                            Some(s.clone())
                        }
                        Value::Number(n) => Some(n.to_string()),
                        Value::Bool(b) => Some(b.to_string()),
                        _ => return err(lp, "expected a string, or null to remove the label"),
                    };
                    changes.push((k.clone(), value));
                }
                Ok((node, changes))
            })?),
            "taint" => Action::Taint(each(&p, list, |p, v| taint(p, v, true))?),
            "untaint" => Action::Untaint(each(&p, list, |p, v| taint(p, v, false))?),
            _ => unreachable_key(&p)?,
        };
        actions.push(action);
    }
    if actions.is_empty() {
        return err(
            path,
            format!("no action (expected one of {})", ACTION_KEYS.join(", ")),
        );
    }
    Ok(Entry { at, actions })
}

/// [`ACTION_KEYS`] is matched in full above; this keeps the match total without a panic.
fn unreachable_key(path: &str) -> Result<Action> {
    err(path, "unknown action")
}

fn list<'a>(path: &str, v: &'a Value) -> Result<&'a [Value]> {
    match v {
        Value::Array(items) if items.len() <= MAX_ITEMS_PER_ACTION => Ok(items),
        Value::Array(items) => err(
            path,
            format!(
                "{} items, more than the {MAX_ITEMS_PER_ACTION} allowed",
                items.len()
            ),
        ),
        _ => err(path, "expected a list"),
    }
}

fn each<T>(path: &str, items: &[Value], f: impl Fn(&str, &Value) -> Result<T>) -> Result<Vec<T>> {
    items
        .iter()
        .enumerate()
        .map(|(i, v)| f(&format!("{path}[{i}]"), v))
        .collect()
}

fn only(path: &str, m: &serde_json::Map<String, Value>, allowed: &[&str]) -> Result<()> {
    match m.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => err(
            format!("{path}.{k}"),
            format!("unknown field (expected {})", allowed.join(", ")),
        ),
        None => Ok(()),
    }
}

fn string_field(path: &str, m: &serde_json::Map<String, Value>, key: &str) -> Result<String> {
    match m.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(_) => err(format!("{path}.{key}"), "expected a non-empty string"),
        None => err(path, format!("missing `{key}`")),
    }
}

fn node_name(path: &str, name: &str) -> Result<String> {
    match names(berth_core::validation::names::dns1123_subdomain(name)) {
        Ok(()) => Ok(name.to_string()),
        Err(e) => err(path, format!("invalid node name {name:?}: {e}")),
    }
}

/// The validators' messages as one result.
fn names(messages: Vec<String>) -> std::result::Result<(), String> {
    match messages.is_empty() {
        true => Ok(()),
        false => Err(messages.join("; ")),
    }
}

fn node_item(path: &str, v: &Value) -> Result<String> {
    match v {
        Value::String(s) => node_name(path, s),
        _ => err(path, "expected a node name"),
    }
}

fn object_ref(path: &str, v: &Value) -> Result<ObjectRef> {
    let Some(m) = v.as_object() else {
        return err(path, "expected {kind, name, namespace?}");
    };
    only(
        path,
        m,
        &["kind", "apiVersion", "name", "namespace", "replicas"],
    )?;
    let namespace = match m.get("namespace") {
        None => "default".to_string(),
        Some(_) => string_field(path, m, "namespace")?,
    };
    let api_version = match m.get("apiVersion") {
        None => None,
        Some(_) => Some(string_field(path, m, "apiVersion")?),
    };
    Ok(ObjectRef {
        kind: string_field(path, m, "kind")?,
        api_version,
        name: string_field(path, m, "name")?,
        namespace,
    })
}

fn manifest(path: &str, v: &Value) -> Result<Value> {
    let Some(m) = v.as_object() else {
        return err(path, "expected a manifest (apiVersion, kind, metadata)");
    };
    for key in ["apiVersion", "kind"] {
        string_field(path, m, key)?;
    }
    let named = v
        .pointer("/metadata/name")
        .or_else(|| v.pointer("/metadata/generateName"))
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    if !named {
        return err(
            format!("{path}.metadata"),
            "missing metadata.name (or generateName)",
        );
    }
    Ok(v.clone())
}

fn taint(path: &str, v: &Value, adding: bool) -> Result<TaintChange> {
    let Some(m) = v.as_object() else {
        return err(path, "expected {node, key, value?, effect}");
    };
    only(path, m, &["node", "key", "value", "effect"])?;
    let node = node_name(path, &string_field(path, m, "node")?)?;
    let key = string_field(path, m, "key")?;
    if let Err(e) = names(berth_core::validation::names::qualified_name(&key)) {
        return err(format!("{path}.key"), format!("invalid taint key: {e}"));
    }
    let value = match m.get("value") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return err(format!("{path}.value"), "expected a string"),
    };
    if !adding && value.is_some() {
        return err(
            format!("{path}.value"),
            "untaint removes by key and effect; drop the value",
        );
    }
    let effect = string_field(path, m, "effect")?;
    if !EFFECTS.contains(&effect.as_str()) {
        return err(
            format!("{path}.effect"),
            format!("unknown effect {effect:?} ({})", EFFECTS.join(", ")),
        );
    }
    Ok(TaintChange {
        node,
        key,
        value,
        effect,
    })
}

fn duration(path: &str, v: &Value) -> Result<Duration> {
    let parsed = match v {
        Value::Number(n) => n
            .as_u64()
            .map(Duration::from_secs)
            .ok_or_else(|| "expected a duration such as 90s, 30m or 1h".to_string()),
        Value::String(s) => berth_controllers::parse_duration(s),
        _ => Err("expected a duration such as 90s, 30m or 1h".to_string()),
    };
    match parsed {
        // A year is far beyond any simulation; the bound keeps sums from overflowing.
        Ok(d) if d <= MAX_AT => Ok(d),
        Ok(_) => err(path, "more than a year from the start"),
        Err(reason) => err(path, reason),
    }
}

/// The latest time an entry may name.
pub const MAX_AT: Duration = Duration::from_secs(366 * 86_400);

#[cfg(test)]
mod tests;
