//! OpenShift's `user.openshift.io/v1` Groups as RBAC sees them: a user listed in a Group's
//! `users` is in that group for every authorization decision (`oc adm groups new devs alice`,
//! then `oc adm policy add-role-to-group edit devs`), as OpenShift's group cache makes it.
//!
//! Pure: fed the stored Groups by the RBAC watch (see [`super::Rbac::follow`]).

use serde_json::Value;
use std::collections::{BTreeSet, HashMap};

/// Where OpenShift's Groups are stored.
pub const PREFIX: &str = "/registry/user.openshift.io/groups/";

/// Each user's groups, from the stored Groups.
#[derive(Default, Debug)]
pub struct UserGroups {
    /// Group name → its users.
    members: HashMap<String, Vec<String>>,
    /// User name → the groups that list it.
    by_user: HashMap<String, BTreeSet<String>>,
}

impl UserGroups {
    /// Records (or replaces) the Group `name` stored as `obj`.
    pub fn apply(&mut self, name: &str, obj: &Value) {
        self.remove(name);
        let users: Vec<String> = obj
            .get("users")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|u| u.as_str().map(str::to_string))
            .collect();
        for user in &users {
            self.by_user
                .entry(user.clone())
                .or_default()
                .insert(name.to_string());
        }
        self.members.insert(name.to_string(), users);
    }

    /// Forgets the Group `name`.
    pub fn remove(&mut self, name: &str) {
        let Some(users) = self.members.remove(name) else {
            return;
        };
        for user in users {
            if let Some(groups) = self.by_user.get_mut(&user) {
                groups.remove(name);
                if groups.is_empty() {
                    self.by_user.remove(&user);
                }
            }
        }
    }

    /// The groups that list `user`, in name order.
    pub fn of(&self, user: &str) -> Option<&BTreeSet<String>> {
        self.by_user.get(user)
    }

    /// Whether no Group lists anyone (the common case: nothing to add to any request).
    pub fn is_empty(&self) -> bool {
        self.by_user.is_empty()
    }
}

/// The Group name of a storage key under [`PREFIX`].
pub fn group_name(storage_key: &str) -> Option<&str> {
    storage_key
        .strip_prefix(PREFIX)
        .filter(|n| !n.is_empty() && !n.contains('/'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_user_is_in_every_group_that_lists_them_until_it_no_longer_does() {
        let mut g = UserGroups::default();
        g.apply("devs", &json!({"users": ["alice", "bob"]}));
        g.apply("ops", &json!({"users": ["alice"]}));
        let alice: Vec<_> = g.of("alice").unwrap().iter().cloned().collect();
        assert_eq!(alice, ["devs", "ops"]);
        g.apply("devs", &json!({"users": ["bob"]}));
        let alice: Vec<_> = g.of("alice").unwrap().iter().cloned().collect();
        assert_eq!(alice, ["ops"]);
        g.remove("ops");
        assert!(g.of("alice").is_none());
        assert!(g.of("bob").is_some());
        g.remove("devs");
        assert!(g.is_empty());
    }

    #[test]
    fn a_group_without_users_or_with_odd_members_lists_only_names() {
        let mut g = UserGroups::default();
        g.apply("empty", &json!({}));
        g.apply("odd", &json!({"users": [1, null, "carol"]}));
        assert!(g.of("carol").is_some());
        assert_eq!(
            group_name("/registry/user.openshift.io/groups/devs"),
            Some("devs")
        );
        assert_eq!(group_name("/registry/user.openshift.io/groups/"), None);
    }
}
