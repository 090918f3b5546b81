//! Server-side apply's field ownership (`metadata.managedFields`), as upstream's
//! structured-merge-diff keeps it, for the built-in kinds.
//!
//! Each entry says which fields one manager owns, per operation: an `Apply` entry holds the
//! fields of the manager's last applied configuration, an `Update` entry (one per manager, API
//! version and subresource) the fields the manager's other writes changed. This module is pure:
//! the API server decodes the entries, calls [`update`] or [`apply`] with the server's clock
//! reading, and stores what they return.
//!
//! Tracking starts with the first apply (upstream's `NewSkipNonAppliedManager`): objects that
//! were never applied carry no entries and cost nothing; the first apply first records every
//! existing field under an `Update` entry of `before-first-apply`.
//!
//! Simplifications, documented: list types come from the strategic-merge table
//! ([`crate::patch::list_patch`]); keyed lists have one key (container ports by
//! `containerPort`, where upstream also keys by `protocol`).
//!
//! ```
//! use berth_core::managed_fields::{apply, Writer};
//! use serde_json::json;
//!
//! let live = json!({"apiVersion": "apps/v1", "kind": "Deployment",
//!     "metadata": {"name": "d"}, "spec": {"replicas": 1}});
//! let a = Writer { kind: "Deployment", manager: "a", api_version: "apps/v1", subresource: "", now: "2026-01-01T00:00:00Z" };
//! let config = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 3}});
//! let merged = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 3}});
//! // `replicas` was set before the first apply: it belongs to `before-first-apply`.
//! let conflicts = apply(Vec::new(), &live, &config, merged.clone(), &a, false).unwrap_err();
//! assert_eq!(conflicts.message(), "Apply failed with 1 conflict: conflict with \"before-first-apply\" using apps/v1: .spec.replicas");
//! let (_, entries) = apply(Vec::new(), &live, &config, merged, &a, true).unwrap();
//! assert_eq!(entries.len(), 1);
//! ```

mod entry;
mod set;
#[cfg(test)]
mod tests;
mod walk;

pub use entry::{decode, encode, Entry, Operation};
pub use set::{path_string, Element, FieldSet};
pub use walk::Comparison;

use serde_json::{Map, Value};

/// The manager that owns what an object held when it was first applied.
pub const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// Who writes, and when.
#[derive(Debug, Clone, Copy)]
pub struct Writer<'a> {
    /// The object's kind (for list types).
    pub kind: &'a str,
    /// The field manager.
    pub manager: &'a str,
    /// The API version the write used (`v1`, `apps/v1`).
    pub api_version: &'a str,
    /// `""`, `status` or `scale`.
    pub subresource: &'a str,
    /// The server clock, RFC 3339 in seconds.
    pub now: &'a str,
}

/// Fields no manager owns: identity and server-set metadata (upstream's strip set).
fn server_fields() -> FieldSet {
    let mut s = FieldSet::default();
    for top in ["apiVersion", "kind"] {
        s.insert(&[Element::Field(top.into())]);
    }
    for m in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "generation",
        "managedFields",
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        s.insert(&[Element::Field("metadata".into()), Element::Field(m.into())]);
    }
    s
}

fn as_map(v: &Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

/// What a write changed, server-set fields left out.
pub fn compare(old: &Value, new: &Value, kind: &str) -> Comparison {
    let strip = server_fields();
    let c = walk::compare(&as_map(old), &as_map(new), walk::root(kind));
    Comparison {
        added: c.added.difference(&strip),
        modified: c.modified.difference(&strip),
        removed: c.removed.difference(&strip),
    }
}

/// The set of fields an (applied) object sets, server-set fields left out.
pub fn field_set(obj: &Value, kind: &str) -> FieldSet {
    walk::object_set(&as_map(obj), walk::root(kind)).difference(&server_fields())
}

/// Tracks a non-apply write from `old` to `new` (upstream's `Updater.Update`): the writer's
/// `Update` entry gains what it added or modified, loses what it removed; the other managers
/// lose all of that. Entries left empty go.
pub fn update(mut entries: Vec<Entry>, old: &Value, new: &Value, w: &Writer) -> Vec<Entry> {
    let c = compare(old, new, w.kind);
    if c.is_same() {
        return entries;
    }
    let changed = c.changed();
    let taken = changed.union(&c.removed);
    let me = |e: &Entry| {
        e.operation == Operation::Update
            && e.manager == w.manager
            && e.api_version == w.api_version
            && e.subresource == w.subresource
    };
    let mut mine = FieldSet::default();
    for e in entries.iter_mut() {
        if me(e) {
            mine = std::mem::take(&mut e.fields);
        } else {
            e.fields = e.fields.difference(&taken);
        }
    }
    let mine = mine.difference(&c.removed).union(&changed);
    entries.retain(|e| !me(e) && !e.fields.is_empty());
    if !mine.is_empty() {
        entries.push(Entry {
            manager: w.manager.to_string(),
            operation: Operation::Update,
            api_version: w.api_version.to_string(),
            time: Some(w.now.to_string()),
            subresource: w.subresource.to_string(),
            fields: mine,
        });
    }
    entry::sort(&mut entries);
    entries
}

/// One field another manager owns that an apply would change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The other manager as upstream prints it: `"a"`, `"m" using v1`,
    /// `"kubectl-scale" with subresource "scale" using apps/v1`.
    pub manager: String,
    /// The field, in upstream's notation (`.spec.replicas`).
    pub field: String,
}

