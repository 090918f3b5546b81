//! The simulated kubelets shared among `berth serve` replicas on one etcd: each node's kubelet
//! runs in exactly one replica, and is re-homed when its replica dies.
//!
//! # How
//!
//! - **Membership** ([`membership`]): each replica holds its own Lease
//!   `kube-system/berth-replica-<id>` (renewed every retry period by the replica, as a leader
//!   renews, see `berth serve`), and watches the others'. A replica is live while its Lease
//!   has moved within the lease duration, judged from when we observed it move.
//! - **Assignment** ([`rendezvous`]): each node goes to the live replica with the highest
//!   rendezvous weight for it, so a replica joining or leaving moves only about 1/N of the nodes.
//! - **Hand-over** ([`handover`]): the node's own Lease `kube-node-lease/<node>` names in
//!   `holderIdentity` the replica running its kubelet (`kubectl get leases -n kube-node-lease`
//!   shows who runs what). Its holder changes only by compare-and-swap on the Lease's
//!   resourceVersion. A replica starts a kubelet only after taking the Lease; it stops a kubelet
//!   as soon as it sees the node assigned elsewhere, and only then releases the Lease (empties
//!   its holder); the kubelet's renewals of the Lease are compare-and-swaps too, and one that
//!   finds the Lease changed by someone else stops that kubelet.
//!
//! # Why a kubelet never runs in two replicas at once
//!
//! A new owner takes a node's Lease only when it is free: released, or held by a replica that is
//! no longer live. Released: the previous owner stopped the kubelet before releasing it (the
//! stop is a flag in process, checked before every write the kubelet makes). Held by a replica
//! no longer live: that replica's own Lease has not moved for the lease duration as we observed
//! it, while a replica that cannot renew its own Lease stops all its kubelets at once when the
//! renew deadline (shorter than the lease duration) has passed since its last renewal, so it
//! stopped before we could judge it dead; this is the leader election's own argument (clocks
//! must tick at about the same rate, not show the same time). Two replicas that both judge a
//! node free race on the compare-and-swap, and one loses. A replica that was judged dead and
//! comes back finds its renewals refused (the Lease changed) and stops those kubelets.
//!
//! What is not fenced: a write already sent when the kubelet stops may land just after (the
//! API has no fencing tokens, as for any upstream leader); timers of a kubelet that stopped are
//! checked before they write, so a pod's run (`berth.io/run-seconds`) ends on the new owner,
//! counted once.
//!
//! The embedded store's shape is unchanged: one process, every kubelet, the Leases held by the
//! nodes' own names. Every replica must be started with the same nodes (`--nodes` or
//! `--cluster`): a replica only runs nodes it knows.

pub mod handover;
pub mod membership;
pub mod rendezvous;

mod driver;
mod node_lease;

pub use driver::{run, Host};
pub use node_lease::{NodeLeases, Renewed, Taken};

use std::collections::HashSet;
use std::sync::RwLock;
use std::time::Duration;

/// How this replica shares the kubelets with the others.
#[derive(Clone, Debug)]
pub struct Sharing {
    /// This replica's id: its Lease is `kube-system/berth-replica-<id>`, and the nodes whose
    /// kubelets it runs name it in their Lease's `holderIdentity`.
    pub replica: String,
    /// How long a replica's Lease may go unrenewed before the others judge it dead.
    pub lease_duration: Duration,
    /// How often assignments are looked at again (and free nodes of ours taken).
    pub retry_period: Duration,
    /// `true` while this replica holds its own Lease: only then may it run kubelets.
    pub member: tokio::sync::watch::Receiver<bool>,
}

/// The nodes whose kubelets run in this process now.
#[derive(Debug)]
pub struct Hosted {
    every: bool,
    nodes: RwLock<HashSet<String>>,
}

impl Hosted {
    /// Every node of the process, always (the embedded shape).
    pub fn every() -> Hosted {
        Hosted {
            every: true,
            nodes: RwLock::default(),
        }
    }

    /// None yet: nodes are added as this replica takes them.
    pub fn none() -> Hosted {
        Hosted {
            every: false,
            nodes: RwLock::default(),
        }
    }

    /// Whether `node`'s kubelet runs here now.
    pub fn runs(&self, node: &str) -> bool {
        self.every || self.read().contains(node)
    }

    /// Whether the kubelets are shared (some nodes may run elsewhere).
    pub fn shared(&self) -> bool {
        !self.every
    }

    /// Starts running `node` here.
    pub fn add(&self, node: &str) {
        self.write().insert(node.to_string());
    }

    /// Stops running `node` here; `true` if it ran.
    pub fn remove(&self, node: &str) -> bool {
        self.write().remove(node)
    }

    /// Stops running every node here, returning them.
    pub fn clear(&self) -> Vec<String> {
        self.write().drain().collect()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashSet<String>> {
        self.nodes.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashSet<String>> {
        self.nodes.write().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::Hosted;

    #[test]
    fn the_embedded_shape_runs_every_node_and_a_shared_one_only_those_taken() {
        assert!(Hosted::every().runs("node-1"));
        let h = Hosted::none();
        assert!(!h.runs("node-1"));
        h.add("node-1");
        assert!(h.runs("node-1"));
        assert!(h.remove("node-1"));
        assert!(!h.remove("node-1"));
        h.add("node-2");
        assert_eq!(h.clear(), ["node-2"]);
        assert!(!h.runs("node-2"));
    }
}
