//! The writes as etcd transactions: each compares (create revision, mod revision) and writes in
//! one round trip, reading the key back when the compare fails so the error can say why.
//!
//! A write returns only once the mirror has applied its revision, so the caller reads its own
//! write (and a caller told Conflict reads the version it conflicted with).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use etcd_client::{Compare, CompareOp, DeleteOptions, Txn, TxnOp, TxnOpResponse, TxnResponse};
use tokio::sync::watch;

use super::config::{etcd_error, unavailable, unsent, Members};
use super::keys::KeyMap;
use crate::engine::Engine;
use crate::{Error, KeyValue, Result, Revision};

/// How many times each member is tried before a write fails.
const ROUNDS: usize = 10;

/// The pause between attempts (an etcd leader election takes about a second).
const PAUSE: Duration = Duration::from_millis(100);

/// What a write needs, cloned into the task that runs it.
#[derive(Clone)]
pub(crate) struct Writer {
    pub(crate) members: Arc<Members>,
    pub(crate) keys: KeyMap,
    /// The last revision the mirror applied.
    pub(crate) applied: watch::Receiver<Revision>,
    /// The mirror, which supplies what etcd is not asked to send back (an update's create
    /// revision).
    pub(crate) engine: Arc<Engine>,
}

/// A write as the backend received it.
pub(crate) enum Write {
    Create {
        key: String,
        value: Bytes,
    },
    Update {
        key: String,
        value: Bytes,
        expected: Option<Revision>,
    },
    Delete {
        key: String,
        expected: Option<Revision>,
    },
}

impl Writer {
    pub(crate) async fn run(mut self, write: Write) -> Result<KeyValue> {
        let outcome = match write {
            Write::Create { key, value } => self.create(key, value).await,
            Write::Update {
                key,
                value,
                expected,
            } => self.update(key, value, expected).await,
            Write::Delete { key, expected } => self.delete(key, expected).await,
        };
        let seen = match &outcome {
            Ok(kv) => kv.mod_revision,
            Err(Error::Conflict { actual, .. }) => *actual,
            Err(_) => return outcome,
        };
        self.caught_up(seen).await?;
        outcome
    }

    /// Waits until the mirror has applied `revision`.
    async fn caught_up(&mut self, revision: Revision) -> Result<()> {
        self.applied
            .wait_for(|applied| *applied >= revision)
            .await
            .map(|_| ())
            .map_err(|_| {
                Error::Io("the etcd mirror stopped; the write's outcome is in etcd".into())
            })
    }

