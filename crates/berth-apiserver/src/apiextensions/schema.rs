//! A CRD version's structural schema (`openAPIV3Schema`) and what it does to a custom
//! resource: pruning of fields it does not declare, defaulting, and validation with upstream's
//! words (`apiextensions-apiserver/pkg/apiserver/schema/...` and kube-openapi's validator as
//! `pkg/apiserver/validation` turns its results into field errors).

use crate::error::Cause;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The deepest schema berth reads: deeper nesting is refused when the CRD is written
/// (upstream bounds a CRD by its size; a schema nested this deep is a mistake or an attack on
/// the recursive walks below, which must not overflow the stack).
pub const MAX_SCHEMA_DEPTH: usize = 64;

/// One node of a structural schema.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    pub ty: String,
    pub format: String,
    pub properties: BTreeMap<String, Schema>,
    /// `additionalProperties` as a schema (a map's values).
    pub additional: Option<Box<Schema>>,
    pub items: Option<Box<Schema>>,
    pub required: Vec<String>,
    pub enumeration: Vec<Value>,
    pub default: Option<Value>,
    pub nullable: bool,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    pub exclusive_minimum: bool,
    pub exclusive_maximum: bool,
    pub multiple_of: Option<f64>,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub pattern: Option<(String, regex::Regex)>,
    pub min_items: Option<u64>,
    pub max_items: Option<u64>,
    pub unique_items: bool,
    pub min_properties: Option<u64>,
    pub max_properties: Option<u64>,
    pub preserve_unknown: bool,
    pub embedded_resource: bool,
    pub int_or_string: bool,
    /// `x-kubernetes-list-type`: `atomic`, `set` or `map`.
    pub list_type: String,
    pub list_map_keys: Vec<String>,
    /// `x-kubernetes-validations` (CEL rules).
    pub rules: Vec<super::cel::Rule>,
    /// The logic junctors: value validations only (the CRD's structural rules keep types,
    /// defaults and the rest out of them), checked on the same value as this node.
    pub all_of: Vec<Schema>,
    pub any_of: Vec<Schema>,
    pub one_of: Vec<Schema>,
    pub not: Option<Box<Schema>>,
}

impl Schema {
    /// Reads a schema, or says what in it cannot be read.
    pub fn parse(v: &Value) -> Result<Schema, String> {
        parse(v, "", 0)
    }
}

