//! Document tree to validated [`Policy`], aggregating every error.

use serde_json::Value;

use super::{Policy, PolicyEntryError};

/// Validates a parsed document.
pub(crate) fn policy(_document: &Value) -> Result<Policy, Vec<PolicyEntryError>> {
    Err(vec![PolicyEntryError::new("document", "policy loading is not implemented yet")])
}