    /// Sends the transaction `txn` makes to the current member, moving on to the next while
    /// members cannot be reached (a few rounds, with a pause while etcd elects a leader). A
    /// request that may have reached etcd is not sent again: its outcome is unknown, as with
    /// any lost connection. Made per attempt rather than cloned: the value is copied once per
    /// send, not twice.
    async fn txn(&mut self, txn: impl Fn() -> Txn) -> Result<TxnResponse> {
        let attempts = self.members.len() * ROUNDS;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let (at, mut kv) = self.members.current_kv();
            match kv.txn(txn()).await {
                Ok(response) => return Ok(response),
                Err(e) if unavailable(&e) => {
                    self.members.failed(at);
                    if !unsent(&e) || attempt >= attempts {
                        return Err(etcd_error("etcd transaction", e));
                    }
                    tokio::time::sleep(PAUSE).await;
                }
                Err(e) => return Err(etcd_error("etcd transaction", e)),
            }
        }
    }

    async fn create(&mut self, key: String, value: Bytes) -> Result<KeyValue> {
        let etcd_key = self.keys.to_etcd(&key)?;
        let txn = || {
            Txn::new()
                .when([Compare::create_revision(
                    etcd_key.as_str(),
                    CompareOp::Equal,
                    0,
                )])
                .and_then([TxnOp::put(etcd_key.as_str(), value.to_vec(), None)])
        };
        let response = self.txn(txn).await?;
        if !response.succeeded() {
            return Err(Error::AlreadyExists { key });
        }
        let revision = revision_of(&response)?;
        Ok(KeyValue {
            key,
            value,
            create_revision: revision,
            mod_revision: revision,
        })
    }

    async fn update(
        &mut self,
        key: String,
        value: Bytes,
        expected: Option<Revision>,
    ) -> Result<KeyValue> {
        let etcd_key = self.keys.to_etcd(&key)?;
        // No prev_kv: etcd would read and send the whole previous value back only for its
        // create revision, which the mirror has once it applies this write.
        let put = || TxnOp::put(etcd_key.as_str(), value.to_vec(), None);
        let response = self.txn(|| guarded(&etcd_key, expected, put())).await?;
        if !response.succeeded() {
            return Err(refusal(key, expected, &response));
        }
        let revision = revision_of(&response)?;
        self.caught_up(revision).await?;
        let create_revision = self
            .engine
            .written_at(&key, revision)
            .map(|kv| kv.create_revision)
            .ok_or_else(|| {
                Error::Io(format!(
                    "the etcd mirror no longer holds revision {revision} of {key}"
                ))
            })?;
        Ok(KeyValue {
            key,
            value,
            create_revision,
            mod_revision: revision,
        })
    }

    async fn delete(&mut self, key: String, expected: Option<Revision>) -> Result<KeyValue> {
        let etcd_key = self.keys.to_etcd(&key)?;
        let delete = || {
            TxnOp::delete(
                etcd_key.as_str(),
                Some(DeleteOptions::new().with_prev_key()),
            )
        };
        let response = self.txn(|| guarded(&etcd_key, expected, delete())).await?;
        if !response.succeeded() {
            return Err(refusal(key, expected, &response));
        }
        let revision = revision_of(&response)?;
        let prev = response
            .op_responses()
            .into_iter()
            .find_map(|op| match op {
                TxnOpResponse::Delete(delete) => delete.prev_kvs().first().cloned(),
                _ => None,
            })
            .ok_or_else(|| Error::Io("etcd answered a delete without the deleted value".into()))?;
        Ok(KeyValue {
            key,
            value: Bytes::copy_from_slice(prev.value()),
            create_revision: prev.create_revision(),
            mod_revision: revision,
        })
    }
}

/// `op` if the key exists (and has mod revision `expected`, if given), else a read of the key.
///
/// One compare where one suffices, as upstream's API server writes: etcd reads the key (value
/// included) once per compare, and a key that does not exist has mod revision 0, so an equal
/// positive mod revision already says that it exists.
fn guarded(etcd_key: &str, expected: Option<Revision>, op: TxnOp) -> Txn {
    let exists = Compare::create_revision(etcd_key, CompareOp::Greater, 0);
    let compares = match expected {
        Some(expected) if expected > 0 => {
            vec![Compare::mod_revision(etcd_key, CompareOp::Equal, expected)]
        }
        Some(expected) => vec![
            exists,
            Compare::mod_revision(etcd_key, CompareOp::Equal, expected),
        ],
        None => vec![exists],
    };
    Txn::new()
        .when(compares)
        .and_then([op])
        .or_else([TxnOp::get(etcd_key, None)])
}

/// Why a guarded write was refused: the key is gone, or it has another mod revision.
fn refusal(key: String, expected: Option<Revision>, response: &TxnResponse) -> Error {
    let current = response.op_responses().into_iter().find_map(|op| match op {
        TxnOpResponse::Get(get) => get.kvs().first().map(|kv| kv.mod_revision()),
        _ => None,
    });
    match (current, expected) {
        (Some(actual), Some(expected)) => Error::Conflict {
            key,
            expected,
            actual,
        },
        _ => Error::NotFound { key },
    }
}

fn revision_of(response: &TxnResponse) -> Result<Revision> {
    response
        .header()
        .map(|header| header.revision())
        .ok_or_else(|| Error::Io("etcd answered without a response header".into()))
}
