//! RBAC's guard against privilege escalation, as upstream's RBAC REST storage applies it to
//! writes of roles and bindings: a user may only write a role whose rules they already hold
//! (or with the `escalate` verb on roles), and only bind a role whose rules they hold (or with
//! the `bind` verb on it). Members of `system:masters` may do both.
//!
//! This is the rule arithmetic ([`missing`]: upstream `Covers`, `BreakdownRule`,
//! `CompactRules`, `CompactString`) and the refusal's words, all pure; `crate::rbac::escalation`
//! applies them to a write.

use super::rule::Rule;
use crate::user::UserInfo;
use berth_core::validation::names::go_quote;
use std::collections::BTreeSet;

/// `rule` split into atoms of one group, resource, name (if any) and verb, or one URL and
/// verb (upstream `BreakdownRule`).
fn breakdown(rule: &Rule) -> Vec<Rule> {
    let one = |s: &String| vec![s.clone()];
    let mut out = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let atom = Rule {
                    verbs: one(verb),
                    api_groups: one(group),
                    resources: one(resource),
                    ..Rule::default()
                };
                if rule.resource_names.is_empty() {
                    out.push(atom);
                } else {
                    out.extend(rule.resource_names.iter().map(|name| Rule {
                        resource_names: one(name),
                        ..atom.clone()
                    }));
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(Rule {
                verbs: one(verb),
                non_resource_urls: one(url),
                ..Rule::default()
            });
        }
    }
    out
}

fn has_all(owner: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|w| owner.contains(w))
}

fn resource_covered(owner: &[String], wanted: &str) -> bool {
    owner.iter().any(|o| {
        o == "*"
            || o == wanted
            || wanted
                .split_once('/')
                .is_some_and(|(_, sub)| o.strip_prefix("*/") == Some(sub))
    })
}

fn url_covered(owner: &[String], wanted: &str) -> bool {
    owner.iter().any(|o| {
        o == wanted
            || o.strip_suffix('*')
                .is_some_and(|prefix| wanted.starts_with(prefix))
    })
}

/// Whether `owner` grants everything `atom` does (upstream `ruleCovers`).
fn covers(owner: &Rule, atom: &Rule) -> bool {
    let star = |list: &[String]| list.iter().any(|s| s == "*");
    let verbs = star(&owner.verbs) || has_all(&owner.verbs, &atom.verbs);
    let groups = star(&owner.api_groups) || has_all(&owner.api_groups, &atom.api_groups);
    let resources = atom
        .resources
        .iter()
        .all(|r| resource_covered(&owner.resources, r));
    let urls = atom
        .non_resource_urls
        .iter()
        .all(|u| url_covered(&owner.non_resource_urls, u));
    let names = if atom.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &atom.resource_names)
    };
    verbs && groups && resources && urls && names
}

