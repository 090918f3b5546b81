//! Applying a patch document of one of the three patch media types to an object.

use crate::codec::meta_str;
use crate::error::{ApiError, ApiResult, Cause};
use serde_json::Value;

/// Applies a patch of the given media type to `old`.
pub fn apply_patch(ctype: &str, old: &Value, patch: &Value, kind: &str) -> ApiResult<Value> {
    match ctype {
        "application/json-patch+json" => {
            let p: json_patch::Patch = serde_json::from_value(patch.clone())
                .map_err(|e| ApiError::BadRequest(format!("error decoding patch: {e}")))?;
            let mut doc = old.clone();
            json_patch::patch(&mut doc, &p).map_err(|e| ApiError::Invalid {
                kind: kind.into(),
                name: meta_str(old, "name").into(),
                causes: vec![Cause {
                    reason: "FieldValueInvalid".into(),
                    message: e.to_string(),
                    field: String::new(),
                }],
            })?;
            Ok(doc)
        }
        "application/merge-patch+json" => {
            let mut doc = old.clone();
            json_patch::merge(&mut doc, patch);
            Ok(doc)
        }
        _ => berth_core::patch::strategic_merge(old, patch, kind)
            .map_err(|e| ApiError::BadRequest(e.to_string())),
    }
}
