//! Field errors worded as apimachinery's `field.Error` (`<path>: <body>`), and a reader that walks
//! a configuration document while keeping the path of each value it reads.

use serde_json::Value;
use std::fmt;

/// What is wrong with one field, as apimachinery's `field.ErrorType` words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldErrorKind {
    /// `Required value` (with an optional detail).
    Required(String),
    /// `Invalid value: <value>: <detail>`.
    Invalid {
        /// The offending value, rendered as upstream renders it (strings quoted).
        value: String,
        /// Why it is invalid.
        detail: String,
    },
    /// `Duplicate value: <value>`.
    Duplicate(String),
    /// `Unsupported value: <value>: supported values: "a", "b"`.
    NotSupported {
        /// The offending value, rendered.
        value: String,
        /// The values accepted.
        supported: Vec<String>,
    },
    /// `Forbidden: <detail>`.
    Forbidden(String),
    /// `strict decoding error: unknown field "<path>"` (the path is the whole message).
    UnknownField,
}

/// One problem with one field of a KubeSchedulerConfiguration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The field's path, upstream's spelling (`profiles[0].plugins.score.enabled[1]`).
    pub path: String,
    /// What is wrong.
    pub kind: FieldErrorKind,
}

impl FieldError {
    /// `Required value`.
    pub fn required(path: &str, detail: &str) -> FieldError {
        FieldError {
            path: path.to_string(),
            kind: FieldErrorKind::Required(detail.to_string()),
        }
    }
    /// `Invalid value: <value>: <detail>`; `value` is already rendered (see [`render`]).
    pub fn invalid(path: &str, value: impl Into<String>, detail: impl Into<String>) -> FieldError {
        FieldError {
            path: path.to_string(),
            kind: FieldErrorKind::Invalid {
                value: value.into(),
                detail: detail.into(),
            },
        }
    }
    /// `Duplicate value: <value>`.
    pub fn duplicate(path: &str, value: impl Into<String>) -> FieldError {
        FieldError {
            path: path.to_string(),
            kind: FieldErrorKind::Duplicate(value.into()),
        }
    }
    /// `Unsupported value: ...`.
    pub fn not_supported(path: &str, value: impl Into<String>, supported: &[&str]) -> FieldError {
        FieldError {
            path: path.to_string(),
            kind: FieldErrorKind::NotSupported {
                value: value.into(),
                supported: supported.iter().map(|s| s.to_string()).collect(),
            },
        }
    }
    /// `Forbidden: <detail>`.
    pub fn forbidden(path: &str, detail: &str) -> FieldError {
        FieldError {
            path: path.to_string(),
            kind: FieldErrorKind::Forbidden(detail.to_string()),
        }
    }
    /// `strict decoding error: unknown field "<path>"`.
    pub fn unknown(path: &str) -> FieldError {
        FieldError {
            path: path.to_string(),
            kind: FieldErrorKind::UnknownField,
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            FieldErrorKind::UnknownField => {
                write!(f, "strict decoding error: unknown field \"{}\"", self.path)
            }
            FieldErrorKind::Required(d) if d.is_empty() => {
                write!(f, "{}: Required value", self.path)
            }
            FieldErrorKind::Required(d) => write!(f, "{}: Required value: {d}", self.path),
            FieldErrorKind::Invalid { value, detail } => {
                write!(f, "{}: Invalid value: {value}: {detail}", self.path)
            }
            FieldErrorKind::Duplicate(v) => write!(f, "{}: Duplicate value: {v}", self.path),
            FieldErrorKind::NotSupported { value, supported } => {
                let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
                write!(
                    f,
                    "{}: Unsupported value: {value}: supported values: {}",
                    self.path,
                    list.join(", ")
                )
            }
            FieldErrorKind::Forbidden(d) => write!(f, "{}: Forbidden: {d}", self.path),
        }
    }
}

