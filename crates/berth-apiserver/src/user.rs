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
