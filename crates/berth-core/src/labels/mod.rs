//! Label selectors, as upstream `apimachinery/pkg/labels` and `metav1.LabelSelectorAsSelector`.
//!
//! Two ways in:
//! * [`Selector::parse`]: the string form of `?labelSelector=` and `kubectl -l`
//!   (`a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`, `a>1`, `a<1`, joined by
//!   commas). The empty string is [`Selector::everything`].
//! * [`Selector::from_label_selector`]: the JSON `LabelSelector` of workload and PDB specs
//!   (`{matchLabels, matchExpressions}`). An empty object matches everything; JSON `null`
//!   matches nothing (upstream: a nil selector selects no objects).
//!
//! Keys and values are validated like upstream (qualified names, label values); error messages
//! are upstream's, e.g. `unable to parse requirement: <nil>: Invalid value: "-a": name part ...`.

mod parser;
#[cfg(test)]
mod tests;

use std::fmt;

use serde_json::{Map, Value};

use crate::validation::names;
use crate::validation::render_list;

/// Why a selector could not be built; `message` is upstream's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SelectorError {
    /// Upstream's error message.
    pub message: String,
}

impl SelectorError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        SelectorError {
            message: message.into(),
        }
    }
}

/// How a requirement relates a label's value to its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `key in (v1,v2)`: the label exists and has one of the values.
    In,
    /// `key notin (v1,v2)`: the label is absent or has none of the values.
    NotIn,
    /// `key=v`.
    Equals,
    /// `key==v` (same meaning as `=`).
    DoubleEquals,
    /// `key!=v`: absent or different.
    NotEquals,
    /// `key`: the label exists.
    Exists,
    /// `!key`: the label does not exist.
    DoesNotExist,
    /// `key>n`: the label is an integer greater than `n`.
    GreaterThan,
    /// `key<n`: the label is an integer less than `n`.
    LessThan,
}

impl Operator {
    /// Upstream's name of the operator (`in`, `notin`, `=`, `==`, `!=`, `exists`, `!`, `gt`, `lt`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::In => "in",
            Operator::NotIn => "notin",
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::Exists => "exists",
            Operator::DoesNotExist => "!",
            Operator::GreaterThan => "gt",
            Operator::LessThan => "lt",
        }
    }
}

/// One `key op values` condition of a selector.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

impl Requirement {
    /// Builds a validated requirement (upstream `NewRequirement`): the key must be a qualified
    /// name, values label values; `In`/`NotIn` need at least one value, the equality operators
    /// exactly one, `Exists`/`DoesNotExist` none, `Gt`/`Lt` exactly one integer.
    pub fn new(key: &str, operator: Operator, values: Vec<String>) -> Result<Self, SelectorError> {
        let mut errs: Vec<String> = Vec::new();
        let key_errs = names::qualified_name(key);
        if !key_errs.is_empty() {
            errs.push(format!(
                "key: Invalid value: {}: {}",
                names::go_quote(key),
                key_errs.join("; ")
            ));
        }
        let vals = render_list(&values);
        match operator {
            Operator::In | Operator::NotIn if values.is_empty() => errs.push(format!(
                "values: Invalid value: {vals}: for 'in', 'notin' operators, values set can't be empty"
            )),
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals if values.len() != 1 => {
                errs.push(format!(
                    "values: Invalid value: {vals}: exact-match compatibility requires one single value"
                ))
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => errs.push(format!(
                "values: Invalid value: {vals}: values set must be empty for exists and does not exist"
            )),
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    errs.push(format!(
                        "values: Invalid value: {vals}: for 'Gt', 'Lt' operators, exactly one value is required"
                    ));
                }
                for (i, v) in values.iter().enumerate() {
                    if v.parse::<i64>().is_err() {
                        errs.push(format!(
                            "values[{i}]: Invalid value: {}: for 'Gt', 'Lt' operators, the value must be an integer",
                            names::go_quote(v)
                        ));
                    }
                }
            }
            _ => {}
        }
        for (i, v) in values.iter().enumerate() {
            let v_errs = names::label_value(v);
            if !v_errs.is_empty() {
                errs.push(format!(
                    "values[{i}][{key}]: Invalid value: {}: {}",
                    names::go_quote(v),
                    v_errs.join("; ")
                ));
            }
        }
        match errs.len() {
            0 => Ok(Requirement {
                key: key.to_string(),
                operator,
                values,
            }),
            1 => Err(SelectorError::new(errs.remove(0))),
            _ => Err(SelectorError::new(format!("[{}]", errs.join(", ")))),
        }
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values, in the order given (the string form prints them sorted).
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether this requirement holds for the labels that `get` looks up.
    pub fn matches_fn<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        let has = |v: &str| self.values.iter().any(|x| x == v);
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                get(&self.key).is_some_and(has)
            }
            Operator::NotIn | Operator::NotEquals => !get(&self.key).is_some_and(has),
            Operator::Exists => get(&self.key).is_some(),
            Operator::DoesNotExist => get(&self.key).is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let Some(actual) = get(&self.key).and_then(|v| v.parse::<i64>().ok()) else {
                    return false;
                };
                let [wanted] = self.values.as_slice() else {
                    return false;
                };
                let Ok(wanted) = wanted.parse::<i64>() else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    actual > wanted
                } else {
                    actual < wanted
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    /// Upstream's string form: `!k`, `k`, `k=v`, `k in (a,b)` (values sorted).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.operator {
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
        };
        f.write_str(op)?;
        let mut values = self.values.clone();
        values.sort();
        let set = matches!(self.operator, Operator::In | Operator::NotIn);
        if set {
            f.write_str("(")?;
        }
        f.write_str(&values.join(","))?;
        if set {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// A conjunction of [`Requirement`]s, or the selector that matches nothing.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Selector {
    requirements: Vec<Requirement>,
    nothing: bool,
}

