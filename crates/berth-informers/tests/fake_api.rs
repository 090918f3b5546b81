//! The informer against a scripted fake API server: `kube::Client::new` over a tower service
//! that hands each request to the test, which answers it (as kube-rs's `mock_tests.rs` does).

use berth_informers::{Event, Informer};
use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt};
use http::{Request, Response};
use http_body::Frame;
use http_body_util::StreamBody;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::watcher;
use serde_json::{json, Value};
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

type Body = StreamBody<BoxStream<'static, Result<Frame<Bytes>, Infallible>>>;

/// What the fake answers one request with.
struct Reply {
    /// JSON documents, one per line (a list is one document; a watch, one per event).
    docs: Vec<Value>,
    /// Whether the body stays open after them (a watch the server keeps going).
    open: bool,
}

/// The test's side of the fake API server: each request the informer makes, to be answered.
struct Fake {
    requests: mpsc::UnboundedReceiver<(String, oneshot::Sender<Reply>)>,
}

impl Fake {
    fn client() -> (kube::Client, Fake) {
        let (tx, requests) = mpsc::unbounded_channel();
        let service = tower::service_fn(move |req: Request<kube::client::Body>| {
            let tx = tx.clone();
            async move {
                let (reply_tx, reply_rx) = oneshot::channel::<Reply>();
                let _ = tx.send((req.uri().to_string(), reply_tx));
                let body: BoxStream<'static, Result<Frame<Bytes>, Infallible>> =
                    match reply_rx.await {
                        Ok(reply) => {
                            let lines: Vec<_> = reply
                                .docs
                                .into_iter()
                                .map(|d| {
                                    let mut line = serde_json::to_vec(&d).unwrap_or_default();
                                    line.push(b'\n');
                                    Ok(Frame::data(Bytes::from(line)))
                                })
                                .collect();
                            if reply.open {
                                stream::iter(lines).chain(stream::pending()).boxed()
                            } else {
                                stream::iter(lines).boxed()
                            }
                        }
                        // The test ended its script: the request never completes.
                        Err(_) => stream::pending().boxed(),
                    };
                Ok::<_, Infallible>(Response::new(Body::new(body)))
            }
        });
        (kube::Client::new(service, "default"), Fake { requests })
    }

    /// Waits for the next request, checks it is a list (or a watch), and answers it.
    async fn answer(&mut self, watch: bool, reply: Reply) -> String {
        let (uri, tx) = tokio::time::timeout(Duration::from_secs(30), self.requests.recv())
            .await
            .expect("the informer made no further request")
            .expect("the client is gone");
        assert_eq!(
            uri.contains("watch=true"),
            watch,
            "unexpected request {uri}"
        );
        let _ = tx.send(reply);
        uri
    }

    async fn list(&mut self, rv: &str, items: Vec<Value>) {
        self.list_page(rv, items, None).await;
    }

    async fn list_page(&mut self, rv: &str, items: Vec<Value>, continue_: Option<&str>) {
        let mut metadata = json!({"resourceVersion": rv});
        if let Some(c) = continue_ {
            metadata["continue"] = json!(c);
        }
        let list =
            json!({"apiVersion": "v1", "kind": "PodList", "metadata": metadata, "items": items});
        self.answer(
            false,
            Reply {
                docs: vec![list],
                open: false,
            },
        )
        .await;
    }

    async fn watch(&mut self, events: Vec<Value>, open: bool) {
        self.answer(true, Reply { docs: events, open }).await;
    }
}

fn pod(name: &str, rv: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv},
           "spec": {"containers": [{"name": "c", "image": "i"}]}})
}

fn gone() -> Value {
    json!({"type": "ERROR", "object": {"apiVersion": "v1", "kind": "Status", "metadata": {},
           "status": "Failure", "reason": "Expired", "message": "too old resource version", "code": 410}})
}

fn start(client: kube::Client) -> Informer<Pod> {
    Informer::start(Api::all(client), watcher::Config::default())
}

/// The store's pods as `name@resourceVersion`, sorted.
fn contents(informer: &Informer<Pod>) -> Vec<String> {
    let mut names: Vec<String> = informer.store.state().iter().map(|p| label(p)).collect();
    names.sort();
    names
}

