//! Who is asking: the identity authentication establishes for a request (upstream's
//! `user.Info`), carried by every [`crate::request::ApiRequest`] to authorization and admission.

use std::collections::BTreeMap;

/// The group whose members may do everything (upstream's `system:masters`).
pub const SYSTEM_MASTERS: &str = "system:masters";
/// The group of every authenticated user.
pub const SYSTEM_AUTHENTICATED: &str = "system:authenticated";

/// An authenticated (or anonymous) identity.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The cluster administrator: what the admin token and berth's own in-process clients are.
    pub fn admin() -> UserInfo {
        UserInfo {
            name: "system:admin".into(),
            groups: vec![SYSTEM_MASTERS.into(), SYSTEM_AUTHENTICATED.into()],
            ..UserInfo::default()
        }
    }

    /// Whether the user is a member of `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

/// The group every node's kubelet is in (upstream's `system:nodes`).
pub const SYSTEM_NODES: &str = "system:nodes";
/// The prefix of a kubelet's user name: `system:node:<node name>`.
pub const NODE_USER_PREFIX: &str = "system:node:";

impl UserInfo {
    /// Which node the user is the kubelet of (upstream's `NodeIdentity`): `None` for a user not
    /// in `system:nodes`, `Some("")` for a member whose name does not name a node.
    pub fn node_identity(&self) -> Option<&str> {
        if !self.in_group(SYSTEM_NODES) {
            return None;
        }
        Some(self.name.strip_prefix(NODE_USER_PREFIX).unwrap_or(""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..UserInfo::default()
        }
    }

    #[test]
    fn a_node_is_named_system_node_and_in_system_nodes() {
        assert_eq!(
            user("system:node:n1", &[SYSTEM_NODES]).node_identity(),
            Some("n1")
        );
        assert_eq!(user("kubelet", &[SYSTEM_NODES]).node_identity(), Some(""));
        assert_eq!(user("system:node:n1", &[]).node_identity(), None);
    }
}
