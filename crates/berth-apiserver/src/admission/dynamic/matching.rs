//! Which requests a webhook or a policy is asked about: its `rules` (operations, groups,
//! versions, resources with subresources, scope), `matchPolicy`, `namespaceSelector` and
//! `objectSelector`, as upstream's `admission/plugin/webhook/predicates` decide it.

use super::{Attributes, Operation};
use berth_core::labels::Selector;
use serde_json::{Map, Value};

/// One `rules[]` entry (a `RuleWithOperations`, or a policy's `NamedRuleWithOperations`).
#[derive(Debug, Clone, Default)]
pub struct Rule {
    operations: Vec<String>,
    api_groups: Vec<String>,
    api_versions: Vec<String>,
    resources: Vec<String>,
    /// `*`, `Cluster` or `Namespaced`.
    scope: String,
    /// A policy rule's `resourceNames`; empty: every name.
    resource_names: Vec<String>,
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

fn any_or(list: &[String], value: &str) -> bool {
    list.iter().any(|x| x == "*" || x == value)
}

impl Rule {
    /// Reads one stored rule (defaults were applied when it was stored).
    pub fn parse(v: &Value) -> Rule {
        Rule {
            operations: strings(&v["operations"]),
            api_groups: strings(&v["apiGroups"]),
            api_versions: strings(&v["apiVersions"]),
            resources: strings(&v["resources"]),
            scope: v["scope"].as_str().unwrap_or("*").to_string(),
            resource_names: strings(&v["resourceNames"]),
        }
    }

    /// Whether the rule covers the request exactly (upstream's `rules.Matcher.Matches`).
    pub fn matches(&self, a: &Attributes) -> bool {
        self.matches_as(a, a.rt.group, a.rt.version)
    }

    /// Whether the rule covers the request as if it were made in `group`/`version`.
    fn matches_as(&self, a: &Attributes, group: &str, version: &str) -> bool {
        any_or(&self.operations, a.operation.as_str())
            && any_or(&self.api_groups, group)
            && any_or(&self.api_versions, version)
            && self.resource(a)
            && self.scope(a)
            && (self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == a.name))
    }

    /// `pods`, `pods/status`, `*/status`, `pods/*`, `*`, `*/*`: a resource without a
    /// subresource matches only requests without one.
    fn resource(&self, a: &Attributes) -> bool {
        self.resources.iter().any(|r| {
            let (res, sub) = r.split_once('/').unwrap_or((r, ""));
            (res == "*" || res == a.rt.plural) && (sub == "*" || sub == a.subresource)
        })
    }

    fn scope(&self, a: &Attributes) -> bool {
        // A namespace is cluster-scoped though its requests carry its own name as namespace.
        let is_namespace = a.rt.group.is_empty() && a.rt.plural == "namespaces";
        match self.scope.as_str() {
            "Cluster" => is_namespace || !a.rt.namespaced,
            "Namespaced" => !is_namespace && a.rt.namespaced,
            _ => true,
        }
    }
}

/// Groups that serve the same resource under other names (upstream's equivalent resources):
/// a rule written for one matches requests made in the other with `matchPolicy: Equivalent`.
const EQUIVALENT_GROUPS: &[(&str, &[&str])] = &[
    ("deployments", &["apps", "extensions"]),
    ("daemonsets", &["apps", "extensions"]),
    ("replicasets", &["apps", "extensions"]),
    ("networkpolicies", &["networking.k8s.io", "extensions"]),
    ("ingresses", &["networking.k8s.io", "extensions"]),
    ("events", &["", "events.k8s.io"]),
];

/// Whether any of `rules` covers the request: exactly, or with `matchPolicy: Equivalent` as
/// the same resource in another version or equivalent group.
pub fn rules_match(rules: &[Rule], equivalent: bool, a: &Attributes) -> bool {
    if rules.iter().any(|r| r.matches(a)) {
        return true;
    }
    if !equivalent {
        return false;
    }
    let groups: &[&str] = EQUIVALENT_GROUPS
        .iter()
        .find(|(plural, groups)| *plural == a.rt.plural && groups.contains(&a.rt.group))
        .map_or(&[], |(_, groups)| groups);
    rules.iter().any(|r| {
        r.api_versions.iter().any(|version| {
            r.matches_as(a, a.rt.group, version)
                || groups.iter().any(|g| r.matches_as(a, g, version))
        })
    })
}

/// Webhook and policy rules never apply to the admission configuration itself, so a broken
/// webhook can always be removed (upstream's `IsExemptAdmissionConfigurationResource`).
pub fn exempt(a: &Attributes) -> bool {
    a.rt.group == "admissionregistration.k8s.io"
}

