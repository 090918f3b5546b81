//! Which FlowSchema a request belongs to, as upstream's `apf_controller` matching: FlowSchemas
//! are tried in increasing `matchingPrecedence` (ties by name); the first whose rules match the
//! request wins, unless its priority level does not exist (upstream's "dangling" schema, which
//! is skipped). A rule matches when one of its `subjects` is the requester and one of its
//! resource rules (for a resource request) or non-resource rules (for any other path) matches
//! the request.
//!
//! FlowSchemas are read from their JSON leniently: a member of the wrong type counts as absent,
//! so no stored object can make classification fail or panic.

use crate::authorizer::Attributes;
use serde_json::Value;

/// `*` in `verbs`, `apiGroups`, `resources`, `nonResourceURLs` and user/group/service-account
/// names: matches everything.
const ALL: &str = "*";

/// The user-name prefix of every service account (`system:serviceaccount:<ns>:<name>`).
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// How a FlowSchema splits its requests into flows (`distinguisherMethod.type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distinguisher {
    /// No `distinguisherMethod`: all of the schema's requests are one flow.
    None,
    /// `ByUser`: one flow per user name.
    ByUser,
    /// `ByNamespace`: one flow per namespace (cluster-scoped requests share one).
    ByNamespace,
}

/// A FlowSchema, compiled.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowSchema {
    pub name: String,
    pub uid: String,
    pub priority_level: String,
    pub matching_precedence: i64,
    pub distinguisher: Distinguisher,
    rules: Vec<Rules>,
}

#[derive(Clone, Debug, PartialEq)]
struct Rules {
    subjects: Vec<Subject>,
    resource_rules: Vec<ResourceRule>,
    non_resource_rules: Vec<NonResourceRule>,
}

#[derive(Clone, Debug, PartialEq)]
enum Subject {
    User(String),
    Group(String),
    ServiceAccount { namespace: String, name: String },
}

