//! Upstream-exact field validation of Kubernetes objects given as JSON.
//!
//! Each validator returns a list of [`FieldError`]s (empty = valid) whose
//! [`message`](FieldError::message) and [`reason`](FieldError::reason) are what the upstream
//! API server puts into a 422 `Status` (`details.causes[].message` is
//! [`FieldError::body`]). [`invalid_message`] builds the `Status` message
//! (`Pod "p2" is invalid: spec.containers[0].image: Required value`).
//!
//! The input is expected to be defaulted already (e.g. `restartPolicy` filled in); absent
//! optional fields are not errors. Values of the wrong JSON type (a number where a string
//! belongs) are reported as invalid rather than as the 400 decode error upstream returns.

mod affinity;
mod meta;
pub mod names;
mod pod;
mod resources;
mod sysctls;
mod taints;

use serde_json::Value;

pub use meta::{validate_generic, validate_labels, validate_namespace, validate_object_meta};
pub use pod::{validate_node, validate_pod, validate_pod_spec, validate_pod_template};
pub use taints::{validate_taints, validate_tolerations};

/// The kind of a field error (upstream `field.ErrorType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldErrorKind {
    /// `Not found`.
    NotFound,
    /// `Required value`: a required field is missing or empty.
    Required,
    /// `Duplicate value`: a value that must be unique is repeated.
    Duplicate,
    /// `Invalid value`: the value is malformed or out of range.
    Invalid,
    /// `Unsupported value`: the value is not one of an enumerated set.
    NotSupported,
    /// `Forbidden`: the field may not be set (here, or by this user).
    Forbidden,
    /// `Too long`: the value exceeds a length limit.
    TooLong,
    /// `Too many`: a list has too many items.
    TooMany,
    /// `Internal error`.
    Internal,
}

impl FieldErrorKind {
    /// Upstream's text for the kind (`Required value`, `Invalid value`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            FieldErrorKind::NotFound => "Not found",
            FieldErrorKind::Required => "Required value",
            FieldErrorKind::Duplicate => "Duplicate value",
            FieldErrorKind::Invalid => "Invalid value",
            FieldErrorKind::NotSupported => "Unsupported value",
            FieldErrorKind::Forbidden => "Forbidden",
            FieldErrorKind::TooLong => "Too long",
            FieldErrorKind::TooMany => "Too many",
            FieldErrorKind::Internal => "Internal error",
        }
    }

    /// Upstream's `StatusCause` reason (`FieldValueRequired`, ...).
    pub fn reason(self) -> &'static str {
        match self {
            FieldErrorKind::NotFound => "FieldValueNotFound",
            FieldErrorKind::Required => "FieldValueRequired",
            FieldErrorKind::Duplicate => "FieldValueDuplicate",
            FieldErrorKind::Invalid => "FieldValueInvalid",
            FieldErrorKind::NotSupported => "FieldValueNotSupported",
            FieldErrorKind::Forbidden => "FieldValueForbidden",
            FieldErrorKind::TooLong => "FieldValueTooLong",
            FieldErrorKind::TooMany => "FieldValueTooMany",
            FieldErrorKind::Internal => "InternalError",
        }
    }
}

/// One validation failure at one field path (upstream `field.Error`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldError {
    /// The field path, e.g. `spec.containers[0].image` or `metadata.labels`.
    pub field: String,
    /// What is wrong.
    pub kind: FieldErrorKind,
    /// The offending value when it is a string; rendered Go-quoted (`"-bad"`). `None` when
    /// upstream omits it or when it is not a string: non-string values (numbers, structs,
    /// lists) are rendered into the front of `detail` instead, which yields the same message.
    pub value: Option<String>,
    /// The explanation after the value; may be empty.
    pub detail: String,
}

