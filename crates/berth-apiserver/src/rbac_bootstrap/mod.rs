//! The cluster roles and bindings a new cluster starts with, as upstream's bootstrap policy
//! writes them (labelled `kubernetes.io/bootstrapping: rbac-defaults`, annotated
//! `rbac.authorization.kubernetes.io/autoupdate: "true"`): `cluster-admin` bound to the
//! `system:masters` group; the aggregated `admin`, `edit` and `view` and the
//! `system:aggregate-to-*` roles that fill them ([`roles`]); what every authenticated user may
//! do (`system:discovery`, `system:basic-user`, `system:public-info-viewer`); the roles of the
//! scheduler, the controller manager, the kubelet and kube-proxy; and one
//! `system:controller:<name>` role per controller ([`controllers`]), bound to its
//! ServiceAccount in `kube-system`.

pub mod controllers;
pub mod openshift;
pub mod reconcile;
pub mod roles;

use serde_json::{json, Value};

/// One policy rule over resources.
fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "verbs": verbs})
}

/// The same, limited to named objects.
fn named(groups: &[&str], resources: &[&str], names: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "resourceNames": names, "verbs": verbs})
}

fn urls(paths: &[&str], verbs: &[&str]) -> Value {
    json!({"nonResourceURLs": paths, "verbs": verbs})
}

const READ: &[&str] = &["get", "list", "watch"];
const EVENT_WRITE: &[&str] = &["create", "patch", "update"];

/// A bootstrap ClusterRole: its rules, or the label its aggregation rule selects.
pub struct ClusterRole {
    name: String,
    rules: Vec<Value>,
    /// `aggregationRule`: roles labelled `<this>: "true"` make up the rules.
    aggregates: Option<&'static str>,
    /// Labels `<key>: "true"` that put this role into aggregated ones.
    labels: Vec<&'static str>,
}

impl ClusterRole {
    fn new(name: &str, rules: Vec<Value>) -> ClusterRole {
        ClusterRole {
            name: name.into(),
            rules,
            aggregates: None,
            labels: Vec::new(),
        }
    }

    /// A role whose rules the aggregation controller gathers from the roles labelled `label`;
    /// it is itself labelled `into`.
    fn aggregated(name: &str, label: &'static str, into: &[&'static str]) -> ClusterRole {
        ClusterRole {
            aggregates: Some(label),
            ..ClusterRole::new(name, Vec::new()).labelled(into)
        }
    }

    fn labelled(mut self, labels: &[&'static str]) -> ClusterRole {
        self.labels.extend_from_slice(labels);
        self
    }

    fn object(&self, uid: String, ts: &str) -> Value {
        let mut meta = meta(&self.name, uid, ts);
        for label in &self.labels {
            meta["labels"][*label] = json!("true");
        }
        let mut obj = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                             "metadata": meta, "rules": self.rules});
        if let Some(label) = self.aggregates {
            obj["aggregationRule"] =
                json!({"clusterRoleSelectors": [{"matchLabels": {label: "true"}}]});
        }
        obj
    }
}