impl Selector {
    /// The selector that matches every label set (the empty string, `{}`).
    pub fn everything() -> Self {
        Selector::default()
    }

    /// The selector that matches no label set (a `null` `LabelSelector`). Prints as `""`.
    pub fn nothing() -> Self {
        Selector {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// Parses the string form; see the module docs for the grammar. Requirements are sorted
    /// by key and set values sorted and deduplicated, like upstream.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut requirements = parser::parse(s)?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Selector {
            requirements,
            nothing: false,
        })
    }

    /// Builds a selector from a `LabelSelector` JSON value (upstream `LabelSelectorAsSelector`):
    /// `null` matches nothing, `{}` (no labels, no expressions) matches everything. Operators
    /// are `In`, `NotIn`, `Exists`, `DoesNotExist`; anything else is
    /// `"X" is not a valid label selector operator`.
    pub fn from_label_selector(v: &Value) -> Result<Self, SelectorError> {
        let obj = match v {
            Value::Null => return Ok(Selector::nothing()),
            Value::Object(o) => o,
            _ => return Err(SelectorError::new("label selector must be an object")),
        };
        let mut requirements = Vec::new();
        if let Some(labels) = obj.get("matchLabels").filter(|l| !l.is_null()) {
            let labels = labels
                .as_object()
                .ok_or_else(|| SelectorError::new("matchLabels must be an object"))?;
            for (k, v) in labels {
                let v = v.as_str().ok_or_else(|| {
                    SelectorError::new(format!("matchLabels[{k}] must be a string"))
                })?;
                requirements.push(Requirement::new(k, Operator::Equals, vec![v.to_string()])?);
            }
        }
        if let Some(exprs) = obj.get("matchExpressions").filter(|e| !e.is_null()) {
            let exprs = exprs
                .as_array()
                .ok_or_else(|| SelectorError::new("matchExpressions must be a list"))?;
            for e in exprs {
                let op_str = e.get("operator").and_then(Value::as_str).unwrap_or("");
                let op = match op_str {
                    "In" => Operator::In,
                    "NotIn" => Operator::NotIn,
                    "Exists" => Operator::Exists,
                    "DoesNotExist" => Operator::DoesNotExist,
                    other => {
                        return Err(SelectorError::new(format!(
                            "{} is not a valid label selector operator",
                            names::go_quote(other)
                        )))
                    }
                };
                let key = e.get("key").and_then(Value::as_str).unwrap_or("");
                let values = string_list(e.get("values"))?;
                requirements.push(Requirement::new(key, op, values)?);
            }
        }
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Selector {
            requirements,
            nothing: false,
        })
    }

    /// A selector requiring exactly the given labels (upstream `SelectorFromSet`); not
    /// validated. Non-string values are skipped.
    pub fn from_labels(labels: &Map<String, Value>) -> Self {
        let mut requirements: Vec<Requirement> = labels
            .iter()
            .filter_map(|(k, v)| {
                Some(Requirement {
                    key: k.clone(),
                    operator: Operator::Equals,
                    values: vec![v.as_str()?.to_string()],
                })
            })
            .collect();
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Selector {
            requirements,
            nothing: false,
        }
    }

    /// The requirements, sorted by key (empty for both everything and nothing).
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// True for the selector that matches everything (no requirements).
    pub fn is_everything(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// True for the selector that matches nothing.
    pub fn is_nothing(&self) -> bool {
        self.nothing
    }

    /// If a requirement pins `key` to a single value (`=`, `==`, or `in` with one value),
    /// that value (upstream `RequiresExactMatch`).
    pub fn requires_exact_match(&self, key: &str) -> Option<&str> {
        let r = self.requirements.iter().find(|r| r.key == key)?;
        match (r.operator, r.values.as_slice()) {
            (Operator::Equals | Operator::DoubleEquals | Operator::In, [v]) => Some(v),
            _ => None,
        }
    }

    /// Whether an object's `metadata.labels` map matches. Non-string values count as absent;
    /// pass an empty map when the object has no labels.
    pub fn matches(&self, labels: &Map<String, Value>) -> bool {
        self.matches_fn(|k| labels.get(k).and_then(Value::as_str))
    }

    /// Whether the labels that `get` looks up match (`get` returns `None` for absent labels).
    pub fn matches_fn<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches_fn(&get))
    }
}

impl fmt::Display for Selector {
    /// Requirements joined by `,` (upstream `String()`); everything and nothing print as `""`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Selector {
    type Err = SelectorError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Selector::parse(s)
    }
}

fn string_list(v: Option<&Value>) -> Result<Vec<String>, SelectorError> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| SelectorError::new("values must be strings"))
            })
            .collect(),
        Some(_) => Err(SelectorError::new("values must be a list")),
    }
}
