//! Strategic merge patch (`application/strategic-merge-patch+json`), as upstream
//! `apimachinery/pkg/util/strategicpatch` applies it, plus RFC 7396 JSON merge patch.
//!
//! Maps merge recursively and `null` deletes a key. Lists follow the field's strategy for the
//! object's kind (see api-compat §3.6): replaced (atomic, the default — e.g. node taints and
//! pod tolerations), merged by a key (containers by `name`, env by `name`, service ports by
//! `port`, conditions by `type`, ...) or merged as a set of primitives (finalizers).
//! Directives: `$patch: replace | delete` in maps (`merge` is accepted as a no-op) and list
//! elements, `$retainKeys`, `$setElementOrder/<field>`, `$deleteFromPrimitiveList/<field>`.
//! Any other `$`-key is an error.
//!
//! ```
//! use berth_core::patch::strategic_merge;
//! use serde_json::json;
//!
//! let node = json!({"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}});
//! let out = strategic_merge(&node, &json!({"spec": {"taints": null}}), "Node").unwrap();
//! assert_eq!(out, json!({"spec": {}}));
//! ```

mod list_meta;
pub(crate) mod schema;
#[cfg(test)]
mod tests;

use serde_json::{Map, Value};

use schema::{field, Kind, ListStrategy, Ty};

pub use list_meta::{list_patch, ListPatch};

/// Why a patch could not be applied (the API server answers 400 or 422).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The original or the patch is not a JSON object.
    #[error("{0} must be a JSON object")]
    NotAnObject(&'static str),
    /// A `$`-key that is not a known directive.
    #[error("unknown patch directive: {0}")]
    UnknownDirective(String),
    /// A `$patch` value that is not allowed where it appears.
    #[error("unknown patch type: {patch_type} in map: {map}")]
    BadPatchType {
        /// The `$patch` value.
        patch_type: String,
        /// The map that held it, as JSON.
        map: String,
    },
    /// `$patch: merge` on a list element.
    #[error("merging lists cannot yet be specified in the patch")]
    MergeListDirective,
    /// A list element lacks the list's merge key.
    #[error("map: {map} does not contain declared merge key: {key}")]
    MissingMergeKey {
        /// The element, as JSON.
        map: String,
        /// The merge key.
        key: String,
    },
    /// `$retainKeys` is not a list of strings, or the patch sets a key outside it.
    #[error("invalid patch format of retainKeys")]
    RetainKeys,
    /// `$setElementOrder` is not a list, or disagrees with the patch list.
    #[error("invalid patch format of setElementOrder list: {0}")]
    SetElementOrder(String),
    /// `$deleteFromPrimitiveList` is not a list.
    #[error("invalid patch format of $deleteFromPrimitiveList/{0}: must be a list")]
    DeleteFromPrimitiveList(String),
}

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ORDER: &str = "$setElementOrder/";
const DELETE_PRIMITIVE: &str = "$deleteFromPrimitiveList/";

/// Applies a strategic merge patch to `original`, an object of kind `kind` (`Pod`, `Node`,
/// `Deployment`, `ReplicaSet`, `StatefulSet`, `DaemonSet`, `Job`, `CronJob`,
/// `ReplicationController`, `Service`, `PodDisruptionBudget`; any other kind merges maps and
/// replaces lists). Neither input is modified.
pub fn strategic_merge(original: &Value, patch: &Value, kind: &str) -> Result<Value, PatchError> {
    let orig = original
        .as_object()
        .ok_or(PatchError::NotAnObject("original"))?;
    let patch = patch.as_object().ok_or(PatchError::NotAnObject("patch"))?;
    let ty = Ty::Root(Kind::from_name(kind));
    Ok(Value::Object(merge_map(orig.clone(), patch, ty)?))
}

/// Applies an RFC 7396 JSON merge patch: objects merge, `null` deletes, anything else replaces.
pub fn json_merge(original: &Value, patch: &Value) -> Value {
    let Value::Object(p) = patch else {
        return patch.clone();
    };
    let mut out = match original {
        Value::Object(o) => o.clone(),
        _ => Map::new(),
    };
    for (k, v) in p {
        if v.is_null() {
            out.remove(k);
        } else {
            let merged = json_merge(out.get(k).unwrap_or(&Value::Null), v);
            out.insert(k.clone(), merged);
        }
    }
    Value::Object(out)
}

fn bad_patch_type(t: &Value, map: &Map<String, Value>) -> PatchError {
    PatchError::BadPatchType {
        patch_type: t
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| t.to_string()),
        map: Value::Object(map.clone()).to_string(),
    }
}

