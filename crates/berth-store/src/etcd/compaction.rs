//! Compaction of etcd's history when several API servers share it, as upstream's compactor
//! (`--etcd-compaction-interval`) does: every interval each replica tries a compare-and-swap on
//! one key's version; the one that wins compacts etcd to the revision seen one interval
//! earlier. So etcd is compacted once per interval whatever the number of replicas (the winner
//! acts as the leader for that round), and always an interval behind, which leaves every
//! replica's mirror time to pass the compacted revision. The winner writes the revision it
//! compacts to in the key, and every replica's mirror forgets its history up to it, so a
//! resourceVersion etcd has compacted gets 410 Gone on every replica, not only the winner's.

use std::time::Duration;

use std::sync::Arc;

use etcd_client::{Compare, CompareOp, Txn, TxnOp, TxnOpResponse};

use super::config::Members;

use crate::engine::Engine;
use crate::Revision;

pub(super) struct Compactor {
    members: Arc<Members>,
    /// This replica's mirror, whose history follows etcd's compaction.
    engine: Arc<Engine>,
    key: String,
    /// The compaction key's version this replica last saw.
    version: i64,
    /// The etcd revision seen on the previous round.
    previous: Option<Revision>,
}

impl Compactor {
    pub(super) fn new(members: Arc<Members>, engine: Arc<Engine>, key: String) -> Compactor {
        Compactor {
            members,
            engine,
            key,
            version: 0,
            previous: None,
        }
    }

    /// Runs a round every `interval`, for as long as the backend's runtime lives.
    pub(super) async fn run(mut self, interval: Duration) {
        let mut tick = tokio::time::interval(interval);
        tick.tick().await;
        loop {
            tick.tick().await;
            self.round().await;
        }
    }

    async fn round(&mut self) {
        let txn = Txn::new()
            .when([Compare::version(
                self.key.as_str(),
                CompareOp::Equal,
                self.version,
            )])
            .and_then([TxnOp::put(
                self.key.as_str(),
                self.previous.map(|r| r.to_string()).unwrap_or_default(),
                None,
            )])
            .or_else([TxnOp::get(self.key.as_str(), None)]);
        let (at, client) = self.members.current();
        let mut kv = client.kv_client();
        let response = match kv.txn(txn).await {
            Ok(response) => response,
            Err(e) => {
                tracing::warn!(error = %e, "etcd compaction round failed");
                self.members.failed(at);
                return;
            }
        };
        let seen = response.header().map(|header| header.revision());
        let target = std::mem::replace(&mut self.previous, seen);
        if !response.succeeded() {
            // Another replica compacts this round; follow its count and its last compaction.
            let last = response.op_responses().into_iter().find_map(|op| match op {
                TxnOpResponse::Get(get) => get.kvs().first().cloned(),
                _ => None,
            });
            self.version = last.as_ref().map_or(0, |kv| kv.version());
            let compacted = last.and_then(|kv| {
                std::str::from_utf8(kv.value())
                    .ok()?
                    .parse::<Revision>()
                    .ok()
            });
            if let Some(compacted) = compacted {
                self.forget_up_to(compacted);
            }
            return;
        }
        self.version += 1;
        let Some(target) = target else {
            return;
        };
        match kv.compact(target, None).await {
            Ok(_) => tracing::info!(revision = target, "etcd compacted"),
            Err(e) => tracing::debug!(error = %e, revision = target, "etcd compaction skipped"),
        }
        self.forget_up_to(target);
    }

    /// Compacts the mirror to what etcd was compacted to; a mirror not yet there catches up
    /// at a later round.
    fn forget_up_to(&self, revision: Revision) {
        if revision > self.engine.compacted_revision() && revision <= self.engine.current_revision()
        {
            if let Err(e) = self.engine.compact(revision) {
                tracing::debug!(error = %e, revision, "mirror compaction skipped");
            }
        }
    }
}
