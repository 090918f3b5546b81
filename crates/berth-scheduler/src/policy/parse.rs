//! Text to document tree: JSON or YAML.

use serde_json::Value;

use super::PolicyEntryError;

/// Parses policy text into a JSON value tree.
pub(crate) fn document(text: &str) -> Result<Value, PolicyEntryError> {
    serde_json::from_str(text).map_err(|e| PolicyEntryError::new("document", e.to_string()))
}
