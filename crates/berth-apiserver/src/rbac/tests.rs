//! Defaulting and validation of roles and bindings, and the RBAC API through the router.

use super::*;
use crate::protobuf::tests::{envelope, Enc};
use crate::testing::{TestServer, PROTOBUF};
use axum::http::Method;
use berth_api::registry::find;

fn messages(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(FieldError::message).collect()
}

fn rt(plural: &str) -> &'static ResourceType {
    find(GROUP, "v1", plural).unwrap()
}

#[test]
fn bindings_are_defaulted_like_upstream_v1() {
    let mut b = json!({"kind": "ClusterRoleBinding",
        "roleRef": {"kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": "u"}, {"kind": "ServiceAccount", "name": "s", "namespace": "n"}]});
    default_binding(&mut b);
    assert_eq!(b["roleRef"]["apiGroup"], GROUP);
    assert_eq!(b["subjects"][0]["apiGroup"], GROUP);
    assert!(b["subjects"][1].get("apiGroup").is_none());
}

#[test]
fn a_binding_without_role_ref_is_invalid() {
    let mut b = json!({"kind": "RoleBinding", "metadata": {"name": "b", "namespace": "ns"}});
    default_binding(&mut b);
    assert_eq!(
        messages(&validate(rt("rolebindings"), &b, None)),
        vec![
            "roleRef.kind: Unsupported value: \"\": supported values: \"Role\", \"ClusterRole\"",
            "roleRef.name: Required value",
        ]
    );
}

#[test]
fn role_ref_is_immutable() {
    let old = json!({"kind": "ClusterRoleBinding", "metadata": {"name": "system:b"},
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "view"}});
    let mut new = old.clone();
    assert!(validate(rt("clusterrolebindings"), &new, Some(&old)).is_empty());
    new["roleRef"]["name"] = json!("edit");
    assert_eq!(
        messages(&validate(rt("clusterrolebindings"), &new, Some(&old))),
        vec!["roleRef: Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"ClusterRole\", Name:\"edit\"}: cannot change roleRef"]
    );
}

#[test]
fn subjects_and_cluster_scope() {
    let b = json!({"kind": "ClusterRoleBinding", "metadata": {"name": "b"},
        "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "r"},
        "subjects": [{"kind": "ServiceAccount", "name": "s"}, {"kind": "Robot", "name": "x"}]});
    assert_eq!(
        messages(&validate(rt("clusterrolebindings"), &b, None)),
        vec![
            "roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\"",
            "subjects[0].namespace: Required value",
            "subjects[1].kind: Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
        ]
    );
}

