//! The objects of one kind as last listed and watched: [`Store`] reads them, the informer's
//! [`Writer`] alone changes them and tells the subscribers.

use crate::Event;
use kube::runtime::watcher;
use kube::Resource;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use tokio::sync::watch;

/// What a store keeps of each object.
pub enum Keep<K> {
    /// The object as watched: readers query the store.
    Whole,
    /// Only what `identity` keeps of it (namespace, name, uid, and whatever the consumer needs
    /// to forget it): for a consumer that keeps its own cache and reads only the events, so the
    /// objects are not held twice. The events still carry whole objects, except the `old` of an
    /// update and an object found gone at a relist, which are identities.
    Identity(fn(&K) -> K),
}

impl<K> Keep<K> {
    fn kept(&self, o: &Arc<K>) -> Arc<K> {
        match self {
            Keep::Whole => o.clone(),
            Keep::Identity(identity) => Arc::new(identity(o)),
        }
    }
}

/// A subscriber: called with each event in order; returns `false` once it wants no more.
pub(crate) type Handler<K> = Box<dyn FnMut(Event<K>) -> bool + Send>;

/// The informer went away before its first complete list (the process is shutting down).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreClosed;

struct Objects<K> {
    by_key: HashMap<String, Arc<K>>,
    /// A complete list has been applied.
    listed: bool,
}

pub(crate) struct Shared<K> {
    objects: RwLock<Objects<K>>,
    handlers: Mutex<Vec<Handler<K>>>,
}

impl<K> Shared<K> {
    fn read(&self) -> RwLockReadGuard<'_, Objects<K>> {
        self.objects.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Objects<K>> {
        self.objects.write().unwrap_or_else(|e| e.into_inner())
    }

    fn handlers(&self) -> MutexGuard<'_, Vec<Handler<K>>> {
        self.handlers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a subscriber, which first gets what the store holds. The store is held still from the
    /// snapshot until the subscriber is registered, so no change falls in between.
    pub(crate) fn subscribe(&self, mut handler: Handler<K>) {
        let objects = self.read();
        let mut handlers = self.handlers();
        let mut wanted = true;
        for o in objects.by_key.values() {
            wanted = wanted && handler(Event::Added(o.clone()));
        }
        if objects.listed {
            wanted = wanted && handler(Event::Synced);
        }
        if wanted {
            handlers.push(handler);
        }
    }
}

/// The key an object is stored under: `namespace/name` (`/name` for cluster-scoped kinds).
pub fn key_of<K: Resource>(o: &K) -> String {
    let meta = o.meta();
    format!(
        "{}/{}",
        meta.namespace.as_deref().unwrap_or(""),
        meta.name.as_deref().unwrap_or("")
    )
}

/// The objects of one kind, by namespace and name. Clones share one store; readers cannot write.
pub struct Store<K> {
    shared: Arc<Shared<K>>,
    ready: watch::Receiver<bool>,
}

impl<K> Clone for Store<K> {
    fn clone(&self) -> Store<K> {
        Store {
            shared: self.shared.clone(),
            ready: self.ready.clone(),
        }
    }
}

impl<K> Store<K> {
    /// Every object.
    pub fn state(&self) -> Vec<Arc<K>> {
        self.shared.read().by_key.values().cloned().collect()
    }

    /// The objects `predicate` accepts.
    pub fn state_filter(&self, predicate: impl Fn(&K) -> bool) -> Vec<Arc<K>> {
        self.shared
            .read()
            .by_key
            .values()
            .filter(|o| predicate(o))
            .cloned()
            .collect()
    }

    /// The object named `name` in `namespace` (empty for cluster-scoped kinds).
    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<K>> {
        self.shared
            .read()
            .by_key
            .get(&format!("{namespace}/{name}"))
            .cloned()
    }

    /// How many objects the store holds.
    pub fn len(&self) -> usize {
        self.shared.read().by_key.len()
    }

    /// Whether the store holds no object.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Waits until the store holds a complete first list. Every waiter is woken.
    pub async fn wait_until_ready(&self) -> Result<(), StoreClosed> {
        let mut ready = self.ready.clone();
        ready
            .wait_for(|r| *r)
            .await
            .map(|_| ())
            .map_err(|_| StoreClosed)
    }
}

