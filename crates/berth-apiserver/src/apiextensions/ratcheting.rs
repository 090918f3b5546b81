//! CRD validation ratcheting (upstream's `CRDValidationRatcheting`, on by default since 1.30
//! and GA in 1.33): on an update, a value that is unchanged from the old object is not held
//! to a schema that was tightened after it was written. A node's schema errors, and the
//! `x-kubernetes-validations` rules at it that do not read `oldSelf`, are not reported when
//! the node equals its old value.
//!
//! The old value of a node is found as upstream correlates it
//! (`apiserver/pkg/cel/common/equality.go`): an object's member by name, a `map` list's item by
//! its keys. Items of other lists (`set`, `atomic`, no list type) have no old value of their
//! own; such a list is unchanged only as a whole.

use super::schema::Schema;
use serde_json::Value;

/// Whether `new` is unchanged from `old`, the value correlated with it before the update,
/// under `schema`. As upstream's `CachedDeepEqual`: a member without a schema (kept by
/// `x-kubernetes-preserve-unknown-fields`) or an item that does not correlate makes its
/// parent changed.
pub fn unchanged(new: &Value, old: &Value, schema: &Schema) -> bool {
    match (new, old) {
        (Value::Array(items), Value::Array(olds)) => {
            if items.len() != olds.len() {
                return false;
            }
            if !correlates_items(schema) {
                return items == olds;
            }
            let Some(item_schema) = schema.items.as_deref() else {
                return false;
            };
            items.iter().all(|item| {
                old_item(schema, old, item).is_some_and(|o| unchanged(item, o, item_schema))
            })
        }
        (Value::Object(members), Value::Object(olds)) => {
            members.len() == olds.len()
                && members.iter().all(|(k, v)| {
                    let member_schema = schema.properties.get(k).or(schema.additional.as_deref());
                    match (olds.get(k), member_schema) {
                        (Some(o), Some(s)) => unchanged(v, o, s),
                        _ => false,
                    }
                })
        }
        (Value::Array(_) | Value::Object(_), _) | (_, Value::Array(_) | Value::Object(_)) => false,
        (new, old) => new == old,
    }
}

/// Whether the items of a list under `schema` each have an old value: only a `map` list's,
/// by their keys.
fn correlates_items(schema: &Schema) -> bool {
    schema.list_type == "map"
}

/// The item of the old list `old` with the same keys as `item` of a `map` list, if any.
pub fn old_item<'a>(schema: &Schema, old: &'a Value, item: &Value) -> Option<&'a Value> {
    if !correlates_items(schema) || schema.list_map_keys.is_empty() {
        return None;
    }
    old.as_array()?.iter().find(|o| {
        schema
            .list_map_keys
            .iter()
            .all(|key| o.get(key) == item.get(key))
    })
}

#[cfg(test)]
mod tests {
    use super::super::schema::validate_object;
    use super::*;
    use serde_json::json;

    fn schema(v: Value) -> Schema {
        Schema::parse(&v).unwrap()
    }