fn merge_map(
    mut orig: Map<String, Value>,
    patch: &Map<String, Value>,
    ty: Ty,
) -> Result<Map<String, Value>, PatchError> {
    if let Some(d) = patch.get(DIRECTIVE) {
        match d.as_str() {
            Some("replace") => {
                let mut rest = patch.clone();
                rest.remove(DIRECTIVE);
                return merge_map(Map::new(), &rest, ty);
            }
            Some("delete") => return Ok(Map::new()),
            Some("merge") => {}
            _ => return Err(bad_patch_type(d, patch)),
        }
    }
    if let Some(retain) = patch.get(RETAIN_KEYS) {
        let keys: Vec<&str> = retain
            .as_array()
            .ok_or(PatchError::RetainKeys)?
            .iter()
            .map(|k| k.as_str().ok_or(PatchError::RetainKeys))
            .collect::<Result<_, _>>()?;
        if patch
            .keys()
            .any(|k| !k.starts_with('$') && !keys.contains(&k.as_str()))
        {
            return Err(PatchError::RetainKeys);
        }
        orig.retain(|k, _| keys.contains(&k.as_str()));
    }
    let mut handled: Vec<&str> = Vec::new();
    for (k, order) in patch {
        let Some(name) = k.strip_prefix(SET_ORDER) else {
            continue;
        };
        let order = order
            .as_array()
            .ok_or_else(|| PatchError::SetElementOrder(format!("{k} must be a list")))?;
        let (child, strategy) = field(ty, name);
        let key = match strategy {
            ListStrategy::Merge { key } => key,
            ListStrategy::Atomic => None,
        };
        let original_list = orig.get(name).and_then(Value::as_array).cloned();
        let merged = match (patch.get(name), &original_list) {
            (Some(Value::Array(p)), o) => {
                check_order(p, order, key)?;
                merge_list(o.clone().unwrap_or_default(), p, strategy, child)?
            }
            (Some(Value::Null), _) => continue,
            (Some(_), _) => continue, // not a list: the regular loop below replaces it
            (None, Some(o)) => o.clone(),
            (None, None) => continue,
        };
        let server_order = original_list.unwrap_or_default();
        orig.insert(
            name.to_string(),
            Value::Array(reorder(merged, order, &server_order, key)),
        );
        handled.push(name);
    }
    for (k, v) in patch {
        if handled.contains(&k.as_str()) || k == DIRECTIVE || k == RETAIN_KEYS {
            continue;
        }
        if let Some(name) = k.strip_prefix(DELETE_PRIMITIVE) {
            let del = v
                .as_array()
                .ok_or_else(|| PatchError::DeleteFromPrimitiveList(name.to_string()))?;
            if let Some(Value::Array(items)) = orig.get_mut(name) {
                items.retain(|i| !del.contains(i));
            }
            continue;
        }
        if k.starts_with(SET_ORDER) {
            continue;
        }
        if k.starts_with('$') {
            return Err(PatchError::UnknownDirective(k.clone()));
        }
        if v.is_null() {
            orig.remove(k);
            continue;
        }
        let (child, strategy) = field(ty, k);
        let merged = match (orig.remove(k), v) {
            (Some(Value::Object(o)), Value::Object(p)) => Value::Object(merge_map(o, p, child)?),
            (_, Value::Object(p)) => Value::Object(merge_map(Map::new(), p, child)?),
            (Some(Value::Array(o)), Value::Array(p)) => {
                Value::Array(merge_list(o, p, strategy, child)?)
            }
            (_, Value::Array(p)) => Value::Array(merge_list(Vec::new(), p, strategy, child)?),
            (_, scalar) => scalar.clone(),
        };
        orig.insert(k.clone(), merged);
    }
    Ok(orig)
}