/// A binding's subject.
enum Subject {
    User(&'static str),
    Group(&'static str),
    /// A ServiceAccount of `kube-system`.
    KubeSystemAccount(String),
    /// A ServiceAccount: (namespace, name).
    Account(&'static str, &'static str),
}

impl Subject {
    fn to_json(&self) -> Value {
        let rbac = "rbac.authorization.k8s.io";
        match self {
            Subject::User(name) => json!({"apiGroup": rbac, "kind": "User", "name": name}),
            Subject::Group(name) => json!({"apiGroup": rbac, "kind": "Group", "name": name}),
            Subject::KubeSystemAccount(name) => {
                json!({"kind": "ServiceAccount", "name": name, "namespace": "kube-system"})
            }
            Subject::Account(namespace, name) => {
                json!({"kind": "ServiceAccount", "name": name, "namespace": namespace})
            }
        }
    }
}

/// (binding and role name, subjects). `system:node` is bound to nobody, as upstream leaves it:
/// nodes are authorized by the Node authorizer.
fn cluster_role_bindings() -> Vec<(String, Vec<Subject>)> {
    use Subject::{Group, User};
    let mut out: Vec<(String, Vec<Subject>)> = vec![
        ("cluster-admin".into(), vec![Group("system:masters")]),
        (
            "system:basic-user".into(),
            vec![Group("system:authenticated")],
        ),
        (
            "system:discovery".into(),
            vec![Group("system:authenticated")],
        ),
        (
            "system:public-info-viewer".into(),
            vec![
                Group("system:authenticated"),
                Group("system:unauthenticated"),
            ],
        ),
        (
            "system:service-account-issuer-discovery".into(),
            vec![Group("system:serviceaccounts")],
        ),
        ("system:monitoring".into(), vec![Group("system:monitoring")]),
        (
            "system:kube-scheduler".into(),
            vec![User("system:kube-scheduler")],
        ),
        (
            "system:volume-scheduler".into(),
            vec![User("system:kube-scheduler")],
        ),
        (
            "system:kube-controller-manager".into(),
            vec![User("system:kube-controller-manager")],
        ),
        ("system:node".into(), vec![]),
        (
            "system:node-proxier".into(),
            vec![User("system:kube-proxy")],
        ),
    ];
    for role in controllers::cluster_roles() {
        let account = role
            .name
            .strip_prefix(controllers::PREFIX)
            .unwrap_or(&role.name)
            .to_string();
        out.push((role.name, vec![Subject::KubeSystemAccount(account)]));
    }
    out
}

fn meta(name: &str, uid: String, ts: &str) -> Value {
    json!({
        "name": name, "uid": uid, "creationTimestamp": ts,
        "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    })
}

/// The rules of the bootstrap ClusterRole `name` (the Node authorizer's static rules are
/// `system:node`'s, as upstream's `NodeRules()`).
pub fn cluster_role_rules(name: &str) -> Vec<Value> {
    roles::cluster_roles()
        .into_iter()
        .find(|r| r.name == name)
        .map(|r| r.rules)
        .unwrap_or_default()
}

/// The bootstrap ClusterRoles, then the ClusterRoleBindings, as (plural, name, object); `uid`
/// makes each object's uid, `ts` is the creation timestamp.
pub fn objects(ts: &str, mut uid: impl FnMut() -> String) -> Vec<(&'static str, String, Value)> {
    let mut out = Vec::new();
    let mut all = roles::cluster_roles();
    all.extend(controllers::cluster_roles());
    for role in all {
        out.push(("clusterroles", role.name.clone(), role.object(uid(), ts)));
    }
    let openshift_bindings = openshift::cluster_role_bindings()
        .into_iter()
        .map(|(binding, role, subjects)| (binding.to_string(), role.to_string(), subjects));
    let bindings = cluster_role_bindings()
        .into_iter()
        .map(|(role, subjects)| (role.clone(), role, subjects))
        .chain(openshift_bindings);
    for (binding, role, subjects) in bindings {
        let mut obj = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": meta(&binding, uid(), ts),
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role}});
        if !subjects.is_empty() {
            obj["subjects"] = subjects.iter().map(Subject::to_json).collect();
        }
        out.push(("clusterrolebindings", binding, obj));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_binding_names_a_bootstrap_role_and_scheduler_roles_are_bound() {
        let objs = objects("2026-01-01T00:00:00Z", || "u".into());
        let roles: Vec<&str> = objs
            .iter()
            .filter(|(p, _, _)| *p == "clusterroles")
            .map(|(_, n, _)| n.as_str())
            .collect();
        let bindings: Vec<&Value> = objs
            .iter()
            .filter(|(p, _, _)| *p == "clusterrolebindings")
            .map(|(_, _, o)| o)
            .collect();
        for b in &bindings {
            assert!(roles.contains(&b["roleRef"]["name"].as_str().unwrap()));
        }
        let public = bindings
            .iter()
            .find(|b| b["metadata"]["name"] == "system:public-info-viewer")
            .unwrap();
        assert_eq!(public["subjects"].as_array().unwrap().len(), 2);
        let sched = bindings
            .iter()
            .find(|b| b["metadata"]["name"] == "system:kube-scheduler")
            .unwrap();
        assert_eq!(sched["subjects"][0]["name"], "system:kube-scheduler");
        assert_eq!(sched["subjects"][0]["kind"], "User");
    }

    fn role<'a>(objs: &'a [(&str, String, Value)], plural: &str, name: &str) -> &'a Value {
        &objs
            .iter()
            .find(|(p, n, _)| *p == plural && n == name)
            .unwrap_or_else(|| panic!("{plural}/{name} missing"))
            .2
    }

    #[test]
    fn admin_edit_and_view_aggregate_the_labelled_roles() {
        let objs = objects("2026-01-01T00:00:00Z", || "u".into());
        let view = role(&objs, "clusterroles", "view");
        assert_eq!(
            view["aggregationRule"]["clusterRoleSelectors"][0]["matchLabels"][roles::TO_VIEW],
            "true"
        );
        assert_eq!(view["rules"], json!([]));
        // view goes into edit, edit into admin.
        assert_eq!(view["metadata"]["labels"][roles::TO_EDIT], "true");
        let edit = role(&objs, "clusterroles", "edit");
        assert_eq!(edit["metadata"]["labels"][roles::TO_ADMIN], "true");
        let to_view = role(&objs, "clusterroles", "system:aggregate-to-view");
        assert_eq!(to_view["metadata"]["labels"][roles::TO_VIEW], "true");
        assert!(to_view.get("aggregationRule").is_none());
        assert!(!to_view["rules"].as_array().unwrap().is_empty());
        // cluster-admin carries only the bootstrapping label.
        let admin = role(&objs, "clusterroles", "cluster-admin");
        assert_eq!(
            admin["metadata"]["labels"],
            json!({"kubernetes.io/bootstrapping": "rbac-defaults"})
        );
    }

    #[test]
    fn each_controller_role_is_bound_to_its_kube_system_account() {
        let objs = objects("2026-01-01T00:00:00Z", || "u".into());
        let names: Vec<String> = controllers::cluster_roles()
            .into_iter()
            .map(|r| r.name)
            .collect();
        assert!(names.contains(&"system:controller:replicaset-controller".to_string()));
        for name in names {
            let b = role(&objs, "clusterrolebindings", &name);
            let account = name.strip_prefix(controllers::PREFIX).unwrap();
            assert_eq!(
                b["subjects"],
                json!([{"kind": "ServiceAccount", "name": account, "namespace": "kube-system"}])
            );
        }
        // Nodes are authorized by the Node authorizer, not by a binding.
        let node = role(&objs, "clusterrolebindings", "system:node");
        assert!(node.get("subjects").is_none());
        let kcm = role(
            &objs,
            "clusterrolebindings",
            "system:kube-controller-manager",
        );
        assert_eq!(kcm["subjects"][0]["name"], "system:kube-controller-manager");
    }
}
