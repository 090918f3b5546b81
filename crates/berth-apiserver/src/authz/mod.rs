//! RBAC enforced: the authorizer every request and the admission plugins ask, built from an
//! [`index::Index`] of Roles, ClusterRoles and bindings that a watch on the store keeps current,
//! and upstream's wording of a denial. Nodes' kubelets are asked of the [`node`] authorizer
//! first, as upstream's `--authorization-mode=Node,RBAC`.

pub mod escalation;
pub mod index;
pub mod node;
pub mod node_graph;
pub mod rule;
pub mod user_groups;
pub mod volume_secrets;

use crate::authorizer::{Attributes, Authorizer, Decision};
use crate::user::SYSTEM_MASTERS;
use berth_store::{EventKind, Store};
use index::{Index, Kind, ObjectKey};
use std::sync::{Arc, RwLock};

/// Where every RBAC object is stored (all four kinds, every version).
const PREFIX: &str = "/registry/rbac.authorization.k8s.io/";

/// The authorizers in upstream's order: members of `system:masters` may do everything
/// (upstream's privileged group authorizer); a node what the Node authorizer allows it;
/// everyone what their RBAC bindings grant.
#[derive(Clone, Default)]
pub struct Rbac {
    index: Arc<RwLock<Index>>,
    nodes: node::NodeAuthorizer,
    /// OpenShift's Groups: who is in which beyond what their credentials say.
    groups: Arc<RwLock<user_groups::UserGroups>>,
}

impl Authorizer for Rbac {
    fn authorize(&self, a: &Attributes<'_>) -> Decision {
        if a.user.in_group(SYSTEM_MASTERS) {
            return Decision::Allow;
        }
        // The Node authorizer's reason for not allowing is what a denial shows.
        let node_reason = match self.nodes.authorize(a) {
            Some(Decision::Allow) => return Decision::Allow,
            Some(Decision::Deny(reason)) => reason,
            None => String::new(),
        };
        let with_groups = self.with_groups(a.user);
        let user = with_groups.as_ref().unwrap_or(a.user);
        let index = self.index.read().unwrap_or_else(|e| e.into_inner());
        if index.any_rule(user, a.namespace, |r| r.allows(a)) {
            Decision::Allow
        } else {
            Decision::Deny(node_reason)
        }
    }
}

/// The index key of a storage key `/registry/rbac.authorization.k8s.io/<plural>/[<ns>/]<name>`.
fn object_key(storage_key: &str) -> Option<ObjectKey> {
    let rest = storage_key.strip_prefix(PREFIX)?;
    let (plural, rest) = rest.split_once('/')?;
    let kind = Kind::of_plural(plural)?;
    let (namespace, name) = match kind {
        Kind::Role | Kind::RoleBinding => rest.split_once('/')?,
        Kind::ClusterRole | Kind::ClusterRoleBinding => ("", rest),
    };
    Some(ObjectKey {
        kind,
        namespace: namespace.into(),
        name: name.into(),
    })
}

impl Rbac {
    /// The rules bound to `user` in `namespace` (cluster-wide ones with `""`), for
    /// SelfSubjectRulesReview.
    pub fn rules_for(
        &self,
        user: &crate::user::UserInfo,
        namespace: &str,
    ) -> Vec<Arc<Vec<rule::Rule>>> {
        let with_groups = self.with_groups(user);
        let index = self.index.read().unwrap_or_else(|e| e.into_inner());
        index.rules_for(with_groups.as_ref().unwrap_or(user), namespace)
    }

    /// `user` with the OpenShift Groups that list them added to their groups, or `None` when
    /// no Group lists them (most requests: one read lock and one lookup).
    pub fn with_groups(&self, user: &crate::user::UserInfo) -> Option<crate::user::UserInfo> {
        let groups = self.groups.read().unwrap_or_else(|e| e.into_inner());
        if groups.is_empty() {
            return None;
        }
        let extra = groups.of(&user.name)?;
        let mut user = user.clone();
        for g in extra {
            if !user.groups.contains(g) {
                user.groups.push(g.clone());
            }
        }
        Some(user)
    }

    /// Who may do what `allows` accepts in `namespace` (`""`: cluster-wide bindings only):
    /// the users (service accounts as `system:serviceaccount:NS:NAME`) and groups bound to a
    /// role with such a rule, each sorted, for OpenShift's ResourceAccessReview.
    pub fn who_can(
        &self,
        namespace: &str,
        allows: impl FnMut(&rule::Rule) -> bool,
    ) -> (Vec<String>, Vec<String>) {
        let index = self.index.read().unwrap_or_else(|e| e.into_inner());
        index.subjects_allowed(namespace, allows)
    }

