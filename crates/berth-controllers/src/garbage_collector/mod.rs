//! The garbage collector's decisions, as upstream's `pkg/controller/garbagecollector`: what to do
//! with an object whose owners are gone or being deleted, and when an owner deleted in the
//! foreground or with orphaning may go. Pure: the object, its owners as found, and its
//! dependents in; an [`Action`] out; the [`driver`] walks the owner graph.

pub(crate) mod driver;

/// The finalizer of an owner deleted with `propagationPolicy: Foreground`.
pub const FOREGROUND: &str = "foregroundDeletion";
/// The finalizer of an owner deleted with `propagationPolicy: Orphan`.
pub const ORPHAN: &str = "orphan";

/// One `metadata.ownerReferences` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnerRef {
    pub uid: String,
    pub block_owner_deletion: bool,
}

/// An owner as the collector found it by the reference's kind, namespace and name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Owner {
    /// No such object, or one with another uid (the owner was deleted and recreated).
    Absent,
    /// Present; `deleting` with its finalizers when it has a deletion timestamp.
    Present {
        uid: String,
        deleting: bool,
        finalizers: Vec<String>,
    },
}

/// How an object is deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Propagation {
    Background,
    Foreground,
    Orphan,
}

/// What names an object as its owner, as far as its deletion is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dependents {
    /// Nothing.
    None,
    /// Some objects, none of them deleted in the foreground yet.
    Some,
    /// Some objects, at least one of them itself waiting for its dependents (deleted in the
    /// foreground): with an owner waiting too, the two may wait on each other in a circle.
    SomeDeletingDependents,
}

/// What the collector does with one object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Its owners are fine (or it has none).
    Keep,
    /// Some owners remain: remove the references to the absent or foreground-deleting ones.
    RemoveOwnerRefs(Vec<String>),
    /// No owner remains: delete it.
    Delete(Propagation),
    /// Its owners wait for it and it waits for a dependent that waits too, maybe for one of
    /// those owners (an ownership circle): its references stop blocking their owners'
    /// deletion (`blockOwnerDeletion: false`), then it is deleted in the foreground. Upstream
    /// breaks circles this way, accepting false positives.
    UnblockOwnersThenDeleteForeground,
}

/// Upstream `attemptToDeleteItem` for an object not itself being deleted. `owners[i]` is what was
/// found for `refs[i]`; `finalizers` are the object's own; `dependents` what names it as owner.
pub fn decide(
    refs: &[OwnerRef],
    owners: &[Owner],
    finalizers: &[String],
    dependents: Dependents,
) -> Action {
    if refs.is_empty() {
        return Action::Keep;
    }
    let (mut solid, mut dangling, mut waiting) = (0usize, Vec::new(), Vec::new());
    for (r, owner) in refs.iter().zip(owners) {
        match owner {
            Owner::Present { uid, .. } if uid != &r.uid => dangling.push(r.uid.clone()),
            Owner::Absent => dangling.push(r.uid.clone()),
            Owner::Present {
                deleting: true,
                finalizers,
                ..
            } if finalizers.iter().any(|f| f == FOREGROUND) => waiting.push(r.uid.clone()),
            Owner::Present { .. } => solid += 1,
        }
    }
    if solid > 0 {
        if dangling.is_empty() && waiting.is_empty() {
            return Action::Keep;
        }
        dangling.extend(waiting);
        return Action::RemoveOwnerRefs(dangling);
    }
    if !waiting.is_empty() {
        match dependents {
            Dependents::None => {}
            // Its owners wait for their dependents: its own dependents must go first too.
            Dependents::Some => return Action::Delete(Propagation::Foreground),
            Dependents::SomeDeletingDependents => return Action::UnblockOwnersThenDeleteForeground,
        }
    }
    let policy = if finalizers.iter().any(|f| f == ORPHAN) {
        Propagation::Orphan
    } else if finalizers.iter().any(|f| f == FOREGROUND) {
        Propagation::Foreground
    } else {
        Propagation::Background
    };
    Action::Delete(policy)
}

/// A dependent of an owner being deleted in the foreground.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dependent {
    pub name: String,
    /// Its reference to the owner has `blockOwnerDeletion: true`.
    pub blocks: bool,
    pub deleting: bool,
}

