//! Reconciling a stored bootstrap role or binding with what this version of berth expects,
//! as upstream's `rbac/reconciliation` does in the `rbac/bootstrap-roles` post-start hook:
//! the union of the two (missing rules, aggregation selectors, subjects, labels and
//! annotations added; what a user added kept), nothing done to an object annotated
//! `rbac.authorization.kubernetes.io/autoupdate: "false"`.

use serde_json::{json, Map, Value};

pub const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";

/// What to do with one stored object.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// Nothing is missing.
    Unchanged,
    /// Something is missing but the object opted out of reconciliation.
    Protected,
    /// Write this object in place of the stored one.
    Update(Value),
}

/// Reconciles a stored ClusterRole or Role with the expected one.
pub fn role(existing: &Value, expected: &Value) -> Outcome {
    let mut out = existing.clone();
    merge_metadata(&mut out, expected);
    let have = rules(existing);
    let mut missing: Vec<Value> = Vec::new();
    for rule in rules(expected) {
        for atom in breakdown(rule) {
            if !have.iter().any(|owner| covers(owner, &atom)) && !missing.contains(&atom) {
                missing.push(atom);
            }
        }
    }
    if !missing.is_empty() {
        let mut all: Vec<Value> = have.into_iter().cloned().collect();
        all.extend(missing);
        out["rules"] = Value::Array(all);
    }
    reconcile_aggregation(&mut out, existing, expected);
    decide(existing, out)
}

/// Reconciles a stored ClusterRoleBinding or RoleBinding with the expected one: the expected
/// roleRef (upstream recreates a binding whose roleRef changed) and any missing subjects.
pub fn binding(existing: &Value, expected: &Value) -> Outcome {
    let mut out = existing.clone();
    merge_metadata(&mut out, expected);
    if existing.get("roleRef") != expected.get("roleRef") {
        out["roleRef"] = expected["roleRef"].clone();
    }
    let have = list(existing, "subjects");
    let missing: Vec<&Value> = list(expected, "subjects")
        .into_iter()
        .filter(|s| !have.iter().any(|h| same_subject(h, s)))
        .collect();
    if !missing.is_empty() {
        let mut all: Vec<Value> = have.into_iter().cloned().collect();
        all.extend(missing.into_iter().cloned());
        out["subjects"] = Value::Array(all);
    }
    decide(existing, out)
}

fn decide(existing: &Value, reconciled: Value) -> Outcome {
    if reconciled == *existing {
        Outcome::Unchanged
    } else if existing["metadata"]["annotations"][AUTOUPDATE] == "false" {
        Outcome::Protected
    } else {
        Outcome::Update(reconciled)
    }
}

