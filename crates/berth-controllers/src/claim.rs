//! What a controller owns, as upstream's `ControllerRefManager.ClaimObject` (a Deployment's
//! ReplicaSets, a Job's pods): an object without a controller whose labels the owner selects is
//! adopted; one it controls whose labels it no longer selects is released. An owner being
//! deleted adopts and releases nothing; an object being deleted is not adopted.

/// An object as the claim sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate<'a> {
    /// The uid of its controller (`ownerReferences[controller=true]`), if any.
    pub controller_uid: Option<&'a str>,
    /// The Deployment's selector selects its labels.
    pub selected: bool,
    pub deleting: bool,
}

/// What the owner does with one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// It owns it already.
    Owned,
    /// An orphan it selects: it becomes the controller.
    Adopt,
    /// It controls it but no longer selects it: the reference goes.
    Release,
    /// Not its concern.
    Ignore,
}

/// The claim of the owner `owner_uid` (being deleted or not) on the object `rs`.
pub fn claim(owner_uid: &str, owner_deleting: bool, rs: Candidate<'_>) -> Claim {
    match rs.controller_uid {
        Some(uid) if uid != owner_uid => Claim::Ignore,
        Some(_) if rs.selected || owner_deleting => Claim::Owned,
        Some(_) => Claim::Release,
        None if rs.selected && !owner_deleting && !rs.deleting => Claim::Adopt,
        None => Claim::Ignore,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rs(controller_uid: Option<&str>, selected: bool, deleting: bool) -> Candidate<'_> {
        Candidate {
            controller_uid,
            selected,
            deleting,
        }
    }

    #[test]
    fn a_selected_orphan_is_adopted() {
        assert_eq!(claim("d", false, rs(None, true, false)), Claim::Adopt);
    }

    #[test]
    fn an_orphan_not_selected_or_being_deleted_is_left_alone() {
        assert_eq!(claim("d", false, rs(None, false, false)), Claim::Ignore);
        assert_eq!(claim("d", false, rs(None, true, true)), Claim::Ignore);
    }

    #[test]
    fn a_deployment_being_deleted_adopts_and_releases_nothing() {
        assert_eq!(claim("d", true, rs(None, true, false)), Claim::Ignore);
        assert_eq!(claim("d", true, rs(Some("d"), false, false)), Claim::Owned);
    }

    #[test]
    fn an_owned_set_it_no_longer_selects_is_released() {
        assert_eq!(claim("d", false, rs(Some("d"), true, false)), Claim::Owned);
        assert_eq!(
            claim("d", false, rs(Some("d"), false, false)),
            Claim::Release
        );
    }

    #[test]
    fn a_set_another_controller_owns_is_not_its_concern() {
        assert_eq!(
            claim("d", false, rs(Some("other"), true, false)),
            Claim::Ignore
        );
    }
}
