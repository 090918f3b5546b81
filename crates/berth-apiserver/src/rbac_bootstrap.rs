//! The cluster roles and bindings a new cluster starts with, as upstream's bootstrap policy
//! writes them (labelled `kubernetes.io/bootstrapping: rbac-defaults`, annotated
//! `rbac.authorization.kubernetes.io/autoupdate: "true"`): `cluster-admin` bound to the
//! `system:masters` group, the roles of the scheduler (`system:kube-scheduler`,
//! `system:volume-scheduler`, bound to the user `system:kube-scheduler`, which
//! `deploy/rbac.yaml` binds a custom scheduler to), and what every authenticated user may do
//! (`system:discovery`, `system:basic-user`, `system:public-info-viewer`).
//!
//! Only the roles a scheduling control plane has a use for are here; upstream's aggregated
//! `admin`/`edit`/`view` need the aggregation controller berth does not run. berth does not
//! enforce RBAC (see [`crate::rbac`]); these objects are what `kubectl get clusterroles` shows.

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

fn cluster_roles() -> Vec<(&'static str, Vec<Value>)> {
    vec![
        (
            "cluster-admin",
            vec![rule(&["*"], &["*"], &["*"]), urls(&["*"], &["*"])],
        ),
        (
            "system:basic-user",
            vec![
                rule(
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    &["create"],
                ),
                rule(
                    &["authentication.k8s.io"],
                    &["selfsubjectreviews"],
                    &["create"],
                ),
            ],
        ),
        (
            "system:discovery",
            vec![urls(
                &[
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/",
                ],
                &["get"],
            )],
        ),
        (
            "system:public-info-viewer",
            vec![urls(
                &["/healthz", "/livez", "/readyz", "/version", "/version/"],
                &["get"],
            )],
        ),
        (
            "system:monitoring",
            vec![urls(
                &[
                    "/healthz",
                    "/healthz/*",
                    "/livez",
                    "/livez/*",
                    "/metrics",
                    "/metrics/slis",
                    "/readyz",
                    "/readyz/*",
                ],
                &["get"],
            )],
        ),
        (
            "system:kube-scheduler",
            vec![
                rule(&["", "events.k8s.io"], &["events"], EVENT_WRITE),
                rule(&["coordination.k8s.io"], &["leases"], &["create"]),
                named(
                    &["coordination.k8s.io"],
                    &["leases"],
                    &["kube-scheduler"],
                    &["get", "update"],
                ),
                rule(&[""], &["nodes"], READ),
                rule(&[""], &["pods"], &["delete", "get", "list", "watch"]),
                rule(&[""], &["bindings", "pods/binding"], &["create"]),
                rule(&[""], &["pods/status"], &["patch", "update"]),
                rule(&[""], &["replicationcontrollers", "services"], READ),
                rule(&["apps", "extensions"], &["replicasets"], READ),
                rule(&["apps"], &["statefulsets"], READ),
                rule(&["policy"], &["poddisruptionbudgets"], READ),
                rule(
                    &[""],
                    &["persistentvolumeclaims", "persistentvolumes"],
                    READ,
                ),
                rule(&["authentication.k8s.io"], &["tokenreviews"], &["create"]),
                rule(
                    &["authorization.k8s.io"],
                    &["subjectaccessreviews"],
                    &["create"],
                ),
                rule(&["storage.k8s.io"], &["csinodes"], READ),
                rule(&[""], &["namespaces"], READ),
                rule(&["storage.k8s.io"], &["csidrivers"], READ),
                rule(&["storage.k8s.io"], &["csistoragecapacities"], READ),
            ],
        ),
        (
            "system:volume-scheduler",
            vec![
                rule(
                    &[""],
                    &["persistentvolumes"],
                    &["get", "list", "patch", "update", "watch"],
                ),
                rule(&["storage.k8s.io"], &["storageclasses"], READ),
                rule(
                    &[""],
                    &["persistentvolumeclaims"],
                    &["get", "list", "patch", "update", "watch"],
                ),
            ],
        ),
    ]
}

/// (binding and role name, subject kind, subject name).
const CLUSTER_ROLE_BINDINGS: &[(&str, &str, &str)] = &[
    ("cluster-admin", "Group", "system:masters"),
    ("system:basic-user", "Group", "system:authenticated"),
    ("system:discovery", "Group", "system:authenticated"),
    ("system:public-info-viewer", "Group", "system:authenticated"),
    (
        "system:public-info-viewer",
        "Group",
        "system:unauthenticated",
    ),
    ("system:monitoring", "Group", "system:monitoring"),
    ("system:kube-scheduler", "User", "system:kube-scheduler"),
    ("system:volume-scheduler", "User", "system:kube-scheduler"),
];

fn meta(name: &str, uid: String, ts: &str) -> Value {
    json!({
        "name": name, "uid": uid, "creationTimestamp": ts,
        "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    })
}

/// The bootstrap ClusterRoles, then the ClusterRoleBindings, as (plural, name, object); `uid`
/// makes each object's uid, `ts` is the creation timestamp.
pub fn objects(ts: &str, mut uid: impl FnMut() -> String) -> Vec<(&'static str, String, Value)> {
    let mut out = Vec::new();
    for (name, rules) in cluster_roles() {
        out.push((
            "clusterroles",
            name.to_string(),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                   "metadata": meta(name, uid(), ts), "rules": rules}),
        ));
    }
    // One binding per role; a role bound to several subjects gets them all.
    let mut bindings: Vec<(&str, Vec<Value>)> = Vec::new();
    for (role, kind, subject) in CLUSTER_ROLE_BINDINGS {
        let s = json!({"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": subject});
        match bindings.iter_mut().find(|(r, _)| r == role) {
            Some((_, subjects)) => subjects.push(s),
            None => bindings.push((role, vec![s])),
        }
    }
    for (role, subjects) in bindings {
        out.push((
            "clusterrolebindings",
            role.to_string(),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                   "metadata": meta(role, uid(), ts),
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                   "subjects": subjects}),
        ));
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
}