/// What of `wanted` the `held` rules do not grant, one line per rule in upstream's words
/// (`{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}`), sorted. Atoms of one
/// group, resource and name are merged into one rule with their verbs, as upstream compacts.
pub fn missing<'a>(held: impl Iterator<Item = &'a Rule> + Clone, wanted: &[Rule]) -> Vec<String> {
    let mut compacted: Vec<Rule> = Vec::new();
    for atom in wanted.iter().flat_map(breakdown) {
        if held.clone().any(|owner| covers(owner, &atom)) {
            continue;
        }
        let same_target = |r: &&mut Rule| {
            atom.non_resource_urls.is_empty()
                && r.non_resource_urls.is_empty()
                && r.api_groups == atom.api_groups
                && r.resources == atom.resources
                && r.resource_names == atom.resource_names
        };
        match compacted.iter_mut().find(same_target) {
            Some(rule) if !rule.verbs.contains(&atom.verbs[0]) => {
                rule.verbs.extend(atom.verbs.iter().cloned())
            }
            Some(_) => {}
            None => compacted.push(atom),
        }
    }
    let lines: BTreeSet<String> = compacted.iter().map(compact_string).collect();
    lines.into_iter().collect()
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
fn go_list(list: &[String]) -> String {
    let quoted: Vec<String> = list.iter().map(|s| go_quote(s)).collect();
    format!("[{}]", quoted.join(" "))
}

/// Upstream `CompactString`: the rule's non-empty fields.
fn compact_string(rule: &Rule) -> String {
    let mut parts = Vec::new();
    for (field, list) in [
        ("APIGroups", &rule.api_groups),
        ("Resources", &rule.resources),
        ("NonResourceURLs", &rule.non_resource_urls),
        ("ResourceNames", &rule.resource_names),
        ("Verbs", &rule.verbs),
    ] {
        if !list.is_empty() {
            parts.push(format!("{field}:{}", go_list(list)));
        }
    }
    format!("{{{}}}", parts.join(", "))
}

/// Upstream's words for a write that would grant what the user does not hold.
pub fn not_held(user: &UserInfo, missing: &[String]) -> String {
    format!(
        "user {} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        go_quote(&user.name),
        go_list(&user.groups),
        missing.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn rules(v: Value) -> Vec<Rule> {
        v.as_array().unwrap().iter().map(Rule::from_json).collect()
    }

    fn missing_of(held: Value, wanted: Value) -> Vec<String> {
        let held = rules(held);
        missing(held.iter(), &rules(wanted))
    }

    #[test]
    fn rules_held_exactly_or_by_star_cover_what_is_granted() {
        let wanted = json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]);
        let exact =
            json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]);
        assert!(missing_of(exact, wanted.clone()).is_empty());
        let star = json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]);
        assert!(missing_of(star, wanted.clone()).is_empty());
        // Split across two rules is still held.
        let split = json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
                           {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]);
        assert!(missing_of(split, wanted).is_empty());
    }

    #[test]
    fn what_is_not_held_is_listed_compacted_in_upstream_words() {
        let held = json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]);
        let wanted = json!([
            {"apiGroups": [""], "resources": ["pods", "secrets"], "verbs": ["get", "list"]},
            {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]);
        assert_eq!(
            missing_of(held, wanted),
            vec![
                r#"{APIGroups:[""], Resources:["pods"], Verbs:["list"]}"#,
                r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}"#,
                r#"{NonResourceURLs:["/metrics"], Verbs:["get"]}"#,
            ]
        );
    }

    #[test]
    fn resource_names_subresources_and_urls() {
        // A rule limited to names does not cover the whole resource.
        let named = json!([{"apiGroups": [""], "resources": ["configmaps"],
                            "resourceNames": ["a"], "verbs": ["get"]}]);
        let all = json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]);
        assert_eq!(missing_of(named.clone(), all.clone()).len(), 1);
        assert!(missing_of(all, named).is_empty());
        let any_status =
            json!([{"apiGroups": [""], "resources": ["*/status"], "verbs": ["update"]}]);
        let pod_status =
            json!([{"apiGroups": [""], "resources": ["pods/status"], "verbs": ["update"]}]);
        assert!(missing_of(any_status.clone(), pod_status).is_empty());
        let pods = json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["update"]}]);
        assert_eq!(missing_of(any_status, pods).len(), 1);
        let urls = json!([{"nonResourceURLs": ["/api/*"], "verbs": ["get"]}]);
        assert!(missing_of(
            urls.clone(),
            json!([{"nonResourceURLs": ["/api/v1"], "verbs": ["get"]}])
        )
        .is_empty());
        assert_eq!(
            missing_of(
                urls,
                json!([{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}])
            ),
            vec![r#"{NonResourceURLs:["/metrics"], Verbs:["get"]}"#]
        );
    }

    #[test]
    fn the_refusal_names_the_user_and_groups_as_go_prints_them() {
        let alice = UserInfo {
            name: "alice".into(),
            groups: vec!["dev".into(), "system:authenticated".into()],
            ..UserInfo::default()
        };
        assert_eq!(
            not_held(&alice, &["{A}".into(), "{B}".into()]),
            "user \"alice\" (groups=[\"dev\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{A}\n{B}"
        );
    }
}