/// For an owner with the foreground finalizer: `None` once no dependent blocks it (the
/// finalizer may be removed), else the blocking dependents whose deletion must still start.
pub fn foreground_blockers(dependents: &[Dependent]) -> Option<Vec<String>> {
    let blocking: Vec<&Dependent> = dependents.iter().filter(|d| d.blocks).collect();
    if blocking.is_empty() {
        return None;
    }
    Some(
        blocking
            .into_iter()
            .filter(|d| !d.deleting)
            .map(|d| d.name.clone())
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(uid: &str) -> OwnerRef {
        OwnerRef {
            uid: uid.into(),
            block_owner_deletion: true,
        }
    }

    fn present(uid: &str) -> Owner {
        Owner::Present {
            uid: uid.into(),
            deleting: false,
            finalizers: vec![],
        }
    }

    fn foreground_deleting(uid: &str) -> Owner {
        Owner::Present {
            uid: uid.into(),
            deleting: true,
            finalizers: vec![FOREGROUND.into()],
        }
    }

    #[test]
    fn an_object_without_owners_or_with_live_owners_is_kept() {
        assert_eq!(decide(&[], &[], &[], Dependents::None), Action::Keep);
        assert_eq!(
            decide(&[r("a")], &[present("a")], &[], Dependents::None),
            Action::Keep
        );
    }

    #[test]
    fn an_object_whose_only_owner_is_gone_is_deleted_in_the_background() {
        assert_eq!(
            decide(&[r("a")], &[Owner::Absent], &[], Dependents::None),
            Action::Delete(Propagation::Background)
        );
        // Recreated under the same name: another uid is not the owner.
        assert_eq!(
            decide(&[r("a")], &[present("b")], &[], Dependents::None),
            Action::Delete(Propagation::Background)
        );
    }

    #[test]
    fn dangling_references_are_removed_while_another_owner_remains() {
        assert_eq!(
            decide(
                &[r("gone"), r("live"), r("going")],
                &[Owner::Absent, present("live"), foreground_deleting("going")],
                &[],
                Dependents::None
            ),
            Action::RemoveOwnerRefs(vec!["gone".into(), "going".into()])
        );
    }

    #[test]
    fn dependents_of_a_foreground_deletion_with_dependents_of_their_own_go_in_the_foreground() {
        assert_eq!(
            decide(
                &[r("d")],
                &[foreground_deleting("d")],
                &[],
                Dependents::Some
            ),
            Action::Delete(Propagation::Foreground)
        );
        assert_eq!(
            decide(
                &[r("d")],
                &[foreground_deleting("d")],
                &[],
                Dependents::None
            ),
            Action::Delete(Propagation::Background)
        );
    }

    #[test]
    fn a_waiting_owners_dependent_whose_own_dependent_waits_unblocks_its_owners_first() {
        // pod-1 -> pod-2 -> pod-3 -> pod-1, all deleted in the foreground: pod-2 waits for
        // pod-3, which waits for pod-1, which waits for pod-2. Unblocking breaks the circle.
        assert_eq!(
            decide(
                &[r("d")],
                &[foreground_deleting("d")],
                &[],
                Dependents::SomeDeletingDependents
            ),
            Action::UnblockOwnersThenDeleteForeground
        );
        // With a live owner the circle is not its concern: the waiting reference goes.
        assert_eq!(
            decide(
                &[r("d"), r("live")],
                &[foreground_deleting("d"), present("live")],
                &[],
                Dependents::SomeDeletingDependents
            ),
            Action::RemoveOwnerRefs(vec!["d".into()])
        );
    }

    #[test]
    fn an_objects_own_finalizer_chooses_its_propagation() {
        assert_eq!(
            decide(
                &[r("a")],
                &[Owner::Absent],
                &[ORPHAN.into()],
                Dependents::Some
            ),
            Action::Delete(Propagation::Orphan)
        );
        assert_eq!(
            decide(
                &[r("a")],
                &[Owner::Absent],
                &[FOREGROUND.into()],
                Dependents::Some
            ),
            Action::Delete(Propagation::Foreground)
        );
    }

    #[test]
    fn a_foreground_owner_waits_for_blocking_dependents_only() {
        let dep = |name: &str, blocks, deleting| Dependent {
            name: name.into(),
            blocks,
            deleting,
        };
        assert_eq!(foreground_blockers(&[dep("free", false, false)]), None);
        assert_eq!(
            foreground_blockers(&[
                dep("rs", true, false),
                dep("pod", true, true),
                dep("free", false, false)
            ]),
            Some(vec!["rs".to_string()])
        );
        assert_eq!(foreground_blockers(&[dep("pod", true, true)]), Some(vec![]));
    }
}
