//! The Node authorizer (upstream's `--authorization-mode=Node`, asked before RBAC): a kubelet
//! (`system:node:<name>` in `system:nodes`) reads and writes its own Node and Lease, gets the
//! pods bound to it and writes their status, and gets the Secrets, ConfigMaps,
//! PersistentVolumeClaims and ServiceAccount tokens those pods reference (and the Secrets the
//! volumes bound to their claims name for the kubelet), decided from a
//! [`Graph`] a watch on the stored pods keeps current. Everything else a node asks is judged
//! by the static rules of the bootstrap role `system:node`, which upstream leaves unbound.
//!
//! The authorizer never denies: a request it does not allow goes on to RBAC, and the reason it
//! gives is appended to the denial, as upstream's union of authorizers words it.

use super::node_graph::{ClaimRefs, ClaimVolumes, Graph, PodRefs, VertexKind};
use super::rule::Rule;
use super::volume_secrets::{VolumeRefs, VolumeSecrets};
use crate::authorizer::{Attributes, Decision};
use berth_store::{EventKind, KeyValue, Store};
use std::sync::{Arc, RwLock};

/// Where pods are stored: `/registry/core/pods/<namespace>/<name>`.
const PODS: &str = "/registry/core/pods/";
/// Where PersistentVolumeClaims are stored.
const CLAIMS: &str = "/registry/core/persistentvolumeclaims/";
/// Where PersistentVolumes are stored: `/registry/core/persistentvolumes/<name>`.
const VOLUMES: &str = "/registry/core/persistentvolumes/";
/// The namespace of the nodes' Leases.
const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// The Node authorizer: the graph of what each node reaches and the static node rules.
#[derive(Clone)]
pub struct NodeAuthorizer {
    graph: Arc<RwLock<Graph>>,
    claims: Arc<RwLock<ClaimVolumes>>,
    volume_secrets: Arc<RwLock<VolumeSecrets>>,
    rules: Arc<Vec<Rule>>,
}

impl Default for NodeAuthorizer {
    fn default() -> NodeAuthorizer {
        let rules = crate::rbac_bootstrap::cluster_role_rules("system:node")
            .iter()
            .map(Rule::from_json)
            .collect();
        NodeAuthorizer {
            graph: Arc::default(),
            claims: Arc::default(),
            volume_secrets: Arc::default(),
            rules: Arc::new(rules),
        }
    }
}

/// A decision that is not a denial: another authorizer may still allow.
type Verdict = Result<(), String>;

fn no_opinion(reason: impl Into<String>) -> Verdict {
    Err(reason.into())
}

impl NodeAuthorizer {
    /// `None` when the requester is not a node; otherwise `Allow`, or `Deny` with the reason
    /// (upstream's "no opinion", which RBAC may still overrule).
    pub fn authorize(&self, a: &Attributes<'_>) -> Option<Decision> {
        let node = a.user.node_identity()?;
        let verdict = if node.is_empty() {
            no_opinion(format!("unknown node for user {:?}", a.user.name))
        } else {
            self.authorize_node(node, a)
        };
        Some(match verdict {
            Ok(()) => Decision::Allow,
            Err(reason) => Decision::Deny(reason),
        })
    }

    fn authorize_node(&self, node: &str, a: &Attributes<'_>) -> Verdict {
        if a.path.is_empty() {
            match (a.api_group, a.resource) {
                ("", "secrets") => return self.secret(node, a),
                ("", "configmaps") => return self.read_namespaced(node, VertexKind::ConfigMap, a),
                ("", "persistentvolumeclaims") if a.subresource == "status" => {
                    return match a.verb {
                        "update" | "patch" => {
                            self.related(node, VertexKind::PersistentVolumeClaim, a)
                        }
                        _ => no_opinion("can only get/update/patch this type"),
                    }
                }
                ("", "persistentvolumeclaims") => {
                    return self.get(node, VertexKind::PersistentVolumeClaim, a)
                }
                ("", "persistentvolumes") => return self.persistent_volume(node, a),
                ("", "serviceaccounts") => return self.create_token(node, a),
                ("coordination.k8s.io", "leases") => return lease(node, a),
                ("", "nodes") => return own_node(node, a),
                ("", "pods") => return self.pod(node, a),
                _ => {}
            }
        }
        if self.rules.iter().any(|r| r.allows(a)) {
            Ok(())
        } else {
            no_opinion("")
        }
    }

