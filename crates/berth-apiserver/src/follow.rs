//! Following a prefix of the store: how the authorizers' indexes and the server's registries
//! of configuration (CRDs, admission webhooks and policies, APIServices) keep an in-memory view
//! of what is stored, on every replica, without a round trip per request.

use berth_store::{EventKind, KeyValue, Store};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Lists the keys under `prefix` into `load`, then feeds each change to `event` in a task,
/// watching again from the last change if the watch ends and listing again if it falls behind
/// compaction: how an authorizer's index follows the store.
pub(crate) fn follow_prefix(
    store: &Store,
    prefix: &'static str,
    load: impl Fn(&[KeyValue]) + Send + 'static,
    event: impl Fn(EventKind, &KeyValue) + Send + 'static,
) -> Result<(), berth_store::Error> {
    let listed = store.range(prefix, None, 0, None)?;
    load(&listed.kvs);
    let store = store.clone();
    tokio::spawn(async move {
        let mut after = listed.revision;
        loop {
            let mut events = match store.watch(prefix, after) {
                Ok(events) => events,
                Err(berth_store::Error::Closed) => return,
                // Fell behind compaction: start over from a fresh list.
                Err(e) => {
                    tracing::warn!(error = %e, prefix, "watch failed; relisting");
                    match store.range(prefix, None, 0, None) {
                        Ok(listed) => {
                            load(&listed.kvs);
                            after = listed.revision;
                        }
                        Err(_) => return,
                    }
                    continue;
                }
            };
            while let Some(e) = events.recv().await {
                after = e.kv.mod_revision;
                event(e.kind, &e.kv);
            }
            // The watch ended: the store closed (the next watch says so), or this follower fell
            // behind its queue's bound; either way, watch again from the last change applied.
            if events.fell_behind() {
                tracing::warn!(prefix, after, "watch fell behind; watching again");
            }
        }
    });
    Ok(())
}

/// An in-memory view of the objects under one store prefix, loaded once and then kept current
/// by a watch: [`follow`](StoreFollower::follow) starts it, [`reload`](StoreFollower::reload)
/// re-reads at once (after this server's own write, so the next request sees it without
/// waiting for the watch, or where no runtime runs to follow in).
pub(crate) trait StoreFollower: Send + Sync + 'static {
    /// The store prefix followed.
    const PREFIX: &'static str;
    /// What is followed, for the log line when reading it fails ("the APIServices").
    const WHAT: &'static str;

    /// Replaces the view with the listed objects.
    fn load(&self, kvs: &[KeyValue]);
    /// Applies one change.
    fn event(&self, kind: EventKind, kv: &KeyValue);
    /// Set once following starts, so that a second `follow` does nothing.
    fn following(&self) -> &AtomicBool;

    /// Reads the stored objects now.
    fn reload(&self, store: &Store) {
        if let Ok(listed) = store.range(Self::PREFIX, None, 0, None) {
            self.load(&listed.kvs);
        }
    }

    /// Loads the stored objects and follows their changes, once; must run inside the Tokio
    /// runtime.
    fn follow(self: &Arc<Self>, store: &Store)
    where
        Self: Sized,
    {
        if self.following().swap(true, Ordering::SeqCst) {
            return;
        }
        let (this, that) = (self.clone(), self.clone());
        if let Err(e) = follow_prefix(
            store,
            Self::PREFIX,
            move |kvs| this.load(kvs),
            move |kind, kv| that.event(kind, kv),
        ) {
            tracing::error!(error = %e, "reading {} failed", Self::WHAT);
            self.following().store(false, Ordering::SeqCst);
        }
    }
}