fn parse(v: &Value, path: &str, depth: usize) -> Result<Schema, String> {
    if depth > MAX_SCHEMA_DEPTH {
        return Err(format!(
            "{path}: the schema is nested deeper than {MAX_SCHEMA_DEPTH} levels"
        ));
    }
    let Some(o) = v.as_object() else {
        return Err(format!("{path}: must be an object"));
    };
    let s = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let f = |k: &str| o.get(k).and_then(Value::as_f64);
    let u = |k: &str| o.get(k).and_then(Value::as_u64);
    let b = |k: &str| o.get(k).and_then(Value::as_bool).unwrap_or(false);
    let mut schema = Schema {
        ty: s("type"),
        format: s("format"),
        default: o.get("default").cloned(),
        nullable: b("nullable"),
        minimum: f("minimum"),
        maximum: f("maximum"),
        exclusive_minimum: b("exclusiveMinimum"),
        exclusive_maximum: b("exclusiveMaximum"),
        multiple_of: f("multipleOf"),
        min_length: u("minLength"),
        max_length: u("maxLength"),
        min_items: u("minItems"),
        max_items: u("maxItems"),
        unique_items: b("uniqueItems"),
        min_properties: u("minProperties"),
        max_properties: u("maxProperties"),
        preserve_unknown: b("x-kubernetes-preserve-unknown-fields"),
        embedded_resource: b("x-kubernetes-embedded-resource"),
        int_or_string: b("x-kubernetes-int-or-string"),
        list_type: s("x-kubernetes-list-type"),
        ..Schema::default()
    };
    if let Some(p) = o.get("pattern").and_then(Value::as_str) {
        let re = regex::Regex::new(p)
            .map_err(|e| format!("{path}.pattern: Invalid value: {p:?}: {e}"))?;
        schema.pattern = Some((p.to_string(), re));
    }
    schema.required = strings(o.get("required"));
    schema.list_map_keys = strings(o.get("x-kubernetes-list-map-keys"));
    schema.enumeration = o
        .get("enum")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(props) = o.get("properties").and_then(Value::as_object) {
        for (k, p) in props {
            let child = parse(p, &format!("{path}.properties[{k}]"), depth + 1)?;
            schema.properties.insert(k.clone(), child);
        }
    }
    match o.get("additionalProperties") {
        Some(Value::Object(_)) => {
            let a = &o["additionalProperties"];
            let child = parse(a, &format!("{path}.additionalProperties"), depth + 1)?;
            schema.additional = Some(Box::new(child));
        }
        // `true` keeps any value (what preserve-unknown-fields says for a map).
        Some(Value::Bool(true)) => schema.preserve_unknown = true,
        _ => {}
    }
    if let Some(items) = o.get("items") {
        let child = parse(items, &format!("{path}.items"), depth + 1)?;
        schema.items = Some(Box::new(child));
    }
    for (key, list) in [
        ("allOf", &mut schema.all_of),
        ("anyOf", &mut schema.any_of),
        ("oneOf", &mut schema.one_of),
    ] {
        for (i, branch) in o
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            list.push(parse(branch, &format!("{path}.{key}[{i}]"), depth + 1)?);
        }
    }
    if let Some(not) = o.get("not") {
        schema.not = Some(Box::new(parse(not, &format!("{path}.not"), depth + 1)?));
    }
    if let Some(rules) = o.get("x-kubernetes-validations").and_then(Value::as_array) {
        for (i, r) in rules.iter().enumerate() {
            let rule = super::cel::Rule::parse(r)
                .map_err(|e| format!("{path}.x-kubernetes-validations[{i}]: {e}"))?;
            schema.rules.push(rule);
        }
    }
    Ok(schema)
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The members of `metadata` an embedded resource keeps (upstream's ObjectMeta fields).
const OBJECT_META_FIELDS: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Removes what the schema does not declare from a whole custom resource (its `apiVersion`,
/// `kind` and `metadata` are the server's, never pruned) and returns the paths removed
/// (`spec.foo`), for field validation.
pub fn prune_object(obj: &mut Value, schema: &Schema) -> Vec<String> {
    let mut removed = Vec::new();
    let Some(o) = obj.as_object_mut() else {
        return removed;
    };
    for (k, v) in o.iter_mut() {
        if matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        if let Some(child) = schema.properties.get(k) {
            prune(v, child, k, &mut removed);
        }
    }
    if !schema.preserve_unknown {
        o.retain(|k, _| {
            let keep = matches!(k.as_str(), "apiVersion" | "kind" | "metadata")
                || schema.properties.contains_key(k);
            if !keep {
                removed.push(k.clone());
            }
            keep
        });
    }
    removed.sort();
    removed
}

fn prune(v: &mut Value, schema: &Schema, path: &str, removed: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            if schema.embedded_resource {
                prune_embedded_meta(o);
            }
            if let Some(additional) = &schema.additional {
                for (k, child) in o.iter_mut() {
                    prune(child, additional, &format!("{path}.{k}"), removed);
                }
                return;
            }
            for (k, child) in o.iter_mut() {
                if let Some(s) = schema.properties.get(k) {
                    prune(child, s, &format!("{path}.{k}"), removed);
                }
            }
            if !schema.preserve_unknown {
                o.retain(|k, _| {
                    let keep = schema.properties.contains_key(k)
                        || (schema.embedded_resource
                            && matches!(k.as_str(), "apiVersion" | "kind" | "metadata"));
                    if !keep {
                        removed.push(format!("{path}.{k}"));
                    }
                    keep
                });
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = &schema.items {
                for (i, item) in items.iter_mut().enumerate() {
                    prune(item, item_schema, &format!("{path}[{i}]"), removed);
                }
            }
        }
        _ => {}
    }
}

fn prune_embedded_meta(o: &mut Map<String, Value>) {
    if let Some(Value::Object(meta)) = o.get_mut("metadata") {
        meta.retain(|k, _| OBJECT_META_FIELDS.contains(&k.as_str()));
    }
}

/// Sets the schema's defaults where the object lacks the field (or has `null` where null is
/// not allowed), from the outside in, as upstream's structural defaulting does.
pub fn default(v: &mut Value, schema: &Schema) {
    match v {
        Value::Object(o) => {
            for (k, s) in &schema.properties {
                let absent = match o.get(k) {
                    None => true,
                    Some(Value::Null) => !s.nullable,
                    Some(_) => false,
                };
                if absent {
                    if let Some(d) = &s.default {
                        o.insert(k.clone(), d.clone());
                    }
                }
            }
            for (k, child) in o.iter_mut() {
                if let Some(s) = schema.properties.get(k) {
                    default(child, s);
                } else if let Some(additional) = &schema.additional {
                    default(child, additional);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = &schema.items {
                for item in items.iter_mut() {
                    if item.is_null() && !item_schema.nullable {
                        if let Some(d) = &item_schema.default {
                            *item = d.clone();
                        }
                    }
                    default(item, item_schema);
                }
            }
        }
        _ => {}
    }
}

/// Every field error of a custom resource against its schema (`metadata`, `apiVersion` and
/// `kind` are checked elsewhere). On an update from `old`, errors of values left as they were
/// are not reported (upstream's `CRDValidationRatcheting`, see [`super::ratcheting`]), so a
/// CRD that tightens its schema does not block unrelated updates of the objects it holds.
pub fn validate_object(obj: &Value, old: Option<&Value>, schema: &Schema) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(o) = obj.as_object() else {
        return causes;
    };
    for r in &schema.required {
        if !o.contains_key(r) && !matches!(r.as_str(), "apiVersion" | "kind" | "metadata") {
            causes.push(required(r));
        }
    }
    for (k, v) in o {
        if matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        if let Some(s) = schema.properties.get(k) {
            validate(v, s, k, &mut causes, old.and_then(|o| o.get(k)));
        }
    }
    let mut junctor_causes = Vec::new();
    validate_junctors(obj, schema, "", &mut junctor_causes);
    junctor_causes.extend(causes);
    junctor_causes
}

/// `path.key`, or `key` at the root.
fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The errors of `v` against one junctor branch, kept apart to count and choose among them.
fn branch_causes(v: &Value, branch: &Schema, path: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    // Junctors are not ratcheted inside (upstream's neither): their node ratchets as a whole.
    validate(v, branch, path, &mut out, None);
    out
}

/// A junctor's own failure, as kube-openapi reports it: a composite error that
/// apiextensions turns into `field.Invalid` at the root path (`<nil>`) with the value `""`,
/// naming the node by its quoted path.
fn composite(message: String) -> Cause {
    cause(
        "FieldValueInvalid",
        "<nil>",
        format!("Invalid value: \"\": {message}"),
    )
}

/// `anyOf`, `oneOf`, `allOf` and `not` at one node, in kube-openapi's order and words
/// (`validate/schema_props.go`): a failed `anyOf` or `oneOf` says so and adds the errors of
/// the branch that came closest (here: the first with the fewest errors); `allOf` adds every
/// branch's errors and then says not all validated; `not` fails when its schema validates.
fn validate_junctors(v: &Value, schema: &Schema, path: &str, causes: &mut Vec<Cause>) {
    let shown = berth_core::validation::names::go_quote(path);
    if !schema.any_of.is_empty() {
        let mut best: Option<Vec<Cause>> = None;
        let mut matched = false;
        for branch in &schema.any_of {
            let errs = branch_causes(v, branch, path);
            if errs.is_empty() {
                matched = true;
                best = None;
                break;
            }
            if best.as_ref().is_none_or(|b| errs.len() < b.len()) {
                best = Some(errs);
            }
        }
        if !matched {
            causes.push(composite(format!(
                "{shown} must validate at least one schema (anyOf)"
            )));
        }
        causes.extend(best.unwrap_or_default());
    }
    if !schema.one_of.is_empty() {
        let mut best: Option<Vec<Cause>> = None;
        let mut valid = 0;
        for branch in &schema.one_of {
            let errs = branch_causes(v, branch, path);
            if errs.is_empty() {
                valid += 1;
                best = None;
            } else if valid == 0 && best.as_ref().is_none_or(|b| errs.len() < b.len()) {
                best = Some(errs);
            }
        }
        if valid != 1 {
            let found = if valid == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {valid} valid alternatives")
            };
            causes.push(composite(format!(
                "{shown} must validate one and only one schema (oneOf). {found}"
            )));
            causes.extend(best.unwrap_or_default());
        }
    }
    if !schema.all_of.is_empty() {
        let mut valid = 0;
        for branch in &schema.all_of {
            let errs = branch_causes(v, branch, path);
            if errs.is_empty() {
                valid += 1;
            }
            causes.extend(errs);
        }
        if valid != schema.all_of.len() {
            let none = if valid == 0 { ". None validated" } else { "" };
            causes.push(composite(format!(
                "{shown} must validate all the schemas (allOf){none}"
            )));
        }
    }
    if let Some(not) = &schema.not {
        if branch_causes(v, not, path).is_empty() {
            causes.push(composite(format!(
                "{shown} must not validate the schema (not)"
            )));
        }
    }
}

/// The type name kube-openapi reports a value as.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

fn type_matches(v: &Value, schema: &Schema) -> bool {
    if schema.int_or_string {
        return is_integer(v) || v.is_string();
    }
    match schema.ty.as_str() {
        "" => true,
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => is_integer(v),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        _ => true,
    }
}

/// A value as Go's `%v` prints it in a field error (strings quoted).
fn render(v: &Value) -> String {
    match v {
        Value::String(s) => berth_core::validation::names::go_quote(s),
        other => other.to_string(),
    }
}

fn cause(reason: &str, path: &str, message: String) -> Cause {
    Cause {
        reason: reason.into(),
        message,
        field: path.into(),
    }
}

fn required(path: &str) -> Cause {
    cause("FieldValueRequired", path, "Required value".into())
}

fn invalid(path: &str, value: &Value, detail: String) -> Cause {
    cause(
        "FieldValueInvalid",
        path,
        format!("Invalid value: {}: {detail}", render(value)),
    )
}

/// The errors of `v` (whose value before the update is `old`, when one correlates) and what
/// it holds; none when it is unchanged, as upstream ratchets a node's errors.
fn validate(v: &Value, schema: &Schema, path: &str, causes: &mut Vec<Cause>, old: Option<&Value>) {
    let start = causes.len();
    validate_node(v, schema, path, causes, old);
    if causes.len() > start && old.is_some_and(|o| super::ratcheting::unchanged(v, o, schema)) {
        causes.truncate(start);
    }
}

fn validate_node(
    v: &Value,
    schema: &Schema,
    path: &str,
    causes: &mut Vec<Cause>,
    old: Option<&Value>,
) {
    if v.is_null() {
        if schema.nullable || (schema.ty.is_empty() && !schema.int_or_string) {
            return;
        }
        let ty = if schema.int_or_string {
            "integer,string"
        } else {
            &schema.ty
        };
        causes.push(cause(
            "FieldValueTypeInvalid",
            path,
            format!("Invalid value: \"null\": {path} in body must be of type {ty}: \"null\""),
        ));
        return;
    }
    if !type_matches(v, schema) {
        let actual = type_name(v);
        let ty = if schema.int_or_string {
            "integer,string"
        } else {
            &schema.ty
        };
        causes.push(cause(
            "FieldValueTypeInvalid",
            path,
            format!(
                "Invalid value: \"{actual}\": {path} in body must be of type {ty}: \"{actual}\""
            ),
        ));
        return;
    }
    validate_junctors(v, schema, path, causes);
    if !schema.enumeration.is_empty() && !schema.enumeration.contains(v) {
        let supported: Vec<String> = schema
            .enumeration
            .iter()
            .map(|e| match e {
                Value::String(s) => berth_core::validation::names::go_quote(s),
                other => berth_core::validation::names::go_quote(&other.to_string()),
            })
            .collect();
        causes.push(cause(
            "FieldValueNotSupported",
            path,
            format!(
                "Unsupported value: {}: supported values: {}",
                render(v),
                supported.join(", ")
            ),
        ));
    }
    match v {
        Value::Number(n) => validate_number(v, n.as_f64().unwrap_or(0.0), schema, path, causes),
        Value::String(s) => validate_string(v, s, schema, path, causes),
        Value::Array(items) => validate_array(v, items, schema, path, causes, old),
        Value::Object(o) => validate_map(v, o, schema, path, causes, old),
        _ => {}
    }
}

/// A bound as Go's `%v` prints a float64 (`10`, `1.5`).
fn bound(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        format!("{f}")
    }
}