#[derive(Clone, Debug, PartialEq)]
struct ResourceRule {
    verbs: Vec<String>,
    api_groups: Vec<String>,
    resources: Vec<String>,
    cluster_scope: bool,
    namespaces: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
struct NonResourceRule {
    verbs: Vec<String>,
    urls: Vec<String>,
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

fn items(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

impl FlowSchema {
    /// Compiles a stored FlowSchema; `None` if it has no name.
    pub fn compile(obj: &Value) -> Option<FlowSchema> {
        let name = obj["metadata"]["name"].as_str()?.to_string();
        let spec = &obj["spec"];
        let distinguisher = match spec["distinguisherMethod"]["type"].as_str() {
            Some("ByUser") => Distinguisher::ByUser,
            Some("ByNamespace") => Distinguisher::ByNamespace,
            _ => Distinguisher::None,
        };
        let rules = items(&spec["rules"])
            .iter()
            .map(|r| Rules {
                subjects: items(&r["subjects"]).iter().filter_map(subject).collect(),
                resource_rules: items(&r["resourceRules"])
                    .iter()
                    .map(|rr| ResourceRule {
                        verbs: strings(&rr["verbs"]),
                        api_groups: strings(&rr["apiGroups"]),
                        resources: strings(&rr["resources"]),
                        cluster_scope: rr["clusterScope"].as_bool().unwrap_or(false),
                        namespaces: strings(&rr["namespaces"]),
                    })
                    .collect(),
                non_resource_rules: items(&r["nonResourceRules"])
                    .iter()
                    .map(|nr| NonResourceRule {
                        verbs: strings(&nr["verbs"]),
                        urls: strings(&nr["nonResourceURLs"]),
                    })
                    .collect(),
            })
            .collect();
        Some(FlowSchema {
            name,
            uid: text(&obj["metadata"]["uid"]),
            priority_level: text(&spec["priorityLevelConfiguration"]["name"]),
            // Upstream defaults an absent precedence to 1000.
            matching_precedence: spec["matchingPrecedence"].as_i64().unwrap_or(1000),
            distinguisher,
            rules,
        })
    }

    /// Whether the request `a` belongs to this schema.
    pub fn matches(&self, a: &Attributes<'_>) -> bool {
        self.rules.iter().any(|r| r.matches(a))
    }

    /// The flow distinguisher of `a` under this schema.
    pub fn distinguisher_of<'a>(&self, a: &Attributes<'a>) -> &'a str {
        match self.distinguisher {
            Distinguisher::None => "",
            Distinguisher::ByUser => &a.user.name,
            Distinguisher::ByNamespace => a.namespace,
        }
    }
}

fn subject(s: &Value) -> Option<Subject> {
    match s["kind"].as_str()? {
        "User" => Some(Subject::User(s["user"]["name"].as_str()?.to_string())),
        "Group" => Some(Subject::Group(s["group"]["name"].as_str()?.to_string())),
        "ServiceAccount" => Some(Subject::ServiceAccount {
            namespace: s["serviceAccount"]["namespace"].as_str()?.to_string(),
            name: s["serviceAccount"]["name"].as_str()?.to_string(),
        }),
        _ => None,
    }
}

fn has(list: &[String], value: &str) -> bool {
    list.iter().any(|v| v == ALL || v == value)
}

impl Subject {
    fn matches(&self, a: &Attributes<'_>) -> bool {
        let user = &a.user.name;
        match self {
            Subject::User(name) => name == ALL || name == user,
            Subject::Group(group) => group == ALL || a.user.in_group(group),
            Subject::ServiceAccount { namespace, name } => {
                let Some(rest) = user.strip_prefix(SERVICE_ACCOUNT_PREFIX) else {
                    return false;
                };
                let Some((ns, sa)) = rest.split_once(':') else {
                    return false;
                };
                ns == namespace && (name == ALL || name == sa)
            }
        }
    }
}

impl Rules {
    fn matches(&self, a: &Attributes<'_>) -> bool {
        if !self.subjects.iter().any(|s| s.matches(a)) {
            return false;
        }
        if a.path.is_empty() {
            self.resource_rules.iter().any(|r| r.matches(a))
        } else {
            self.non_resource_rules.iter().any(|r| r.matches(a))
        }
    }
}

impl ResourceRule {
    fn matches(&self, a: &Attributes<'_>) -> bool {
        if !has(&self.verbs, a.verb) || !has(&self.api_groups, a.api_group) {
            return false;
        }
        let resource_matches = if a.subresource.is_empty() {
            has(&self.resources, a.resource)
        } else {
            has(
                &self.resources,
                &format!("{}/{}", a.resource, a.subresource),
            )
        };
        if !resource_matches {
            return false;
        }
        if a.namespace.is_empty() {
            self.cluster_scope
        } else {
            has(&self.namespaces, a.namespace)
        }
    }
}

impl NonResourceRule {
    fn matches(&self, a: &Attributes<'_>) -> bool {
        has(&self.verbs, a.verb)
            && self.urls.iter().any(|u| {
                u == ALL
                    || u == a.path
                    || u.strip_suffix('*')
                        .is_some_and(|prefix| a.path.starts_with(prefix))
            })
    }
}

/// Sorts schemas into matching order: increasing `matchingPrecedence`, ties by name.
pub fn sort(schemas: &mut [FlowSchema]) {
    schemas.sort_by(|a, b| (a.matching_precedence, &a.name).cmp(&(b.matching_precedence, &b.name)));
}

/// The first schema of `sorted` (see [`sort`]) that matches `a` and whose priority level
/// `level_exists`.
pub fn classify<'s>(
    sorted: &'s [FlowSchema],
    a: &Attributes<'_>,
    level_exists: impl Fn(&str) -> bool,
) -> Option<&'s FlowSchema> {
    sorted
        .iter()
        .find(|fs| level_exists(&fs.priority_level) && fs.matches(a))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flowcontrol::bootstrap;
    use crate::user::UserInfo;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..UserInfo::default()
        }
    }

    struct Req {
        user: UserInfo,
        verb: &'static str,
        group: &'static str,
        resource: &'static str,
        subresource: &'static str,
        namespace: &'static str,
        path: &'static str,
    }

    fn resource(
        user: UserInfo,
        verb: &'static str,
        group: &'static str,
        resource: &'static str,
        namespace: &'static str,
    ) -> Req {
        Req {
            user,
            verb,
            group,
            resource,
            subresource: "",
            namespace,
            path: "",
        }
    }

    fn non_resource(user: UserInfo, verb: &'static str, path: &'static str) -> Req {
        Req {
            user,
            verb,
            group: "",
            resource: "",
            subresource: "",
            namespace: "",
            path,
        }
    }

    fn bootstrap_schemas() -> Vec<FlowSchema> {
        let mut schemas: Vec<FlowSchema> = bootstrap::flow_schemas()
            .iter()
            .filter_map(FlowSchema::compile)
            .collect();
        sort(&mut schemas);
        schemas
    }

    fn classified(schemas: &[FlowSchema], r: &Req) -> (String, String) {
        let a = Attributes {
            user: &r.user,
            verb: r.verb,
            api_group: r.group,
            resource: r.resource,
            subresource: r.subresource,
            namespace: r.namespace,
            name: "",
            path: r.path,
            field_selector: "",
        };
        let fs = classify(schemas, &a, |_| true).expect("catch-all matches everyone");
        (fs.name.clone(), fs.distinguisher_of(&a).to_string())
    }

    #[test]
    fn the_bootstrap_schemas_classify_as_upstream() {
        let authed = |name: &str, groups: &[&str]| {
            let mut g = groups.to_vec();
            g.push("system:authenticated");
            user(name, &g)
        };
        let admin = authed("system:admin", &["system:masters"]);
        let node = authed("system:node:n1", &["system:nodes"]);
        let scheduler = authed("system:kube-scheduler", &[]);
        let kcm = authed("system:kube-controller-manager", &[]);
        let alice = authed("alice", &[]);
        let anonymous = user("system:anonymous", &["system:unauthenticated"]);
        let ksa = authed(
            "system:serviceaccount:kube-system:deployment-controller",
            &[
                "system:serviceaccounts",
                "system:serviceaccounts:kube-system",
            ],
        );
        let app_sa = authed(
            "system:serviceaccount:team-a:builder",
            &["system:serviceaccounts", "system:serviceaccounts:team-a"],
        );
        let cases: Vec<(&str, Req, (&str, &str))> = vec![
            (
                "system:masters is exempt",
                resource(admin.clone(), "delete", "", "pods", "default"),
                ("exempt", ""),
            ),
            (
                "system:masters is exempt for non-resource paths too",
                non_resource(admin, "get", "/metrics"),
                ("exempt", ""),
            ),
            (
                "a health probe by anyone is exempt",
                non_resource(anonymous.clone(), "get", "/readyz"),
                ("probes", ""),
            ),
            (
                "a livez probe by a user is exempt",
                non_resource(alice.clone(), "get", "/livez"),
                ("probes", ""),
            ),
            (
                "a node updating its status is node-high",
                Req {
                    subresource: "status",
                    ..resource(node.clone(), "patch", "", "nodes", "")
                },
                ("system-node-high", "system:node:n1"),
            ),
            (
                "a node renewing its lease is node-high",
                resource(
                    node.clone(),
                    "update",
                    "coordination.k8s.io",
                    "leases",
                    "kube-node-lease",
                ),
                ("system-node-high", "system:node:n1"),
            ),
            (
                "a node reading pods is system-nodes",
                resource(node, "list", "", "pods", ""),
                ("system-nodes", "system:node:n1"),
            ),
            (
                "the scheduler renewing its lease is leader election",
                resource(
                    scheduler.clone(),
                    "update",
                    "coordination.k8s.io",
                    "leases",
                    "kube-system",
                ),
                ("system-leader-election", "system:kube-scheduler"),
            ),
            (
                "the scheduler binding a pod is kube-scheduler, by namespace",
                Req {
                    subresource: "binding",
                    ..resource(scheduler, "create", "", "pods", "team-a")
                },
                ("kube-scheduler", "team-a"),
            ),
            (
                "the controller manager writing endpoints is endpoint-controller",
                resource(kcm.clone(), "update", "", "endpoints", "default"),
                ("endpoint-controller", "system:kube-controller-manager"),
            ),
            (
                "the controller manager listing replica sets is kube-controller-manager",
                resource(kcm, "list", "apps", "replicasets", ""),
                ("kube-controller-manager", ""),
            ),
            (
                "a kube-system service account taking a config map lock elsewhere is workload leader election",
                resource(ksa.clone(), "update", "", "configmaps", "team-a"),
                (
                    "workload-leader-election",
                    "system:serviceaccount:kube-system:deployment-controller",
                ),
            ),
            (
                "a kube-system service account is workload-high, by namespace",
                resource(ksa, "create", "apps", "replicasets", "team-a"),
                ("kube-system-service-accounts", "team-a"),
            ),
            (
                "another service account is workload-low",
                resource(app_sa, "get", "", "configmaps", "team-a"),
                ("service-accounts", "system:serviceaccount:team-a:builder"),
            ),
            (
                "an ordinary user is global-default, by user",
                resource(alice.clone(), "list", "", "pods", "team-a"),
                ("global-default", "alice"),
            ),
            (
                "an ordinary user's non-resource request is global-default",
                non_resource(alice, "get", "/api"),
                ("global-default", "alice"),
            ),
            (
                "an anonymous request is global-default",
                non_resource(anonymous, "get", "/version"),
                ("global-default", "system:anonymous"),
            ),
        ];
        let schemas = bootstrap_schemas();
        for (name, req, (want_fs, want_flow)) in cases {
            assert_eq!(
                classified(&schemas, &req),
                (want_fs.to_string(), want_flow.to_string()),
                "{name}"
            );
        }
    }

    #[test]
    fn without_the_suggested_schemas_everyone_falls_to_catch_all() {
        let schemas: Vec<FlowSchema> = bootstrap_schemas()
            .into_iter()
            .filter(|fs| fs.name == "exempt" || fs.name == "catch-all")
            .collect();
        let alice = user("alice", &["system:authenticated"]);
        let r = resource(alice, "get", "", "pods", "default");
        assert_eq!(
            classified(&schemas, &r),
            ("catch-all".into(), "alice".into())
        );
    }

    #[test]
    fn a_schema_whose_level_is_missing_is_skipped() {
        let schemas = bootstrap_schemas();
        let alice = user("alice", &["system:authenticated"]);
        let a = Attributes {
            user: &alice,
            verb: "get",
            api_group: "",
            resource: "pods",
            subresource: "",
            namespace: "default",
            name: "",
            path: "",
            field_selector: "",
        };
        let fs = classify(&schemas, &a, |pl| pl != "global-default");
        assert_eq!(fs.map(|fs| fs.name.as_str()), Some("catch-all"));
    }

    #[test]
    fn ties_in_precedence_go_to_the_first_name() {
        let mk = |name: &str| {
            FlowSchema::compile(&serde_json::json!({
                "metadata": {"name": name},
                "spec": {"matchingPrecedence": 5, "priorityLevelConfiguration": {"name": "x"},
                    "rules": [{"subjects": [{"kind": "Group", "group": {"name": "*"}}],
                        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}
            }))
            .unwrap()
        };
        let mut schemas = vec![mk("b"), mk("a"), mk("c")];
        sort(&mut schemas);
        let u = user("u", &[]);
        let r = non_resource(u, "get", "/x");
        assert_eq!(classified(&schemas, &r).0, "a");
    }

    #[test]
    fn wildcard_urls_subjects_and_scope_follow_upstream() {
        let fs = FlowSchema::compile(&serde_json::json!({
            "metadata": {"name": "t"},
            "spec": {"priorityLevelConfiguration": {"name": "x"}, "rules": [
                {"subjects": [{"kind": "ServiceAccount", "serviceAccount": {"namespace": "ns", "name": "*"}}],
                 "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz/*"]}],
                 "resourceRules": [{"verbs": ["list"], "apiGroups": [""], "resources": ["pods"],
                     "namespaces": ["ns"], "clusterScope": false}]}]}
        }))
        .unwrap();
        assert_eq!(fs.matching_precedence, 1000);
        let sa = user("system:serviceaccount:ns:x", &[]);
        let other_sa = user("system:serviceaccount:ns2:x", &[]);
        let check = |u: &UserInfo, verb, ns, path: &str| {
            fs.matches(&Attributes {
                user: u,
                verb,
                api_group: "",
                resource: if path.is_empty() { "pods" } else { "" },
                subresource: "",
                namespace: ns,
                name: "",
                path,
                field_selector: "",
            })
        };
        assert!(check(&sa, "get", "", "/healthz/etcd"));
        assert!(!check(&sa, "get", "", "/healthz"));
        assert!(!check(&sa, "post", "", "/healthz/etcd"));
        assert!(check(&sa, "list", "ns", ""));
        assert!(!check(&sa, "list", "", ""), "cluster scope not allowed");
        assert!(!check(&sa, "list", "other", ""));
        assert!(!check(&other_sa, "list", "ns", ""));
    }

    #[test]
    fn a_malformed_schema_compiles_to_one_that_matches_nothing() {
        for spec in [
            serde_json::json!(null),
            serde_json::json!({"rules": 5}),
            serde_json::json!({"rules": [{"subjects": "x", "resourceRules": [1, null]}]}),
            serde_json::json!({"rules": [{"subjects": [{"kind": "User"}, {"kind": 3}]}],
                "distinguisherMethod": {"type": 7}, "matchingPrecedence": "high"}),
        ] {
            let fs =
                FlowSchema::compile(&serde_json::json!({"metadata": {"name": "m"}, "spec": spec}))
                    .unwrap();
            let u = user("u", &["system:authenticated"]);
            assert!(!fs.matches(&Attributes {
                user: &u,
                verb: "get",
                api_group: "",
                resource: "pods",
                subresource: "",
                namespace: "default",
                name: "",
                path: "",
                field_selector: "",
            }));
        }
        assert_eq!(FlowSchema::compile(&serde_json::json!({"spec": {}})), None);
    }
}
