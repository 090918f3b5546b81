//! Node selectors given as strings (`env=test, infra=fedora`): what a namespace's node-selector
//! annotations, PodNodeSelector's configuration and the master config's
//! `projectConfig.defaultNodeSelector` hold, and how one is merged into a pod's
//! `spec.nodeSelector`.
//!
//! The string form is upstream's `labels.ConvertSelectorToLabelsMap`: `""` is the empty set;
//! otherwise comma-separated items, each exactly one `key=value` (spaces around key and value
//! trimmed), the key a qualified name and the value a label value. `==`, `!=` and set syntax are
//! errors.

use berth_core::validation::names;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Label key → value: a node selector of exact matches.
pub type LabelSet = BTreeMap<String, String>;

/// Parses a node selector string; the error is upstream's text (`invalid selector: [a b c]`,
/// or the key's or value's validation message).
pub fn parse(selector: &str) -> Result<LabelSet, String> {
    let mut set = LabelSet::new();
    if selector.is_empty() {
        return Ok(set);
    }
    for item in selector.split(',') {
        let parts: Vec<&str> = item.split('=').collect();
        let [key, value] = parts.as_slice() else {
            // Go prints the split item as a list: `[a b c]`.
            return Err(format!("invalid selector: [{}]", parts.join(" ")));
        };
        let (key, value) = (key.trim(), value.trim());
        // Upstream's `field.Invalid` with no path (the key) or the key as path (the value).
        let errors = names::qualified_name(key);
        if !errors.is_empty() {
            return Err(format!(
                "<nil>: Invalid value: \"{key}\": {}",
                errors.join("; ")
            ));
        }
        let errors = names::label_value(value);
        if !errors.is_empty() {
            return Err(format!(
                "[{key}]: Invalid value: \"{value}\": {}",
                errors.join("; ")
            ));
        }
        set.insert(key.to_string(), value.to_string());
    }
    Ok(set)
}

/// Whether a key of `selector` has another value in the pod's `nodeSelector` (upstream's
/// `labels.Conflicts`).
pub fn conflicts(selector: &LabelSet, pod_selector: &Map<String, Value>) -> bool {
    selector
        .iter()
        .any(|(k, v)| pod_selector.get(k).is_some_and(|given| given != v.as_str()))
}

/// Adds the keys of `selector` the pod's `nodeSelector` lacks; the pod's own values stay.
/// Call only when there is no conflict, so that "the pod's value wins" changes nothing.
pub fn merge(selector: &LabelSet, pod_selector: &mut Map<String, Value>) {
    for (k, v) in selector {
        if !pod_selector.contains_key(k) {
            pod_selector.insert(k.clone(), Value::String(v.clone()));
        }
    }
}

/// Whether every label of the pod's `nodeSelector` is in `whitelist` with the same value; an
/// empty whitelist allows everything.
pub fn within(pod_selector: &Map<String, Value>, whitelist: &LabelSet) -> bool {
    whitelist.is_empty()
        || pod_selector
            .iter()
            .all(|(k, v)| whitelist.get(k).is_some_and(|w| v == w.as_str()))
}

/// The pod's `spec.nodeSelector`, created empty when absent or null. `None` when it is
/// something other than an object, which validation refuses later.
pub fn pod_node_selector(pod: &mut Value) -> Option<&mut Map<String, Value>> {
    let spec = pod
        .as_object_mut()?
        .entry("spec")
        .or_insert_with(|| Value::Object(Map::new()));
    let spec = spec.as_object_mut()?;
    let selector = spec
        .entry("nodeSelector")
        .or_insert_with(|| Value::Object(Map::new()));
    if selector.is_null() {
        *selector = Value::Object(Map::new());
    }
    selector.as_object_mut()
}

