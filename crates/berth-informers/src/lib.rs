//! berth's informers: the one list-and-watch layer the scheduler driver, the controllers and the
//! simulated kubelet share.
//!
//! An [`Informer`] runs kube-runtime's `watcher` for one kind (list, watch, relist after a 410
//! Gone, re-watch after a dropped stream) and keeps what it saw in a [`Store`] readers can query.
//! Three ways to follow it:
//! - [`Informer::synced`]: waits for the first complete list; every waiter is woken (unlike
//!   kube-runtime's `Store::wait_until_ready`, which wakes only the last task that polled it).
//! - [`Informer::subscribe`] / [`Informer::on_event`]: typed [`Event`]s, `Added`, `Updated`,
//!   `Deleted`, and `Synced` after every complete list. A new subscriber first gets the store's
//!   objects as `Added` (and `Synced` if listed), so subscribing late misses nothing.
//! - [`Informer::changed`]: a level-triggered signal for loops that re-read the store.
//!
//! The informer is generic over what is decoded off the wire (`K: Resource + DeserializeOwned`),
//! so a component keeps its own lean view of a kind (the scheduler its engine model, the
//! controllers a pod without images and env) and decodes each object once.
//!
//! ```no_run
//! # async fn demo(client: kube::Client) {
//! use k8s_openapi::api::core::v1::Node;
//! let nodes = berth_informers::Informer::<Node>::start(kube::Api::all(client), Default::default());
//! let mut events = nodes.subscribe();
//! nodes.synced().await;
//! let names: Vec<String> = nodes.store.state().iter().filter_map(|n| n.metadata.name.clone()).collect();
//! # let _ = (names, events.recv().await);
//! # }
//! ```

mod event;
mod informer;
mod store;

pub use event::Event;
pub use informer::Informer;
pub use store::{Keep, Store, StoreClosed};