    /// Secrets and ConfigMaps: get, list or watch of one object a pod of the node references.
    fn read_namespaced(&self, node: &str, kind: VertexKind, a: &Attributes<'_>) -> Verdict {
        if !matches!(a.verb, "get" | "list" | "watch") {
            return no_opinion("can only read resources of this type");
        }
        if !a.subresource.is_empty() {
            return no_opinion("cannot read subresource");
        }
        if a.namespace.is_empty() {
            return no_opinion("can only read namespaced object of this type");
        }
        self.related(node, kind, a)
    }

    /// Secrets: those the node's pods reference, and those a volume bound to one of their
    /// claims names for its kubelet (`secret <- pv <- pvc <- pod`).
    fn secret(&self, node: &str, a: &Attributes<'_>) -> Verdict {
        let through_pods = self.read_namespaced(node, VertexKind::Secret, a);
        if through_pods.is_ok() || a.name.is_empty() || !matches!(a.verb, "get" | "list" | "watch")
        {
            return through_pods;
        }
        let volume_secrets = self
            .volume_secrets
            .read()
            .unwrap_or_else(|e| e.into_inner());
        let volumes = volume_secrets.volumes_naming(a.namespace, a.name);
        if volumes.iter().any(|v| self.reaches_volume(node, v)) {
            Ok(())
        } else {
            through_pods
        }
    }

    fn get(&self, node: &str, kind: VertexKind, a: &Attributes<'_>) -> Verdict {
        if a.verb != "get" {
            return no_opinion("can only get individual resources of this type");
        }
        if !a.subresource.is_empty() {
            return no_opinion("cannot get subresource");
        }
        self.related(node, kind, a)
    }

    fn related(&self, node: &str, kind: VertexKind, a: &Attributes<'_>) -> Verdict {
        if a.name.is_empty() {
            return no_opinion("No Object name found");
        }
        let graph = self.graph.read().unwrap_or_else(|e| e.into_inner());
        if graph.has_path(node, kind, a.namespace, a.name) {
            Ok(())
        } else {
            no_opinion(no_relationship(node))
        }
    }

    /// A PersistentVolume: get one a claim of the node's pods is bound to.
    fn persistent_volume(&self, node: &str, a: &Attributes<'_>) -> Verdict {
        if a.verb != "get" {
            return no_opinion("can only get individual resources of this type");
        }
        if !a.subresource.is_empty() {
            return no_opinion("cannot get subresource");
        }
        if a.name.is_empty() {
            return no_opinion("No Object name found");
        }
        if self.reaches_volume(node, a.name) {
            Ok(())
        } else {
            no_opinion(no_relationship(node))
        }
    }

    /// Whether a claim of one of the node's pods is bound to `volume`.
    fn reaches_volume(&self, node: &str, volume: &str) -> bool {
        let claims = self.claims.read().unwrap_or_else(|e| e.into_inner());
        let graph = self.graph.read().unwrap_or_else(|e| e.into_inner());
        claims
            .claims_of(volume)
            .iter()
            .any(|(ns, claim)| graph.has_path(node, VertexKind::PersistentVolumeClaim, ns, claim))
    }

    /// `serviceaccounts/token`: the token of an account a pod of the node runs as.
    fn create_token(&self, node: &str, a: &Attributes<'_>) -> Verdict {
        if a.verb != "create" || a.name.is_empty() {
            return no_opinion("can only create tokens for individual service accounts");
        }
        if a.subresource != "token" {
            return no_opinion("can only create token subresource of serviceaccount");
        }
        self.related(node, VertexKind::ServiceAccount, a)
    }

