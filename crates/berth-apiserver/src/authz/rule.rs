//! One RBAC policy rule and whether it allows a request: upstream's `RuleAllows` (verbs, API
//! groups, resources with `*` and `*/subresource`, resourceNames, nonResourceURLs with a
//! trailing `*`).

use crate::authorizer::Attributes;
use serde_json::Value;

/// A `PolicyRule` as stored in a Role or ClusterRole.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

impl Rule {
    /// The rule of a stored `rules[]` entry; missing lists are empty.
    pub fn from_json(v: &Value) -> Rule {
        Rule {
            verbs: strings(v, "verbs"),
            api_groups: strings(v, "apiGroups"),
            resources: strings(v, "resources"),
            resource_names: strings(v, "resourceNames"),
            non_resource_urls: strings(v, "nonResourceURLs"),
        }
    }

    /// The rules of a Role or ClusterRole object.
    pub fn all_of(role: &Value) -> Vec<Rule> {
        role.get("rules")
            .and_then(Value::as_array)
            .map(|rules| rules.iter().map(Rule::from_json).collect())
            .unwrap_or_default()
    }

    /// The rule as a `PolicyRule` object (empty lists left out, as upstream serializes them).
    pub fn to_json(&self) -> Value {
        let mut o = serde_json::Map::new();
        for (key, list) in [
            ("verbs", &self.verbs),
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("resourceNames", &self.resource_names),
            ("nonResourceURLs", &self.non_resource_urls),
        ] {
            if !list.is_empty() || key == "verbs" {
                o.insert(key.into(), Value::from(list.clone()));
            }
        }
        Value::Object(o)
    }

    /// Whether this rule allows the request `a` (upstream `RuleAllows`).
    pub fn allows(&self, a: &Attributes<'_>) -> bool {
        if !self.verb_matches(a.verb) {
            return false;
        }
        if !a.path.is_empty() {
            return self.url_matches(a.path);
        }
        self.group_matches(a.api_group)
            && self.resource_matches(a.resource, a.subresource)
            && self.name_matches(a.name)
    }

    fn verb_matches(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == "*" || v == verb)
    }

    fn group_matches(&self, group: &str) -> bool {
        self.api_groups.iter().any(|g| g == "*" || g == group)
    }

    /// `*` matches everything; `pods/status` only the subresource; `*/status` the subresource
    /// of any resource. A rule naming `pods` does not reach `pods/status`.
    fn resource_matches(&self, resource: &str, subresource: &str) -> bool {
        self.resources.iter().any(|r| {
            if r == "*" {
                return true;
            }
            if subresource.is_empty() {
                return r == resource;
            }
            match r.split_once('/') {
                Some((res, sub)) => sub == subresource && (res == resource || res == "*"),
                None => false,
            }
        })
    }

    /// An empty list allows every name (including none, for list and create).
    fn name_matches(&self, name: &str) -> bool {
        self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == name)
    }

    fn url_matches(&self, path: &str) -> bool {
        self.non_resource_urls.iter().any(|u| {
            u == "*"
                || u == path
                || u.strip_suffix('*')
                    .is_some_and(|prefix| path.starts_with(prefix))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::user::UserInfo;
    use serde_json::json;

    fn rule(v: Value) -> Rule {
        Rule::from_json(&v)
    }

    fn res<'a>(
        user: &'a UserInfo,
        verb: &'a str,
        group: &'a str,
        resource: &'a str,
        sub: &'a str,
        name: &'a str,
    ) -> Attributes<'a> {
        Attributes {
            user,
            verb,
            api_group: group,
            resource,
            subresource: sub,
            namespace: "ns",
            name,
            path: "",
            field_selector: "",
        }
    }

    fn url<'a>(user: &'a UserInfo, verb: &'a str, path: &'a str) -> Attributes<'a> {
        Attributes {
            user,
            verb,
            api_group: "",
            resource: "",
            subresource: "",
            namespace: "",
            name: "",
            path,
            field_selector: "",
        }
    }

    #[test]
    fn verbs_groups_and_resources_match_exactly_or_by_star() {
        let u = UserInfo::default();
        let r = rule(json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}));
        assert!(r.allows(&res(&u, "get", "", "pods", "", "p")));
        assert!(r.allows(&res(&u, "list", "", "pods", "", "")));
        assert!(!r.allows(&res(&u, "delete", "", "pods", "", "p")));
        assert!(!r.allows(&res(&u, "get", "apps", "pods", "", "p")));
        assert!(!r.allows(&res(&u, "get", "", "services", "", "p")));
        let all = rule(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}));
        assert!(all.allows(&res(
            &u,
            "escalate",
            "rbac.authorization.k8s.io",
            "roles",
            "",
            ""
        )));
        assert!(all.allows(&res(&u, "create", "", "pods", "binding", "p")));
    }

    #[test]
    fn subresources_need_their_own_rule() {
        let u = UserInfo::default();
        let pods = rule(json!({"verbs": ["*"], "apiGroups": [""], "resources": ["pods"]}));
        assert!(!pods.allows(&res(&u, "create", "", "pods", "binding", "p")));
        let binding =
            rule(json!({"verbs": ["create"], "apiGroups": [""], "resources": ["pods/binding"]}));
        assert!(binding.allows(&res(&u, "create", "", "pods", "binding", "p")));
        assert!(!binding.allows(&res(&u, "create", "", "pods", "eviction", "p")));
        assert!(!binding.allows(&res(&u, "create", "", "pods", "", "")));
        let any_status =
            rule(json!({"verbs": ["update"], "apiGroups": ["*"], "resources": ["*/status"]}));
        assert!(any_status.allows(&res(&u, "update", "", "nodes", "status", "n")));
        assert!(!any_status.allows(&res(&u, "update", "", "nodes", "", "n")));
    }

    #[test]
    fn resource_names_limit_to_named_objects() {
        let u = UserInfo::default();
        let r = rule(
            json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"]}),
        );
        assert!(r.allows(&res(&u, "get", "", "configmaps", "", "a")));
        assert!(!r.allows(&res(&u, "get", "", "configmaps", "", "b")));
        // Upstream: a list has no name, so a rule with resourceNames does not allow it.
        assert!(!r.allows(&res(&u, "list", "", "configmaps", "", "")));
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_trailing_star() {
        let u = UserInfo::default();
        let r = rule(json!({"verbs": ["get"], "nonResourceURLs": ["/healthz", "/api/*"]}));
        assert!(r.allows(&url(&u, "get", "/healthz")));
        assert!(r.allows(&url(&u, "get", "/api/v1")));
        assert!(!r.allows(&url(&u, "get", "/api")));
        assert!(!r.allows(&url(&u, "post", "/healthz")));
        assert!(!r.allows(&url(&u, "get", "/livez")));
        // A URL rule never grants resources, nor a resource rule URLs.
        assert!(!r.allows(&res(&u, "get", "", "pods", "", "")));
        let pods = rule(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}));
        assert!(!pods.allows(&url(&u, "get", "/healthz")));
        let star = rule(json!({"verbs": ["*"], "nonResourceURLs": ["*"]}));
        assert!(star.allows(&url(&u, "get", "/metrics")));
    }
}
