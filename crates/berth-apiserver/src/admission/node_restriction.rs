//! NodeRestriction (upstream `plugin/pkg/admission/noderestriction`): what the Node authorizer
//! lets any node do to nodes and pods, this plugin limits to the node's own. A kubelet
//! (`system:node:<name>` in `system:nodes`) may create and modify only its own Node, without
//! changing its taints or setting `node-restriction.kubernetes.io/` labels or
//! `kubernetes.io`/`k8s.io` labels outside the kubelet's own set; create only mirror pods bound
//! to itself; write the status of, delete and evict only the pods bound to it; and create only
//! its own Lease. Other users pass untouched. Messages are upstream's.
//!
//! Off unless configured, as in kube-apiserver; `berth serve` enables it as kubeadm does
//! (`--enable-admission-plugins=NodeRestriction`), so that berth's own kubelets run under it.

use super::{ConfigError, Handles, Plugin, Registration};
use crate::codec::meta_str;
use crate::error::{ApiError, ApiResult};
use crate::path::qualified_resource;
use crate::user::UserInfo;
use berth_api::registry::ResourceType;
use berth_store::Store;
use serde_json::{Map, Value};
use std::collections::BTreeSet;

pub const REGISTRATION: Registration = Registration {
    name: "NodeRestriction",
    on_by_default: false,
    build,
};

const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";
/// The label domain only administrators may set on a node.
const NODE_RESTRICTION_LABELS: &str = "node-restriction.kubernetes.io";
/// The `kubernetes.io`/`k8s.io` labels a kubelet may set on its node (upstream's
/// `kubeletapis.IsKubeletLabel`).
const KUBELET_LABELS: &[&str] = &[
    "kubernetes.io/hostname",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "beta.kubernetes.io/instance-type",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "node.kubernetes.io/instance-type",
];
/// Label domains (and their subdomains) a kubelet may use freely.
const KUBELET_LABEL_DOMAINS: &[&str] = &["kubelet.kubernetes.io", "node.kubernetes.io"];

struct NodeRestriction {
    store: Store,
}

fn build(
    handles: &Handles,
    _configuration: Option<&Value>,
) -> Result<Box<dyn Plugin>, ConfigError> {
    Ok(Box::new(NodeRestriction {
        store: handles.store.clone(),
    }))
}

fn forbidden(rt: &ResourceType, name: &str, why: impl std::fmt::Display) -> ApiError {
    ApiError::Forbidden(format!(
        "{} \"{name}\" is forbidden: {why}",
        qualified_resource(rt)
    ))
}

fn labels(obj: &Value) -> Map<String, Value> {
    obj["metadata"]["labels"]
        .as_object()
        .cloned()
        .unwrap_or_default()
}

/// The label keys added, removed or changed between `new` and `old`.
fn modified_labels(new: &Map<String, Value>, old: &Map<String, Value>) -> BTreeSet<String> {
    let changed = |a: &Map<String, Value>, b: &Map<String, Value>| {
        a.iter()
            .filter(|(k, v)| b.get(*k) != Some(*v))
            .map(|(k, _)| k.clone())
            .collect::<Vec<_>>()
    };
    changed(new, old)
        .into_iter()
        .chain(changed(old, new))
        .collect()
}

fn in_domain(domain: &str, of: &str) -> bool {
    domain == of || domain.ends_with(&format!(".{of}"))
}

/// The labels of `modified` a node may not set (upstream's `getForbiddenLabels`), sorted.
fn forbidden_labels(modified: &BTreeSet<String>) -> Vec<String> {
    modified
        .iter()
        .filter(|label| {
            let domain = label.split_once('/').map_or("", |(d, _)| d);
            let kubernetes = in_domain(domain, "kubernetes.io") || in_domain(domain, "k8s.io");
            let kubelet = KUBELET_LABELS.contains(&label.as_str())
                || KUBELET_LABEL_DOMAINS.iter().any(|d| in_domain(domain, d));
            in_domain(domain, NODE_RESTRICTION_LABELS) || (kubernetes && !kubelet)
        })
        .cloned()
        .collect()
}

