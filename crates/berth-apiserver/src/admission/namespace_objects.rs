//! The objects of one kind in one namespace, decoded, for admission plugins that consult
//! the namespace's policy objects (ResourceQuotas, LimitRanges). An empty namespace costs
//! one store range that finds nothing, and no decoding.

use crate::codec::decode;
use crate::error::{ApiError, ApiResult};
use crate::path::{self, Target};
use berth_api::registry;
use berth_store::Store;
use serde_json::Value;

/// Whether `namespace` holds any `group/v1` `plural` object: one range of at most one key,
/// nothing decoded.
pub fn any(store: &Store, group: &str, plural: &str, namespace: &str) -> ApiResult<bool> {
    let version = registry::preferred_version(group).unwrap_or("v1");
    let Some(rt) = registry::find(group, version, plural) else {
        return Ok(false);
    };
    let r = store
        .range(&path::collection_prefix(rt, Some(namespace)), None, 1, None)
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(!r.kvs.is_empty())
}

/// Every `group/v1` `plural` object in `namespace`, as the store holds them now.
pub fn list(store: &Store, group: &str, plural: &str, namespace: &str) -> ApiResult<Vec<Value>> {
    let version = registry::preferred_version(group).unwrap_or("v1");
    let Some(rt) = registry::find(group, version, plural) else {
        return Ok(Vec::new());
    };
    let r = store
        .range(&path::collection_prefix(rt, Some(namespace)), None, 0, None)
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    if r.kvs.is_empty() {
        return Ok(Vec::new());
    }
    let target = Target {
        rt,
        namespace: Some(namespace.to_string()),
        name: None,
        subresource: None,
    };
    r.kvs.iter().map(|kv| decode(kv, &target)).collect()
}
