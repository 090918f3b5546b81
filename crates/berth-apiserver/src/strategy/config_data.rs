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
        errors.extend(key_errors(
            &obj["data"],
            "data",
            Some(("binaryData", &obj["binaryData"])),
        ));
        errors.extend(key_errors(
            &obj["binaryData"],
            "binaryData",
            Some(("data", &obj["data"])),
        ));
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
        errors.extend(key_errors(&obj["data"], "data", None));
        // `stringData` is written into `data` (upstream converts it before validating).
        errors.extend(key_errors(&obj["stringData"], "data", None));
        if decoded_bytes(&obj["data"]) > MAX_DATA_BYTES {
            errors.push(FieldError::too_long("data", MAX_DATA_BYTES));
        }
        causes(errors)
    }
}

/// Upstream's `configMapKeyFmt`: what a ConfigMap or Secret key may consist of.
const CONFIG_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const CONFIG_KEY_MSG: &str =
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";

/// Upstream's `IsConfigMapKey`: why `key` cannot name a ConfigMap or Secret entry (it may
/// become a file name in a volume), empty if it can.
fn config_key_errors(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if key.len() > v::names::DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(v::names::max_len_error(
            v::names::DNS1123_SUBDOMAIN_MAX_LENGTH,
        ));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
    if key.is_empty() || !key.chars().all(allowed) {
        errs.push(v::names::regex_error(
            CONFIG_KEY_MSG,
            CONFIG_KEY_FMT,
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    match key {
        "." => errs.push("must not be '.'".into()),
        ".." => errs.push("must not be '..'".into()),
        _ if key.starts_with("..") => errs.push("must not start with '..'".into()),
        _ => {}
    }
    errs
}

/// The key errors of the map `map` at `path`, and the keys it shares with the other map of
/// the object (`(path, map)`), which upstream refuses as duplicates.
fn key_errors(map: &Value, path: &str, other: Option<(&str, &Value)>) -> Vec<FieldError> {
    let Some(map) = map.as_object() else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    for key in map.keys() {
        let field = format!("{path}[{key}]");
        for message in config_key_errors(key) {
            errors.push(FieldError::invalid(&field, key, message));
        }
        if let Some((other_path, other)) = other {
            if other.get(key).is_some() {
                let message = format!("duplicate of key present in {other_path}");
                errors.push(FieldError::invalid(&field, key, message));
            }
        }
    }
    errors
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

    fn messages(plural: &str, obj: Value) -> Vec<String> {
        let kind: &dyn Strategy = if plural == "secrets" {
            &Secret as &dyn Strategy
        } else {
            &ConfigMap
        };
        kind.validate(rt(plural), &obj, None)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn keys_are_checked_as_upstream_checks_config_keys() {
        let regex = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
        let meta = json!({"name": "s", "namespace": "d"});
        let cases: Vec<(&str, &str, Value, Vec<String>)> = vec![
            (
                "a Secret with an empty data key is refused",
                "secrets",
                json!({"metadata": meta, "data": {"": "YQ=="}}),
                vec![format!("data[]: Invalid value: \"\": {regex}")],
            ),
            (
                "a Secret's stringData keys are its data keys",
                "secrets",
                json!({"metadata": meta, "stringData": {"a b": "x"}}),
                vec![format!("data[a b]: Invalid value: \"a b\": {regex}")],
            ),
            (
                "a key may not climb out of a volume",
                "configmaps",
                json!({"metadata": meta, "data": {"..": "x", "..a": "y", ".": "z"}}),
                vec![
                    "data[.]: Invalid value: \".\": must not be '.'".to_string(),
                    "data[..]: Invalid value: \"..\": must not be '..'".to_string(),
                    "data[..a]: Invalid value: \"..a\": must not start with '..'".to_string(),
                ],
            ),
            (
                "a ConfigMap key in both maps is a duplicate in each",
                "configmaps",
                json!({"metadata": meta, "data": {"k": "x"}, "binaryData": {"k": "eA=="}}),
                vec![
                    "data[k]: Invalid value: \"k\": duplicate of key present in binaryData"
                        .to_string(),
                    "binaryData[k]: Invalid value: \"k\": duplicate of key present in data"
                        .to_string(),
                ],
            ),
            (
                "ordinary keys pass",
                "configmaps",
                json!({"metadata": meta, "data": {"key.name": "x", "KEY_NAME": "y", "key-name": "z"}}),
                vec![],
            ),
        ];
        for (name, plural, obj, want) in cases {
            assert_eq!(messages(plural, obj), want, "{name}");
        }
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
