//! Live watchers: who wants which changes, and delivery to them.
//!
//! Ordering is the engine's job: it replays history and registers a watcher while holding the
//! state lock that writers need to apply (and notify) changes, so history and live changes meet
//! with no gap and no duplicate.

use tokio::sync::mpsc::UnboundedSender;

use crate::{Revision, WatchEvent};

/// One watch: changes under `prefix` with a revision above `after`.
struct Watcher {
    prefix: String,
    after: Revision,
    tx: UnboundedSender<WatchEvent>,
}

impl Watcher {
    fn wants(&self, event: &WatchEvent) -> bool {
        event.kv.mod_revision > self.after && event.kv.key.starts_with(self.prefix.as_str())
    }
}

/// The set of live watchers.
#[derive(Default)]
pub(crate) struct Watchers {
    list: Vec<Watcher>,
}

impl Watchers {
    /// Sends the replayed `history` to a new watcher and registers it for live changes.
    pub(crate) fn register<'a>(
        &mut self,
        prefix: &str,
        after: Revision,
        tx: UnboundedSender<WatchEvent>,
        history: impl Iterator<Item = &'a WatchEvent>,
    ) {
        let watcher = Watcher {
            prefix: prefix.to_owned(),
            after,
            tx,
        };
        for event in history.filter(|event| watcher.wants(event)) {
            if watcher.tx.send(event.clone()).is_err() {
                return;
            }
        }
        self.list.push(watcher);
    }

    /// Delivers applied changes to every interested watcher, dropping watchers whose receiver
    /// is gone.
    pub(crate) fn notify(&mut self, events: &[WatchEvent]) {
        if self.list.is_empty() {
            return;
        }
        self.list.retain(|watcher| {
            !watcher.tx.is_closed()
                && events
                    .iter()
                    .filter(|event| watcher.wants(event))
                    .all(|event| watcher.tx.send(event.clone()).is_ok())
        });
    }

    /// Drops every watcher, which ends their receivers.
    pub(crate) fn clear(&mut self) {
        self.list.clear();
    }

    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }
}
