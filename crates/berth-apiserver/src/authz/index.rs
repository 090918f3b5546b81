//! Who is bound to what: Roles, ClusterRoles and their bindings, indexed by subject so that
//! authorizing a request looks up the requester's bindings instead of scanning every binding.
//!
//! The index is pure: it is fed stored objects ([`Index::apply`], [`Index::remove`]) by the
//! watch in [`super::rbac`] and answers [`Index::rules_for`] from memory.

use super::rule::Rule;
use crate::user::UserInfo;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// A binding's subject, as the index keys it.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub enum Subject {
    User(String),
    Group(String),
    ServiceAccount { namespace: String, name: String },
}

/// Which role a binding grants.
#[derive(Clone, Debug, PartialEq, Eq)]
enum RoleRef {
    ClusterRole(String),
    /// A Role of the binding's own namespace.
    Role(String),
}

/// A stored RoleBinding (`namespace` set) or ClusterRoleBinding.
#[derive(Clone, Debug)]
struct Binding {
    namespace: Option<String>,
    role: RoleRef,
    subjects: Vec<Subject>,
}

/// Where a stored RBAC object lives: its kind, namespace and name.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct ObjectKey {
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
}

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Kind {
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
}

impl Kind {
    /// The kind stored under the storage key's resource `plural`.
    pub fn of_plural(plural: &str) -> Option<Kind> {
        Some(match plural {
            "roles" => Kind::Role,
            "clusterroles" => Kind::ClusterRole,
            "rolebindings" => Kind::RoleBinding,
            "clusterrolebindings" => Kind::ClusterRoleBinding,
            _ => return None,
        })
    }
}

/// The RBAC objects of a cluster, indexed by subject.
#[derive(Default, Debug)]
pub struct Index {
    cluster_roles: HashMap<String, Arc<Vec<Rule>>>,
    /// (namespace, name) → rules.
    roles: HashMap<(String, String), Arc<Vec<Rule>>>,
    bindings: HashMap<ObjectKey, Binding>,
    by_subject: HashMap<Subject, HashSet<ObjectKey>>,
}

fn subjects(binding: &Value, namespace: &str) -> Vec<Subject> {
    let Some(list) = binding.get("subjects").and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|s| {
            let field = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or("");
            let name = field("name").to_string();
            Some(match field("kind") {
                "User" => Subject::User(name),
                "Group" => Subject::Group(name),
                "ServiceAccount" => Subject::ServiceAccount {
                    // A RoleBinding's ServiceAccount subject defaults to its own namespace.
                    namespace: match field("namespace") {
                        "" => namespace.to_string(),
                        ns => ns.to_string(),
                    },
                    name,
                },
                _ => return None,
            })
        })
        .collect()
}

/// The subjects a user matches: their name, their groups and, for a service account's
/// identity `system:serviceaccount:NS:NAME`, that service account.
pub fn subjects_of(user: &UserInfo) -> Vec<Subject> {
    let mut out = vec![Subject::User(user.name.clone())];
    out.extend(user.groups.iter().cloned().map(Subject::Group));
    if let Some((namespace, name)) = user
        .name
        .strip_prefix("system:serviceaccount:")
        .and_then(|rest| rest.split_once(':'))
    {
        out.push(Subject::ServiceAccount {
            namespace: namespace.into(),
            name: name.into(),
        });
    }
    out
}

impl Index {
    /// Records (or replaces) the stored object `obj` at `key`.
    pub fn apply(&mut self, key: ObjectKey, obj: &Value) {
        match key.kind {
            Kind::ClusterRole => {
                self.cluster_roles
                    .insert(key.name, Arc::new(Rule::all_of(obj)));
            }
            Kind::Role => {
                self.roles
                    .insert((key.namespace, key.name), Arc::new(Rule::all_of(obj)));
            }
            Kind::RoleBinding | Kind::ClusterRoleBinding => {
                self.remove(&key);
                let role_ref = &obj["roleRef"];
                let name = role_ref
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let role = match role_ref.get("kind").and_then(Value::as_str) {
                    Some("Role") if key.kind == Kind::RoleBinding => RoleRef::Role(name),
                    Some("ClusterRole") => RoleRef::ClusterRole(name),
                    _ => return,
                };
                let binding = Binding {
                    namespace: (key.kind == Kind::RoleBinding).then(|| key.namespace.clone()),
                    role,
                    subjects: subjects(obj, &key.namespace),
                };
                for s in &binding.subjects {
                    self.by_subject
                        .entry(s.clone())
                        .or_default()
                        .insert(key.clone());
                }
                self.bindings.insert(key, binding);
            }
        }
    }

    /// Forgets the object at `key`.
    pub fn remove(&mut self, key: &ObjectKey) {
        match key.kind {
            Kind::ClusterRole => {
                self.cluster_roles.remove(&key.name);
            }
            Kind::Role => {
                self.roles
                    .remove(&(key.namespace.clone(), key.name.clone()));
            }
            Kind::RoleBinding | Kind::ClusterRoleBinding => {
                let Some(old) = self.bindings.remove(key) else {
                    return;
                };
                for s in &old.subjects {
                    if let Some(keys) = self.by_subject.get_mut(s) {
                        keys.remove(key);
                        if keys.is_empty() {
                            self.by_subject.remove(s);
                        }
                    }
                }
            }
        }
    }