fn validate_number(v: &Value, n: f64, schema: &Schema, path: &str, causes: &mut Vec<Cause>) {
    if let Some(max) = schema.maximum {
        if schema.exclusive_maximum && n >= max {
            causes.push(invalid(
                path,
                v,
                format!("{path} in body should be less than {}", bound(max)),
            ));
        } else if n > max {
            causes.push(invalid(
                path,
                v,
                format!(
                    "{path} in body should be less than or equal to {}",
                    bound(max)
                ),
            ));
        }
    }
    if let Some(min) = schema.minimum {
        if schema.exclusive_minimum && n <= min {
            causes.push(invalid(
                path,
                v,
                format!("{path} in body should be greater than {}", bound(min)),
            ));
        } else if n < min {
            causes.push(invalid(
                path,
                v,
                format!(
                    "{path} in body should be greater than or equal to {}",
                    bound(min)
                ),
            ));
        }
    }
    if let Some(m) = schema.multiple_of.filter(|m| *m > 0.0) {
        if (n / m).fract() != 0.0 {
            causes.push(invalid(
                path,
                v,
                format!("{path} in body should be a multiple of {}", bound(m)),
            ));
        }
    }
}

fn validate_string(v: &Value, s: &str, schema: &Schema, path: &str, causes: &mut Vec<Cause>) {
    let chars = s.chars().count() as u64;
    if let Some(max) = schema.max_length {
        if chars > max {
            causes.push(cause(
                "FieldValueTooLong",
                path,
                format!("Too long: may not be more than {max} bytes"),
            ));
        }
    }
    if let Some(min) = schema.min_length {
        if chars < min {
            causes.push(invalid(
                path,
                v,
                format!("{path} in body should be at least {min} chars long"),
            ));
        }
    }
    if let Some((text, re)) = &schema.pattern {
        if !re.is_match(s) {
            causes.push(invalid(
                path,
                v,
                format!("{path} in body should match '{text}'"),
            ));
        }
    }
    if !schema.format.is_empty() && !super::formats::valid(&schema.format, s) {
        causes.push(invalid(
            path,
            v,
            format!(
                "{path} in body must be of type {}: {}",
                schema.format,
                berth_core::validation::names::go_quote(s)
            ),
        ));
    }
}