/// Labels and annotations the object lacks are added; the stored values win.
fn merge_metadata(out: &mut Value, expected: &Value) {
    for field in ["labels", "annotations"] {
        let Some(want) = expected["metadata"][field].as_object() else {
            continue;
        };
        let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) else {
            continue;
        };
        let entry = meta
            .entry(field)
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        if let Some(have) = entry.as_object_mut() {
            for (k, v) in want {
                have.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
}

/// Missing aggregation selectors are added; an aggregation rule the expected role does not
/// have is removed, as upstream does.
fn reconcile_aggregation(out: &mut Value, existing: &Value, expected: &Value) {
    let Some(want) = expected.get("aggregationRule") else {
        if let Some(obj) = out.as_object_mut() {
            obj.remove("aggregationRule");
        }
        return;
    };
    let have = list(&existing["aggregationRule"], "clusterRoleSelectors");
    let missing: Vec<&Value> = list(want, "clusterRoleSelectors")
        .into_iter()
        .filter(|s| !have.contains(s))
        .collect();
    if !missing.is_empty() {
        let mut all: Vec<Value> = have.into_iter().cloned().collect();
        all.extend(missing.into_iter().cloned());
        out["aggregationRule"] = json!({"clusterRoleSelectors": all});
    }
}

fn list<'a>(obj: &'a Value, field: &str) -> Vec<&'a Value> {
    obj.get(field)
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

fn rules(role: &Value) -> Vec<&Value> {
    list(role, "rules")
}

fn strings(rule: &Value, field: &str) -> Vec<String> {
    list(rule, field)
        .into_iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

/// A rule split into rules of one verb over one group, resource and name (or one URL), as
/// upstream's `BreakdownRule`.
fn breakdown(rule: &Value) -> Vec<Value> {
    let verbs = strings(rule, "verbs");
    let mut out = Vec::new();
    for group in strings(rule, "apiGroups") {
        for resource in strings(rule, "resources") {
            for verb in &verbs {
                let names = strings(rule, "resourceNames");
                if names.is_empty() {
                    out.push(
                        json!({"apiGroups": [group], "resources": [resource], "verbs": [verb]}),
                    );
                }
                for name in names {
                    out.push(json!({"apiGroups": [group], "resources": [resource],
                                    "resourceNames": [name], "verbs": [verb]}));
                }
            }
        }
    }
    for url in strings(rule, "nonResourceURLs") {
        for verb in &verbs {
            out.push(json!({"nonResourceURLs": [url], "verbs": [verb]}));
        }
    }
    out
}

/// Whether `owner` grants everything the one-verb rule `atom` grants.
fn covers(owner: &Value, atom: &Value) -> bool {
    let has = |field: &str, want: &str, matches: fn(&str, &str) -> bool| {
        strings(owner, field).iter().any(|o| matches(o, want))
    };
    let exact = |o: &str, w: &str| o == "*" || o == w;
    let verb = strings(atom, "verbs");
    let Some(verb) = verb.first() else {
        return true;
    };
    if !has("verbs", verb, exact) {
        return false;
    }
    if let Some(url) = strings(atom, "nonResourceURLs").first() {
        return has("nonResourceURLs", url, |o, w| {
            o == w || o.strip_suffix('*').is_some_and(|p| w.starts_with(p))
        });
    }
    let (Some(group), Some(resource)) = (
        strings(atom, "apiGroups").first().cloned(),
        strings(atom, "resources").first().cloned(),
    ) else {
        return true;
    };
    let resource_matches = |o: &str, w: &str| {
        o == "*"
            || o == w
            // `*/scale` covers the scale subresource of every resource.
            || o.strip_prefix("*/").is_some_and(|sub| w.split_once('/').is_some_and(|(_, s)| s == sub))
    };
    if !has("apiGroups", &group, exact) || !has("resources", &resource, resource_matches) {
        return false;
    }
    let owner_names = strings(owner, "resourceNames");
    match strings(atom, "resourceNames").first() {
        _ if owner_names.is_empty() => true,
        Some(name) => owner_names.contains(name),
        None => false,
    }
}

fn same_subject(a: &Value, b: &Value) -> bool {
    ["kind", "name", "namespace"]
        .iter()
        .all(|f| a.get(*f) == b.get(*f))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(autoupdate: &str) -> Value {
        json!({"name": "r", "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
               "annotations": {AUTOUPDATE: autoupdate}})
    }

    fn basic_user() -> Value {
        json!({"metadata": meta("true"), "rules": [
            {"apiGroups": ["authorization.k8s.io"],
             "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"], "verbs": ["create"]}]})
    }

    #[test]
    fn identical_role_is_left_alone() {
        assert_eq!(role(&basic_user(), &basic_user()), Outcome::Unchanged);
    }

    #[test]
    fn a_removed_rule_comes_back_and_a_users_rule_stays() {
        let user_rule = json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]});
        let existing = json!({"metadata": meta("true"), "rules": [user_rule]});
        let Outcome::Update(out) = role(&existing, &basic_user()) else {
            panic!("expected an update");
        };
        let rules = out["rules"].as_array().unwrap();
        assert_eq!(rules[0], user_rule);
        assert_eq!(rules.len(), 3);
        assert!(
            rules.contains(&json!({"apiGroups": ["authorization.k8s.io"],
            "resources": ["selfsubjectrulesreviews"], "verbs": ["create"]}))
        );
    }

    #[test]
    fn only_the_missing_part_of_a_rule_is_added() {
        let existing = json!({"metadata": meta("true"), "rules": [
            {"apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews"], "verbs": ["create"]}]});
        let Outcome::Update(out) = role(&existing, &basic_user()) else {
            panic!("expected an update");
        };
        assert_eq!(
            out["rules"][1],
            json!({"apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectrulesreviews"], "verbs": ["create"]})
        );
        assert_eq!(out["rules"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn wildcards_and_broader_rules_cover() {
        let existing = json!({"metadata": meta("true"), "rules": [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]});
        assert_eq!(role(&existing, &basic_user()), Outcome::Unchanged);
        let named = json!({"metadata": meta("true"), "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"], "verbs": ["get"]}]});
        let all = json!({"metadata": meta("true"), "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]});
        assert_eq!(role(&all, &named), Outcome::Unchanged);
        // A rule limited to names does not cover one over every object.
        assert!(matches!(role(&named, &all), Outcome::Update(_)));
        let urls = json!({"metadata": meta("true"), "rules": [{"nonResourceURLs": ["/api/*"], "verbs": ["get"]}]});
        let one = json!({"metadata": meta("true"), "rules": [{"nonResourceURLs": ["/api/v1"], "verbs": ["get"]}]});
        assert_eq!(role(&urls, &one), Outcome::Unchanged);
        let scale = json!({"metadata": meta("true"), "rules": [{"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["get"]}]});
        let dep = json!({"metadata": meta("true"), "rules": [{"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["get"]}]});
        assert_eq!(role(&scale, &dep), Outcome::Unchanged);
    }

    #[test]
    fn autoupdate_false_is_protected() {
        let existing = json!({"metadata": meta("false"), "rules": []});
        assert_eq!(role(&existing, &basic_user()), Outcome::Protected);
        let b = json!({"metadata": meta("false"), "roleRef": {"name": "x"}, "subjects": []});
        let want = json!({"metadata": meta("true"), "roleRef": {"name": "x"},
                          "subjects": [{"kind": "Group", "name": "g"}]});
        assert_eq!(binding(&b, &want), Outcome::Protected);
    }

    #[test]
    fn missing_labels_and_annotations_are_added_stored_ones_win() {
        let existing = json!({"metadata": {"name": "r", "labels": {"mine": "1"}}, "rules": basic_user()["rules"]});
        let Outcome::Update(out) = role(&existing, &basic_user()) else {
            panic!("expected an update");
        };
        assert_eq!(out["metadata"]["labels"]["mine"], "1");
        assert_eq!(out["metadata"]["annotations"][AUTOUPDATE], "true");
    }

    #[test]
    fn missing_aggregation_selectors_are_added_and_unexpected_ones_removed() {
        let sel = |l: &str| json!({"matchLabels": {l: "true"}});
        let expected = json!({"metadata": meta("true"), "rules": [],
                              "aggregationRule": {"clusterRoleSelectors": [sel("a")]}});
        // Aggregated rules the controller filled are not extra: they stay.
        let existing = json!({"metadata": meta("true"),
                              "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
                              "aggregationRule": {"clusterRoleSelectors": [sel("mine")]}});
        let Outcome::Update(out) = role(&existing, &expected) else {
            panic!("expected an update");
        };
        assert_eq!(
            out["aggregationRule"]["clusterRoleSelectors"],
            json!([sel("mine"), sel("a")])
        );
        assert_eq!(out["rules"], existing["rules"]);
        let plain = json!({"metadata": meta("true"), "rules": []});
        let Outcome::Update(out) = role(&existing, &plain) else {
            panic!("expected an update");
        };
        assert!(out.get("aggregationRule").is_none());
    }

    #[test]
    fn missing_subjects_are_added_and_users_subjects_kept() {
        let mine =
            json!({"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"});
        let theirs = json!({"kind": "Group", "name": "system:authenticated", "apiGroup": "rbac.authorization.k8s.io"});
        let rr =
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "r"});
        let existing = json!({"metadata": meta("true"), "roleRef": rr, "subjects": [mine]});
        let expected = json!({"metadata": meta("true"), "roleRef": rr, "subjects": [theirs]});
        let Outcome::Update(out) = binding(&existing, &expected) else {
            panic!("expected an update");
        };
        assert_eq!(out["subjects"], json!([mine, theirs]));
        assert_eq!(binding(&out, &expected), Outcome::Unchanged);
        let no_subjects = json!({"metadata": meta("true"), "roleRef": rr});
        assert_eq!(binding(&no_subjects, &no_subjects), Outcome::Unchanged);
    }
}