#[test]
fn rules_and_names() {
    let role = json!({"kind": "Role", "metadata": {"name": "system:leader/x", "namespace": "ns"},
        "rules": [{"apiGroups": [""]}, {"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]});
    assert_eq!(
        messages(&validate(rt("roles"), &role, None)),
        vec![
            "metadata.name: Invalid value: \"system:leader/x\": may not contain '/'",
            "rules[0].verbs: Required value: verbs must contain at least one value",
            "rules[0].resources: Required value: resource rules must supply at least one resource",
            "rules[1].nonResourceURLs: Invalid value: []string{\"/healthz\"}: namespaced rules cannot apply to non-resource URLs",
        ]
    );
    let cluster_role = json!({"kind": "ClusterRole", "metadata": {"name": "system:kube-scheduler"},
        "rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]});
    assert!(validate(rt("clusterroles"), &cluster_role, None).is_empty());
}

const CRB: &str = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings";

fn cluster_role_binding(name: &str, role: &str) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "subjects": [{"kind": "ServiceAccount", "name": "berth-scheduler", "namespace": "kube-system"}],
        "roleRef": {"kind": "ClusterRole", "name": role}})
}

#[tokio::test]
async fn bindings_are_stored_defaulted_and_their_role_ref_is_fixed() {
    let s = TestServer::new().await;
    let (code, b) = s
        .json(
            Method::POST,
            CRB,
            cluster_role_binding("system:b", "system:kube-scheduler"),
        )
        .await;
    assert_eq!(code, StatusCode::CREATED, "{b}");
    assert_eq!(b["roleRef"]["apiGroup"], GROUP);
    let path = format!("{CRB}/system:b");
    let (code, status) = s
        .merge_patch(&path, json!({"roleRef": {"name": "cluster-admin"}}))
        .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{status}");
    assert_eq!(status["details"]["causes"][0]["field"], "roleRef");
    let mut replaced = b.clone();
    replaced["subjects"] = json!([{"kind": "User", "name": "alice"}]);
    let (code, updated) = s.json(Method::PUT, &path, replaced).await;
    assert_eq!(code, StatusCode::OK, "{updated}");
    assert_eq!(updated["subjects"][0]["apiGroup"], GROUP);

    let mut no_ref = cluster_role_binding("c", "x");
    no_ref.as_object_mut().unwrap().remove("roleRef");
    let (code, status) = s.json(Method::POST, CRB, no_ref).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{status}");
    assert_eq!(
        status["message"],
        "ClusterRoleBinding \"c\" is invalid: [roleRef.kind: Unsupported value: \"\": supported values: \"ClusterRole\", roleRef.name: Required value]"
    );
    let (code, _) = s.json(Method::GET, &format!("{CRB}/c"), Value::Null).await;
    assert_eq!(code, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn roles_are_stored_and_listed() {
    let s = TestServer::new().await;
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "leader-election"},
        "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "update"]}]});
    let roles = "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/roles";
    let (code, body) = s.json(Method::POST, roles, role).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    let (code, list) = s.json(Method::GET, roles, Value::Null).await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(list["kind"], "RoleList");
    assert_eq!(
        list["items"][0]["rules"][0]["verbs"],
        json!(["get", "update"])
    );
}

#[tokio::test]
async fn self_subject_access_review_is_allowed_even_as_protobuf() {
    let s = TestServer::new().await;
    let ssar = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    let (code, review) = s
        .json(Method::POST, ssar, json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": "create", "resource": "pods", "namespace": "default"}}}))
        .await;
    assert_eq!(code, StatusCode::CREATED, "{review}");
    assert_eq!(review["status"]["allowed"], true);
    assert_eq!(review["spec"]["resourceAttributes"]["verb"], "create");
    // authorization.v1.SelfSubjectAccessReview{spec: {resourceAttributes: {verb: list, resource: nodes}}}
    let raw = Enc::new().msg(
        2,
        Enc::new().msg(1, Enc::new().str(2, "list").str(5, "nodes")),
    );
    let (code, review) = s
        .call(
            Method::POST,
            ssar,
            PROTOBUF,
            envelope("authorization.k8s.io/v1", "SelfSubjectAccessReview", raw),
        )
        .await;
    assert_eq!(code, StatusCode::CREATED, "{review}");
    assert_eq!(review["status"]["allowed"], true);
    assert_eq!(
        review["spec"]["resourceAttributes"],
        json!({"verb": "list", "resource": "nodes"})
    );
    // Neither kind of attributes: 422; reviews are not stored, so there is nothing to get.
    let (code, status) = s
        .json(Method::POST, ssar, json!({"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1", "spec": {}}))
        .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{status}");
    let (code, status) = s.json(Method::GET, ssar, Value::Null).await;
    assert_eq!(code, StatusCode::METHOD_NOT_ALLOWED, "{status}");
    let (code, rules) = s
        .json(Method::POST, "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
              json!({"kind": "SelfSubjectRulesReview", "apiVersion": "authorization.k8s.io/v1", "spec": {"namespace": "default"}}))
        .await;
    assert_eq!(code, StatusCode::CREATED, "{rules}");
    assert_eq!(rules["status"]["resourceRules"][0]["verbs"], json!(["*"]));
}

#[tokio::test]
async fn create_only_resources_refuse_other_verbs() {
    let s = TestServer::new().await;
    let (code, status) = s
        .json(
            Method::GET,
            "/api/v1/namespaces/default/bindings",
            Value::Null,
        )
        .await;
    assert_eq!(code, StatusCode::METHOD_NOT_ALLOWED, "{status}");
    assert_eq!(status["reason"], "MethodNotAllowed");
}