/// Drops an empty `spec.nodeSelector` again, so that a pod without one is stored without one.
pub fn drop_if_empty(pod: &mut Value) {
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        if spec
            .get("nodeSelector")
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty)
        {
            spec.remove("nodeSelector");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn set(pairs: &[(&str, &str)]) -> LabelSet {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn selectors_parse_as_upstream_converts_them() {
        assert_eq!(parse("").unwrap(), LabelSet::new());
        assert_eq!(
            parse(" infra = false ").unwrap(),
            set(&[("infra", "false")])
        );
        assert_eq!(
            parse("region=west,env=test,infra=fedora,os=fedora").unwrap(),
            set(&[
                ("region", "west"),
                ("env", "test"),
                ("infra", "fedora"),
                ("os", "fedora")
            ])
        );
        assert_eq!(
            parse("kubernetes.io/hostname=n1").unwrap(),
            set(&[("kubernetes.io/hostname", "n1")])
        );
        assert_eq!(parse("a=").unwrap(), set(&[("a", "")]));
        assert_eq!(parse("a==b").unwrap_err(), "invalid selector: [a  b]");
        assert!(parse("a!=b")
            .unwrap_err()
            .starts_with("<nil>: Invalid value: \"a!\""));
        assert_eq!(parse("a").unwrap_err(), "invalid selector: [a]");
        assert!(parse("a in (b)").is_err());
        assert!(parse("-a=b")
            .unwrap_err()
            .starts_with("<nil>: Invalid value: \"-a\": name part"));
        assert!(parse("a=-b")
            .unwrap_err()
            .starts_with("[a]: Invalid value: \"-b\": a valid label must"));
        assert!(parse("a=b,").is_err());
    }

    #[test]
    fn a_key_with_another_value_conflicts() {
        let ns = set(&[("env", "test")]);
        assert!(conflicts(&ns, &map(json!({"env": "prod"}))));
        assert!(!conflicts(&ns, &map(json!({"env": "test", "os": "x"}))));
        assert!(!conflicts(&ns, &map(json!({}))));
        assert!(!conflicts(&LabelSet::new(), &map(json!({"env": "prod"}))));
    }

    #[test]
    fn merging_adds_the_missing_keys() {
        let mut pod = map(json!({"env": "test", "os": "fedora"}));
        merge(&set(&[("env", "test"), ("infra", "fedora")]), &mut pod);
        assert_eq!(
            Value::Object(pod),
            json!({"env": "test", "infra": "fedora", "os": "fedora"})
        );
    }

    #[test]
    fn the_whitelist_holds_every_label_with_its_value() {
        let wl = set(&[("env", "dev"), ("infra", "false"), ("color", "blue")]);
        assert!(within(&map(json!({"env": "dev", "color": "blue"})), &wl));
        assert!(!within(&map(json!({"env": "prod"})), &wl));
        assert!(!within(&map(json!({"zone": "a"})), &wl));
        assert!(within(&map(json!({"zone": "a"})), &LabelSet::new()));
    }

    #[test]
    fn a_missing_or_null_node_selector_is_created_and_dropped_when_empty() {
        let mut pod = json!({"spec": {"nodeSelector": null}});
        assert!(pod_node_selector(&mut pod).unwrap().is_empty());
        drop_if_empty(&mut pod);
        assert_eq!(pod, json!({"spec": {}}));
        let mut odd = json!({"spec": {"nodeSelector": "a=b"}});
        assert!(pod_node_selector(&mut odd).is_none());
        let mut not_an_object = json!([1]);
        assert!(pod_node_selector(&mut not_an_object).is_none());
    }

    fn label() -> impl Strategy<Value = String> {
        "[a-c]{1,2}"
    }

    proptest! {
        /// Without a conflict, the merged selector holds both selectors, and the pod's own
        /// labels keep their values.
        #[test]
        fn merging_without_conflict_is_the_union(
            ns in proptest::collection::btree_map(label(), label(), 0..4),
            pod in proptest::collection::btree_map(label(), label(), 0..4),
        ) {
            let pod_map: Map<String, Value> =
                pod.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
            let mut merged = pod_map.clone();
            if conflicts(&ns, &pod_map) {
                prop_assert!(ns.iter().any(|(k, v)| pod.get(k).is_some_and(|p| p != v)));
            } else {
                merge(&ns, &mut merged);
                for (k, v) in ns.iter().chain(pod.iter()) {
                    prop_assert_eq!(merged.get(k), Some(&json!(v)));
                }
                prop_assert_eq!(merged.len(), ns.keys().chain(pod.keys()).collect::<std::collections::BTreeSet<_>>().len());
                // Merging again changes nothing, and the merged selector is within the union.
                let again = merged.clone();
                merge(&ns, &mut merged);
                prop_assert_eq!(&merged, &again);
                let mut union = ns.clone();
                union.extend(pod.clone());
                prop_assert!(within(&merged, &union));
            }
        }

        /// Parsing the printed form of a set gives the set back; nothing typed panics.
        #[test]
        fn printed_selectors_parse_back(
            s in proptest::collection::btree_map(label(), label(), 0..4),
            junk in "\\PC{0,20}",
        ) {
            let printed: Vec<String> = s.iter().map(|(k, v)| format!(" {k} = {v}")).collect();
            prop_assert_eq!(parse(&printed.join(",")).unwrap(), s);
            let _ = parse(&junk);
        }
    }
}