impl FieldError {
    /// `Required value` at `field`, with an optional detail.
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            kind: FieldErrorKind::Required,
            value: None,
            detail: detail.into(),
        }
    }

    /// `Invalid value: "<value>": <detail>`.
    pub fn invalid(field: impl Into<String>, value: &str, detail: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            kind: FieldErrorKind::Invalid,
            value: Some(value.to_string()),
            detail: detail.into(),
        }
    }

    /// `Invalid value: <rendered>: <detail>` for a non-string value already rendered the way
    /// Go's `%v`/`%#v` would (`0`, `[]string{"a"}`).
    pub fn invalid_rendered(field: impl Into<String>, rendered: &str, detail: &str) -> Self {
        FieldError {
            field: field.into(),
            kind: FieldErrorKind::Invalid,
            value: None,
            detail: format!("{rendered}: {detail}"),
        }
    }

    /// `Unsupported value: "<value>": supported values: "a", "b"`.
    pub fn not_supported(field: impl Into<String>, value: &str, supported: &[&str]) -> Self {
        let quoted: Vec<String> = supported.iter().map(|s| names::go_quote(s)).collect();
        let detail = if quoted.is_empty() {
            String::new()
        } else {
            format!("supported values: {}", quoted.join(", "))
        };
        FieldError {
            field: field.into(),
            kind: FieldErrorKind::NotSupported,
            value: Some(value.to_string()),
            detail,
        }
    }

    /// `Duplicate value: "<value>"`.
    pub fn duplicate(field: impl Into<String>, value: &str) -> Self {
        FieldError {
            field: field.into(),
            kind: FieldErrorKind::Duplicate,
            value: Some(value.to_string()),
            detail: String::new(),
        }
    }

    /// `Forbidden: <detail>`.
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            kind: FieldErrorKind::Forbidden,
            value: None,
            detail: detail.into(),
        }
    }

    /// `Too long: may not be more than <max> bytes`.
    pub fn too_long(field: impl Into<String>, max: usize) -> Self {
        FieldError {
            field: field.into(),
            kind: FieldErrorKind::TooLong,
            value: None,
            detail: format!("may not be more than {max} bytes"),
        }
    }

    /// The message without the field path (upstream `ErrorBody`, used as a cause message),
    /// e.g. `Invalid value: "-bad": name part must ...`.
    pub fn body(&self) -> String {
        let mut s = self.kind.as_str().to_string();
        let shows_value = !matches!(
            self.kind,
            FieldErrorKind::Required
                | FieldErrorKind::Forbidden
                | FieldErrorKind::TooLong
                | FieldErrorKind::Internal
        );
        if let (true, Some(v)) = (shows_value, &self.value) {
            s.push_str(": ");
            s.push_str(&names::go_quote(v));
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }

    /// The full message, `<field>: <body>` (upstream `Error()`).
    pub fn message(&self) -> String {
        format!("{}: {}", self.field, self.body())
    }

    /// The `StatusCause` reason, e.g. `FieldValueRequired`.
    pub fn reason(&self) -> &'static str {
        self.kind.reason()
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message())
    }
}

/// Joins errors the way upstream's `ErrorList.ToAggregate().Error()` does: duplicates dropped,
/// one message alone, several as `[a, b]`. Empty input gives an empty string.
pub fn aggregate_message(errs: &[FieldError]) -> String {
    let mut seen = std::collections::HashSet::new();
    let msgs: Vec<String> = errs
        .iter()
        .map(FieldError::message)
        .filter(|m| seen.insert(m.clone()))
        .collect();
    match msgs.len() {
        0 => String::new(),
        1 => msgs.into_iter().next().unwrap_or_default(),
        _ => format!("[{}]", msgs.join(", ")),
    }
}

/// The 422 `Status` message: `<Kind> "<name>" is invalid: <aggregate>`. `qualified_kind` is
/// `Pod` for the core group and `Deployment.apps` otherwise, as upstream prints it.
pub fn invalid_message(qualified_kind: &str, name: &str, errs: &[FieldError]) -> String {
    format!(
        "{qualified_kind} {} is invalid: {}",
        names::go_quote(name),
        aggregate_message(errs)
    )
}

/// Go's `%#v` of a `[]string`: `[]string{"a", "b"}`.
pub fn render_list(values: &[String]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| names::go_quote(v)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// A string field of an object; `""` when absent or not a string.
pub(crate) fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The items of a list field; empty when absent or not a list.
pub(crate) fn list_of<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Field errors for the entries of a qualified-name check, one per message (upstream
/// `ValidateLabelName`).
pub(crate) fn label_name_errors(value: &str, path: &str) -> Vec<FieldError> {
    names::qualified_name(value)
        .into_iter()
        .map(|m| FieldError::invalid(path, value, m))
        .collect()
}

#[cfg(test)]
mod tests;
