//! What an informer tells its subscribers.

use std::sync::Arc;

/// One change of one object, or the end of a list.
#[derive(Debug)]
pub enum Event<K> {
    /// An object the store did not hold.
    Added(Arc<K>),
    /// An object the store held, as it is now (after a relist, possibly the same version).
    Updated { old: Arc<K>, new: Arc<K> },
    /// An object gone from the cluster; its last state.
    Deleted(Arc<K>),
    /// A complete list has replaced the store (at start, and after each relist). The changes the
    /// list found came just before: every listed object as `Added` or `Updated`, and those gone
    /// as `Deleted`.
    Synced,
}

impl<K> Event<K> {
    /// The object as it is now: added or updated.
    pub fn applied(&self) -> Option<&Arc<K>> {
        match self {
            Event::Added(o) | Event::Updated { new: o, .. } => Some(o),
            Event::Deleted(_) | Event::Synced => None,
        }
    }

    /// The object this event is about (its last state when deleted).
    pub fn object(&self) -> Option<&Arc<K>> {
        match self {
            Event::Added(o) | Event::Updated { new: o, .. } | Event::Deleted(o) => Some(o),
            Event::Synced => None,
        }
    }
}

// Not derived: a derive would ask `K: Clone`, which sharing by `Arc` does not need.
impl<K> Clone for Event<K> {
    fn clone(&self) -> Event<K> {
        match self {
            Event::Added(o) => Event::Added(o.clone()),
            Event::Updated { old, new } => Event::Updated {
                old: old.clone(),
                new: new.clone(),
            },
            Event::Deleted(o) => Event::Deleted(o.clone()),
            Event::Synced => Event::Synced,
        }
    }
}
