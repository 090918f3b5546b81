//! The ClusterRole aggregation controller (upstream `pkg/controller/clusterroleaggregation`):
//! a ClusterRole with an `aggregationRule` has as its `rules` the union of the rules of every
//! other ClusterRole its `clusterRoleSelectors` match, so a role labelled
//! `rbac.authorization.k8s.io/aggregate-to-view: "true"` extends `view`.
//!
//! The engine ([`reconcile`]) names the aggregated roles whose rules are not that union, with
//! the rules they should have; the driver ([`run`]) watches ClusterRoles and writes them.

mod driver;

pub use driver::run;

use berth_core::labels::Selector;
use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};

/// The rules `role` should have, or `None` when it aggregates nothing. Matched roles are taken
/// in name order, each rule once (upstream appends a rule unless an equal one is there). A
/// selector that does not parse matches nothing.
pub fn aggregated_rules(role: &ClusterRole, all: &[ClusterRole]) -> Option<Vec<PolicyRule>> {
    let selectors = role
        .aggregation_rule
        .as_ref()?
        .cluster_role_selectors
        .as_ref();
    let mut others: Vec<&ClusterRole> = all
        .iter()
        .filter(|r| r.metadata.name != role.metadata.name)
        .collect();
    others.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut rules: Vec<PolicyRule> = Vec::new();
    for selector in selectors.into_iter().flatten() {
        let Some(selector) = serde_json::to_value(selector)
            .ok()
            .and_then(|v| Selector::from_label_selector(&v).ok())
        else {
            continue;
        };
        for other in &others {
            let labels = other.metadata.labels.as_ref();
            let matched =
                selector.matches_fn(|key| labels.and_then(|l| l.get(key)).map(String::as_str));
            if !matched {
                continue;
            }
            for rule in other.rules.iter().flatten() {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
        }
    }
    Some(rules)
}

/// The aggregated roles whose rules differ from the union they aggregate: (name, new rules).
pub fn reconcile(all: &[ClusterRole]) -> Vec<(String, Vec<PolicyRule>)> {
    let mut out = Vec::new();
    for role in all {
        let Some(rules) = aggregated_rules(role, all) else {
            continue;
        };
        if rules != role.rules.clone().unwrap_or_default() {
            out.push((role.metadata.name.clone().unwrap_or_default(), rules));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn role(v: serde_json::Value) -> ClusterRole {
        serde_json::from_value(v).unwrap()
    }

    fn reader(name: &str, label: &str, resource: &str) -> ClusterRole {
        role(
            json!({"metadata": {"name": name, "labels": {label: "true"}},
            "rules": [{"apiGroups": [""], "resources": [resource], "verbs": ["get"]}]}),
        )
    }

    fn aggregated(name: &str, label: &str) -> ClusterRole {
        role(json!({"metadata": {"name": name},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {label: "true"}}]},
            "rules": []}))
    }

    fn resources(rules: &[PolicyRule]) -> Vec<String> {
        rules
            .iter()
            .flat_map(|r| r.resources.clone().unwrap_or_default())
            .collect()
    }

    #[test]
    fn an_aggregated_role_gets_the_rules_of_the_matching_roles_in_name_order() {
        let all = vec![
            aggregated("view", "to-view"),
            reader("z-crontabs", "to-view", "crontabs"),
            reader("a-pods", "to-view", "pods"),
            reader("other", "to-edit", "secrets"),
        ];
        let changes = reconcile(&all);
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].0, "view");
        assert_eq!(resources(&changes[0].1), vec!["pods", "crontabs"]);
    }

    #[test]
    fn an_up_to_date_role_needs_nothing_and_equal_rules_appear_once() {
        let mut view = aggregated("view", "to-view");
        let a = reader("a", "to-view", "pods");
        let b = reader("b", "to-view", "pods");
        view.rules = a.rules.clone();
        assert!(reconcile(&[view.clone(), a.clone(), b.clone()]).is_empty());
        // The last matching role removed: the rules go with it.
        let changes = reconcile(&[view, b.clone()]);
        assert!(changes.is_empty(), "b carries the same rule");
        let changes = reconcile(&[aggregated("view", "to-view"), a.clone()]);
        assert_eq!(resources(&changes[0].1), vec!["pods"]);
        let mut filled = aggregated("view", "to-view");
        filled.rules = a.rules.clone();
        let changes = reconcile(&[filled]);
        assert_eq!(changes, vec![("view".to_string(), vec![])]);
    }

    #[test]
    fn aggregated_roles_chain_and_a_role_never_aggregates_itself() {
        // edit aggregates view, which is itself aggregated and labelled into edit.
        let mut view = aggregated("view", "to-view");
        view.metadata.labels = Some([("to-edit".to_string(), "true".to_string())].into());
        let pods = reader("pods", "to-view", "pods");
        view.rules = pods.rules.clone();
        let mut edit = aggregated("edit", "to-edit");
        edit.metadata.labels = Some([("to-edit".to_string(), "true".to_string())].into());
        let changes = reconcile(&[edit, view, pods]);
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].0, "edit");
        assert_eq!(resources(&changes[0].1), vec!["pods"]);
    }

    #[test]
    fn roles_without_an_aggregation_rule_and_bad_selectors_are_left_alone() {
        let plain = reader("plain", "x", "pods");
        assert!(aggregated_rules(&plain, &[]).is_none());
        let bad = role(json!({"metadata": {"name": "bad"},
            "aggregationRule": {"clusterRoleSelectors": [
                {"matchExpressions": [{"key": "x", "operator": "Bogus"}]}]}}));
        assert_eq!(aggregated_rules(&bad, &[plain]), Some(vec![]));
    }
}
