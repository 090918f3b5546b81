//! The strategy every custom resource is written through (upstream's
//! `apiextensions-apiserver/pkg/registry/customresource/strategy.go`): unknown fields pruned,
//! defaults applied, the status kept out of a create where a status subresource exists, then
//! the object validated against its schema and its CEL rules.

use crate::apiextensions::ratcheting;
use crate::apiextensions::schema::{self, Schema};
use crate::apiextensions::Served;
use crate::error::{ApiError, ApiResult, Cause};
use crate::strategy::{causes, Strategy};
use crate::strict::FieldValidation;
use berth_api::registry::ResourceType;
use serde_json::Value;
use std::sync::Arc;

/// The strategy of one served custom kind.
pub struct CustomResource(pub Arc<Served>);

impl CustomResource {
    fn schema(&self) -> Option<&Schema> {
        self.0.schema.as_ref()
    }

    fn prune_and_default(&self, obj: &mut Value) {
        if let Some(schema) = self.schema() {
            schema::prune_object(obj, schema);
            schema::default(obj, schema);
        }
    }
}

impl Strategy for CustomResource {
    fn prepare_for_create(&self, obj: &mut Value) {
        if self.0.rt.subresource("status").is_some() {
            obj.as_object_mut().map(|o| o.remove("status"));
        }
        self.prune_and_default(obj);
    }

    fn prepare_for_update(&self, _old: &Value, new: &mut Value) -> ApiResult<()> {
        self.prune_and_default(new);
        Ok(())
    }

    fn validate(&self, rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        let mut out = causes(berth_core::validation::validate_generic(obj, rt.namespaced));
        if let Some(schema) = self.schema() {
            out.extend(schema::validate_object(obj, old, schema));
            if out.is_empty() {
                check_rules(obj, old, schema, "", false, &mut out);
            }
        }
        out
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }
}