    /// Pods (upstream with `AuthorizeNodeWithSelectors`, on by default): get a pod bound to
    /// the node; create and delete (mirror pods), write status and evict, which
    /// NodeRestriction limits to the node's own pods.
    fn pod(&self, node: &str, a: &Attributes<'_>) -> Verdict {
        match (a.subresource, a.verb) {
            ("", "get") => self.get(node, VertexKind::Pod, a),
            ("", "list" | "watch") if selects_node(a.field_selector, node) => Ok(()),
            ("", "list" | "watch") if !a.name.is_empty() => self.related(node, VertexKind::Pod, a),
            ("", "list" | "watch") => {
                no_opinion("can only list/watch pods with spec.nodeName field selector")
            }
            ("", "create" | "delete") | ("status", "update" | "patch") | ("eviction", "create") => {
                Ok(())
            }
            _ => no_opinion(""),
        }
    }

    /// Follows the stored pods into the graph: lists them, then watches (relisting if the
    /// watch falls behind compaction).
    pub fn follow(&self, store: &Store) -> Result<(), berth_store::Error> {
        let this = self.clone();
        crate::follow::follow_prefix(store, PODS, move |kvs| this.load(kvs), {
            let this = self.clone();
            move |kind, kv| this.event(kind, kv)
        })?;
        let this = self.clone();
        crate::follow::follow_prefix(store, CLAIMS, move |kvs| this.load_claims(kvs), {
            let this = self.clone();
            move |kind, kv| this.claim_event(kind, kv)
        })?;
        let this = self.clone();
        crate::follow::follow_prefix(store, VOLUMES, move |kvs| this.load_volumes(kvs), {
            let this = self.clone();
            move |kind, kv| this.volume_event(kind, kv)
        })
    }

    fn load_volumes(&self, kvs: &[KeyValue]) {
        let mut secrets = VolumeSecrets::default();
        for kv in kvs {
            if let Some(name) = kv.key.strip_prefix(VOLUMES) {
                if let Ok(refs) = serde_json::from_slice::<VolumeRefs>(&kv.value) {
                    secrets.apply_volume(name, &refs);
                }
            }
        }
        *self
            .volume_secrets
            .write()
            .unwrap_or_else(|e| e.into_inner()) = secrets;
    }

    fn volume_event(&self, kind: EventKind, kv: &KeyValue) {
        let Some(name) = kv.key.strip_prefix(VOLUMES) else {
            return;
        };
        let mut secrets = self
            .volume_secrets
            .write()
            .unwrap_or_else(|e| e.into_inner());
        match kind {
            EventKind::Put => {
                if let Ok(refs) = serde_json::from_slice::<VolumeRefs>(&kv.value) {
                    secrets.apply_volume(name, &refs);
                }
            }
            EventKind::Delete => secrets.remove_volume(name),
        }
    }

    fn load_claims(&self, kvs: &[KeyValue]) {
        let mut claims = ClaimVolumes::default();
        for kv in kvs {
            if let Some((namespace, name)) = claim_key(&kv.key) {
                if let Ok(claim) = serde_json::from_slice::<ClaimRefs>(&kv.value) {
                    claims.apply_claim(namespace, name, &claim);
                }
            }
        }
        *self.claims.write().unwrap_or_else(|e| e.into_inner()) = claims;
    }

    fn claim_event(&self, kind: EventKind, kv: &KeyValue) {
        let Some((namespace, name)) = claim_key(&kv.key) else {
            return;
        };
        let mut claims = self.claims.write().unwrap_or_else(|e| e.into_inner());
        match kind {
            EventKind::Put => {
                if let Ok(claim) = serde_json::from_slice::<ClaimRefs>(&kv.value) {
                    claims.apply_claim(namespace, name, &claim);
                }
            }
            EventKind::Delete => claims.remove_claim(namespace, name),
        }
    }