/// A `namespaceSelector` and an `objectSelector`.
#[derive(Debug, Clone)]
pub struct Selectors {
    namespace: Selector,
    namespace_matches_all: bool,
    object: Selector,
    object_matches_all: bool,
}

impl Selectors {
    /// Reads the two selectors of `v` (absent: everything). A selector that cannot be parsed
    /// matches nothing, as upstream's does after reporting the error.
    pub fn parse(v: &Value) -> Selectors {
        let one = |s: &Value| -> (Selector, bool) {
            match s {
                Value::Null => (Selector::default(), true),
                s => {
                    let everything = s.as_object().is_some_and(|o| {
                        o.get("matchLabels")
                            .is_none_or(|l| l.as_object().is_none_or(Map::is_empty))
                            && o.get("matchExpressions")
                                .is_none_or(|e| e.as_array().is_none_or(Vec::is_empty))
                    });
                    (
                        Selector::from_label_selector(s).unwrap_or_else(|_| Selector::nothing()),
                        everything,
                    )
                }
            }
        };
        let (namespace, namespace_matches_all) = one(&v["namespaceSelector"]);
        let (object, object_matches_all) = one(&v["objectSelector"]);
        Selectors {
            namespace,
            namespace_matches_all,
            object,
            object_matches_all,
        }
    }

    /// Whether the namespace selector needs the namespace's labels at all.
    pub fn needs_namespace(&self) -> bool {
        !self.namespace_matches_all
    }

    /// Whether the request's namespace matches: requests for cluster-scoped objects other
    /// than namespaces always do; `labels` are the namespace's (for a namespace itself, its
    /// own).
    pub fn namespace_matches(&self, a: &Attributes, labels: Option<&Map<String, Value>>) -> bool {
        if self.namespace_matches_all {
            return true;
        }
        let is_namespace = a.rt.group.is_empty() && a.rt.plural == "namespaces";
        if !is_namespace && !a.rt.namespaced {
            return true;
        }
        let empty = Map::new();
        self.namespace.matches(labels.unwrap_or(&empty))
    }

    /// Whether the object or the old object carries labels the object selector matches.
    pub fn object_matches(&self, object: Option<&Value>, old: Option<&Value>) -> bool {
        if self.object_matches_all {
            return true;
        }
        let empty = Map::new();
        [object, old].into_iter().flatten().any(|o| {
            self.object.matches(
                o.pointer("/metadata/labels")
                    .and_then(Value::as_object)
                    .unwrap_or(&empty),
            )
        })
    }
}

impl Operation {
    /// The operation's name in rules and AdmissionReviews.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::user::UserInfo;
    use serde_json::json;