fn label(p: &Pod) -> String {
    format!(
        "{}@{}",
        p.metadata.name.as_deref().unwrap_or(""),
        p.metadata.resource_version.as_deref().unwrap_or("")
    )
}

/// An event as `added name@rv`, `updated name@rv->rv`, `deleted name@rv` or `synced`.
fn describe(event: &Event<Pod>) -> String {
    match event {
        Event::Added(p) => format!("added {}", label(p)),
        Event::Updated { old, new } => format!("updated {}->{}", label(old), label(new)),
        Event::Deleted(p) => format!("deleted {}", label(p)),
        Event::Synced => "synced".into(),
    }
}

/// The events up to and including the next `Synced`, the changes sorted.
async fn until_synced(rx: &mut mpsc::UnboundedReceiver<Event<Pod>>) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .expect("no Synced came")
            .expect("the informer is gone");
        if let Event::Synced = event {
            seen.sort();
            seen.push("synced".to_string());
            return seen;
        }
        seen.push(describe(&event));
    }
}

#[tokio::test]
async fn synced_wakes_every_waiter() {
    let (client, mut fake) = Fake::client();
    let informer = start(client);
    let waiters: Vec<_> = (0..5)
        .map(|_| {
            let informer = informer.clone();
            tokio::spawn(async move { informer.synced().await })
        })
        .collect();
    // Every waiter parks on the signal before the list completes.
    tokio::time::sleep(Duration::from_millis(100)).await;
    fake.list("1", vec![pod("a", "1")]).await;
    fake.watch(vec![], true).await;
    for waiter in waiters {
        let synced = tokio::time::timeout(Duration::from_secs(30), waiter)
            .await
            .expect("a waiter was never woken")
            .expect("the waiter panicked");
        assert!(synced);
    }
    // One that comes later does not wait.
    assert!(informer.synced().await);
    assert_eq!(contents(&informer), ["a@1"]);
}

#[tokio::test]
async fn a_late_subscriber_gets_the_store_first() {
    let (client, mut fake) = Fake::client();
    let informer = start(client);
    fake.list("1", vec![pod("a", "1"), pod("b", "1")]).await;
    fake.watch(
        vec![json!({"type": "ADDED", "object": pod("c", "2")})],
        true,
    )
    .await;
    assert!(informer.synced().await);
    let mut early = informer.subscribe();
    // `c` may or may not have arrived when `early` subscribed: it is seen once either way.
    let mut seen = until_synced(&mut early).await;
    if !seen.contains(&"added c@2".to_string()) {
        let next = early.recv().await.expect("the informer is gone");
        seen.push(describe(&next));
    }
    seen.sort();
    assert_eq!(seen, ["added a@1", "added b@1", "added c@2", "synced"]);
}

#[tokio::test]
async fn updates_and_deletes_are_typed_events() {
    let (client, mut fake) = Fake::client();
    let informer = start(client);
    let mut events = informer.subscribe();
    fake.list("1", vec![pod("a", "1"), pod("b", "1")]).await;
    assert_eq!(
        until_synced(&mut events).await,
        ["added a@1", "added b@1", "synced"]
    );
    fake.watch(
        vec![
            json!({"type": "MODIFIED", "object": pod("a", "2")}),
            json!({"type": "DELETED", "object": pod("b", "3")}),
            json!({"type": "ADDED", "object": pod("c", "4")}),
        ],
        true,
    )
    .await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        let event = events.recv().await.expect("the informer is gone");
        seen.push(describe(&event));
    }
    // The deleted pod comes as the watch last saw it.
    assert_eq!(seen, ["updated a@1->a@2", "deleted b@3", "added c@4"]);
    assert_eq!(contents(&informer), ["a@2", "c@4"]);
}

