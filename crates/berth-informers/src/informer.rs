//! One kind's watch, its store and its subscribers.

use crate::store::{Keep, Shared, Store, Writer};
use crate::Event;
use futures::StreamExt;
use kube::api::Api;
use kube::runtime::watcher;
use kube::Resource;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// How long the informer waits after a failed list or watch before the watcher tries again
/// (relisting after a 410 Gone, re-watching after anything else).
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// A list+watch of one kind kept in a [`Store`], with its subscribers. Clones share one watch.
pub struct Informer<K> {
    /// The objects as last listed and watched.
    pub store: Store<K>,
    /// Fires after each batch of events (a watch event, or a completed list): a level-triggered
    /// loop waits on it and reads the store. Each clone of the informer has its own mark of
    /// what it has seen.
    pub changed: watch::Receiver<()>,
    shared: Arc<Shared<K>>,
}

impl<K> Clone for Informer<K> {
    fn clone(&self) -> Informer<K> {
        Informer {
            store: self.store.clone(),
            changed: self.changed.clone(),
            shared: self.shared.clone(),
        }
    }
}

impl<K> Informer<K>
where
    K: Resource + Send + Sync + 'static,
{
    /// Starts watching `api` in a background task.
    pub fn start(api: Api<K>, config: watcher::Config) -> Informer<K>
    where
        K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned,
    {
        Informer::start_as::<K>(api, config)
    }

    /// Starts watching `api`, decoding each object as `W` (what is read off the wire) and keeping
    /// it as `K` (what readers use): a component that reads a kind its own way decodes it once.
    pub fn start_as<W>(api: Api<W>, config: watcher::Config) -> Informer<K>
    where
        W: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Into<K> + 'static,
    {
        Informer::start_keeping::<W>(api, config, Keep::Whole)
    }

    /// [`Informer::start_as`], with the store keeping what `keep` says of each object: a
    /// consumer with its own cache keeps only identities here ([`Keep::Identity`]), and then
    /// reads the events, not the store.
    pub fn start_keeping<W>(api: Api<W>, config: watcher::Config, keep: Keep<K>) -> Informer<K>
    where
        W: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Into<K> + 'static,
    {
        let (mut writer, store, changed) = Writer::new(keep);
        let shared = writer.shared();
        // In the caller's span: a program in a pod logs its informers' failures to its own log.
        let task = async move {
            let mut events = watcher(api, config).boxed();
            let mut reported = None;
            while let Some(event) = events.next().await {
                match event {
                    Ok(event) => {
                        reported = None;
                        writer.apply(convert(event));
                    }
                    Err(e) => {
                        let text = failure::<W>(&e);
                        // One line per failure, not one per retry: the same 403 every second
                        // says nothing new.
                        if reported.as_ref() != Some(&text) {
                            tracing::warn!("{text}");
                            reported = Some(text);
                        }
                        tokio::time::sleep(RETRY_AFTER).await;
                    }
                }
            }
        };
        tokio::spawn(tracing::Instrument::in_current_span(task));
        Informer {
            store,
            changed,
            shared,
        }
    }

    /// Waits until the store holds a complete first list; `false` if the watch has ended first.
    /// Every waiter is woken.
    pub async fn synced(&self) -> bool {
        self.store.wait_until_ready().await.is_ok()
    }

    /// The events from now on, after the store's objects as `Added` (and `Synced` if listed):
    /// subscribing before reading the store, or instead of it, misses nothing. Unbounded: a
    /// subscriber that falls behind holds the events, it does not lose them.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<Event<K>> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.on_event(move |event| tx.send(event).is_ok());
        rx
    }

    /// Calls `handler` with each event, as [`Informer::subscribe`] delivers them, on the
    /// informer's task, until it returns `false`. It must not block: it forwards, it does not
    /// work.
    pub fn on_event(&self, handler: impl FnMut(Event<K>) -> bool + Send + 'static) {
        self.shared.subscribe(Box::new(handler));
    }
}

/// A failed list or watch in client-go's reflector's words: `failed to list *v1.Pod: <the
/// API's message>`.
fn failure<W: Resource<DynamicType = ()>>(e: &watcher::Error) -> String {
    let version = W::version(&());
    let kind = W::kind(&());
    let message = |e: &kube::Error| match e {
        kube::Error::Api(status) => status.message.clone(),
        e => e.to_string(),
    };
    match e {
        watcher::Error::InitialListFailed(e) => {
            format!("failed to list *{version}.{kind}: {}", message(e))
        }
        watcher::Error::WatchStartFailed(e) | watcher::Error::WatchFailed(e) => {
            format!("failed to watch *{version}.{kind}: {}", message(e))
        }
        watcher::Error::WatchError(status) => {
            format!("failed to watch *{version}.{kind}: {}", status.message)
        }
        e => format!("failed to watch *{version}.{kind}: {e}"),
    }
}

fn convert<W: Into<K>, K>(event: watcher::Event<W>) -> watcher::Event<K> {
    match event {
        watcher::Event::Apply(o) => watcher::Event::Apply(o.into()),
        watcher::Event::Delete(o) => watcher::Event::Delete(o.into()),
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitApply(o) => watcher::Event::InitApply(o.into()),
        watcher::Event::InitDone => watcher::Event::InitDone,
    }
}