    /// Every rule that applies to `user` in `namespace` (`""`: cluster-wide rules only), each
    /// list shared with the index.
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> Vec<Arc<Vec<Rule>>> {
        let mut out = Vec::new();
        self.visit(user, namespace, |rules| {
            out.push(rules.clone());
            false
        });
        out
    }

    /// Whether any rule bound to `user` in `namespace` satisfies `allows`; stops at the first.
    pub fn any_rule(
        &self,
        user: &UserInfo,
        namespace: &str,
        mut allows: impl FnMut(&Rule) -> bool,
    ) -> bool {
        self.visit(user, namespace, |rules| rules.iter().any(&mut allows))
    }

    /// Every subject of a binding that applies in `namespace` (cluster-wide ones always; with
    /// `""` only those) to a role with a rule `allows` accepts: (users, groups), sorted and
    /// without repeats; a service account is the user `system:serviceaccount:NS:NAME`.
    pub fn subjects_allowed(
        &self,
        namespace: &str,
        mut allows: impl FnMut(&Rule) -> bool,
    ) -> (Vec<String>, Vec<String>) {
        let (mut users, mut groups) = (
            std::collections::BTreeSet::new(),
            std::collections::BTreeSet::new(),
        );
        for binding in self.bindings.values() {
            if binding
                .namespace
                .as_deref()
                .is_some_and(|ns| ns != namespace)
            {
                continue;
            }
            let rules = match &binding.role {
                RoleRef::ClusterRole(name) => self.cluster_roles.get(name),
                RoleRef::Role(name) => binding
                    .namespace
                    .as_ref()
                    .and_then(|ns| self.roles.get(&(ns.clone(), name.clone()))),
            };
            if !rules.is_some_and(|rules| rules.iter().any(&mut allows)) {
                continue;
            }
            for subject in &binding.subjects {
                match subject {
                    Subject::User(name) => {
                        users.insert(name.clone());
                    }
                    Subject::Group(name) => {
                        groups.insert(name.clone());
                    }
                    Subject::ServiceAccount { namespace, name } => {
                        users.insert(format!("system:serviceaccount:{namespace}:{name}"));
                    }
                }
            }
        }
        (users.into_iter().collect(), groups.into_iter().collect())
    }