/// A value as apimachinery prints it in an error: strings quoted, numbers and booleans plain.
pub fn render(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

/// A value of the document with its path; reading records problems in `errors`.
#[derive(Clone, Copy)]
pub(crate) struct At<'a> {
    pub value: &'a Value,
    pub path: &'a str,
}

/// The errors found while reading, in document order.
pub(crate) type Errors = Vec<FieldError>;

/// `parent.child` (or `child` at the top).
pub(crate) fn child(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
}

/// `parent[i]`.
pub(crate) fn index(parent: &str, i: usize) -> String {
    format!("{parent}[{i}]")
}

impl<'a> At<'a> {
    /// The object's keys, reporting those not in `known` as unknown fields. A non-object value is
    /// reported as invalid and reads as empty.
    pub fn object(&self, known: &[&str], errors: &mut Errors) -> bool {
        match self.value {
            Value::Object(map) => {
                for k in map.keys() {
                    if !known.contains(&k.as_str()) {
                        errors.push(FieldError::unknown(&child(self.path, k)));
                    }
                }
                true
            }
            Value::Null => false,
            other => {
                errors.push(FieldError::invalid(
                    self.path,
                    render(other),
                    "must be an object",
                ));
                false
            }
        }
    }

    /// The member `name` if present and not null.
    pub fn get(&self, name: &str) -> Option<&'a Value> {
        self.value.get(name).filter(|v| !v.is_null())
    }

    /// An integer member; a value of another type is reported.
    pub fn int(&self, name: &str, errors: &mut Errors) -> Option<i64> {
        let v = self.get(name)?;
        match v.as_i64() {
            Some(n) => Some(n),
            None => {
                errors.push(FieldError::invalid(
                    &child(self.path, name),
                    render(v),
                    "must be an integer",
                ));
                None
            }
        }
    }

    /// A number member (integers included).
    pub fn number(&self, name: &str, errors: &mut Errors) -> Option<f64> {
        let v = self.get(name)?;
        match v.as_f64() {
            Some(n) => Some(n),
            None => {
                errors.push(FieldError::invalid(
                    &child(self.path, name),
                    render(v),
                    "must be a number",
                ));
                None
            }
        }
    }

    /// A string member.
    pub fn string(&self, name: &str, errors: &mut Errors) -> Option<String> {
        let v = self.get(name)?;
        match v.as_str() {
            Some(s) => Some(s.to_string()),
            None => {
                errors.push(FieldError::invalid(
                    &child(self.path, name),
                    render(v),
                    "must be a string",
                ));
                None
            }
        }
    }

    /// A boolean member.
    pub fn boolean(&self, name: &str, errors: &mut Errors) -> Option<bool> {
        let v = self.get(name)?;
        match v.as_bool() {
            Some(b) => Some(b),
            None => {
                errors.push(FieldError::invalid(
                    &child(self.path, name),
                    render(v),
                    "must be a boolean",
                ));
                None
            }
        }
    }

    /// A list member's items (empty when absent; a non-list is reported).
    pub fn list(&self, name: &str, errors: &mut Errors) -> &'a [Value] {
        match self.get(name) {
            None => &[],
            Some(Value::Array(items)) => items,
            Some(other) => {
                errors.push(FieldError::invalid(
                    &child(self.path, name),
                    render(other),
                    "must be a list",
                ));
                &[]
            }
        }
    }

    /// A duration member in Go's `metav1.Duration` form (`15s`, `1m30s`).
    pub fn duration(&self, name: &str, errors: &mut Errors) -> Option<std::time::Duration> {
        let v = self.get(name)?;
        let parsed = v.as_str().and_then(|s| {
            berth_core::duration::parse_with(s, berth_core::duration::Syntax::FLAG).ok()
        });
        if parsed.is_none() {
            errors.push(FieldError::invalid(
                &child(self.path, name),
                render(v),
                "must be a duration such as 15s or 1m30s",
            ));
        }
        parsed
    }
}