fn validate_array(
    v: &Value,
    items: &[Value],
    schema: &Schema,
    path: &str,
    causes: &mut Vec<Cause>,
    old: Option<&Value>,
) {
    let n = items.len() as u64;
    if let Some(max) = schema.max_items {
        if n > max {
            causes.push(cause(
                "FieldValueTooMany",
                path,
                format!("Too many: {n}: must have at most {max} items"),
            ));
        }
    }
    if let Some(min) = schema.min_items {
        if n < min {
            causes.push(invalid(
                path,
                &Value::from(n),
                format!("{path} in body should have at least {min} items"),
            ));
        }
    }
    if schema.unique_items && (1..items.len()).any(|i| items[..i].contains(&items[i])) {
        causes.push(invalid(
            path,
            v,
            format!("{path} in body shouldn't contain duplicates"),
        ));
    }
    match schema.list_type.as_str() {
        "set" => {
            for i in 1..items.len() {
                if items[..i].contains(&items[i]) {
                    causes.push(cause(
                        "FieldValueDuplicate",
                        &format!("{path}[{i}]"),
                        format!("Duplicate value: {}", render(&items[i])),
                    ));
                }
            }
        }
        "map" if !schema.list_map_keys.is_empty() => {
            let key_of = |item: &Value| -> Vec<Value> {
                schema
                    .list_map_keys
                    .iter()
                    .map(|k| item.get(k).cloned().unwrap_or(Value::Null))
                    .collect()
            };
            for i in 1..items.len() {
                let key = key_of(&items[i]);
                if items[..i].iter().any(|earlier| key_of(earlier) == key) {
                    let shown: Map<String, Value> = schema
                        .list_map_keys
                        .iter()
                        .zip(key)
                        .map(|(k, v)| (k.clone(), v))
                        .collect();
                    causes.push(cause(
                        "FieldValueDuplicate",
                        &format!("{path}[{i}]"),
                        format!("Duplicate value: {}", Value::Object(shown)),
                    ));
                }
            }
        }
        _ => {}
    }
    if let Some(item_schema) = &schema.items {
        for (i, item) in items.iter().enumerate() {
            let old_item = old.and_then(|o| super::ratcheting::old_item(schema, o, item));
            validate(item, item_schema, &format!("{path}[{i}]"), causes, old_item);
        }
    }
}

