//! The patch metadata of [`schema`](super::schema) as clients see it: what the OpenAPI
//! documents publish as `x-kubernetes-patch-strategy`/`x-kubernetes-patch-merge-key`, so that
//! `kubectl apply`, which computes its strategic merge patch from those documents, builds the
//! patches that [`strategic_merge`](super::strategic_merge) applies as meant.

use super::schema::{field, Kind, ListStrategy, Ty};

/// How strategic merge patch treats one list field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListPatch {
    /// A patch's list replaces the whole list.
    Atomic,
    /// Elements are objects merged by the value of this key (`containers` by `name`).
    MergeByKey(&'static str),
    /// Elements are primitives merged as a set (`finalizers`).
    Set,
}

/// The strategy of the list at `path` (field names from the object's root, list elements
/// transparent: `["spec", "containers", "ports"]`) in an object of `kind`. Fields the table
/// does not name, and fields that are not lists, are [`ListPatch::Atomic`].
///
/// ```
/// use berth_core::patch::{list_patch, ListPatch};
///
/// assert_eq!(list_patch("Pod", &["spec", "containers"]), ListPatch::MergeByKey("name"));
/// assert_eq!(list_patch("Pod", &["spec", "tolerations"]), ListPatch::Atomic);
/// assert_eq!(list_patch("Deployment", &["spec", "template", "spec", "containers", "ports"]),
///            ListPatch::MergeByKey("containerPort"));
/// assert_eq!(list_patch("ConfigMap", &["metadata", "finalizers"]), ListPatch::Set);
/// ```
pub fn list_patch(kind: &str, path: &[&str]) -> ListPatch {
    let mut ty = Ty::Root(Kind::from_name(kind));
    let mut strategy = ListStrategy::Atomic;
    for name in path {
        (ty, strategy) = field(ty, name);
    }
    match strategy {
        ListStrategy::Atomic => ListPatch::Atomic,
        ListStrategy::Merge { key: Some(key) } => ListPatch::MergeByKey(key),
        ListStrategy::Merge { key: None } => ListPatch::Set,
    }
}