    /// Calls `f` with the rules of each binding of `user` that applies in `namespace`, until
    /// `f` returns true.
    fn visit(
        &self,
        user: &UserInfo,
        namespace: &str,
        mut f: impl FnMut(&Arc<Vec<Rule>>) -> bool,
    ) -> bool {
        for subject in subjects_of(user) {
            let Some(keys) = self.by_subject.get(&subject) else {
                continue;
            };
            for key in keys {
                let Some(binding) = self.bindings.get(key) else {
                    continue;
                };
                if let Some(ns) = &binding.namespace {
                    if ns != namespace {
                        continue;
                    }
                }
                let rules = match &binding.role {
                    RoleRef::ClusterRole(name) => self.cluster_roles.get(name),
                    RoleRef::Role(name) => binding
                        .namespace
                        .as_ref()
                        .and_then(|ns| self.roles.get(&(ns.clone(), name.clone()))),
                };
                if let Some(rules) = rules {
                    if f(rules) {
                        return true;
                    }
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authorizer::Attributes;
    use serde_json::json;

    fn key(kind: Kind, ns: &str, name: &str) -> ObjectKey {
        ObjectKey {
            kind,
            namespace: ns.into(),
            name: name.into(),
        }
    }

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..UserInfo::default()
        }
    }

    fn can(index: &Index, u: &UserInfo, verb: &str, resource: &str, ns: &str) -> bool {
        let a = Attributes {
            user: u,
            verb,
            api_group: "",
            resource,
            subresource: "",
            namespace: ns,
            name: "",
            path: "",
            field_selector: "",
        };
        index.any_rule(u, ns, |r| r.allows(&a))
    }

    fn pod_writer() -> Value {
        json!({"rules": [{"verbs": ["create", "list"], "apiGroups": [""], "resources": ["pods"]}]})
    }

    #[test]
    fn a_role_binding_grants_in_its_namespace_only() {
        let mut index = Index::default();
        index.apply(key(Kind::Role, "dev", "pods"), &pod_writer());
        index.apply(
            key(Kind::RoleBinding, "dev", "alice-pods"),
            &json!({"roleRef": {"kind": "Role", "name": "pods"},
                    "subjects": [{"kind": "User", "name": "alice"}]}),
        );
        let alice = user("alice", &[]);
        assert!(can(&index, &alice, "create", "pods", "dev"));
        assert!(!can(&index, &alice, "create", "pods", "default"));
        assert!(!can(&index, &alice, "create", "pods", ""));
        assert!(!can(&index, &user("bob", &[]), "create", "pods", "dev"));
    }

    #[test]
    fn groups_service_accounts_and_cluster_bindings() {
        let mut index = Index::default();
        index.apply(key(Kind::ClusterRole, "", "pods"), &pod_writer());
        index.apply(
            key(Kind::ClusterRoleBinding, "", "devs"),
            &json!({"roleRef": {"kind": "ClusterRole", "name": "pods"},
                    "subjects": [{"kind": "Group", "name": "dev"}]}),
        );
        index.apply(
            key(Kind::RoleBinding, "ci", "robot"),
            &json!({"roleRef": {"kind": "ClusterRole", "name": "pods"},
                    "subjects": [{"kind": "ServiceAccount", "name": "robot"}]}),
        );
        assert!(can(&index, &user("carol", &["dev"]), "list", "pods", "any"));
        assert!(can(&index, &user("carol", &["dev"]), "list", "pods", ""));
        let robot = user("system:serviceaccount:ci:robot", &[]);
        assert!(can(&index, &robot, "list", "pods", "ci"));
        assert!(!can(&index, &robot, "list", "pods", "other"));
    }

    #[test]
    fn removing_and_replacing_objects_updates_the_answers() {
        let mut index = Index::default();
        let binding = key(Kind::ClusterRoleBinding, "", "b");
        index.apply(key(Kind::ClusterRole, "", "pods"), &pod_writer());
        index.apply(
            binding.clone(),
            &json!({"roleRef": {"kind": "ClusterRole", "name": "pods"},
                    "subjects": [{"kind": "User", "name": "alice"}]}),
        );
        let alice = user("alice", &[]);
        assert!(can(&index, &alice, "list", "pods", "x"));
        // The binding now names bob instead.
        index.apply(
            binding.clone(),
            &json!({"roleRef": {"kind": "ClusterRole", "name": "pods"},
                    "subjects": [{"kind": "User", "name": "bob"}]}),
        );
        assert!(!can(&index, &alice, "list", "pods", "x"));
        assert!(can(&index, &user("bob", &[]), "list", "pods", "x"));
        // A role changed later changes what its bindings grant.
        index.apply(
            key(Kind::ClusterRole, "", "pods"),
            &json!({"rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]}),
        );
        assert!(!can(&index, &user("bob", &[]), "list", "pods", "x"));
        index.remove(&binding);
        assert!(index.by_subject.is_empty());
        assert!(index.rules_for(&user("bob", &[]), "x").is_empty());
    }

    #[test]
    fn who_can_lists_the_subjects_of_bindings_that_apply_in_the_namespace() {
        let mut index = Index::default();
        index.apply(key(Kind::ClusterRole, "", "pods"), &pod_writer());
        index.apply(
            key(Kind::ClusterRole, "", "nodes"),
            &json!({"rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["nodes"]}]}),
        );
        index.apply(
            key(Kind::ClusterRoleBinding, "", "admins"),
            &json!({"roleRef": {"kind": "ClusterRole", "name": "pods"},
                    "subjects": [{"kind": "Group", "name": "ops"}]}),
        );
        index.apply(
            key(Kind::RoleBinding, "dev", "b"),
            &json!({"roleRef": {"kind": "ClusterRole", "name": "pods"},
                    "subjects": [{"kind": "User", "name": "alice"},
                                 {"kind": "ServiceAccount", "name": "robot"}]}),
        );
        index.apply(
            key(Kind::RoleBinding, "dev", "nodes"),
            &json!({"roleRef": {"kind": "ClusterRole", "name": "nodes"},
                    "subjects": [{"kind": "User", "name": "bob"}]}),
        );
        let creates_pods = |r: &Rule| {
            let u = user("x", &[]);
            r.allows(&Attributes {
                user: &u,
                verb: "create",
                api_group: "",
                resource: "pods",
                subresource: "",
                namespace: "dev",
                name: "",
                path: "",
                field_selector: "",
            })
        };
        let (users, groups) = index.subjects_allowed("dev", creates_pods);
        assert_eq!(users, ["alice", "system:serviceaccount:dev:robot"]);
        assert_eq!(groups, ["ops"]);
        let (users, groups) = index.subjects_allowed("other", creates_pods);
        assert!(users.is_empty());
        assert_eq!(groups, ["ops"]);
        let (users, _) = index.subjects_allowed("", creates_pods);
        assert!(users.is_empty());
    }

    #[test]
    fn a_binding_to_a_missing_role_grants_nothing_until_the_role_appears() {
        let mut index = Index::default();
        index.apply(
            key(Kind::RoleBinding, "dev", "b"),
            &json!({"roleRef": {"kind": "Role", "name": "later"},
                    "subjects": [{"kind": "User", "name": "alice"}]}),
        );
        let alice = user("alice", &[]);
        assert!(!can(&index, &alice, "create", "pods", "dev"));
        index.apply(key(Kind::Role, "dev", "later"), &pod_writer());
        assert!(can(&index, &alice, "create", "pods", "dev"));
    }
}
