//! Whether a user may do something: upstream's `authorizer.Authorizer`, asked for every request
//! and by the admission plugins that depend on the requester's rights (PodNodeConstraints asks
//! whether a user may create `pods/binding`).

use crate::user::UserInfo;

/// What is asked: a verb on a resource (with group, subresource, namespace and name), or a verb
/// on a non-resource path such as `/healthz`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attributes<'a> {
    pub user: &'a UserInfo,
    pub verb: &'a str,
    pub api_group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    /// Set for non-resource requests (`/api`, `/healthz`, ...), empty otherwise.
    pub path: &'a str,
    /// The `fieldSelector` of a list or watch, as sent (the Node authorizer lets a node list
    /// the pods of `spec.nodeName=<itself>`); empty otherwise.
    pub field_selector: &'a str,
}

/// An authorizer's answer, with the reason a denial shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny(String),
}

impl Decision {
    pub fn allowed(&self) -> bool {
        matches!(self, Decision::Allow)
    }
}

/// Decides requests.
pub trait Authorizer: Send + Sync {
    fn authorize(&self, attributes: &Attributes<'_>) -> Decision;
}

/// Allows everything: the authorizer while RBAC is not enforced.
pub struct AlwaysAllow;

impl Authorizer for AlwaysAllow {
    fn authorize(&self, _: &Attributes<'_>) -> Decision {
        Decision::Allow
    }
}