    fn attrs<'a>(
        user: &'a UserInfo,
        group: &str,
        plural: &str,
        subresource: &'a str,
        namespace: &'a str,
        operation: Operation,
    ) -> Attributes<'a> {
        let rt = berth_api::registry::all()
            .iter()
            .find(|t| t.group == group && t.plural == plural)
            .expect("resource type");
        Attributes {
            operation,
            rt,
            subresource,
            namespace,
            name: "x",
            user,
            dry_run: false,
            options: Value::Null,
        }
    }

    fn rule(v: Value) -> Rule {
        Rule::parse(&v)
    }

    // Vectors after upstream's `rules_test.go` (TestGroup, TestVersion, TestOperation,
    // TestResource, TestScope).
    #[test]
    fn operations_groups_and_versions_match_by_name_or_star() {
        let user = UserInfo::default();
        let pod = attrs(&user, "", "pods", "", "ns", Operation::Create);
        let all = json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]});
        assert!(rule(all).matches(&pod));
        let update_only = json!({"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]});
        assert!(!rule(update_only.clone()).matches(&pod));
        let pod_update = attrs(&user, "", "pods", "", "ns", Operation::Update);
        assert!(rule(update_only).matches(&pod_update));
        let apps = json!({"operations": ["*"], "apiGroups": ["apps"], "apiVersions": ["*"], "resources": ["*"]});
        assert!(!rule(apps.clone()).matches(&pod));
        let deploy = attrs(&user, "apps", "deployments", "", "ns", Operation::Create);
        assert!(rule(apps).matches(&deploy));
        let v1beta1 = json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["v1beta1"], "resources": ["*"]});
        assert!(!rule(v1beta1).matches(&deploy));
    }

    #[test]
    fn resources_match_with_their_subresources() {
        let user = UserInfo::default();
        let pod = attrs(&user, "", "pods", "", "ns", Operation::Update);
        let status = attrs(&user, "", "pods", "status", "ns", Operation::Update);
        let r = |resources: Value| {
            rule(
                json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": resources}),
            )
        };
        assert!(r(json!(["pods"])).matches(&pod));
        assert!(!r(json!(["pods"])).matches(&status));
        assert!(r(json!(["pods/status"])).matches(&status));
        assert!(r(json!(["*/status"])).matches(&status));
        assert!(!r(json!(["*/status"])).matches(&pod));
        assert!(r(json!(["pods/*"])).matches(&pod));
        assert!(r(json!(["pods/*"])).matches(&status));
        assert!(r(json!(["*/*"])).matches(&status));
        assert!(r(json!(["*"])).matches(&pod));
        assert!(!r(json!(["*"])).matches(&status));
        assert!(!r(json!(["services"])).matches(&pod));
    }

    #[test]
    fn scope_tells_namespaced_from_cluster_objects_and_namespaces_are_cluster_scoped() {
        let user = UserInfo::default();
        let pod = attrs(&user, "", "pods", "", "ns", Operation::Create);
        let node = attrs(&user, "", "nodes", "", "", Operation::Create);
        let namespace = attrs(&user, "", "namespaces", "", "ns", Operation::Create);
        let r = |scope: &str| {
            rule(
                json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": scope}),
            )
        };
        assert!(r("Namespaced").matches(&pod));
        assert!(!r("Namespaced").matches(&node));
        assert!(!r("Namespaced").matches(&namespace));
        assert!(r("Cluster").matches(&node));
        assert!(r("Cluster").matches(&namespace));
        assert!(!r("Cluster").matches(&pod));
        assert!(r("*").matches(&pod) && r("*").matches(&node));
    }

    #[test]
    fn equivalent_match_policy_matches_other_versions_and_equivalent_groups() {
        let user = UserInfo::default();
        let deploy = attrs(&user, "apps", "deployments", "", "ns", Operation::Create);
        let rules = vec![rule(
            json!({"operations": ["CREATE"], "apiGroups": ["extensions"], "apiVersions": ["v1beta1"], "resources": ["deployments"]}),
        )];
        assert!(!rules_match(&rules, false, &deploy));
        assert!(rules_match(&rules, true, &deploy));
        let other = vec![rule(
            json!({"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1beta2"], "resources": ["deployments"]}),
        )];
        assert!(rules_match(&other, true, &deploy));
        assert!(!rules_match(&other, false, &deploy));
        let pods = vec![rule(
            json!({"operations": ["CREATE"], "apiGroups": ["extensions"], "apiVersions": ["v1beta1"], "resources": ["pods"]}),
        )];
        let pod = attrs(&user, "", "pods", "", "ns", Operation::Create);
        assert!(!rules_match(&pods, true, &pod));
    }

    #[test]
    fn selectors_match_namespace_labels_and_object_or_old_object_labels() {
        let user = UserInfo::default();
        let pod = attrs(&user, "", "pods", "", "ns", Operation::Create);
        let node = attrs(&user, "", "nodes", "", "", Operation::Create);
        let s = Selectors::parse(&json!({
            "namespaceSelector": {"matchLabels": {"env": "prod"}},
            "objectSelector": {"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]},
        }));
        assert!(s.needs_namespace());
        let prod = json!({"env": "prod"});
        assert!(s.namespace_matches(&pod, prod.as_object()));
        assert!(!s.namespace_matches(&pod, None));
        assert!(
            s.namespace_matches(&node, None),
            "cluster-scoped objects have no namespace"
        );
        let labelled = json!({"metadata": {"labels": {"skip": "yes"}}});
        let plain = json!({"metadata": {}});
        assert!(!s.object_matches(Some(&labelled), None));
        assert!(s.object_matches(Some(&plain), None));
        assert!(s.object_matches(Some(&labelled), Some(&plain)));
        let all = Selectors::parse(&json!({"namespaceSelector": {}, "objectSelector": {}}));
        assert!(!all.needs_namespace());
        assert!(all.object_matches(Some(&labelled), None));
    }

    #[test]
    fn admission_configuration_is_exempt() {
        let user = UserInfo::default();
        let hooks = attrs(
            &user,
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
            "",
            "",
            Operation::Delete,
        );
        assert!(exempt(&hooks));
        assert!(!exempt(&attrs(
            &user,
            "",
            "pods",
            "",
            "ns",
            Operation::Create
        )));
    }
}