/// The one writer of a store: applies the watcher's events and tells the subscribers.
pub(crate) struct Writer<K> {
    shared: Arc<Shared<K>>,
    /// The objects of a list in progress; they replace the store whole when it completes, so
    /// readers never see a half-listed store.
    listing: Option<HashMap<String, Arc<K>>>,
    keep: Keep<K>,
    ready: watch::Sender<bool>,
    changed: watch::Sender<()>,
}

impl<K: Resource> Writer<K> {
    /// A new empty store, its writer and its change signal.
    pub(crate) fn new(keep: Keep<K>) -> (Writer<K>, Store<K>, watch::Receiver<()>) {
        let shared = Arc::new(Shared {
            objects: RwLock::new(Objects {
                by_key: HashMap::new(),
                listed: false,
            }),
            handlers: Mutex::new(Vec::new()),
        });
        let (ready, ready_rx) = watch::channel(false);
        let (changed, changed_rx) = watch::channel(());
        let store = Store {
            shared: shared.clone(),
            ready: ready_rx,
        };
        let writer = Writer {
            shared,
            listing: None,
            keep,
            ready,
            changed,
        };
        (writer, store, changed_rx)
    }

    pub(crate) fn shared(&self) -> Arc<Shared<K>> {
        self.shared.clone()
    }

    /// Applies one watcher event.
    pub(crate) fn apply(&mut self, event: watcher::Event<K>) {
        match event {
            watcher::Event::Apply(o) => {
                let o = Arc::new(o);
                let kept = self.keep.kept(&o);
                let mut objects = self.shared.write();
                let event = match objects.by_key.insert(key_of(o.as_ref()), kept) {
                    Some(old) => Event::Updated { old, new: o },
                    None => Event::Added(o),
                };
                self.publish(objects, vec![event]);
            }
            watcher::Event::Delete(o) => {
                let o = Arc::new(o);
                let mut objects = self.shared.write();
                objects.by_key.remove(&key_of(o.as_ref()));
                self.publish(objects, vec![Event::Deleted(o)]);
            }
            watcher::Event::Init => self.listing = Some(HashMap::new()),
            watcher::Event::InitApply(o) => {
                self.listing
                    .get_or_insert_with(HashMap::new)
                    .insert(key_of(&o), Arc::new(o));
            }
            watcher::Event::InitDone => self.replace(),
        }
    }

    /// Swaps the completed list in. Every listed object goes out again, as `Added` or `Updated`
    /// (the same version, if it did not change: a consumer that missed something catches up, as
    /// with client-go's resync on relist), those gone as `Deleted`, then `Synced`.
    fn replace(&mut self) {
        let listed = self.listing.take().unwrap_or_default();
        let mut objects = self.shared.write();
        let mut events = Vec::new();
        let mut kept = HashMap::with_capacity(listed.len());
        for (key, new) in listed {
            kept.insert(key.clone(), self.keep.kept(&new));
            events.push(match objects.by_key.get(&key) {
                None => Event::Added(new),
                Some(old) => Event::Updated {
                    old: old.clone(),
                    new,
                },
            });
        }
        for (key, old) in &objects.by_key {
            if !kept.contains_key(key) {
                events.push(Event::Deleted(old.clone()));
            }
        }
        objects.by_key = kept;
        objects.listed = true;
        events.push(Event::Synced);
        self.publish(objects, events);
        self.ready.send_replace(true);
    }

    /// Tells every subscriber, in order. The subscribers are locked before the store is let go,
    /// so a new subscriber's snapshot and the events it gets afterwards never overlap or miss.
    fn publish(&self, objects: RwLockWriteGuard<'_, Objects<K>>, events: Vec<Event<K>>) {
        let mut handlers = self.shared.handlers();
        drop(objects);
        for event in events {
            handlers.retain_mut(|h| h(event.clone()));
        }
        drop(handlers);
        self.changed.send_replace(());
    }
}
