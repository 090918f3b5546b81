//! The local mirror: the prefix listed once at open, then kept current by ONE etcd watch
//! shared by every watcher of this process (as the upstream API server's watch cache is). The
//! engine serves reads at any retained revision and replays history to new watchers.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use etcd_client::{Client, EventType, GetOptions, WatchOptions};
use tokio::sync::watch;

use super::config::{etcd_error, Members};
use super::keys::{prefix_end, KeyMap};
use crate::engine::Engine;
use crate::mvcc::State;
use crate::{Error, EventKind, KeyValue, Result, Revision, WatchEvent};

/// Keys read per page of the initial list (keeps each answer well under gRPC's message limit).
const PAGE: i64 = 1000;

/// How long the mirror waits before watching again after the watch broke (a member died).
const RETRY: Duration = Duration::from_millis(200);

/// Everything under the prefix at one revision, from the first member that answers.
pub(super) async fn load(members: &Members, keys: &KeyMap) -> Result<State> {
    let mut last = Error::Io("no etcd member".into());
    for _ in 0..members.len() {
        let (at, client) = members.current();
        match load_from(&client, keys).await {
            Ok(state) => return Ok(state),
            Err(e) => {
                tracing::warn!(error = %e, "listing through this etcd member failed");
                members.failed(at);
                last = e;
            }
        }
    }
    Err(last)
}

/// Everything under the prefix at one revision, read in pages at that revision.
async fn load_from(client: &Client, keys: &KeyMap) -> Result<State> {
    let mut kv = client.kv_client();
    let prefix = keys.etcd_prefix().into_bytes();
    let end = prefix_end(&prefix);
    let mut start = prefix;
    let mut revision = 0;
    let mut kvs = Vec::new();
    loop {
        let mut options = GetOptions::new().with_range(end.clone()).with_limit(PAGE);
        if revision > 0 {
            options = options.with_revision(revision);
        }
        let page = kv
            .get(start.clone(), Some(options))
            .await
            .map_err(|e| etcd_error("listing the etcd prefix", e))?;
        if revision == 0 {
            revision = page.header().map_or(0, |h| h.revision());
        }
        for found in page.kvs() {
            if let Some(kv) = stored(keys, found) {
                kvs.push(kv);
            }
        }
        match page.kvs().last() {
            Some(last) if page.more() => {
                start = last.key().to_vec();
                start.push(0);
            }
            _ => break,
        }
    }
    tracing::info!(keys = kvs.len(), revision, "etcd mirror loaded");
    Ok(State::restored(kvs, revision))
}

/// Follows the etcd watch from `from` (the revision loaded) for as long as the backend lives,
/// watching again after a broken stream. Publishes each applied revision on `applied`. When
/// etcd has compacted past the mirror (it fell behind, e.g. cut off from etcd for longer than
/// the compaction interval), it lists everything again and starts over from there, ending
/// every watch so that their clients get 410 Gone and relist, as upstream's watch cache does.
pub(super) async fn follow(
    members: Arc<Members>,
    keys: KeyMap,
    engine: Arc<Engine>,
    applied: watch::Sender<Revision>,
    mut from: Revision,
) {
    loop {
        let (at, client) = members.current();
        let outcome = follow_once(&client, &keys, &engine, &applied, &mut from).await;
        if outcome.is_err() {
            // Watch through the next member: this one may be gone.
            members.failed(at);
        }
        match outcome {
            Err(Error::Compacted {
                requested,
                compacted,
            }) => {
                tracing::warn!(
                    requested,
                    compacted,
                    "etcd compacted past the mirror; listing again"
                );
                from = relist(&members, &keys, &engine, &applied).await;
                continue;
            }
            Err(e) => tracing::warn!(error = %e, from, "etcd watch broke; watching again"),
            Ok(()) => tracing::warn!(from, "etcd watch ended; watching again"),
        }
        tokio::time::sleep(RETRY).await;
    }
}

/// Loads the prefix again (retrying until a member answers) into `engine` in place of what it
/// held; returns the revision listed at.
async fn relist(
    members: &Members,
    keys: &KeyMap,
    engine: &Engine,
    applied: &watch::Sender<Revision>,
) -> Revision {
    loop {
        match load(members, keys).await {
            Ok(state) => {
                let revision = state.current();
                engine.reset(state);
                applied.send_replace(revision);
                return revision;
            }
            Err(e) => tracing::warn!(error = %e, "listing etcd again failed; retrying"),
        }
        tokio::time::sleep(RETRY).await;
    }
}

async fn follow_once(
    client: &Client,
    keys: &KeyMap,
    engine: &Engine,
    applied: &watch::Sender<Revision>,
    from: &mut Revision,
) -> Result<()> {
    // No prev_kv: the mirror already holds every previous value, so etcd need not read and
    // send it with each event (see `Engine::apply_completing`).
    let options = WatchOptions::new()
        .with_prefix()
        .with_start_revision(*from + 1);
    let mut stream = client
        .watch_client()
        .watch(keys.etcd_prefix(), Some(options))
        .await
        .map_err(|e| etcd_error("watching etcd", e))?;
    while let Some(response) = stream
        .message()
        .await
        .map_err(|e| etcd_error("etcd watch stream", e))?
    {
        if response.canceled() {
            if response.compact_revision() > 0 {
                return Err(Error::Compacted {
                    requested: *from + 1,
                    compacted: response.compact_revision(),
                });
            }
            return Err(Error::Io(format!(
                "etcd cancelled the watch: {}",
                response.cancel_reason()
            )));
        }
        let events: Vec<WatchEvent> = response
            .events()
            .iter()
            .filter_map(|event| change(keys, event))
            .collect();
        if let Some(last) = events.last() {
            let revision = last.kv.mod_revision;
            engine.apply_completing(events);
            *from = revision;
            applied.send_replace(revision);
        }
    }
    Ok(())
}

/// A stored key as the store sees it; None for keys outside the store's prefix.
fn stored(keys: &KeyMap, kv: &etcd_client::KeyValue) -> Option<KeyValue> {
    Some(KeyValue {
        key: keys.to_store(kv.key())?,
        value: Bytes::copy_from_slice(kv.value()),
        create_revision: kv.create_revision(),
        mod_revision: kv.mod_revision(),
    })
}

/// One etcd watch event as a store event, without its previous value (the engine fills it in).
fn change(keys: &KeyMap, event: &etcd_client::Event) -> Option<WatchEvent> {
    let kv = event.kv()?;
    match event.event_type() {
        EventType::Put => Some(WatchEvent {
            kind: EventKind::Put,
            kv: stored(keys, kv)?,
            prev: None,
        }),
        // etcd reports a deletion with the key only; the engine adds the last value.
        EventType::Delete => Some(WatchEvent {
            kind: EventKind::Delete,
            kv: KeyValue {
                key: keys.to_store(kv.key())?,
                value: Bytes::new(),
                create_revision: 0,
                mod_revision: kv.mod_revision(),
            },
            prev: None,
        }),
    }
}