fn merge_list(
    mut orig: Vec<Value>,
    patch: &[Value],
    strategy: ListStrategy,
    elem: Ty,
) -> Result<Vec<Value>, PatchError> {
    let key = match strategy {
        ListStrategy::Atomic => return Ok(patch.to_vec()),
        ListStrategy::Merge { key } => key,
    };
    let Some(key) = key.filter(|_| patch.iter().all(Value::is_object)) else {
        // A set of primitives: union, first occurrence wins, in upstream's order (below).
        let mut out: Vec<Value> = Vec::with_capacity(orig.len() + patch.len());
        for v in orig.iter().chain(patch.iter()) {
            if !out.contains(v) {
                out.push(v.clone());
            }
        }
        return Ok(reorder(out, patch, &orig, None));
    };
    let mut replace = false;
    let mut plain: Vec<&Map<String, Value>> = Vec::new();
    for p in patch.iter().filter_map(Value::as_object) {
        match p.get(DIRECTIVE) {
            None => plain.push(p),
            Some(d) => match d.as_str() {
                Some("delete") => {
                    let kv = p.get(key).ok_or_else(|| missing_key(p, key))?;
                    orig.retain(|o| o.get(key) != Some(kv));
                }
                Some("replace") => replace = true,
                Some("merge") => return Err(PatchError::MergeListDirective),
                _ => return Err(bad_patch_type(d, p)),
            },
        }
    }
    if replace {
        return plain
            .into_iter()
            .map(|p| merge_map(Map::new(), p, elem).map(Value::Object))
            .collect();
    }
    // The live items' order, by merge key, before the patch merges into them.
    let server: Vec<Value> = orig.iter().map(|o| json_key(key, o.get(key))).collect();
    let mut order = Vec::with_capacity(plain.len());
    for p in plain {
        let kv = p.get(key).ok_or_else(|| missing_key(p, key))?;
        order.push(json_key(key, Some(kv)));
        match orig.iter_mut().find(|o| o.get(key) == Some(kv)) {
            Some(Value::Object(o)) => {
                let merged = merge_map(std::mem::take(o), p, elem)?;
                *o = merged;
            }
            _ => orig.push(Value::Object(merge_map(Map::new(), p, elem)?)),
        }
    }
    Ok(reorder(orig, &order, &server, Some(key)))
}

/// `{key: value}`: an item as [`reorder`] compares it, by its merge key only.
fn json_key(key: &str, value: Option<&Value>) -> Value {
    let mut item = Map::new();
    if let Some(v) = value {
        item.insert(key.to_string(), v.clone());
    }
    Value::Object(item)
}

fn missing_key(map: &Map<String, Value>, key: &str) -> PatchError {
    PatchError::MissingMergeKey {
        map: Value::Object(map.clone()).to_string(),
        key: key.to_string(),
    }
}

/// Where `item` sits in `list`, comparing merge keys (or whole values for primitives).
fn index_of(list: &[Value], item: &Value, key: Option<&str>) -> Option<usize> {
    match key {
        Some(k) => {
            let kv = item.get(k)?;
            list.iter().position(|o| o.get(k) == Some(kv))
        }
        None => list.iter().position(|o| o == item),
    }
}

/// Upstream `validatePatchWithSetOrderList`: the patch items (deletes aside) must appear in
/// the order list, in the same relative order.
fn check_order(patch: &[Value], order: &[Value], key: Option<&str>) -> Result<(), PatchError> {
    if order.is_empty() {
        return Ok(());
    }
    let items: Vec<&Value> = patch
        .iter()
        .filter(|p| p.get(DIRECTIVE).is_none())
        .collect();
    let (mut pi, mut oi) = (0, 0);
    while pi < items.len() && oi < order.len() {
        let same = match key {
            Some(k) => items[pi].get(k).is_some() && items[pi].get(k) == order[oi].get(k),
            None => items[pi] == &order[oi],
        };
        if same {
            pi += 1;
        }
        oi += 1;
    }
    if pi < items.len() {
        return Err(PatchError::SetElementOrder(
            "the order in the patch list doesn't match the $setElementOrder list".into(),
        ));
    }
    Ok(())
}

/// Orders a merged list: items named in `order` follow it; the others (server-only) keep their
/// relative order from the live list and are interleaved by it (upstream
/// `normalizeElementOrder` + `mergeSortedSlice`). Every merge of a list ends here, with the
/// patch's own items as `order` (or its `$setElementOrder`): an item the live list does not
/// have goes before the live items, as upstream places it.
fn reorder(merged: Vec<Value>, order: &[Value], server: &[Value], key: Option<&str>) -> Vec<Value> {
    let (mut in_patch, mut server_only): (Vec<Value>, Vec<Value>) = merged
        .into_iter()
        .partition(|v| index_of(order, v, key).is_some());
    in_patch.sort_by_key(|v| index_of(order, v, key));
    server_only.sort_by_key(|v| index_of(server, v, key).unwrap_or(usize::MAX));
    let mut out = Vec::with_capacity(in_patch.len() + server_only.len());
    let (mut left, mut right) = (
        server_only.into_iter().peekable(),
        in_patch.into_iter().peekable(),
    );
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => match (index_of(server, l, key), index_of(server, r, key)) {
                (Some(li), Some(ri)) => li < ri,
                _ => false,
            },
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}
