//! ConfigMaps and Secrets: upstream caps the data they carry at 1 MiB (`MaxSecretSize`), so one
//! object cannot fill the store or every watcher's memory.

use super::{causes, Strategy};
use crate::error::Cause;
use base64::Engine;
use berth_api::registry::ResourceType;
use berth_core::validation::{self as v, FieldError};
use serde_json::Value;

/// Upstream's `MaxSecretSize`, also the limit of a ConfigMap's data.
pub const MAX_DATA_BYTES: usize = 1024 * 1024;

pub struct ConfigMap;

impl Strategy for ConfigMap {
    fn validate(&self, rt: &ResourceType, obj: &Value, _old: Option<&Value>) -> Vec<Cause> {
        let mut errors = v::validate_generic(obj, rt.namespaced);
        let size = text_bytes(&obj["data"]) + decoded_bytes(&obj["binaryData"]);
        if size > MAX_DATA_BYTES {
            errors.push(FieldError::too_long("", MAX_DATA_BYTES));
        }
        causes(errors)
    }
}

pub struct Secret;

impl Strategy for Secret {
    fn validate(&self, rt: &ResourceType, obj: &Value, _old: Option<&Value>) -> Vec<Cause> {
        let mut errors = v::validate_generic(obj, rt.namespaced);
        if decoded_bytes(&obj["data"]) > MAX_DATA_BYTES {
            errors.push(FieldError::too_long("data", MAX_DATA_BYTES));
        }
        causes(errors)
    }
}

/// Keys and values of a map of strings, in bytes.
fn text_bytes(map: &Value) -> usize {
    map.as_object().map_or(0, |m| {
        m.iter()
            .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
            .sum()
    })
}

/// Keys and base64-decoded values of a map of bytes (a value that is not base64 counts as is;
/// the schema check reports it).
fn decoded_bytes(map: &Value) -> usize {
    map.as_object().map_or(0, |m| {
        m.iter()
            .map(|(k, v)| {
                let text = v.as_str().unwrap_or("");
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .map_or(text.len(), |b| b.len());
                k.len() + bytes
            })
            .sum()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rt(plural: &str) -> &'static ResourceType {
        berth_api::registry::find("", "v1", plural).unwrap()
    }

    #[test]
    fn data_over_one_mebibyte_is_too_long() {
        let big = "x".repeat(MAX_DATA_BYTES);
        let cm = json!({"metadata": {"name": "c", "namespace": "d"}, "data": {"k": big}});
        let errs = ConfigMap.validate(rt("configmaps"), &cm, None);
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert_eq!(
            errs[0].message,
            "Too long: may not be more than 1048576 bytes"
        );
        let fits = json!({"metadata": {"name": "c", "namespace": "d"}, "data": {"k": "v"}});
        assert!(ConfigMap.validate(rt("configmaps"), &fits, None).is_empty());

        let encoded = base64::engine::general_purpose::STANDARD.encode(vec![0u8; MAX_DATA_BYTES]);
        let secret = json!({"metadata": {"name": "s", "namespace": "d"}, "data": {"k": encoded}});
        let errs = Secret.validate(rt("secrets"), &secret, None);
        assert_eq!(errs[0].field, "data");
    }
}
