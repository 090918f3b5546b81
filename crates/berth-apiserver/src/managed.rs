//! `metadata.managedFields` at the write paths: the driver side of
//! [`berth_core::managed_fields`].
//!
//! Tracking starts with an object's first server-side apply (upstream's skip-non-applied
//! manager): a write of an object without entries does no work beyond one map lookup, so the
//! hot paths (pod creates, bindings, kubelet status writes) cost what they did before.

use crate::context::Ctx;
use crate::error::{ApiError, ApiResult, Cause};
use crate::request::ApiRequest;
use berth_core::managed_fields::{self, Conflicts, Entry, Writer};
use serde_json::Value;

/// Whether `obj` carries entries: the cheap check every write makes first.
pub fn tracked(obj: &Value) -> bool {
    obj.get("metadata")
        .and_then(|m| m.get("managedFields"))
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
}

/// The field manager of a write: the `fieldManager` parameter, else the first part of the
/// client's User-Agent (upstream's `prefixFromUserAgent`).
pub fn manager(req: &ApiRequest) -> String {
    if let Some(m) = req.query.get("fieldManager").filter(|m| !m.is_empty()) {
        return m.to_string();
    }
    let agent = req
        .headers
        .get(axum::http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let prefix = agent.split('/').next().unwrap_or("");
    prefix.chars().take(128).collect()
}

/// The manager of an apply: required (upstream's `ValidatePatchOptions`).
pub fn apply_manager(req: &ApiRequest) -> ApiResult<String> {
    match req.query.get("fieldManager").filter(|m| !m.is_empty()) {
        Some(m) => Ok(m.to_string()),
        None => Err(ApiError::Invalid {
            kind: "PatchOptions.meta.k8s.io".into(),
            name: String::new(),
            causes: vec![Cause {
                reason: "FieldValueRequired".into(),
                message: "Required value: is required for apply patch".into(),
                field: "fieldManager".into(),
            }],
        }),
    }
}

fn entries_of(obj: &Value) -> Option<&Value> {
    obj.get("metadata").and_then(|m| m.get("managedFields"))
}

/// Upstream's reset request: `managedFields: []` or a single empty entry.
fn is_reset(v: &Value) -> bool {
    match v.as_array().map(Vec::as_slice) {
        Some([]) => true,
        Some([only]) => only.as_object().is_some_and(|o| o.is_empty()),
        _ => false,
    }
}

fn decode_or_empty(obj: &Value) -> Vec<Entry> {
    entries_of(obj)
        .and_then(|v| managed_fields::decode(v).ok())
        .unwrap_or_default()
}

fn store_entries(obj: &mut Value, entries: &[Entry]) {
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if entries.is_empty() {
            m.remove("managedFields");
        } else {
            m.insert("managedFields".into(), managed_fields::encode(entries));
        }
    }
}

/// A create: entries the client sent are kept when valid, dropped otherwise.
pub fn on_create(obj: &mut Value) {
    let Some(v) = entries_of(obj) else { return };
    let entries = managed_fields::decode(v).unwrap_or_default();
    store_entries(obj, &entries);
}

/// A non-apply write from `old` to `new` (update, patch, status, scale). The entries are those
/// the client sent when valid and not empty, else the stored ones (upstream's
/// `decodeLiveOrNew`); `[]` clears them.
pub fn on_update(ctx: &Ctx, req: &ApiRequest, old: &Value, new: &mut Value, subresource: &str) {
    let sent = entries_of(new);
    if sent.is_none() && !tracked(old) {
        return;
    }
    let entries = match sent {
        Some(v) if is_reset(v) => Vec::new(),
        Some(v) => match managed_fields::decode(v) {
            Ok(e) if !e.is_empty() => e,
            _ => decode_or_empty(old),
        },
        None => decode_or_empty(old),
    };
    if entries.is_empty() {
        store_entries(new, &entries);
        return;
    }
    let rt = req.target.rt;
    let now = ctx.clock.timestamp();
    let manager = manager(req);
    let api_version = rt.api_version();
    let w = Writer {
        kind: rt.kind,
        manager: &manager,
        api_version: &api_version,
        subresource,
        now: &now,
    };
    let entries = managed_fields::update(entries, old, new, &w);
    store_entries(new, &entries);
}

/// The entries of an object an apply creates: the applier owns what it applied.
pub fn on_apply_create(ctx: &Ctx, req: &ApiRequest, manager: &str, obj: &mut Value) {
    let rt = req.target.rt;
    let now = ctx.clock.timestamp();
    let api_version = rt.api_version();
    let w = Writer {
        kind: rt.kind,
        manager,
        api_version: &api_version,
        subresource: "",
        now: &now,
    };
    let empty = Value::Object(Default::default());
    let config = obj.clone();
    match managed_fields::apply(vec![], &empty, &config, obj.clone(), &w, true) {
        Ok((_, entries)) => {
            let entries: Vec<Entry> = entries
                .into_iter()
                .filter(|e| e.manager == manager)
                .collect();
            store_entries(obj, &entries);
        }
        Err(_) => store_entries(obj, &[]),
    }
}

/// An apply to an existing object: `merged` is `live` with `config` merged in. Returns the
/// object to store, entries set, or the 409 of a conflict.
pub fn on_apply(
    ctx: &Ctx,
    req: &ApiRequest,
    manager: &str,
    live: &Value,
    config: &Value,
    merged: Value,
) -> ApiResult<Value> {
    let rt = req.target.rt;
    let now = ctx.clock.timestamp();
    let api_version = rt.api_version();
    let w = Writer {
        kind: rt.kind,
        manager,
        api_version: &api_version,
        subresource: "",
        now: &now,
    };
    let force = req.query.flag("force");
    let w = Writer {
        subresource: req.target.subresource.as_deref().unwrap_or(""),
        ..w
    };
    let (mut obj, entries) =
        managed_fields::apply(decode_or_empty(live), live, config, merged, &w, force)
            .map_err(conflict)?;
    store_entries(&mut obj, &entries);
    Ok(obj)
}

fn conflict(c: Conflicts) -> ApiError {
    ApiError::ApplyConflict {
        message: c.message(),
        causes: c
            .0
            .iter()
            .map(|c| Cause {
                reason: "FieldManagerConflict".into(),
                message: format!("conflict with {}", c.manager),
                field: c.field.clone(),
            })
            .collect(),
    }
}
