//! The Table of a custom resource: `NAME` and its CustomResourceDefinition's
//! `additionalPrinterColumns`, each cell read with the column's JSONPath and converted as
//! upstream's `apiextensions-apiserver/pkg/registry/customresource/tableconvertor` does.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{human_age, str_at};

pub use crate::columns::CustomColumns;

/// The cells of one custom resource.
pub fn cells(custom: &CustomColumns, obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let mut cells = vec![json!(str_at(obj, "/metadata/name"))];
    for (column, path) in custom.columns.iter().skip(1).zip(custom.json_paths) {
        let cell = find(obj, path).map_or(Value::Null, |v| cell(column.ty, v, now));
        cells.push(cell);
    }
    cells
}

/// A cell of `ty` from the value found: strings print any value; the other types take only
/// a value of their type (else an empty cell); `date` prints the age.
fn cell(ty: &str, v: &Value, now: DateTime<Utc>) -> Value {
    match (ty, v) {
        ("string", Value::String(s)) => json!(s),
        ("string", other) => json!(other.to_string()),
        ("integer", Value::Number(n)) if n.is_i64() => json!(n.as_i64()),
        ("integer", Value::Number(n)) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => json!(f as i64),
            _ => Value::Null,
        },
        ("number", Value::Number(_)) | ("boolean", Value::Bool(_)) => v.clone(),
        ("date", Value::String(s)) => json!(human_age(s, now)),
        _ => Value::Null,
    }
}

/// The first value a printer column's simple JSONPath finds: `.a.b`, `.a[0].b`, `.a[*].b`,
/// `.a['x.y']` and `.conditions[?(@.type=="Ready")].status`, with or without braces.
pub fn find<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let path = path.trim();
    let path = path
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(path);
    let steps = steps(path)?;
    walk(obj, &steps)
}

#[derive(Debug, PartialEq)]
enum Step {
    Field(String),
    Index(usize),
    All,
    Filter(String, String),
}

fn steps(path: &str) -> Option<Vec<Step>> {
    let mut out = Vec::new();
    let mut rest = path.strip_prefix('$').unwrap_or(path);
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            if end > 0 {
                out.push(Step::Field(r[..end].to_string()));
            }
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            let inner = &r[..end];
            rest = &r[end + 1..];
            if inner == "*" {
                out.push(Step::All);
            } else if let Ok(i) = inner.parse() {
                out.push(Step::Index(i));
            } else if let Some(f) = inner.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')')) {
                let (field, value) = f.split_once("==")?;
                let value = value.trim().trim_matches(['"', '\'']);
                out.push(Step::Filter(field.trim().to_string(), value.to_string()));
            } else {
                out.push(Step::Field(inner.trim_matches(['"', '\'']).to_string()));
            }
        } else {
            return None;
        }
    }
    Some(out)
}

fn walk<'a>(v: &'a Value, steps: &[Step]) -> Option<&'a Value> {
    let Some((step, rest)) = steps.split_first() else {
        return Some(v);
    };
    match step {
        Step::Field(f) => walk(v.get(f.as_str())?, rest),
        Step::Index(i) => walk(v.get(*i)?, rest),
        Step::All => v.as_array()?.iter().find_map(|item| walk(item, rest)),
        Step::Filter(field, value) => v
            .as_array()?
            .iter()
            .filter(|item| match item.get(field.as_str()) {
                Some(Value::String(s)) => s == value,
                Some(other) => value.as_str() == other.to_string().as_str(),
                None => false,
            })
            .find_map(|item| walk(item, rest)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_json_paths_find_what_printer_columns_name() {
        let obj = json!({"spec": {"replicas": 3, "a.b": "dotted"},
            "status": {"conditions": [{"type": "Synced", "status": "False"},
                                      {"type": "Ready", "status": "True"}]}});
        for (path, want) in [
            (".spec.replicas", Some(json!(3))),
            ("{.spec.replicas}", Some(json!(3))),
            (".spec['a.b']", Some(json!("dotted"))),
            (".status.conditions[1].type", Some(json!("Ready"))),
            (".status.conditions[*].type", Some(json!("Synced"))),
            (
                ".status.conditions[?(@.type==\"Ready\")].status",
                Some(json!("True")),
            ),
            (".spec.missing", None),
            ("spec", None),
        ] {
            assert_eq!(find(&obj, path).cloned(), want, "{path}");
        }
    }

    #[test]
    fn cells_take_only_values_of_their_type_but_strings_print_anything() {
        let now = "2025-01-01T00:05:00Z".parse().unwrap();
        assert_eq!(cell("integer", &json!(3), now), json!(3));
        assert_eq!(cell("integer", &json!(3.0), now), json!(3));
        assert_eq!(cell("integer", &json!("3"), now), Value::Null);
        assert_eq!(cell("string", &json!(3), now), json!("3"));
        assert_eq!(cell("boolean", &json!(true), now), json!(true));
        assert_eq!(
            cell("date", &json!("2025-01-01T00:00:00Z"), now),
            json!("5m")
        );
    }
}