/// The conflicts of a refused apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflicts(pub Vec<Conflict>);

impl Conflicts {
    /// Upstream's message: one conflict on one line, several grouped by manager.
    pub fn message(&self) -> String {
        if let [c] = self.0.as_slice() {
            return format!(
                "Apply failed with 1 conflict: conflict with {}: {}",
                c.manager, c.field
            );
        }
        let mut managers: Vec<&str> = self.0.iter().map(|c| c.manager.as_str()).collect();
        managers.sort();
        managers.dedup();
        let mut lines = Vec::new();
        for m in managers {
            lines.push(format!("conflicts with {m}:"));
            for c in self.0.iter().filter(|c| c.manager == m) {
                lines.push(format!("- {}", c.field));
            }
        }
        format!(
            "Apply failed with {} conflicts: {}",
            self.0.len(),
            lines.join("\n")
        )
    }
}

/// Server-side apply (upstream's `Updater.Apply`). `merged` is the live object with `config`
/// merged in. The manager's `Apply` entry becomes the set of `config`; fields it applied last
/// time and no longer applies are removed from `merged` unless another manager owns them; a
/// field another manager owns that the result would change is a conflict, unless `force`,
/// which takes it from that manager. Returns the object to store and its entries.
pub fn apply(
    entries: Vec<Entry>,
    live: &Value,
    config: &Value,
    mut merged: Value,
    w: &Writer,
    force: bool,
) -> Result<(Value, Vec<Entry>), Conflicts> {
    let mut entries = if entries.is_empty() {
        let before = Writer {
            manager: BEFORE_FIRST_APPLY,
            subresource: "",
            ..*w
        };
        update(Vec::new(), &Value::Object(Map::new()), live, &before)
    } else {
        entries
    };
    let me = |e: &Entry| {
        e.operation == Operation::Apply && e.manager == w.manager && e.subresource == w.subresource
    };
    let applied = field_set(config, w.kind);
    let last = entries.iter().find(|e| me(e));
    let last_time = last.and_then(|e| e.time.clone());
    let last_set = last.map(|e| e.fields.clone()).unwrap_or_default();
    let mut owned = applied.clone();
    for e in entries.iter().filter(|e| !me(e)) {
        owned.union_with(&e.fields);
    }
    let dropped = last_set.difference(&applied);
    if !dropped.is_empty() {
        if let Value::Object(m) = &mut merged {
            walk::prune(m, &dropped, &owned, walk::root(w.kind));
        }
    }
    let c = compare(live, &merged, w.kind);
    let changed = c.changed();
    let mut conflicts = Vec::new();
    for e in entries.iter_mut().filter(|e| !me(e)) {
        let taken = e.fields.intersection(&changed);
        for path in taken.paths() {
            conflicts.push(Conflict {
                manager: e.display(),
                field: path_string(&path),
            });
        }
        e.fields = e.fields.difference(&taken).difference(&c.removed);
    }
    if !force && !conflicts.is_empty() {
        return Err(Conflicts(conflicts));
    }
    let unchanged = c.is_same() && applied == last_set;
    entries.retain(|e| !me(e) && !e.fields.is_empty());
    if !applied.is_empty() {
        entries.push(Entry {
            manager: w.manager.to_string(),
            operation: Operation::Apply,
            api_version: w.api_version.to_string(),
            time: if unchanged {
                last_time
            } else {
                Some(w.now.to_string())
            },
            subresource: w.subresource.to_string(),
            fields: applied,
        });
    }
    entry::sort(&mut entries);
    Ok((merged, entries))
}
