//! The shell around the sharing engines: watches the replicas' Leases, and every retry period
//! (or at once when membership changes) takes the free nodes assigned to us, stops and
//! releases those assigned elsewhere, and stops everything while we are not a member.

use super::handover::{self, Step};
use super::membership::{self, Membership, Record};
use super::node_lease::{NodeLeases, Taken};
use super::{Hosted, Sharing};
use berth_core::clock::Clock;
use berth_informers::Informer;
use futures::future::BoxFuture;
use futures::stream::{self, StreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use kube::runtime::watcher;
use std::sync::Arc;
use std::time::Duration;

/// How long the programs of a node's pods get to stop (and, say, give up a Lease they lead)
/// when the node moves to another replica, before they are dropped; the node's Lease is
/// released only after.
const HANDOVER_GRACE: Duration = Duration::from_secs(2);

/// How many nodes are taken or released at once.
const CONCURRENT_STEPS: usize = 64;

/// What starting and stopping a node's kubelet means to the simulated nodes.
pub trait Host: Send + Sync {
    /// Registers the node (its status now names this replica's endpoints), marks it running
    /// here and catches up with its pods. `false` when it could not be started.
    fn start(&self, node: String) -> BoxFuture<'static, bool>;
    /// Stops the node's kubelet here at once (nothing more is written for it) and tells the
    /// programs of its pods to stop, dropping those still running after `grace`; resolves once
    /// they have all ended.
    fn stop(&self, node: &str, grace: Duration) -> BoxFuture<'static, ()>;
    /// The client the node's kubelet writes through.
    fn client(&self, node: &str) -> kube::Client;
}

/// Runs the sharing of `nodes` for this replica until the process ends.
pub async fn run(
    sharing: Sharing,
    shared: kube::Client,
    nodes: Vec<String>,
    hosted: Arc<Hosted>,
    leases: Arc<NodeLeases>,
    host: Arc<dyn Host>,
    clock: Clock,
) {
    let replicas: Informer<Lease> = Informer::start(
        Api::namespaced(shared, "kube-system"),
        watcher::Config::default(),
    );
    // Deciding before the first list would take nodes from replicas we have not seen yet.
    if !replicas.synced().await {
        return;
    }
    let mut changed = replicas.changed.clone();
    let mut member = sharing.member.clone();
    let mut tick = clock.interval(sharing.retry_period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut membership = Membership::default();
    let mut last_live: Vec<String> = Vec::new();
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            r = changed.changed() => if r.is_err() { return },
            r = member.changed() => if r.is_err() { return },
        }
        let now = clock.now();
        let records: Vec<Record> = replicas
            .store
            .state()
            .iter()
            .filter_map(|l| record(l))
            .collect();
        membership.observe(&records, now, sharing.lease_duration);
        if !*member.borrow() {
            // Not a member (our own Lease is not renewed): stop every kubelet at once, as a
            // leader that cannot renew exits.
            let stopped = hosted.clear();
            if !stopped.is_empty() {
                tracing::warn!(replica = %sharing.replica, nodes = stopped.len(), "leaderelection lost: this replica's Lease is not renewed; stopped all its kubelets");
                // No grace: another replica may take these nodes once the lease duration
                // has passed since our last renewal.
                for node in &stopped {
                    host.stop(node, Duration::ZERO).await;
                }
            }
            continue;
        }
        let mut live = membership.live(now, sharing.lease_duration);
        if !live.contains(&sharing.replica) {
            live.push(sharing.replica.clone());
            live.sort();
        }
        if live != last_live {
            tracing::info!(replica = %sharing.replica, live = ?live, "kubelet replicas");
            last_live = live.clone();
        }
        let steps = nodes.iter().filter_map(|node| {
            let assigned = super::rendezvous::owner(node, &live) == Some(sharing.replica.as_str());
            // For the nodes we run, a Lease taken from us shows in the kubelet's renewals; for
            // the others, the holder is read when we try to take it.
            match handover::step(assigned, hosted.runs(node), handover::Holder::Us) {
                step @ (Step::Release | Step::Take) => Some((node, step)),
                Step::Keep | Step::Wait | Step::Stop => None,
            }
        });
        // Each node's steps touch only its own Lease and kubelet, so nodes move side by side,
        // as separate kubelets register at once; one at a time, every write waited for an etcd
        // round trip (1,000 nodes Ready after 3 s rather than 1 s).
        stream::iter(steps)
            .for_each_concurrent(CONCURRENT_STEPS, |(node, step)| {
                let (sharing, leases, host, live, clock) =
                    (&sharing, &leases, &host, &live, &clock);
                async move {
                    match step {
                        Step::Release => release(sharing, leases, host.as_ref(), node).await,
                        _ => take(sharing, leases, host.as_ref(), node, live, clock).await,
                    }
                }
            })
            .await;
    }
}

/// Stops the kubelet of a node assigned elsewhere and the programs of its pods, then releases
/// its Lease: nothing of ours runs or is written after the release.
async fn release(sharing: &Sharing, leases: &NodeLeases, host: &dyn Host, node: &str) {
    host.stop(node, HANDOVER_GRACE).await;
    match leases
        .release(&host.client(node), node, &sharing.replica)
        .await
    {
        Ok(_) => {
            tracing::info!(node = %node, "node assigned to another replica: stopped its kubelet and released its Lease")
        }
        Err(e) => {
            tracing::warn!(node = %node, error = %e, "releasing the node Lease failed; the new owner waits for this replica's Lease to expire")
        }
    }
}

/// Takes a node assigned to us if no other live replica holds it, then starts its kubelet.
async fn take(
    sharing: &Sharing,
    leases: &NodeLeases,
    host: &dyn Host,
    node: &str,
    live: &[String],
    clock: &Clock,
) {
    match leases
        .take(&host.client(node), node, &sharing.replica, live, clock)
        .await
    {
        Ok(Taken::Yes) => {
            if host.start(node.to_string()).await {
                tracing::info!(node = %node, replica = %sharing.replica, "took the node Lease: its kubelet runs here");
            }
        }
        Ok(Taken::No(holder)) => {
            tracing::debug!(node = %node, holder = %holder, "waiting for the node to be released");
        }
        Err(e) => tracing::warn!(node = %node, error = %e, "taking the node Lease failed"),
    }
}

/// A replica's Lease as a membership record (other Leases of `kube-system` are not).
fn record(lease: &Lease) -> Option<Record> {
    let name = lease.metadata.name.as_deref()?;
    let replica = membership::replica_of(name)?;
    let spec = lease.spec.as_ref();
    Some(Record {
        replica: replica.to_string(),
        holder: spec
            .and_then(|s| s.holder_identity.clone())
            .unwrap_or_default(),
        renew_time: spec
            .and_then(|s| s.renew_time.as_ref())
            .map(|t| t.0.to_string())
            .unwrap_or_default(),
    })
}