    /// Loads every RBAC object of `store` into the index and every pod into the Node
    /// authorizer's graph, then follows the store's changes in tasks.
    pub fn follow(&self, store: &Store) -> Result<(), berth_store::Error> {
        let (this, that) = (self.clone(), self.clone());
        crate::follow::follow_prefix(
            store,
            PREFIX,
            move |kvs| this.load(kvs),
            move |kind, kv| that.event(kind, kv),
        )?;
        let (load, event) = (self.groups.clone(), self.groups.clone());
        crate::follow::follow_prefix(
            store,
            user_groups::PREFIX,
            move |kvs| {
                let mut groups = user_groups::UserGroups::default();
                for kv in kvs {
                    if let (Some(name), Ok(obj)) = (
                        user_groups::group_name(&kv.key),
                        serde_json::from_slice::<serde_json::Value>(&kv.value),
                    ) {
                        groups.apply(name, &obj);
                    }
                }
                *load.write().unwrap_or_else(|e| e.into_inner()) = groups;
            },
            move |kind, kv| {
                let Some(name) = user_groups::group_name(&kv.key) else {
                    return;
                };
                let mut groups = event.write().unwrap_or_else(|e| e.into_inner());
                match (kind, serde_json::from_slice::<serde_json::Value>(&kv.value)) {
                    (EventKind::Put, Ok(obj)) => groups.apply(name, &obj),
                    _ => groups.remove(name),
                }
            },
        )?;
        self.nodes.follow(store)
    }

    /// Replaces the index with `kvs`, the store's RBAC objects.
    fn load(&self, kvs: &[berth_store::KeyValue]) {
        let mut index = Index::default();
        for kv in kvs {
            if let (Some(key), Ok(obj)) = (
                object_key(&kv.key),
                serde_json::from_slice::<serde_json::Value>(&kv.value),
            ) {
                index.apply(key, &obj);
            }
        }
        *self.index.write().unwrap_or_else(|e| e.into_inner()) = index;
    }

    fn event(&self, kind: EventKind, kv: &berth_store::KeyValue) {
        let Some(key) = object_key(&kv.key) else {
            return;
        };
        let mut index = self.index.write().unwrap_or_else(|e| e.into_inner());
        match kind {
            EventKind::Put => match serde_json::from_slice::<serde_json::Value>(&kv.value) {
                Ok(obj) => index.apply(key, &obj),
                Err(_) => index.remove(&key),
            },
            EventKind::Delete => index.remove(&key),
        }
    }
}

/// Upstream's words for a denied request (`forbiddenMessage`), without the resource prefix
/// `ApiError::Denied` adds.
pub fn forbidden_message(a: &Attributes<'_>) -> String {
    let user = &a.user.name;
    if !a.path.is_empty() {
        return format!("User {user:?} cannot {} path {:?}", a.verb, a.path);
    }
    let resource = if a.subresource.is_empty() {
        a.resource.to_string()
    } else {
        format!("{}/{}", a.resource, a.subresource)
    };
    if a.namespace.is_empty() {
        format!(
            "User {user:?} cannot {} resource {resource:?} in API group {:?} at the cluster scope",
            a.verb, a.api_group
        )
    } else {
        format!(
            "User {user:?} cannot {} resource {resource:?} in API group {:?} in the namespace {:?}",
            a.verb, a.api_group, a.namespace
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::user::UserInfo;

    #[test]
    fn storage_keys_name_their_objects() {
        let k = object_key("/registry/rbac.authorization.k8s.io/rolebindings/dev/b").unwrap();
        assert_eq!(
            (k.kind, k.namespace.as_str(), k.name.as_str()),
            (Kind::RoleBinding, "dev", "b")
        );
        let k = object_key("/registry/rbac.authorization.k8s.io/clusterroles/system:node").unwrap();
        assert_eq!(
            (k.kind, k.name.as_str()),
            (Kind::ClusterRole, "system:node")
        );
        assert!(object_key("/registry/core/pods/a/b").is_none());
    }

    #[test]
    fn masters_may_do_everything_and_nobody_else_by_default() {
        let rbac = Rbac::default();
        let attrs = |user| Attributes {
            user,
            verb: "delete",
            api_group: "",
            resource: "nodes",
            subresource: "",
            namespace: "",
            name: "n",
            path: "",
            field_selector: "",
        };
        let admin = UserInfo::admin();
        assert!(rbac.authorize(&attrs(&admin)).allowed());
        let alice = UserInfo {
            name: "alice".into(),
            ..UserInfo::default()
        };
        assert!(!rbac.authorize(&attrs(&alice)).allowed());
    }

    #[test]
    fn denials_are_worded_as_upstream() {
        let alice = UserInfo {
            name: "alice".into(),
            ..UserInfo::default()
        };
        let mut a = Attributes {
            user: &alice,
            verb: "list",
            api_group: "",
            resource: "pods",
            subresource: "",
            namespace: "default",
            name: "",
            path: "",
            field_selector: "",
        };
        assert_eq!(
            forbidden_message(&a),
            r#"User "alice" cannot list resource "pods" in API group "" in the namespace "default""#
        );
        a.namespace = "";
        a.resource = "nodes";
        assert_eq!(
            forbidden_message(&a),
            r#"User "alice" cannot list resource "nodes" in API group "" at the cluster scope"#
        );
        a.path = "/metrics";
        a.verb = "get";
        assert_eq!(
            forbidden_message(&a),
            r#"User "alice" cannot get path "/metrics""#
        );
    }
}