    fn errors(new: Value, old: Option<Value>, s: &Schema) -> Vec<String> {
        validate_object(&new, old.as_ref(), s)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    /// Upstream's ratcheting_test.go schemas: numbers bounded to 0, <= 50, 50..10000, >= 10000.
    fn object_schema() -> Value {
        json!({"type": "object", "properties": {
            "zero": {"type": "number", "minimum": 0, "maximum": 0},
            "small": {"type": "number", "maximum": 50},
            "medium": {"type": "number", "minimum": 50, "maximum": 10000},
            "large": {"type": "number", "minimum": 10000}}})
    }

    // Upstream's TestScalarRatcheting.
    #[test]
    fn an_unchanged_scalar_is_not_held_to_the_schema() {
        let s = schema(json!({"type": "object", "properties": {
            "n": {"type": "number", "minimum": 50, "maximum": 10000}}}));
        assert!(errors(json!({"n": 1}), Some(json!({"n": 1})), &s).is_empty());
        assert_eq!(
            errors(json!({"n": 2}), Some(json!({"n": 1})), &s),
            ["n: Invalid value: 2: n in body should be greater than or equal to 50"]
        );
        // A create has nothing to ratchet against.
        assert_eq!(validate_object(&json!({"n": 1}), None, &s).len(), 1);
    }

    // Upstream's TestObjectScalarFieldsRatcheting and TestObjectObjectFieldsRatcheting.
    #[test]
    fn unchanged_members_ratchet_while_their_siblings_change() {
        let s = schema(object_schema());
        assert!(errors(json!({"small": 500}), Some(json!({"small": 500})), &s).is_empty());
        assert!(errors(
            json!({"small": 501, "medium": 500}),
            Some(json!({"small": 501})),
            &s
        )
        .is_empty());
        assert_eq!(
            errors(json!({"small": 501}), Some(json!({"small": 500})), &s),
            ["small: Invalid value: 501: small in body should be less than or equal to 50"]
        );
        let nested = schema(json!({"type": "object", "properties": {"nested": object_schema()}}));
        assert!(errors(
            json!({"nested": {"small": 501, "medium": 500}}),
            Some(json!({"nested": {"small": 501}})),
            &nested
        )
        .is_empty());
        assert_eq!(
            errors(
                json!({"nested": {"small": 501}}),
                Some(json!({"nested": {"small": 500}})),
                &nested
            ),
            ["nested.small: Invalid value: 501: nested.small in body should be less than or equal to 50"]
        );
    }

    #[test]
    fn an_object_that_changed_answers_for_its_own_rules() {
        // `required` is the object's own rule: a changed object must meet it.
        let s = schema(json!({"type": "object", "properties": {"spec": {
            "type": "object", "required": ["name"],
            "properties": {"name": {"type": "string"}, "size": {"type": "integer"}}}}}));
        assert!(errors(
            json!({"spec": {"size": 1}}),
            Some(json!({"spec": {"size": 1}})),
            &s
        )
        .is_empty());
        assert_eq!(
            errors(
                json!({"spec": {"size": 2}}),
                Some(json!({"spec": {"size": 1}})),
                &s
            ),
            ["spec.name: Required value"]
        );
    }

    #[test]
    fn map_list_items_correlate_by_their_keys() {
        let s = schema(json!({"type": "object", "properties": {"ports": {
            "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {
                "name": {"type": "string", "maxLength": 3}, "port": {"type": "integer", "maximum": 100}}}}}}));
        let old = json!({"ports": [{"name": "http", "port": 8080}, {"name": "a", "port": 1}]});
        // Reordered and another item changed: the old bad item still ratchets.
        assert!(errors(
            json!({"ports": [{"name": "a", "port": 2}, {"name": "http", "port": 8080}]}),
            Some(old.clone()),
            &s
        )
        .is_empty());
        assert_eq!(
            errors(
                json!({"ports": [{"name": "http", "port": 8081}, {"name": "a", "port": 1}]}),
                Some(old),
                &s
            ),
            // The item changed, but its name did not: only the new port is judged.
            ["ports[0].port: Invalid value: 8081: ports[0].port in body should be less than or equal to 100"]
        );
    }

    #[test]
    fn atomic_and_set_lists_ratchet_only_as_a_whole() {
        let s = schema(json!({"type": "object", "properties": {
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}},
            "other": {"type": "string"}}}));
        let old = json!({"tags": ["toolong", "ok"]});
        assert!(errors(
            json!({"tags": ["toolong", "ok"], "other": "x"}),
            Some(old.clone()),
            &s
        )
        .is_empty());
        assert_eq!(
            errors(json!({"tags": ["toolong", "ok", "new"]}), Some(old), &s),
            ["tags[0]: Too long: may not be more than 3 bytes"]
        );
    }

    #[test]
    fn unknown_members_make_their_object_changed() {
        let preserving = schema(json!({"type": "object", "properties": {"spec": {
            "type": "object", "x-kubernetes-preserve-unknown-fields": true, "maxProperties": 1,
            "properties": {"a": {"type": "string"}}}}}));
        let v = json!({"a": "x", "free": 1});
        assert!(!unchanged(&v, &v, &preserving.properties["spec"]));
        assert_eq!(
            errors(
                json!({"spec": v.clone()}),
                Some(json!({"spec": v})),
                &preserving
            )
            .len(),
            1
        );
        let plain = schema(object_schema());
        assert!(unchanged(
            &json!({"small": 1}),
            &json!({"small": 1}),
            &plain
        ));
        assert!(!unchanged(
            &json!({"small": 1}),
            &json!({"small": 1.0}),
            &plain
        ));
        assert!(unchanged(&json!({}), &json!({}), &plain));
    }
}