    fn load(&self, kvs: &[KeyValue]) {
        let mut graph = Graph::default();
        for kv in kvs {
            if let Some((namespace, name)) = pod_key(&kv.key).filter(|_| names_a_node(&kv.value)) {
                if let Ok(pod) = serde_json::from_slice::<PodRefs>(&kv.value) {
                    graph.apply_pod(namespace, name, &pod);
                }
            }
        }
        *self.graph.write().unwrap_or_else(|e| e.into_inner()) = graph;
    }

    fn event(&self, kind: EventKind, kv: &KeyValue) {
        let Some((namespace, name)) = pod_key(&kv.key) else {
            return;
        };
        match kind {
            EventKind::Put => {
                // An unbound pod links nothing (and a bound one never becomes unbound): pod
                // creates cost a byte scan, not a decode.
                if !names_a_node(&kv.value) {
                    return;
                }
                // A bound pod's node and references never change: its status writes, the
                // bulk of pod traffic, cost a lookup and no decoding.
                if self
                    .graph
                    .read()
                    .unwrap_or_else(|e| e.into_inner())
                    .knows_pod(namespace, name)
                {
                    return;
                }
                if let Ok(pod) = serde_json::from_slice::<PodRefs>(&kv.value) {
                    self.graph
                        .write()
                        .unwrap_or_else(|e| e.into_inner())
                        .apply_pod(namespace, name, &pod);
                }
            }
            EventKind::Delete => self
                .graph
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .remove_pod(namespace, name),
        }
    }

    /// Takes in a stored pod directly (tests).
    #[cfg(test)]
    fn put_pod(&self, namespace: &str, name: &str, pod: serde_json::Value) {
        let pod: PodRefs = serde_json::from_value(pod).unwrap();
        self.graph.write().unwrap().apply_pod(namespace, name, &pod);
    }
}

/// Whether a list's field selector keeps it to the pods bound to `node` (a requirement
/// `spec.nodeName=<node>`; other requirements only narrow it further).
fn selects_node(field_selector: &str, node: &str) -> bool {
    berth_core::fields::FieldSelector::parse(field_selector).is_ok_and(|s| {
        s.requirements().iter().any(|r| {
            r.field == "spec.nodeName"
                && r.operator == berth_core::fields::FieldOperator::Equals
                && r.value == node
        })
    })
}

/// Whether a stored pod's JSON may name a node. serde_json writes keys verbatim, so a pod
/// without the key is unbound; a label or annotation mentioning it only costs a decode.
fn names_a_node(value: &[u8]) -> bool {
    const KEY: &[u8] = b"\"nodeName\"";
    value.windows(KEY.len()).any(|w| w == KEY)
}

fn no_relationship(node: &str) -> String {
    format!("no relationship found between node '{node}' and this object")
}

/// (namespace, name) of a stored pod's key.
fn pod_key(key: &str) -> Option<(&str, &str)> {
    key.strip_prefix(PODS)?.split_once('/')
}

/// `(namespace, name)` of a stored claim's key.
fn claim_key(key: &str) -> Option<(&str, &str)> {
    key.strip_prefix(CLAIMS)?.split_once('/')
}

/// Leases: the node's own, in `kube-node-lease` (any name on create, which NodeRestriction
/// checks).
fn lease(node: &str, a: &Attributes<'_>) -> Verdict {
    if !matches!(a.verb, "get" | "create" | "update" | "patch" | "delete") {
        return no_opinion("can only get, create, update, patch, or delete a node lease");
    }
    if a.namespace != NODE_LEASE_NAMESPACE {
        return no_opinion(format!(
            "can only access leases in the {NODE_LEASE_NAMESPACE:?} system namespace"
        ));
    }
    if a.verb != "create" && a.name != node {
        return no_opinion("can only access node lease with the same name as the requesting node");
    }
    Ok(())
}

