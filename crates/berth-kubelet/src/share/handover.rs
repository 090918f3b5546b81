//! What this replica does about one node's kubelet, from whom the node is assigned to, whether
//! we run it, and who holds the node's Lease `kube-node-lease/<node>`.

/// Who holds a node's Lease, as this replica sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder {
    /// This replica.
    Us,
    /// Nobody: released (no holder), never taken, or taken by a replica that is no longer live
    /// (which stopped its kubelets before we could judge it dead), or by the node's own name
    /// (the embedded shape, or a cluster from before the kubelets were shared).
    Free,
    /// Another live replica: it may still run the kubelet.
    Other,
}

/// The holder of a Lease whose `holderIdentity` is `holder`, for replica `me` seeing `live`.
pub fn holder(holder: &str, me: &str, live: &[String]) -> Holder {
    if holder == me {
        Holder::Us
    } else if live.iter().any(|r| r == holder) {
        Holder::Other
    } else {
        Holder::Free
    }
}

/// The step for one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Nothing to do: we run it and it is ours, or neither.
    Keep,
    /// It is ours and free: take its Lease (compare-and-swap), then start its kubelet.
    Take,
    /// It is ours but another live replica holds it: wait for that replica to release it.
    Wait,
    /// It is no longer ours: stop its kubelet, then release its Lease.
    Release,
    /// We run it but another live replica holds its Lease (we were judged dead meanwhile):
    /// stop its kubelet at once, without touching the Lease.
    Stop,
}

/// The step for a node assigned (or not) to us, which we run (or not), whose Lease is held by
/// `holder`.
pub fn step(assigned_to_us: bool, running: bool, holder: Holder) -> Step {
    match (running, assigned_to_us, holder) {
        (true, _, Holder::Other) => Step::Stop,
        (true, false, _) => Step::Release,
        (true, true, _) => Step::Keep,
        (false, true, Holder::Other) => Step::Wait,
        (false, true, Holder::Us | Holder::Free) => Step::Take,
        (false, false, _) => Step::Keep,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_holder_is_us_another_live_replica_or_nobody() {
        let l = live(&["a", "b"]);
        assert_eq!(holder("a", "a", &l), Holder::Us);
        assert_eq!(holder("b", "a", &l), Holder::Other);
        assert_eq!(holder("", "a", &l), Holder::Free, "released");
        assert_eq!(holder("c", "a", &l), Holder::Free, "a dead replica");
        assert_eq!(
            holder("node-1", "a", &l),
            Holder::Free,
            "the embedded shape"
        );
    }

    #[test]
    fn a_node_of_ours_is_taken_only_once_no_live_replica_holds_it() {
        assert_eq!(step(true, false, Holder::Free), Step::Take);
        assert_eq!(step(true, false, Holder::Us), Step::Take, "after a restart");
        assert_eq!(step(true, false, Holder::Other), Step::Wait);
    }

    #[test]
    fn a_node_that_moved_away_is_released_and_one_taken_from_us_is_stopped() {
        assert_eq!(step(false, true, Holder::Us), Step::Release);
        assert_eq!(step(false, true, Holder::Free), Step::Release);
        assert_eq!(step(false, true, Holder::Other), Step::Stop);
        assert_eq!(step(true, true, Holder::Other), Step::Stop);
    }

    #[test]
    fn nodes_settled_are_left_alone() {
        assert_eq!(step(true, true, Holder::Us), Step::Keep);
        assert_eq!(step(true, true, Holder::Free), Step::Keep);
        for h in [Holder::Us, Holder::Free, Holder::Other] {
            assert_eq!(step(false, false, h), Step::Keep);
        }
    }
}