fn validate_map(
    _v: &Value,
    o: &Map<String, Value>,
    schema: &Schema,
    path: &str,
    causes: &mut Vec<Cause>,
    old: Option<&Value>,
) {
    let n = o.len() as u64;
    if let Some(max) = schema.max_properties {
        if n > max {
            causes.push(cause(
                "FieldValueTooMany",
                path,
                format!("Too many: {n}: must have at most {max} items"),
            ));
        }
    }
    if let Some(min) = schema.min_properties {
        if n < min {
            causes.push(invalid(
                path,
                &Value::from(n),
                format!("{path} in body should have at least {min} properties"),
            ));
        }
    }
    for r in &schema.required {
        if !o.contains_key(r) {
            causes.push(required(&join(path, r)));
        }
    }
    if schema.embedded_resource {
        for field in ["apiVersion", "kind"] {
            if o.get(field)
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
            {
                causes.push(cause(
                    "FieldValueRequired",
                    &join(path, field),
                    "Required value: must not be empty".into(),
                ));
            }
        }
    }
    for (k, child) in o {
        let child_path = join(path, k);
        let old_child = old.and_then(|o| o.get(k));
        if let Some(s) = schema.properties.get(k) {
            validate(child, s, &child_path, causes, old_child);
        } else if let Some(additional) = &schema.additional {
            validate(child, additional, &child_path, causes, old_child);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(v: Value) -> Schema {
        Schema::parse(&v).unwrap()
    }

    fn pruned(obj: Value, s: Value) -> (Value, Vec<String>) {
        let mut obj = obj;
        let mut removed = Vec::new();
        prune(&mut obj, &schema(s), "", &mut removed);
        let mut removed: Vec<String> = removed
            .into_iter()
            .map(|p| p.trim_start_matches('.').to_string())
            .collect();
        removed.sort();
        (obj, removed)
    }

    /// Upstream's pruning/algorithm_test.go, "object array object".
    #[test]
    fn pruning_drops_what_is_not_specified_in_arrays_and_objects() {
        let (obj, removed) = pruned(
            json!({"array":[{"a":1},{"b":1},{"a":1,"b":2,"c":3}],"unspecified":{"a":1},"specified":{"a":1,"b":2,"c":3}}),
            json!({"properties": {
                "array": {"items": {"properties": {"a": {}, "c": {}}}},
                "specified": {"properties": {"a": {}, "c": {}}}}}),
        );
        assert_eq!(
            obj,
            json!({"array":[{"a":1},{},{"a":1,"c":3}],"specified":{"a":1,"c":3}})
        );
        assert_eq!(
            removed,
            ["array[1].b", "array[2].b", "specified.b", "unspecified"]
        );
    }

    /// Upstream's "additionalProperties with schema".
    #[test]
    fn pruning_follows_additional_properties() {
        let (obj, removed) = pruned(
            json!({"a":1,"b":1,"c":{"a":1,"b":2,"c":{"a":1}}}),
            json!({"properties": {"a": {},
                "c": {"additionalProperties": {"type": "integer"}}}}),
        );
        assert_eq!(obj, json!({"a":1,"c":{"a":1,"b":2,"c":{}}}));
        assert_eq!(removed, ["b", "c.c.a"]);
    }

    /// Upstream's "nested x-kubernetes-preserve-unknown-fields" (its main members).
    #[test]
    fn preserve_unknown_fields_keeps_unknown_members_but_not_below_a_pruning_child() {
        let (obj, removed) = pruned(
            json!({"unspecified": "bar", "alpha": "abc",
                "pruning": {"unspecified": "bar", "pruning": {"unspecified": "bar"},
                            "apiVersion": "unknown", "preserving": {"unspecified": "bar"}},
                "preserving": {"unspecified": "bar", "pruning": {"unspecified": "bar"}}}),
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {
                "alpha": {"type": "string"},
                "pruning": {"type": "object", "properties": {
                    "preserving": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "pruning": {"type": "object"}}},
                "preserving": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                    "properties": {"pruning": {"type": "object"}}}}}),
        );
        assert_eq!(
            obj,
            json!({"unspecified": "bar", "alpha": "abc",
                "pruning": {"pruning": {}, "preserving": {"unspecified": "bar"}},
                "preserving": {"unspecified": "bar", "pruning": {}}})
        );
        assert_eq!(
            removed,
            [
                "preserving.pruning.unspecified",
                "pruning.apiVersion",
                "pruning.pruning.unspecified",
                "pruning.unspecified"
            ]
        );
    }

    /// Upstream's "x-kubernetes-embedded-resource": an embedded object keeps its
    /// apiVersion, kind and metadata (whose unknown members go, as ObjectMeta coercion drops them).
    #[test]
    fn embedded_resources_keep_their_type_and_metadata() {
        let mut obj = json!({"apiVersion": "foo/v1", "kind": "Foo",
            "metadata": {"name": "instance"}, "unspecified": "bar",
            "pruned": {"apiVersion": "foo/v1", "kind": "Foo", "unspecified": "bar",
                "metadata": {"name": "instance", "unspecified": "bar"},
                "spec": {"unspecified": "bar"}}});
        let s = schema(json!({"type": "object", "properties": {
            "pruned": {"type": "object", "x-kubernetes-embedded-resource": true,
                "properties": {"spec": {"type": "object"}}}}}));
        let removed = prune_object(&mut obj, &s);
        assert_eq!(
            obj,
            json!({"apiVersion": "foo/v1", "kind": "Foo", "metadata": {"name": "instance"},
                "pruned": {"apiVersion": "foo/v1", "kind": "Foo",
                    "metadata": {"name": "instance"}, "spec": {}}})
        );
        assert_eq!(
            removed,
            [
                "pruned.spec.unspecified",
                "pruned.unspecified",
                "unspecified"
            ]
        );
    }

    #[test]
    fn defaults_fill_absent_fields_from_the_outside_in_but_keep_what_is_set() {
        let s = schema(json!({"type": "object", "properties": {
            "spec": {"type": "object", "default": {}, "properties": {
                "replicas": {"type": "integer", "default": 1},
                "strategy": {"type": "string", "default": "Rolling"},
                "nullable": {"type": "string", "nullable": true, "default": "x"},
                "ports": {"type": "array", "items": {"type": "object", "properties": {
                    "protocol": {"type": "string", "default": "TCP"}}}}}}}}));
        let mut empty = json!({});
        default(&mut empty, &s);
        assert_eq!(
            empty,
            json!({"spec": {"replicas": 1, "strategy": "Rolling", "nullable": "x"}})
        );
        let mut set = json!({"spec": {"replicas": 3, "strategy": null, "nullable": null,
            "ports": [{"name": "a"}, {"protocol": "UDP"}]}});
        default(&mut set, &s);
        assert_eq!(
            set,
            json!({"spec": {"replicas": 3, "strategy": "Rolling", "nullable": null,
                "ports": [{"name": "a", "protocol": "TCP"}, {"protocol": "UDP"}]}})
        );
    }

    fn messages(obj: Value, s: Value) -> Vec<String> {
        validate_object(&obj, None, &schema(s))
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn validation_errors_are_worded_as_upstreams() {
        let s = json!({"type": "object", "required": ["spec"], "properties": {"spec": {
            "type": "object", "required": ["name"], "properties": {
                "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
                "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
                "ratio": {"type": "number", "exclusiveMaximum": true, "maximum": 1},
                "color": {"type": "string", "enum": ["red", "green"]},
                "email": {"type": "string", "format": "email"},
                "port": {"x-kubernetes-int-or-string": true},
                "tags": {"type": "array", "maxItems": 2, "minItems": 1,
                         "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                          "x-kubernetes-list-map-keys": ["name"],
                          "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}}}});
        assert_eq!(messages(json!({}), s.clone()), ["spec: Required value"]);
        for (spec, want) in [
            (json!({"name": "ab", "replicas": "string"}),
             "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""),
            (json!({"name": "ab", "replicas": 1.5}),
             "spec.replicas: Invalid value: \"number\": spec.replicas in body must be of type integer: \"number\""),
            (json!({}), "spec.name: Required value"),
            (json!({"name": "a"}),
             "spec.name: Invalid value: \"a\": spec.name in body should be at least 2 chars long"),
            (json!({"name": "abcdef"}), "spec.name: Too long: may not be more than 5 bytes"),
            (json!({"name": "AB"}),
             "spec.name: Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'"),
            (json!({"name": "ab", "replicas": 20}),
             "spec.replicas: Invalid value: 20: spec.replicas in body should be less than or equal to 10"),
            (json!({"name": "ab", "replicas": 0}),
             "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"),
            (json!({"name": "ab", "ratio": 1}),
             "spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1"),
            (json!({"name": "ab", "color": "blue"}),
             "spec.color: Unsupported value: \"blue\": supported values: \"red\", \"green\""),
            (json!({"name": "ab", "email": "nope"}),
             "spec.email: Invalid value: \"nope\": spec.email in body must be of type email: \"nope\""),
            (json!({"name": "ab", "port": true}),
             "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\""),
            (json!({"name": "ab", "tags": ["a", "b", "c"]}),
             "spec.tags: Too many: 3: must have at most 2 items"),
            (json!({"name": "ab", "tags": []}),
             "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"),
            (json!({"name": "ab", "tags": ["a", "a"]}), "spec.tags[1]: Duplicate value: \"a\""),
            (json!({"name": "ab", "ports": [{"name": "x"}, {"name": "x"}]}),
             "spec.ports[1]: Duplicate value: {\"name\":\"x\"}"),
        ] {
            let got = messages(json!({"spec": spec}), s.clone());
            assert!(got.contains(&want.to_string()), "want {want}\n got {got:?}");
        }
        assert_eq!(
            messages(json!({"spec": {"name": "ab", "port": 80}}), s.clone()),
            Vec::<String>::new()
        );
        assert_eq!(
            messages(json!({"spec": {"name": "ab", "port": "http"}}), s),
            Vec::<String>::new()
        );
    }

    /// kube-openapi's junctor words (`validate/schema_messages.go`) as apiextensions reports
    /// them: a composite error at `<nil>` with the value `""`, then the closest branch's errors.
    #[test]
    fn junctors_fail_with_kube_openapis_words() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {
                "a": {"type": "string"}, "b": {"type": "string"},
                "delta": {"type": "string", "anyOf": [{"maxLength": 5}, {"pattern": "^x+$"}]},
                "port": {"type": "integer", "not": {"enum": [0]}},
                "size": {"type": "integer", "allOf": [{"minimum": 1}, {"maximum": 10}]}},
            "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}}});
        assert_eq!(
            messages(json!({"spec": {"a": "x"}}), s.clone()),
            Vec::<String>::new()
        );
        assert_eq!(
            messages(json!({"spec": {}}), s.clone()),
            [
                "<nil>: Invalid value: \"\": \"spec\" must validate one and only one schema (oneOf). Found none valid",
                "spec.a: Required value"
            ]
        );
        assert_eq!(
            messages(json!({"spec": {"a": "x", "b": "y"}}), s.clone()),
            ["<nil>: Invalid value: \"\": \"spec\" must validate one and only one schema (oneOf). Found 2 valid alternatives"]
        );
        assert_eq!(
            messages(json!({"spec": {"a": "x", "delta": "foobarbaz"}}), s.clone()),
            [
                "<nil>: Invalid value: \"\": \"spec.delta\" must validate at least one schema (anyOf)",
                "spec.delta: Too long: may not be more than 5 bytes"
            ]
        );
        assert_eq!(
            messages(json!({"spec": {"a": "x", "delta": "xxxxxxxxx"}}), s.clone()),
            Vec::<String>::new()
        );
        assert_eq!(
            messages(json!({"spec": {"a": "x", "port": 0}}), s.clone()),
            ["<nil>: Invalid value: \"\": \"spec.port\" must not validate the schema (not)"]
        );
        assert_eq!(
            messages(json!({"spec": {"a": "x", "size": 20}}), s.clone()),
            [
                "spec.size: Invalid value: 20: spec.size in body should be less than or equal to 10",
                "<nil>: Invalid value: \"\": \"spec.size\" must validate all the schemas (allOf)"
            ]
        );
        assert_eq!(
            messages(json!({"spec": {"a": "x", "size": 5}}), s),
            Vec::<String>::new()
        );
    }

    /// The int-or-string spelling upstream allows: each branch checks its own type.
    #[test]
    fn int_or_string_as_any_of_accepts_either() {
        let s = json!({"type": "object", "properties": {"port": {
            "x-kubernetes-int-or-string": true,
            "anyOf": [{"type": "integer"}, {"type": "string"}]}}});
        assert_eq!(
            messages(json!({"port": 80}), s.clone()),
            Vec::<String>::new()
        );
        assert_eq!(messages(json!({"port": "http"}), s), Vec::<String>::new());
    }

    #[test]
    fn junctors_at_the_root_are_checked_on_the_whole_object() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object"},
            "status": {"type": "object"}}, "anyOf": [{"required": ["spec"]}, {"required": ["status"]}]});
        assert_eq!(
            messages(json!({}), s.clone()),
            [
                "<nil>: Invalid value: \"\": \"\" must validate at least one schema (anyOf)",
                "spec: Required value"
            ]
        );
        assert_eq!(messages(json!({"status": {}}), s), Vec::<String>::new());
    }

    #[test]
    fn a_schema_nested_too_deep_is_refused_not_overflowed() {
        let mut v = json!({"type": "string"});
        for _ in 0..(MAX_SCHEMA_DEPTH + 5) {
            v = json!({"type": "object", "properties": {"a": v}});
        }
        assert!(Schema::parse(&v).unwrap_err().contains("nested deeper"));
    }
}