#[tokio::test]
async fn a_relist_after_410_replaces_the_store_at_once() {
    let (client, mut fake) = Fake::client();
    let informer = start(client);
    let mut events = informer.subscribe();
    fake.list("1", vec![pod("a", "1"), pod("b", "1"), pod("c", "1")])
        .await;
    assert_eq!(
        until_synced(&mut events).await,
        ["added a@1", "added b@1", "added c@1", "synced"]
    );
    // The watch falls too far behind: the informer lists again, in two pages.
    fake.watch(vec![gone()], false).await;
    let first_page = vec![pod("b", "5"), pod("c", "1")];
    fake.list_page("7", first_page, Some("page-2")).await;
    let second = fake.requests.recv().await.expect("no second page asked");
    assert!(second.0.contains("continue=page-2"), "{}", second.0);
    // Half listed: readers still see the whole old store.
    assert_eq!(contents(&informer), ["a@1", "b@1", "c@1"]);
    assert!(
        events.try_recv().is_err(),
        "no event before the list completes"
    );
    let list = json!({"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "7"},
                      "items": [pod("d", "6")]});
    let _ = second.1.send(Reply {
        docs: vec![list],
        open: false,
    });
    fake.watch(vec![], true).await;
    // The relist comes as events: what was gone, and every listed object again (`c` unchanged).
    assert_eq!(
        until_synced(&mut events).await,
        [
            "added d@6",
            "deleted a@1",
            "updated b@1->b@5",
            "updated c@1->c@1",
            "synced"
        ]
    );
    assert_eq!(contents(&informer), ["b@5", "c@1", "d@6"]);
}

/// A component's own view of a kind, decoded off the wire as that (the name only, here).
#[derive(Clone, Debug, serde::Deserialize)]
struct PodName {
    metadata: kube::api::ObjectMeta,
}

impl k8s_openapi::Resource for PodName {
    const API_VERSION: &'static str = "v1";
    const GROUP: &'static str = "";
    const KIND: &'static str = "Pod";
    const VERSION: &'static str = "v1";
    const URL_PATH_SEGMENT: &'static str = "pods";
    type Scope = k8s_openapi::NamespaceResourceScope;
}

impl k8s_openapi::Metadata for PodName {
    type Ty = kube::api::ObjectMeta;
    fn metadata(&self) -> &kube::api::ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut kube::api::ObjectMeta {
        &mut self.metadata
    }
}

#[tokio::test]
async fn a_kind_can_be_decoded_as_a_view() {
    let (client, mut fake) = Fake::client();
    let informer: Informer<PodName> = Informer::start(Api::all(client), Default::default());
    fake.list("1", vec![pod("a", "1")]).await;
    fake.watch(vec![], true).await;
    assert!(informer.synced().await);
    let names: Vec<_> = informer
        .store
        .state()
        .iter()
        .map(|p| p.metadata.name.clone())
        .collect();
    assert_eq!(names, [Some("a".to_string())]);
    assert!(informer.store.get("ns", "a").is_some());
}

/// What a consumer with its own cache keeps here: the pod's identity, not its spec.
fn identity(p: &Pod) -> Pod {
    Pod {
        metadata: kube::api::ObjectMeta {
            name: p.metadata.name.clone(),
            namespace: p.metadata.namespace.clone(),
            resource_version: p.metadata.resource_version.clone(),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[tokio::test]
async fn a_store_keeping_identities_still_sends_whole_objects() {
    let (client, mut fake) = Fake::client();
    let informer: Informer<Pod> = Informer::start_keeping::<Pod>(
        Api::all(client),
        watcher::Config::default(),
        berth_informers::Keep::Identity(identity),
    );
    let mut events = informer.subscribe();
    fake.list("1", vec![pod("a", "1"), pod("b", "1")]).await;
    let mut whole = 0;
    loop {
        match events.recv().await.expect("the informer is gone") {
            Event::Synced => break,
            event => whole += usize::from(event.applied().is_some_and(|p| p.spec.is_some())),
        }
    }
    assert_eq!(whole, 2, "listed objects come whole");
    assert!(informer.store.state().iter().all(|p| p.spec.is_none()));
    assert_eq!(contents(&informer), ["a@1", "b@1"]);
    // A relist that finds `a` gone reports it by its identity.
    fake.watch(vec![gone()], false).await;
    fake.list("3", vec![pod("b", "2")]).await;
    fake.watch(vec![], true).await;
    assert_eq!(
        until_synced(&mut events).await,
        ["deleted a@1", "updated b@1->b@2", "synced"]
    );
    assert_eq!(contents(&informer), ["b@2"]);
}