impl NodeRestriction {
    /// A mirror pod: annotated, bound to the node, owned (as controller, without blocking
    /// deletion) by the node itself, and referencing no other object.
    fn admit_mirror_pod(&self, node: &str, rt: &ResourceType, pod: &Value) -> ApiResult<()> {
        let name = meta_str(pod, "name");
        let refuse = |why: String| Err(forbidden(rt, name, why));
        if pod["metadata"]["annotations"]
            .get(MIRROR_POD_ANNOTATION)
            .is_none()
        {
            return refuse(format!("pod does not have {MIRROR_POD_ANNOTATION:?} annotation, node {node:?} can only create mirror pods"));
        }
        if pod["spec"]["nodeName"].as_str().unwrap_or("") != node {
            return refuse(format!(
                "node {node:?} can only create pods with spec.nodeName set to itself"
            ));
        }
        let owners = pod["metadata"]["ownerReferences"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let owner = match owners {
            [] => {
                return refuse(format!(
                    "node {node:?} can only create pods with an owner reference set to itself"
                ))
            }
            [owner] => owner,
            _ => {
                return refuse(format!(
                    "node {node:?} can only create pods with a single owner reference set to itself"
                ))
            }
        };
        if owner["apiVersion"] != "v1" || owner["kind"] != "Node" || owner["name"] != node {
            return refuse(format!(
                "node {node:?} can only create pods with an owner reference set to itself"
            ));
        }
        if owner["controller"] != true {
            return refuse(format!(
                "node {node:?} can only create pods with a controller owner reference set to itself"
            ));
        }
        if owner["blockOwnerDeletion"] == true {
            return refuse(format!(
                "node {node:?} must not set blockOwnerDeletion on an owner reference"
            ));
        }
        let node_uid = self
            .store
            .get(&format!("/registry/core/nodes/{node}"))
            .ok()
            .flatten()
            .and_then(|kv| serde_json::from_slice::<Value>(&kv.value).ok())
            .map(|n| meta_str(&n, "uid").to_string());
        let Some(node_uid) = node_uid else {
            return Err(ApiError::NotFound {
                resource: "nodes".into(),
                name: node.into(),
            });
        };
        let owner_uid = owner["uid"].as_str().unwrap_or("");
        if owner_uid != node_uid {
            return refuse(format!(
                "node {node} UID mismatch: expected {owner_uid} got {node_uid}"
            ));
        }
        let spec = &pod["spec"];
        if !spec["serviceAccountName"].as_str().unwrap_or("").is_empty() {
            return refuse(format!(
                "node {node:?} can not create pods that reference a service account"
            ));
        }
        let references = |what: &str| references(spec, what);
        if references("secret") {
            return refuse(format!(
                "node {node:?} can not create pods that reference secrets"
            ));
        }
        if references("configMap") {
            return refuse(format!(
                "node {node:?} can not create pods that reference configmaps"
            ));
        }
        let volumes = spec["volumes"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        if volumes
            .iter()
            .any(|v| v.get("persistentVolumeClaim").is_some())
        {
            return refuse(format!(
                "node {node:?} can not create pods that reference persistentvolumeclaims"
            ));
        }
        Ok(())
    }

    fn admit_node(
        &self,
        node: &str,
        rt: &ResourceType,
        new: &Value,
        old: Option<&Value>,
    ) -> ApiResult<()> {
        let name = meta_str(new, "name");
        if name != node {
            return Err(forbidden(
                rt,
                name,
                format!("node {node:?} is not allowed to modify node {name:?}"),
            ));
        }
        let Some(old) = old else {
            let forbidden_set = forbidden_labels(&modified_labels(&labels(new), &Map::new()));
            if !forbidden_set.is_empty() {
                return Err(forbidden(
                    rt,
                    name,
                    format!(
                        "node {node:?} is not allowed to set the following labels: {}",
                        forbidden_set.join(", ")
                    ),
                ));
            }
            return Ok(());
        };
        if new["spec"].get("taints") != old["spec"].get("taints") {
            return Err(forbidden(
                rt,
                name,
                format!("node {node:?} is not allowed to modify taints"),
            ));
        }
        if new["metadata"].get("ownerReferences") != old["metadata"].get("ownerReferences") {
            return Err(forbidden(
                rt,
                name,
                format!("node {node:?} is not allowed to modify ownerReferences"),
            ));
        }
        let forbidden_set = forbidden_labels(&modified_labels(&labels(new), &labels(old)));
        if !forbidden_set.is_empty() {
            return Err(forbidden(
                rt,
                name,
                format!(
                    "is not allowed to modify labels: {}",
                    forbidden_set.join(", ")
                ),
            ));
        }
        Ok(())
    }
}

/// Whether the pod spec references an object of the kind whose volume source is `what`
/// (`secret`, `configMap`): volumes, projected sources, env and envFrom of every container,
/// and image pull secrets for secrets.
fn references(spec: &Value, what: &str) -> bool {
    let list = |v: &Value| v.as_array().map(Vec::as_slice).unwrap_or_default().to_vec();
    let volumes = list(&spec["volumes"]);
    let in_volumes = volumes.iter().any(|v| {
        v.get(what).is_some()
            || list(&v["projected"]["sources"])
                .iter()
                .any(|s| s.get(what).is_some())
    });
    let (key_ref, from_ref) = match what {
        "secret" => ("secretKeyRef", "secretRef"),
        _ => ("configMapKeyRef", "configMapRef"),
    };
    let in_containers = ["containers", "initContainers", "ephemeralContainers"]
        .iter()
        .flat_map(|c| list(&spec[*c]))
        .any(|c| {
            list(&c["env"])
                .iter()
                .any(|e| e["valueFrom"].get(key_ref).is_some())
                || list(&c["envFrom"])
                    .iter()
                    .any(|e| e.get(from_ref).is_some())
        });
    let pull_secrets = what == "secret" && !list(&spec["imagePullSecrets"]).is_empty();
    in_volumes || in_containers || pull_secrets
}

impl Plugin for NodeRestriction {
    fn admit_create(&self, user: &UserInfo, rt: &ResourceType, obj: &mut Value) -> ApiResult<()> {
        let Some(node) = user.node_identity() else {
            return Ok(());
        };
        match (rt.group, rt.plural) {
            ("", "nodes") => self.admit_node(node, rt, obj, None),
            ("", "pods") => self.admit_mirror_pod(node, rt, obj),
            ("coordination.k8s.io", "leases") if meta_str(obj, "name") != node => Err(forbidden(
                rt,
                meta_str(obj, "name"),
                "can only access node lease with the same name as the requesting node",
            )),
            _ => Ok(()),
        }
    }

    fn admit_update(
        &self,
        user: &UserInfo,
        rt: &ResourceType,
        old: &Value,
        new: &mut Value,
    ) -> ApiResult<()> {
        let Some(node) = user.node_identity() else {
            return Ok(());
        };
        match (rt.group, rt.plural) {
            ("", "nodes") => self.admit_node(node, rt, new, Some(old)),
            // The Node authorizer lets a node write only a pod's status.
            ("", "pods") => {
                let name = meta_str(old, "name");
                if old["spec"]["nodeName"].as_str().unwrap_or("") != node {
                    return Err(forbidden(rt, name, format!("node {node:?} can only update pod status for pods with spec.nodeName set to itself")));
                }
                if labels(old) != labels(new) {
                    return Err(forbidden(
                        rt,
                        name,
                        format!("node {node:?} cannot update labels through pod status"),
                    ));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn admit_delete(&self, user: &UserInfo, rt: &ResourceType, existing: &Value) -> ApiResult<()> {
        let Some(node) = user.node_identity() else {
            return Ok(());
        };
        match (rt.group, rt.plural) {
            ("", "pods") if existing["spec"]["nodeName"].as_str().unwrap_or("") != node => {
                Err(forbidden(
                    rt,
                    meta_str(existing, "name"),
                    format!("node {node:?} can only delete pods with spec.nodeName set to itself"),
                ))
            }
            ("", "nodes") if meta_str(existing, "name") != node => Err(forbidden(
                rt,
                meta_str(existing, "name"),
                format!(
                    "node {node:?} is not allowed to modify node {:?}",
                    meta_str(existing, "name")
                ),
            )),
            _ => Ok(()),
        }
    }

    /// A node asks only for tokens bound to a pod of its own, named by uid (upstream's
    /// `admitServiceAccount`).
    fn admit_token_request(
        &self,
        user: &UserInfo,
        namespace: &str,
        account: &str,
        request: &Value,
    ) -> ApiResult<()> {
        let Some(node) = user.node_identity() else {
            return Ok(());
        };
        let refuse = |why: String| {
            Err(ApiError::Forbidden(format!(
                "serviceaccounts \"{account}\" is forbidden: {why}"
            )))
        };
        let reference = &request["spec"]["boundObjectRef"];
        let field = |f: &str| reference[f].as_str().unwrap_or("");
        if field("apiVersion") != "v1" || field("kind") != "Pod" || field("name").is_empty() {
            return refuse("node requested token not bound to a pod".into());
        }
        let uid = field("uid");
        if uid.is_empty() {
            return refuse("node requested token with a pod binding without a uid".into());
        }
        let pod_name = field("name");
        let pod = self
            .store
            .get(&format!("/registry/core/pods/{namespace}/{pod_name}"))
            .map_err(|e| ApiError::Internal(e.to_string()))?
            .and_then(|kv| serde_json::from_slice::<Value>(&kv.value).ok());
        let Some(pod) = pod else {
            return Err(ApiError::NotFound {
                resource: "pods".into(),
                name: pod_name.into(),
            });
        };
        if meta_str(&pod, "uid") != uid {
            return refuse(format!("the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"));
        }
        if pod["spec"]["nodeName"].as_str().unwrap_or("") != node {
            return refuse(
                "node requested token bound to a pod scheduled on a different node".into(),
            );
        }
        Ok(())
    }

    fn admit_eviction(&self, user: &UserInfo, rt: &ResourceType, pod: &Value) -> ApiResult<()> {
        let Some(node) = user.node_identity() else {
            return Ok(());
        };
        if pod["spec"]["nodeName"].as_str().unwrap_or("") != node {
            return Err(forbidden(
                rt,
                meta_str(pod, "name"),
                format!("node {node} can only evict pods with spec.nodeName set to itself"),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_api::registry::find;
    use serde_json::json;

    async fn plugin() -> NodeRestriction {
        let store = Store::memory();
        store
            .create(
                "/registry/core/nodes/n1",
                serde_json::to_vec(&json!({"metadata": {"name": "n1", "uid": "u1"}}))
                    .unwrap()
                    .into(),
            )
            .await
            .unwrap();
        NodeRestriction { store }
    }

    fn node(name: &str) -> UserInfo {
        UserInfo {
            name: format!("system:node:{name}"),
            groups: vec!["system:nodes".into()],
            ..UserInfo::default()
        }
    }

    fn rt(group: &str, plural: &str) -> &'static ResourceType {
        find(group, "v1", plural).unwrap()
    }

    fn message(r: ApiResult<()>) -> String {
        match r {
            Err(ApiError::Forbidden(m)) => m,
            other => panic!("want a refusal, got {other:?}"),
        }
    }

    fn n(name: &str, labels: Value) -> Value {
        json!({"metadata": {"name": name, "labels": labels}, "spec": {}})
    }

    #[tokio::test]
    async fn a_node_asks_only_for_tokens_bound_to_its_own_pods() {
        let p = plugin().await;
        let pod = json!({"metadata": {"name": "p", "namespace": "dev", "uid": "pu"},
                         "spec": {"nodeName": "n1", "serviceAccountName": "sa"}});
        p.store
            .create(
                "/registry/core/pods/dev/p",
                serde_json::to_vec(&pod).unwrap().into(),
            )
            .await
            .unwrap();
        let request = |reference: Value| json!({"spec": {"boundObjectRef": reference}});
        let ask = |user: &UserInfo, reference: Value| {
            p.admit_token_request(user, "dev", "sa", &request(reference))
        };
        let bound = json!({"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "pu"});
        assert!(ask(&node("n1"), bound.clone()).is_ok());
        assert_eq!(
            message(ask(&node("n2"), bound.clone())),
            "serviceaccounts \"sa\" is forbidden: node requested token bound to a pod scheduled on a different node"
        );
        assert_eq!(
            message(ask(&node("n1"), Value::Null)),
            "serviceaccounts \"sa\" is forbidden: node requested token not bound to a pod"
        );
        assert_eq!(
            message(ask(
                &node("n1"),
                json!({"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "x"})
            )),
            "serviceaccounts \"sa\" is forbidden: node requested token not bound to a pod"
        );
        assert_eq!(
            message(ask(
                &node("n1"),
                json!({"apiVersion": "v1", "kind": "Pod", "name": "p"})
            )),
            "serviceaccounts \"sa\" is forbidden: node requested token with a pod binding without a uid"
        );
        assert_eq!(
            message(ask(
                &node("n1"),
                json!({"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "old"})
            )),
            "serviceaccounts \"sa\" is forbidden: the UID in the bound object reference (old) does not match the UID in record. The object might have been deleted and then recreated"
        );
        assert!(matches!(
            ask(
                &node("n1"),
                json!({"apiVersion": "v1", "kind": "Pod", "name": "gone", "uid": "g"})
            ),
            Err(ApiError::NotFound { .. })
        ));
        // Anyone else is not this plugin's business.
        assert!(p
            .admit_token_request(&UserInfo::admin(), "dev", "sa", &request(Value::Null))
            .is_ok());
    }

    #[tokio::test]
    async fn a_node_modifies_only_its_own_node() {
        let p = plugin().await;
        let nodes = rt("", "nodes");
        let old = n("n2", json!({}));
        let mut new = n("n2", json!({"a": "b"}));
        assert_eq!(
            message(p.admit_update(&node("n1"), nodes, &old, &mut new)),
            r#"nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2""#
        );
        let old = n("n1", json!({}));
        let mut new = n(
            "n1",
            json!({"a": "b", "node.kubernetes.io/exclude": "x", "topology.kubernetes.io/zone": "z"}),
        );
        assert!(p.admit_update(&node("n1"), nodes, &old, &mut new).is_ok());
        let admin = UserInfo::admin();
        let mut other = n("n2", json!({"node-restriction.kubernetes.io/x": "y"}));
        assert!(p
            .admit_update(&admin, nodes, &n("n2", json!({})), &mut other)
            .is_ok());
    }

    #[tokio::test]
    async fn a_node_may_not_set_restricted_or_unknown_kubernetes_labels() {
        let p = plugin().await;
        let nodes = rt("", "nodes");
        let old = n("n1", json!({}));
        let mut new = n(
            "n1",
            json!({"node-restriction.kubernetes.io/x": "y", "foo.node-restriction.kubernetes.io/z": "y", "node-role.kubernetes.io/master": ""}),
        );
        assert_eq!(
            message(p.admit_update(&node("n1"), nodes, &old, &mut new)),
            r#"nodes "n1" is forbidden: is not allowed to modify labels: foo.node-restriction.kubernetes.io/z, node-restriction.kubernetes.io/x, node-role.kubernetes.io/master"#
        );
        let mut created = n("n1", json!({"node-restriction.kubernetes.io/x": "y"}));
        assert_eq!(
            message(p.admit_create(&node("n1"), nodes, &mut created)),
            r#"nodes "n1" is forbidden: node "n1" is not allowed to set the following labels: node-restriction.kubernetes.io/x"#
        );
        let mut tainted = json!({"metadata": {"name": "n1"}, "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}});
        assert_eq!(
            message(p.admit_update(&node("n1"), nodes, &old, &mut tainted)),
            r#"nodes "n1" is forbidden: node "n1" is not allowed to modify taints"#
        );
    }

    #[tokio::test]
    async fn a_node_writes_status_deletes_and_evicts_only_its_pods() {
        let p = plugin().await;
        let pods = rt("", "pods");
        let pod =
            json!({"metadata": {"name": "p", "labels": {"a": "1"}}, "spec": {"nodeName": "n2"}});
        let mut new = pod.clone();
        assert_eq!(
            message(p.admit_update(&node("n1"), pods, &pod, &mut new)),
            r#"pods "p" is forbidden: node "n1" can only update pod status for pods with spec.nodeName set to itself"#
        );
        assert!(p.admit_update(&node("n2"), pods, &pod, &mut new).is_ok());
        let mut relabelled =
            json!({"metadata": {"name": "p", "labels": {"a": "2"}}, "spec": {"nodeName": "n2"}});
        assert_eq!(
            message(p.admit_update(&node("n2"), pods, &pod, &mut relabelled)),
            r#"pods "p" is forbidden: node "n2" cannot update labels through pod status"#
        );
        assert_eq!(
            message(p.admit_delete(&node("n1"), pods, &pod)),
            r#"pods "p" is forbidden: node "n1" can only delete pods with spec.nodeName set to itself"#
        );
        assert!(p.admit_delete(&node("n2"), pods, &pod).is_ok());
        assert_eq!(
            message(p.admit_eviction(&node("n1"), pods, &pod)),
            r#"pods "p" is forbidden: node n1 can only evict pods with spec.nodeName set to itself"#
        );
        assert!(p.admit_eviction(&node("n2"), pods, &pod).is_ok());
    }

    #[tokio::test]
    async fn a_node_creates_only_mirror_pods_bound_to_itself() {
        let p = plugin().await;
        let pods = rt("", "pods");
        let n1 = node("n1");
        let mut plain = json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}});
        assert_eq!(
            message(p.admit_create(&n1, pods, &mut plain)),
            r#"pods "p" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods"#
        );
        let mirror = |node_name: &str, uid: &str, spec_extra: Value| {
            let mut spec = json!({"nodeName": node_name});
            if let (Some(s), Some(extra)) = (spec.as_object_mut(), spec_extra.as_object()) {
                s.extend(extra.clone());
            }
            json!({"metadata": {"name": "p", "annotations": {MIRROR_POD_ANNOTATION: "x"},
                    "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": uid, "controller": true}]},
                   "spec": spec})
        };
        assert!(p
            .admit_create(&n1, pods, &mut mirror("n1", "u1", json!({})))
            .is_ok());
        assert_eq!(
            message(p.admit_create(&n1, pods, &mut mirror("n2", "u1", json!({})))),
            r#"pods "p" is forbidden: node "n1" can only create pods with spec.nodeName set to itself"#
        );
        assert_eq!(
            message(p.admit_create(&n1, pods, &mut mirror("n1", "u9", json!({})))),
            r#"pods "p" is forbidden: node n1 UID mismatch: expected u9 got u1"#
        );
        assert_eq!(
            message(p.admit_create(
                &n1,
                pods,
                &mut mirror(
                    "n1",
                    "u1",
                    json!({"volumes": [{"name": "v", "secret": {"secretName": "s"}}]})
                )
            )),
            r#"pods "p" is forbidden: node "n1" can not create pods that reference secrets"#
        );
        assert_eq!(
            message(p.admit_create(
                &n1,
                pods,
                &mut mirror("n1", "u1", json!({"containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "m"}}]}]}))
            )),
            r#"pods "p" is forbidden: node "n1" can not create pods that reference configmaps"#
        );
    }

    #[tokio::test]
    async fn a_node_creates_only_its_own_lease() {
        let p = plugin().await;
        let leases = rt("coordination.k8s.io", "leases");
        let mut lease = json!({"metadata": {"name": "n2", "namespace": "kube-node-lease"}});
        assert_eq!(
            message(p.admit_create(&node("n1"), leases, &mut lease)),
            r#"leases.coordination.k8s.io "n2" is forbidden: can only access node lease with the same name as the requesting node"#
        );
        assert!(p.admit_create(&node("n2"), leases, &mut lease).is_ok());
    }
}
