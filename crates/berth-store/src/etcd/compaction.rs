//! Compaction of etcd's history when several API servers share it, as upstream's compactor
//! (`--etcd-compaction-interval`) does: every interval each replica tries a compare-and-swap on
//! one key's version; the one that wins compacts etcd to the revision seen one interval
//! earlier. So etcd is compacted once per interval whatever the number of replicas (the winner
//! acts as the leader for that round), and always an interval behind, which leaves every
//! replica's mirror time to pass the compacted revision. Each mirror forgets its own history
//! separately, when the API server's compactor calls [`crate::Store::compact`].

use std::time::Duration;

use std::sync::Arc;

use etcd_client::{Compare, CompareOp, Txn, TxnOp, TxnOpResponse};

use super::config::Members;

use crate::Revision;

pub(super) struct Compactor {
    members: Arc<Members>,
    key: String,
    /// The compaction key's version this replica last saw.
    version: i64,
    /// The etcd revision seen on the previous round.
    previous: Option<Revision>,
}

impl Compactor {
    pub(super) fn new(members: Arc<Members>, key: String) -> Compactor {
        Compactor {
            members,
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
            .and_then([TxnOp::put(self.key.as_str(), Vec::new(), None)])
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
            // Another replica compacts this round; follow its count.
            self.version = response
                .op_responses()
                .into_iter()
                .find_map(|op| match op {
                    TxnOpResponse::Get(get) => get.kvs().first().map(|kv| kv.version()),
                    _ => None,
                })
                .unwrap_or(0);
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
    }
}
