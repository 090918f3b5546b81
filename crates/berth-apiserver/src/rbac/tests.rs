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

/// Issue 30: a user who may write ClusterRoles but holds no full authority used an
/// aggregation rule to gather `admin`'s rules into a role bound to them. Every write path that
/// sets or keeps an aggregation rule is refused in upstream's words and stores nothing.
#[tokio::test]
async fn an_aggregation_rule_needs_full_authority_on_every_write_path() {
    let api = TestServer::new().await;
    let roles = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
    let (code, body) = api
        .json(
            Method::POST,
            roles,
            json!({"metadata": {"name": "role-writer"}, "rules": [{"apiGroups": [GROUP],
                "resources": ["clusterroles"], "verbs": ["create", "get", "update", "patch"]}]}),
        )
        .await;
    assert_eq!(code, 201, "{body}");
    let (code, body) = api
        .json(
            Method::POST,
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            json!({"metadata": {"name": "mallory-writes-roles"},
                "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "role-writer"},
                "subjects": [{"apiGroup": GROUP, "kind": "User", "name": "mallory"}]}),
        )
        .await;
    assert_eq!(code, 201, "{body}");
    let mallory = api.as_user("mallory", &[]);
    // A role without the rule: allowed, once the binding reached the authorizer.
    let mut created = false;
    for _ in 0..200 {
        let (code, _) = mallory
            .json(Method::POST, roles, json!({"metadata": {"name": "mine"}}))
            .await;
        if code == 201 {
            created = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(created, "the binding never reached the authorizer");

    let aggregation = json!({"clusterRoleSelectors": [{"matchLabels":
        {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}]});
    let refused = |(code, body): (axum::http::StatusCode, Value), what: &str| {
        assert_eq!(code, 403, "{what}: {body}");
        assert_eq!(
            body["message"],
            "clusterroles.rbac.authorization.k8s.io \"mine\" is forbidden: must have \
             cluster-admin privileges to use the aggregationRule",
            "{what}"
        );
    };
    let mut role = json!({"metadata": {"name": "mine"}, "aggregationRule": aggregation});
    refused(
        mallory.json(Method::POST, roles, role.clone()).await,
        "create",
    );
    refused(
        mallory
            .json(Method::POST, &format!("{roles}?dryRun=All"), role.clone())
            .await,
        "dry-run create",
    );
    let one = format!("{roles}/mine");
    refused(
        mallory.json(Method::PUT, &one, role.clone()).await,
        "update",
    );
    refused(
        mallory
            .merge_patch(&one, json!({"aggregationRule": aggregation}))
            .await,
        "merge patch",
    );
    refused(
        mallory
            .call(
                Method::PATCH,
                &one,
                "application/json-patch+json",
                json!([{"op": "add", "path": "/aggregationRule", "value": aggregation}])
                    .to_string()
                    .into_bytes(),
            )
            .await,
        "json patch",
    );
    refused(
        mallory
            .call(
                Method::PATCH,
                &one,
                "application/strategic-merge-patch+json",
                json!({"aggregationRule": aggregation})
                    .to_string()
                    .into_bytes(),
            )
            .await,
        "strategic merge patch",
    );
    role["apiVersion"] = json!("rbac.authorization.k8s.io/v1");
    role["kind"] = json!("ClusterRole");
    refused(
        mallory
            .call(
                Method::PATCH,
                &format!("{one}?fieldManager=m&force=true"),
                "application/apply-patch+yaml",
                role.to_string().into_bytes(),
            )
            .await,
        "apply",
    );
    let (_, stored) = api.json(Method::GET, &one, Value::Null).await;
    assert!(stored.get("aggregationRule").is_none(), "{stored}");

    // Nor may they take the rule off a role that has one (the old object is checked too).
    let (code, _) = api
        .merge_patch(&one, json!({"aggregationRule": aggregation}))
        .await;
    assert_eq!(code, 200);
    refused(
        mallory
            .merge_patch(&one, json!({"aggregationRule": null}))
            .await,
        "removing the rule",
    );
}