/// Runs every `x-kubernetes-validations` rule of `schema` on the node it sits at, with the
/// node's old value on update (object members by name, `map` list items by their keys).
/// A node that is `unchanged` (or whose old value equals it) ratchets the rules that do not
/// read `oldSelf`, as upstream's `CRDValidationRatcheting`.
fn check_rules(
    v: &Value,
    old: Option<&Value>,
    schema: &Schema,
    path: &str,
    unchanged: bool,
    out: &mut Vec<Cause>,
) {
    // The root holds the server-owned metadata, so it is never unchanged itself.
    let unchanged =
        unchanged || (!path.is_empty() && old.is_some_and(|o| ratcheting::unchanged(v, o, schema)));
    let type_name = if schema.ty.is_empty() {
        "object"
    } else {
        &schema.ty
    };
    // The root's rules see the object without its server-owned metadata, as upstream's do.
    for rule in &schema.rules {
        if let Some((reason, field, message)) = rule.check(v, old, path, type_name, unchanged) {
            out.push(Cause {
                reason,
                message,
                field,
            });
        }
    }
    match v {
        Value::Object(o) => {
            for (k, child) in o {
                if path.is_empty() && k == "metadata" {
                    continue;
                }
                let s = schema.properties.get(k).or(schema.additional.as_deref());
                if let Some(s) = s {
                    let child_path = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    let old_child = old.and_then(|o| o.get(k));
                    check_rules(child, old_child, s, &child_path, unchanged, out);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = &schema.items {
                for (i, item) in items.iter().enumerate() {
                    let old_item = old.and_then(|o| ratcheting::old_item(schema, o, item));
                    let item_path = format!("{path}[{i}]");
                    check_rules(item, old_item, item_schema, &item_path, unchanged, out);
                }
            }
        }
        _ => {}
    }
}

/// Field validation of a custom resource's body: fields its schema does not declare are
/// refused (`Strict`, upstream's `unknown field "spec.foo"`), or dropped with a warning
/// (`Warn`) or silently (`Ignore`), as upstream prunes them.
pub fn settle_unknown_fields(
    served: &Served,
    validation: FieldValidation,
    obj: &mut Value,
) -> ApiResult<Vec<String>> {
    let Some(schema) = &served.schema else {
        return Ok(Vec::new());
    };
    let removed = schema::prune_object(obj, schema);
    let problems: Vec<String> = removed
        .iter()
        .map(|p| format!("unknown field \"{p}\""))
        .collect();
    match validation {
        FieldValidation::Strict if !problems.is_empty() => Err(crate::strict::strict_error(
            served.rt.kind,
            served.rt.version,
            &problems,
        )),
        FieldValidation::Warn => Ok(problems),
        _ => Ok(Vec::new()),
    }
}

/// Server-side apply of a custom resource merges `x-kubernetes-list-type: map` lists by
/// their `x-kubernetes-list-map-keys` (and `set` lists by value), where the generic merge
/// replaced them whole: each applied item merged over the live item with the same keys,
/// live items the configuration does not name kept (another manager may own them).
pub fn merge_listed_items(schema: &Schema, live: &Value, config: &Value, merged: &mut Value) {
    match (schema.list_type.as_str(), live, config) {
        ("map", Value::Array(live_items), Value::Array(config_items)) => {
            let same =
                |a: &Value, b: &Value| schema.list_map_keys.iter().all(|k| a.get(k) == b.get(k));
            let mut out: Vec<Value> = live_items.clone();
            for item in config_items {
                match out.iter_mut().find(|o| same(o, item)) {
                    Some(existing) => {
                        let before = existing.clone();
                        let mut merged_item = before.clone();
                        json_patch::merge(&mut merged_item, item);
                        if let Some(item_schema) = &schema.items {
                            merge_listed_items(item_schema, &before, item, &mut merged_item);
                        }
                        *existing = merged_item;
                    }
                    None => out.push(item.clone()),
                }
            }
            *merged = Value::Array(out);
        }
        ("set", Value::Array(live_items), Value::Array(config_items)) => {
            let mut out = live_items.clone();
            for item in config_items {
                if !out.contains(item) {
                    out.push(item.clone());
                }
            }
            *merged = Value::Array(out);
        }
        (_, Value::Object(live_o), Value::Object(config_o)) => {
            for (k, c) in config_o {
                let (Some(s), Some(l)) = (
                    schema.properties.get(k).or(schema.additional.as_deref()),
                    live_o.get(k),
                ) else {
                    continue;
                };
                if let Some(m) = merged.get_mut(k) {
                    merge_listed_items(s, l, c, m);
                }
            }
        }
        _ => {}
    }
}

/// Refuses a new object of a CRD being deleted, with upstream's words.
pub fn check_create(served: &Served) -> ApiResult<()> {
    if served.terminating {
        return Err(ApiError::MethodNotAllowed(
            "create not allowed while custom resource definition is terminating".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Schema {
        Schema::parse(&json!({"type": "object", "properties": {
            "spec": {"type": "object",
                "x-kubernetes-validations": [{"rule": "self.minReplicas <= self.replicas",
                    "message": "replicas should be greater than or equal to minReplicas"}],
                "properties": {
                    "replicas": {"type": "integer", "default": 1},
                    "minReplicas": {"type": "integer", "default": 0},
                    "name": {"type": "string",
                        "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "Value is immutable"}]}}}}}))
        .unwrap()
    }

    fn rule_messages(v: &Value, old: Option<&Value>) -> Vec<String> {
        let mut out = Vec::new();
        check_rules(v, old, &schema(), "", false, &mut out);
        out.into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn rules_run_where_they_sit_and_transition_rules_only_on_update() {
        let ok = json!({"spec": {"replicas": 3, "minReplicas": 1, "name": "a"}});
        assert_eq!(rule_messages(&ok, None), Vec::<String>::new());
        let bad = json!({"spec": {"replicas": 1, "minReplicas": 3, "name": "a"}});
        assert_eq!(
            rule_messages(&bad, None),
            ["spec: Invalid value: \"object\": replicas should be greater than or equal to minReplicas"]
        );
        let renamed = json!({"spec": {"replicas": 3, "minReplicas": 1, "name": "b"}});
        assert_eq!(
            rule_messages(&renamed, Some(&ok)),
            ["spec.name: Invalid value: \"string\": Value is immutable"]
        );
    }

    // Upstream's CEL ratcheting (cel/validation.go `shouldRatchetError`): a rule failing on a
    // value left as it was is not reported; one failing on a changed value, or reading
    // `oldSelf`, is.
    #[test]
    fn rules_ratchet_on_values_left_as_they_were() {
        let s = Schema::parse(&json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {
                "size": {"type": "integer",
                    "x-kubernetes-validations": [{"rule": "self <= 5", "message": "too big"}]},
                "tags": {"type": "array", "items": {"type": "string",
                    "x-kubernetes-validations": [{"rule": "self.size() <= 3", "message": "too long"}]}},
                "note": {"type": "string"},
                "frozen": {"type": "integer", "x-kubernetes-validations": [
                    {"rule": "self == oldSelf && self <= 5", "message": "frozen"}]}}}}}))
        .unwrap();
        let messages = |v: Value, old: Value| {
            let mut out = Vec::new();
            check_rules(&v, Some(&old), &s, "", false, &mut out);
            out.into_iter()
                .map(|c| format!("{}: {}", c.field, c.message))
                .collect::<Vec<_>>()
        };
        let old = json!({"spec": {"size": 9, "tags": ["longer"], "note": "a", "frozen": 9}});
        // The note changes; size and tags stay as they were; the transition rule still runs.
        assert_eq!(
            messages(
                json!({"spec": {"size": 9, "tags": ["longer"], "note": "b", "frozen": 9}}),
                old.clone()
            ),
            ["spec.frozen: Invalid value: \"integer\": frozen"]
        );
        assert_eq!(
            messages(
                json!({"spec": {"size": 8, "tags": ["longer", "x"], "frozen": 9}}),
                old
            ),
            [
                "spec.frozen: Invalid value: \"integer\": frozen",
                "spec.size: Invalid value: \"integer\": too big",
                "spec.tags[0]: Invalid value: \"string\": too long"
            ]
        );
    }

    #[test]
    fn apply_merges_map_lists_by_their_keys_and_keeps_items_it_does_not_name() {
        let s = Schema::parse(
            &json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"ports": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {
                    "name": {"type": "string"}, "port": {"type": "integer"}}}}}}}}),
        )
        .unwrap();
        let live = json!({"spec": {"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}]}});
        let config =
            json!({"spec": {"ports": [{"name": "b", "port": 20}, {"name": "c", "port": 3}]}});
        let mut merged = config.clone();
        merge_listed_items(&s, &live, &config, &mut merged);
        assert_eq!(
            merged,
            json!({"spec": {"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 20},
                                      {"name": "c", "port": 3}]}})
        );
    }
}