/// Nodes: read its own; create, update and write status of any, which NodeRestriction limits
/// to its own.
fn own_node(node: &str, a: &Attributes<'_>) -> Verdict {
    match (a.subresource, a.verb) {
        ("", "create" | "update" | "patch") | ("status", "update" | "patch") => Ok(()),
        ("", "get" | "list" | "watch") if a.name == node => Ok(()),
        ("", "get" | "list" | "watch") if a.name.is_empty() => no_opinion(format!(
            "node '{node}' cannot read all nodes, only its own Node object"
        )),
        ("", "get" | "list" | "watch") => no_opinion(format!(
            "node '{node}' cannot read '{}', only its own Node object",
            a.name
        )),
        _ => no_opinion(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::user::UserInfo;
    use serde_json::json;

    #[test]
    fn only_a_pod_that_names_a_node_is_decoded() {
        let unbound = serde_json::to_vec(&json!({"metadata": {"name": "p"}, "spec": {}})).unwrap();
        let bound = serde_json::to_vec(&json!({"spec": {"nodeName": "n1"}})).unwrap();
        assert!(!names_a_node(&unbound));
        assert!(names_a_node(&bound));
        let authz = NodeAuthorizer::default();
        let kv = |value: Vec<u8>| KeyValue {
            key: format!("{PODS}ns/p"),
            value: value.into(),
            create_revision: 1,
            mod_revision: 1,
        };
        authz.event(EventKind::Put, &kv(unbound));
        assert!(!authz.graph.read().unwrap().knows_pod("ns", "p"));
        authz.event(EventKind::Put, &kv(bound));
        assert!(authz.graph.read().unwrap().knows_pod("ns", "p"));
    }

    fn node(name: &str) -> UserInfo {
        UserInfo {
            name: format!("system:node:{name}"),
            groups: vec!["system:nodes".into(), "system:authenticated".into()],
            ..UserInfo::default()
        }
    }

    fn ask(
        authz: &NodeAuthorizer,
        user: &UserInfo,
        verb: &str,
        group: &str,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Decision> {
        let (resource, subresource) = resource.split_once('/').unwrap_or((resource, ""));
        authz.authorize(&Attributes {
            user,
            verb,
            api_group: group,
            resource,
            subresource,
            namespace,
            name,
            path: "",
            field_selector: "",
        })
    }

    #[test]
    fn a_node_lists_and_watches_the_pods_of_its_own_node_name_only() {
        let authz = with_pod();
        let n1 = node("n1");
        let list = |verb: &str, selector: &str| {
            authz.authorize(&Attributes {
                user: &n1,
                verb,
                api_group: "",
                resource: "pods",
                subresource: "",
                namespace: "",
                name: "",
                path: "",
                field_selector: selector,
            })
        };
        let refused = Some(Decision::Deny(
            "can only list/watch pods with spec.nodeName field selector".into(),
        ));
        assert_eq!(list("list", "spec.nodeName=n1"), Some(Decision::Allow));
        assert_eq!(list("watch", "spec.nodeName==n1"), Some(Decision::Allow));
        assert_eq!(
            list("list", "metadata.name=p,spec.nodeName=n1"),
            Some(Decision::Allow)
        );
        assert_eq!(list("list", "spec.nodeName=n2"), refused);
        assert_eq!(list("list", "spec.nodeName!=n1"), refused);
        assert_eq!(list("list", "status.phase=Running"), refused);
        assert_eq!(list("watch", ""), refused);
        assert_eq!(list("list", "spec.nodeName"), refused);
    }

    #[test]
    fn a_node_gets_the_persistent_volumes_its_pods_claims_are_bound_to() {
        let authz = NodeAuthorizer::default();
        authz.put_pod(
            "dev",
            "p",
            json!({"spec": {"nodeName": "n1",
                   "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]}}),
        );
        let claim = |volume: &str| {
            let value = serde_json::to_vec(&json!({"spec": {"volumeName": volume}})).unwrap();
            KeyValue {
                key: format!("{CLAIMS}dev/data"),
                value: value.into(),
                create_revision: 1,
                mod_revision: 1,
            }
        };
        let n1 = node("n1");
        let unrelated = Some(Decision::Deny(
            "no relationship found between node 'n1' and this object".into(),
        ));
        // Not bound yet: no volume is reached.
        authz.claim_event(EventKind::Put, &claim(""));
        assert_eq!(
            ask(&authz, &n1, "get", "", "persistentvolumes", "", "pv-1"),
            unrelated
        );
        authz.claim_event(EventKind::Put, &claim("pv-1"));
        assert_eq!(
            ask(&authz, &n1, "get", "", "persistentvolumes", "", "pv-1"),
            Some(Decision::Allow)
        );
        assert_eq!(
            ask(&authz, &n1, "get", "", "persistentvolumes", "", "pv-2"),
            unrelated
        );
        assert_eq!(
            ask(
                &authz,
                &node("n2"),
                "get",
                "",
                "persistentvolumes",
                "",
                "pv-1"
            ),
            Some(Decision::Deny(
                "no relationship found between node 'n2' and this object".into()
            ))
        );
        assert_eq!(
            ask(&authz, &n1, "list", "", "persistentvolumes", "", ""),
            Some(Decision::Deny(
                "can only get individual resources of this type".into()
            ))
        );
        // The volume's own Secret, named for its kubelet, is reached through the claim; the
        // same name in another namespace, or a volume no claim of the node is bound to, not.
        let volume = |name: &str, secret: &str| KeyValue {
            key: format!("{VOLUMES}{name}"),
            value: serde_json::to_vec(&json!({"spec": {"claimRef": {"namespace": "dev"},
                "rbd": {"monitors": ["m"], "image": "i", "secretRef": {"name": secret}}}}))
            .unwrap()
            .into(),
            create_revision: 1,
            mod_revision: 1,
        };
        authz.volume_event(EventKind::Put, &volume("pv-1", "ceph-key"));
        authz.volume_event(EventKind::Put, &volume("pv-2", "other-key"));
        assert_eq!(
            ask(&authz, &n1, "get", "", "secrets", "dev", "ceph-key"),
            Some(Decision::Allow)
        );
        assert_eq!(
            ask(&authz, &n1, "get", "", "secrets", "dev", "other-key"),
            unrelated
        );
        assert_eq!(
            ask(&authz, &n1, "get", "", "secrets", "prod", "ceph-key"),
            unrelated
        );
        assert_eq!(
            ask(&authz, &node("n2"), "get", "", "secrets", "dev", "ceph-key"),
            Some(Decision::Deny(
                "no relationship found between node 'n2' and this object".into()
            ))
        );
        authz.volume_event(EventKind::Delete, &volume("pv-1", "ceph-key"));
        assert_eq!(
            ask(&authz, &n1, "get", "", "secrets", "dev", "ceph-key"),
            unrelated
        );
        // The claim deleted: the edge goes with it.
        authz.claim_event(EventKind::Delete, &claim("pv-1"));
        assert_eq!(
            ask(&authz, &n1, "get", "", "persistentvolumes", "", "pv-1"),
            unrelated
        );
    }

    fn with_pod() -> NodeAuthorizer {
        let authz = NodeAuthorizer::default();
        authz.put_pod(
            "dev",
            "p",
            json!({"spec": {"nodeName": "n1", "serviceAccountName": "sa",
                   "volumes": [{"name": "v", "secret": {"secretName": "s"}}]}}),
        );
        authz
    }

    #[test]
    fn only_nodes_are_judged() {
        let alice = UserInfo {
            name: "system:node:n1".into(),
            ..UserInfo::default()
        };
        assert_eq!(
            ask(&with_pod(), &alice, "get", "", "pods", "dev", "p"),
            None
        );
        let nameless = UserInfo {
            name: "kubelet".into(),
            groups: vec!["system:nodes".into()],
            ..UserInfo::default()
        };
        assert_eq!(
            ask(&with_pod(), &nameless, "get", "", "pods", "dev", "p"),
            Some(Decision::Deny(r#"unknown node for user "kubelet""#.into()))
        );
    }

    #[test]
    fn a_node_reaches_its_pods_and_what_they_reference() {
        let authz = with_pod();
        let n1 = node("n1");
        let allow = Some(Decision::Allow);
        assert_eq!(ask(&authz, &n1, "get", "", "pods", "dev", "p"), allow);
        assert_eq!(ask(&authz, &n1, "get", "", "secrets", "dev", "s"), allow);
        assert_eq!(ask(&authz, &n1, "watch", "", "secrets", "dev", "s"), allow);
        assert_eq!(
            ask(
                &authz,
                &n1,
                "create",
                "",
                "serviceaccounts/token",
                "dev",
                "sa"
            ),
            allow
        );
        let unrelated = Some(Decision::Deny(
            "no relationship found between node 'n1' and this object".into(),
        ));
        assert_eq!(
            ask(&authz, &n1, "get", "", "secrets", "dev", "other"),
            unrelated
        );
        assert_eq!(
            ask(&authz, &node("n2"), "get", "", "pods", "dev", "p"),
            Some(Decision::Deny(
                "no relationship found between node 'n2' and this object".into()
            ))
        );
        assert_eq!(
            ask(&authz, &n1, "update", "", "secrets", "dev", "s"),
            Some(Decision::Deny(
                "can only read resources of this type".into()
            ))
        );
        assert_eq!(
            ask(&authz, &n1, "list", "", "pods", "", ""),
            Some(Decision::Deny(
                "can only list/watch pods with spec.nodeName field selector".into()
            ))
        );
    }

    #[test]
    fn a_node_reads_only_its_own_node_and_lease() {
        let authz = NodeAuthorizer::default();
        let n1 = node("n1");
        let allow = Some(Decision::Allow);
        assert_eq!(ask(&authz, &n1, "get", "", "nodes", "", "n1"), allow);
        assert_eq!(
            ask(&authz, &n1, "patch", "", "nodes/status", "", "n2"),
            allow
        );
        assert_eq!(
            ask(&authz, &n1, "get", "", "nodes", "", "n2"),
            Some(Decision::Deny(
                "node 'n1' cannot read 'n2', only its own Node object".into()
            ))
        );
        let lease = "coordination.k8s.io";
        assert_eq!(
            ask(
                &authz,
                &n1,
                "patch",
                lease,
                "leases",
                "kube-node-lease",
                "n1"
            ),
            allow
        );
        assert_eq!(
            ask(
                &authz,
                &n1,
                "patch",
                lease,
                "leases",
                "kube-node-lease",
                "n2"
            ),
            Some(Decision::Deny(
                "can only access node lease with the same name as the requesting node".into()
            ))
        );
        assert_eq!(
            ask(&authz, &n1, "get", lease, "leases", "default", "n1"),
            Some(Decision::Deny(
                r#"can only access leases in the "kube-node-lease" system namespace"#.into()
            ))
        );
    }

    #[test]
    fn other_requests_follow_the_system_node_rules() {
        let authz = NodeAuthorizer::default();
        let n1 = node("n1");
        assert_eq!(
            ask(&authz, &n1, "create", "", "events", "dev", ""),
            Some(Decision::Allow)
        );
        assert_eq!(
            ask(&authz, &n1, "list", "", "services", "", ""),
            Some(Decision::Allow)
        );
        assert_eq!(
            ask(&authz, &n1, "delete", "apps", "deployments", "dev", "d"),
            Some(Decision::Deny(String::new()))
        );
    }

    #[test]
    fn pod_keys_name_namespace_and_pod() {
        assert_eq!(pod_key("/registry/core/pods/dev/p"), Some(("dev", "p")));
        assert_eq!(pod_key("/registry/core/secrets/dev/p"), None);
    }
}
