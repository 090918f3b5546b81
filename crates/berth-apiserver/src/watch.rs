//! Watches: newline-delimited JSON events from a store revision, filtered by selectors; or,
//! for a client that asks for protobuf, length-prefixed `WatchEvent` frames as upstream's
//! protobuf stream serializer writes them.

use crate::codec::{decode, stamped_json};
use crate::context::Ctx;
use crate::error::{from_store, ApiError, ApiResult, Cause};
use crate::path::{self, Target};
use crate::protobuf;
use crate::request::{Answer, ApiRequest};
use crate::response::{not_acceptable, streaming};
use crate::selectors::{self, Selectors};
use berth_api::registry::ResourceType;
use berth_api::tables::{self, IncludeObject};
use berth_store::{EventKind, KeyValue, Watch, WatchEvent};
use bytes::Bytes;
use futures::StreamExt;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, Notify};

/// The Content-Type of a protobuf watch, as upstream names it.
const PROTOBUF_STREAM: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// How often an idle watch that allows bookmarks gets one.
const BOOKMARK_EVERY: Duration = Duration::from_secs(30);
/// Upper bound on a watch without `timeoutSeconds` (upstream: 30 min, randomised).
const MAX_WATCH: Duration = Duration::from_secs(1800);

/// Most events a watch hands its connection ahead of what the connection has taken: enough
/// that a reader keeping up never waits on the watch, few enough to be cheap per watch.
const OUTPUT_EVENTS: usize = 256;

/// Most bytes of events a watch hands its connection ahead of what the connection has taken
/// (an event larger than this goes alone). With [`OUTPUT_EVENTS`] this bounds what a client
/// that stops reading pins in its connection; behind it, the store's queue for the watch is
/// bounded too ([`berth_store::Limits`]), and passing that ends the watch (counted in
/// `apiserver_terminated_watchers_total`), as upstream terminates a watcher whose buffer stays
/// full. 4 MiB is a couple of objects at the largest size stored, a thousand or so pods.
const OUTPUT_BYTES: usize = 4 << 20;

/// The annotation of the bookmark that ends a watch-list's initial events (upstream's
/// `metav1.InitialEventsAnnotationKey`).
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// A watch's `sendInitialEvents` (`None` when not given), with upstream's checks of the
/// `resourceVersionMatch` that goes with it (`validateWatchOptions`, 422).
fn initial_events(query: &crate::request::Query) -> ApiResult<Option<bool>> {
    let send = match query.get("sendInitialEvents") {
        None => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(other) => {
            return Err(ApiError::BadRequest(format!(
                "sendInitialEvents: Invalid value: {other:?}: strconv.ParseBool: parsing {other:?}: invalid syntax"
            )))
        }
    };
    let rv_match = query.get("resourceVersionMatch").unwrap_or("");
    let field = "resourceVersionMatch";
    let forbidden = |message: &str| Cause {
        reason: "FieldValueForbidden".into(),
        message: format!("Forbidden: {message}"),
        field: field.into(),
    };
    let mut causes = Vec::new();
    if send.is_some() && rv_match != "NotOlderThan" {
        causes.push(forbidden(
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ));
    }
    if !rv_match.is_empty() {
        if send.is_none() {
            causes.push(forbidden(
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        if rv_match != "NotOlderThan" {
            causes.push(Cause {
                reason: "FieldValueNotSupported".into(),
                message: format!(
                    "Unsupported value: {rv_match:?}: supported values: \"NotOlderThan\""
                ),
                field: field.into(),
            });
        }
    }
    if !causes.is_empty() {
        return Err(ApiError::Invalid {
            kind: "ListOptions.meta.k8s.io".into(),
            name: String::new(),
            causes,
        });
    }
    Ok(send)
}

pub async fn watch(ctx: &Ctx, req: &ApiRequest) -> ApiResult<Response> {
    let rt = req.target.rt;
    let selectors = Selectors::from_query(rt, &req.query)?;
    let protobuf = req.answer.is_protobuf() && protobuf::supports(&rt.api_version(), rt.kind);
    if req.answer == Answer::ProtobufOnly && !protobuf {
        return Ok(not_acceptable());
    }
    let send_initial_events = initial_events(&req.query)?;
    let timeout = req
        .query
        .int("timeoutSeconds")?
        .map(|s| Duration::from_secs(s.max(0) as u64))
        .unwrap_or(MAX_WATCH);
    let prefix = path::collection_prefix(rt, req.target.namespace.as_deref());
    let rv_param = req.query.get("resourceVersion").unwrap_or("");
    let mut initial = Vec::new();
    // A watch-list (`sendInitialEvents=true`) starts from the current objects whatever the
    // version: the store is never older than the version asked for.
    let list_first = match send_initial_events {
        Some(send) => send,
        None => rv_param.is_empty() || rv_param == "0",
    };
    let from = if list_first {
        // "Start at most recent": the current objects first, as ADDED events.
        let r = ctx
            .store
            .range(&prefix, None, 0, None)
            .map_err(|e| from_store(e, &req.resource(), ""))?;
        for kv in &r.kvs {
            let obj = decode(kv, &req.target)?;
            if selectors.matches(&obj) {
                initial.push(obj);
            }
        }
        r.revision
    } else if rv_param.is_empty() || rv_param == "0" {
        ctx.store.current_revision()
    } else {
        rv_param
            .parse::<i64>()
            .map_err(|_| ApiError::BadRequest(format!("invalid resource version: {rv_param}")))?
    };
    let (out, body) = output();
    let events = match ctx.store.watch(&prefix, from) {
        Ok(events) => Some(events),
        Err(e) => {
            // Expired versions are reported inside a 200 stream, which is what clients relist on.
            let status = from_store(e, &req.resource(), "").status();
            out.try_send(if protobuf {
                frame("ERROR", &status)
            } else {
                line("ERROR", &status)
            });
            None
        }
    };
    let stream = WatchStream {
        target: req.target.clone(),
        selectors,
        table: req.answer == Answer::Table,
        protobuf,
        include: match req.query.get("includeObject") {
            Some("None") => IncludeObject::None,
            Some("Object") => IncludeObject::Object,
            _ => IncludeObject::Metadata,
        },
        bookmarks: req.query.flag("allowWatchBookmarks"),
        initial_events_end: send_initial_events == Some(true),
        headers_sent: false,
        last_revision: from,
        ctx: ctx.clone(),
    };
    if let Some(events) = events {
        tokio::spawn(stream.run(initial, events, out, timeout));
    }
    let content_type = if protobuf {
        PROTOBUF_STREAM
    } else {
        "application/json"
    };
    Ok(streaming(content_type, body))
}

/// What a watch hands its connection: at most [`OUTPUT_EVENTS`] events and [`OUTPUT_BYTES`]
/// bytes ahead of what the connection has taken.
struct Output {
    tx: mpsc::Sender<(Bytes, usize)>,
    budget: Arc<Budget>,
}

/// The bytes a watch has handed its connection and the connection has not taken yet.
#[derive(Default)]
struct Budget {
    in_flight: AtomicUsize,
    /// Woken when the connection takes an event.
    room: Notify,
}

impl Budget {
    /// Counts `bytes` in flight if they fit (anything fits when nothing is in flight).
    fn take(&self, bytes: usize) -> bool {
        let before = self.in_flight.fetch_add(bytes, Ordering::AcqRel);
        if before == 0 || before + bytes <= OUTPUT_BYTES {
            return true;
        }
        self.in_flight.fetch_sub(bytes, Ordering::AcqRel);
        false
    }

    /// Counts `bytes` in flight once they fit.
    async fn wait_take(&self, bytes: usize) {
        loop {
            let room = self.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            if self.take(bytes) {
                return;
            }
            room.await;
        }
    }

    /// The connection has taken `bytes`.
    fn give_back(&self, bytes: usize) {
        self.in_flight.fetch_sub(bytes, Ordering::AcqRel);
        self.room.notify_one();
    }
}

/// A watch's output and the response body it feeds.
fn output() -> (
    Output,
    impl futures::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static,
) {
    let (tx, rx) = mpsc::channel(OUTPUT_EVENTS);
    let budget = Arc::new(Budget::default());
    let taken = Arc::clone(&budget);
    let body = tokio_stream::wrappers::ReceiverStream::new(rx).map(move |(bytes, len)| {
        taken.give_back(len);
        Ok(bytes)
    });
    (Output { tx, budget }, body)
}

impl Output {
    /// Hands `bytes` on if there is room now (the first and only event of a failed watch).
    fn try_send(&self, bytes: Bytes) {
        let len = bytes.len();
        if self.budget.take(len) {
            let _ = self.tx.try_send((bytes, len));
        }
    }

    /// Hands `bytes` on, waiting for room while the connection is behind, unless the store ends
    /// `events` meanwhile (its reader fell behind: the watch stops, and the client resumes from
    /// the last event it read). False when the watch should stop. While there is room (a
    /// reader keeping up), this costs a few atomic operations.
    async fn send(&self, bytes: Bytes, events: &Watch) -> bool {
        let len = bytes.len();
        let (item, taken) = if self.budget.take(len) {
            match self.tx.try_send((bytes, len)) {
                Ok(()) => return true,
                Err(TrySendError::Closed(_)) => return false,
                Err(TrySendError::Full(item)) => (item, true),
            }
        } else {
            ((bytes, len), false)
        };
        let wait = async {
            if !taken {
                self.budget.wait_take(len).await;
            }
            self.tx.send(item).await.is_ok()
        };
        tokio::select! {
            biased;
            sent = wait => sent,
            _ = events.ended() => false,
        }
    }
}

use axum::response::Response;

/// What a watch event says happened, relative to the watch's selectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// How many object versions [`EventCache`] keeps. Watches that keep up read an event within
/// a few revisions of each other; one that falls further behind decodes for itself.
const CACHED_OBJECTS: usize = 1024;

/// How many bytes of objects (their JSON, counted twice for the event line made from it)
/// [`EventCache`] keeps: a thousand pods fit, but a thousand large objects (a tenant's 512 KiB
/// ConfigMap rewritten in a loop) would hold a gigabyte after every watch has moved on.
const CACHED_BYTES: usize = 64 << 20;

/// Stored object versions as watches send them, decoded and encoded once however many watches
/// send them.
///
/// An entry is keyed by the version's revision (one change per revision, so one key and one
/// value) and the watched resource type (which decides the `apiVersion` and `kind` stamped on
/// it): every watch of that type, whatever its namespace, selectors or progress, shares it.
#[derive(Default)]
pub struct EventCache {
    entries: Mutex<CacheEntries>,
}

#[derive(Default)]
struct CacheEntries {
    map: HashMap<(i64, usize), Arc<SharedObject>>,
    /// Keys in insertion order, for eviction.
    order: VecDeque<(i64, usize)>,
    /// What the entries hold, as [`CACHED_BYTES`] counts it.
    bytes: usize,
}

/// What an entry counts against [`CACHED_BYTES`].
fn cached_bytes(shared: &SharedObject) -> usize {
    2 * shared.json.len()
}

/// One object version as a watch of one resource type shows it.
struct SharedObject {
    /// The object as JSON, stamped with its resourceVersion and the watched apiVersion and
    /// kind: all a plain JSON watch without selectors needs.
    json: Bytes,
    /// The watched kind, for [`SharedObject::selectable`].
    kind: &'static str,
    /// `json` decoded, on first use (Tables, protobuf).
    obj: OnceLock<Value>,
    /// The members of `json` that selectors read, on first use.
    selectable: OnceLock<Value>,
    /// The event line for each [`EventType`], made on first use.
    lines: [OnceLock<Bytes>; 3],
    /// The protobuf frame for each [`EventType`], made on first use.
    frames: [OnceLock<Bytes>; 3],
}

impl SharedObject {
    fn new(json: Bytes, kind: &'static str) -> SharedObject {
        SharedObject {
            json,
            kind,
            obj: OnceLock::new(),
            selectable: OnceLock::new(),
            lines: Default::default(),
            frames: Default::default(),
        }
    }

    /// The whole object.
    fn obj(&self) -> &Value {
        self.obj
            .get_or_init(|| serde_json::from_slice(&self.json).unwrap_or_default())
    }

    /// What selectors need of the object (see [`selectors::selectable`]).
    fn selectable(&self) -> &Value {
        self.selectable.get_or_init(|| {
            selectors::selectable(self.kind, &self.json).unwrap_or_else(|| self.obj().clone())
        })
    }

    /// `{"type":"<kind>","object":<obj>}\n`, the line a plain JSON watch sends.
    fn line(&self, kind: EventType) -> Bytes {
        self.lines[kind as usize]
            .get_or_init(|| event_line(kind.as_str(), &self.json))
            .clone()
    }

    /// The protobuf watch frame of this version for `kind`.
    fn frame(&self, kind: EventType) -> Bytes {
        self.frames[kind as usize]
            .get_or_init(|| frame(kind.as_str(), self.obj()))
            .clone()
    }
}

/// One protobuf watch frame for `obj`; an object that does not fit the schema (it should)
/// is an ERROR event the client sees, not a silent gap.
fn frame(event_type: &str, obj: &Value) -> Bytes {
    let encoded = protobuf::encode(obj).map(|o| protobuf::watch_frame(event_type, &o));
    Bytes::from(encoded.unwrap_or_else(|e| {
        let status = ApiError::Internal(format!("encoding a watch event in protobuf: {e}"));
        let status = protobuf::encode(&status.status()).unwrap_or_default();
        protobuf::watch_frame("ERROR", &status)
    }))
}

impl EventCache {
    /// `kv` decoded and stamped for `target`'s resource type; `None` if it does not decode.
    fn object(&self, kv: &KeyValue, target: &Target) -> Option<Arc<SharedObject>> {
        let key = (kv.mod_revision, target.rt as *const ResourceType as usize);
        if let Some(hit) = self.lock().map.get(&key) {
            return Some(hit.clone());
        }
        let shared = match stamped_json(kv, target) {
            Some(json) => SharedObject::new(Bytes::from(json), target.rt.kind),
            None => {
                let obj = decode(kv, target).ok()?;
                let json = Bytes::from(serde_json::to_vec(&obj).ok()?);
                let shared = SharedObject::new(json, target.rt.kind);
                let _ = shared.obj.set(obj);
                shared
            }
        };
        let shared = Arc::new(shared);
        let mut entries = self.lock();
        // Another watch may have decoded it meanwhile; the first one stays.
        if let Some(first) = entries.map.get(&key) {
            return Some(first.clone());
        }
        let size = cached_bytes(&shared);
        while entries.order.len() >= CACHED_OBJECTS
            || (!entries.order.is_empty() && entries.bytes + size > CACHED_BYTES)
        {
            let Some(oldest) = entries.order.pop_front() else {
                break;
            };
            if let Some(evicted) = entries.map.remove(&oldest) {
                entries.bytes -= cached_bytes(&evicted);
            }
        }
        entries.map.insert(key, shared.clone());
        entries.order.push_back(key);
        entries.bytes += size;
        Some(shared)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CacheEntries> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

struct WatchStream {
    target: Target,
    selectors: Selectors,
    table: bool,
    /// Frames of protobuf `WatchEvent`s instead of JSON lines.
    protobuf: bool,
    include: IncludeObject,
    bookmarks: bool,
    /// Ends the initial events with a bookmark annotated [`INITIAL_EVENTS_END`].
    initial_events_end: bool,
    headers_sent: bool,
    last_revision: i64,
    ctx: Ctx,
}

/// `{"type":"<event_type>","object":<json>}\n`: the type first, as upstream's `WatchEvent`
/// encodes it. Clients decode the event as a tagged enum, and serde reads the object straight
/// into its type only when the tag comes first (after it, the whole object is buffered once
/// more as untyped content before decoding).
fn event_line(event_type: &str, json: &[u8]) -> Bytes {
    let mut line = Vec::with_capacity(json.len() + event_type.len() + 24);
    line.extend_from_slice(b"{\"type\":\"");
    line.extend_from_slice(event_type.as_bytes());
    line.extend_from_slice(b"\",\"object\":");
    line.extend_from_slice(json);
    line.extend_from_slice(b"}\n");
    Bytes::from(line)
}

/// The event line for a value made here (errors, bookmarks, Tables, initial events).
fn line(event_type: &str, obj: &impl serde::Serialize) -> Bytes {
    // Serializing a Value or a typed object into a Vec cannot fail.
    event_line(event_type, &serde_json::to_vec(obj).unwrap_or_default())
}

impl WatchStream {
    /// Streams `initial`, then `events`, until the client goes, the watch times out or the
    /// store ends the watch; counts a watch ended for falling behind.
    async fn run(mut self, initial: Vec<Value>, mut events: Watch, out: Output, timeout: Duration) {
        self.stream(initial, &mut events, out, timeout).await;
        if events.fell_behind() {
            tracing::debug!(
                resource = self.target.rt.plural,
                "watcher fell behind; closed"
            );
            self.ctx.metrics.watcher_terminated(self.target.rt);
        }
    }

    async fn stream(
        &mut self,
        initial: Vec<Value>,
        events: &mut Watch,
        out: Output,
        timeout: Duration,
    ) {
        for obj in initial {
            let ev = self.event(EventType::Added, &obj);
            if !out.send(ev, events).await {
                return;
            }
        }
        if self.initial_events_end {
            let mut obj = self.bookmark();
            obj["metadata"]["annotations"] = json!({ INITIAL_EVENTS_END: "true" });
            let bytes = self.bookmark_event(&obj);
            if !out.send(bytes, events).await {
                return;
            }
        }
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut bookmark = tokio::time::interval(BOOKMARK_EVERY);
        bookmark.reset();
        loop {
            tokio::select! {
                _ = &mut deadline => return,
                _ = out.tx.closed() => return,
                _ = bookmark.tick(), if self.bookmarks => {
                    // The store hands a revision's events to watchers before that revision is
                    // readable: with none waiting, nothing up to `current` is left for this
                    // watch, and the bookmark may say so. An idle kind's watch then resumes
                    // from a recent revision instead of one compacted away (410, relist).
                    let current = self.ctx.store.current_revision();
                    if events.is_empty() {
                        self.last_revision = self.last_revision.max(current);
                    }
                    let bytes = self.bookmark_event(&self.bookmark());
                    if !out.send(bytes, events).await {
                        return;
                    }
                }
                ev = events.recv() => {
                    let Some(ev) = ev else { return };
                    self.last_revision = ev.kv.mod_revision;
                    if let Some(bytes) = self.translate(&ev) {
                        if !out.send(bytes, events).await {
                            return;
                        }
                    }
                }
            }
        }
    }

    /// The object of a bookmark: the kind and the revision the watch has reached.
    fn bookmark(&self) -> Value {
        json!({"kind": self.target.rt.kind, "apiVersion": self.target.rt.api_version(),
            "metadata": {"resourceVersion": self.last_revision.to_string()}})
    }

    fn bookmark_event(&self, obj: &Value) -> Bytes {
        if self.protobuf {
            frame("BOOKMARK", obj)
        } else {
            line("BOOKMARK", obj)
        }
    }

    /// A store event as the client sees it: ADDED/MODIFIED/DELETED relative to its selectors.
    fn translate(&mut self, ev: &WatchEvent) -> Option<Bytes> {
        let cache = &self.ctx.caches.events;
        let shared = cache.object(&ev.kv, &self.target)?;
        let matching = |object: &SharedObject| {
            self.selectors.is_empty() || self.selectors.matches(object.selectable())
        };
        let now_matches = matching(&shared);
        let kind = match ev.kind {
            EventKind::Delete => now_matches.then_some(EventType::Deleted),
            EventKind::Put => {
                let was_matching = match &ev.prev {
                    None => false,
                    // Without selectors every object matches: no need to decode the old one.
                    Some(_) if self.selectors.is_empty() => true,
                    Some(prev) => cache
                        .object(prev, &self.target)
                        .is_some_and(|before| matching(&before)),
                };
                match (was_matching, now_matches) {
                    (true, true) => Some(EventType::Modified),
                    (false, true) => Some(EventType::Added),
                    (true, false) => Some(EventType::Deleted),
                    (false, false) => None,
                }
            }
        }?;
        if self.table {
            return Some(self.event(kind, shared.obj()));
        }
        if self.protobuf {
            return Some(shared.frame(kind));
        }
        Some(shared.line(kind))
    }

    /// The event line for `obj`, made for this watch alone (Tables and the initial events).
    fn event(&mut self, kind: EventType, obj: &Value) -> Bytes {
        if self.protobuf {
            return frame(kind.as_str(), obj);
        }
        if !self.table {
            return line(kind.as_str(), obj);
        }
        let meta = json!({"resourceVersion": obj["metadata"]["resourceVersion"]});
        let t = tables::table(
            self.target.rt,
            std::slice::from_ref(obj),
            meta,
            self.include,
            self.ctx.clock.now(),
            !self.headers_sent,
        );
        self.headers_sent = true;
        line(kind.as_str(), &t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pods() -> Target {
        let rt = berth_api::registry::find("", "v1", "pods").unwrap();
        Target {
            rt,
            namespace: Some("ns".into()),
            name: None,
            subresource: None,
        }
    }

    fn kv(revision: i64) -> KeyValue {
        KeyValue {
            key: "/registry/core/pods/ns/p".into(),
            value: Bytes::from_static(br#"{"metadata":{"name":"p","namespace":"ns"},"spec":{}}"#),
            create_revision: 1,
            mod_revision: revision,
        }
    }

    #[test]
    fn a_shared_line_is_the_line_a_watch_made_for_itself() {
        let cache = EventCache::default();
        let target = pods();
        let shared = cache.object(&kv(7), &target).unwrap();
        let obj = decode(&kv(7), &target).unwrap();
        for kind in [EventType::Added, EventType::Modified, EventType::Deleted] {
            let own = line(kind.as_str(), &obj);
            assert_eq!(shared.line(kind), own);
        }
        assert_eq!(shared.obj()["metadata"]["resourceVersion"], "7");
    }

    #[test]
    fn every_watch_of_a_type_shares_one_decoding_per_revision() {
        let cache = EventCache::default();
        let mut other_namespace = pods();
        other_namespace.namespace = None;
        let first = cache.object(&kv(7), &pods()).unwrap();
        assert!(Arc::ptr_eq(
            &first,
            &cache.object(&kv(7), &other_namespace).unwrap()
        ));
        assert!(!Arc::ptr_eq(
            &first,
            &cache.object(&kv(8), &pods()).unwrap()
        ));
        for revision in 9..9 + CACHED_OBJECTS as i64 {
            cache.object(&kv(revision), &pods());
        }
        assert_eq!(cache.lock().map.len(), CACHED_OBJECTS);
        assert!(!cache.lock().map.contains_key(&(7, first_key(&pods()))));
    }

    #[test]
    fn the_cache_forgets_its_oldest_objects_past_its_byte_bound() {
        let cache = EventCache::default();
        let big = format!(
            "{{\"metadata\":{{\"name\":\"p\"}},\"data\":\"{}\"}}",
            "x".repeat(1 << 20)
        );
        for revision in 1..=100 {
            let mut version = kv(revision);
            version.value = Bytes::from(big.clone());
            cache.object(&version, &pods());
        }
        let entries = cache.lock();
        assert!(entries.bytes <= CACHED_BYTES, "{}", entries.bytes);
        assert!(entries.map.len() < 100 && !entries.map.is_empty());
        assert!(entries.map.contains_key(&(100, first_key(&pods()))));
        let held: usize = entries.map.values().map(|s| cached_bytes(s)).sum();
        assert_eq!(held, entries.bytes);
    }

    fn first_key(target: &Target) -> usize {
        target.rt as *const ResourceType as usize
    }

    /// A watch of ConfigMaps in `default` from the current revision, as it streams.
    async fn watch_configmaps(
        server: &crate::testing::TestServer,
        store: &berth_store::Store,
    ) -> axum::body::BodyDataStream {
        let path = format!(
            "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={}",
            store.current_revision()
        );
        let req = axum::http::Request::get(path)
            .body(axum::body::Body::empty())
            .expect("request");
        let resp = server.send(req).await;
        assert_eq!(resp.status(), axum::http::StatusCode::OK);
        resp.into_body().into_data_stream()
    }

    #[tokio::test]
    async fn a_watcher_that_never_reads_is_closed_and_counted_and_one_that_reads_is_not() {
        use futures::StreamExt;
        let store = berth_store::Store::memory_with_limits(berth_store::Limits {
            watch_queue_events: 16,
            ..berth_store::Limits::default()
        });
        let server = crate::testing::TestServer::with_store(store.clone()).await;
        let mut reading = watch_configmaps(&server, &store).await;
        let idle = watch_configmaps(&server, &store).await;
        let writes = OUTPUT_EVENTS + 100;
        for i in 0..writes {
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm{i}")}});
            let (code, _) = server
                .json(
                    axum::http::Method::POST,
                    "/api/v1/namespaces/default/configmaps",
                    cm,
                )
                .await;
            assert_eq!(code, axum::http::StatusCode::CREATED);
            let line = reading.next().await.expect("an event").expect("bytes");
            assert!(line.starts_with(br#"{"type":"ADDED""#));
            // The idle watch's task forwards what its connection has room for, then waits.
            tokio::task::yield_now().await;
        }
        // The idle watch ended: what it had handed its connection is there, then the end.
        let body = tokio::time::timeout(
            Duration::from_secs(10),
            axum::body::to_bytes(axum::body::Body::from_stream(idle), usize::MAX),
        )
        .await
        .expect("the idle watch has ended")
        .expect("body");
        let names: Vec<String> = body
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice::<Value>(l).expect("an event line"))
            .map(|e| {
                e["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect();
        assert!(
            names.len() >= OUTPUT_EVENTS && names.len() < writes,
            "{} events",
            names.len()
        );
        let expected: Vec<String> = (0..names.len()).map(|i| format!("cm{i}")).collect();
        assert_eq!(
            names, expected,
            "in order, from the first: the client resumes after the last"
        );
        let text = get_text(&server, "/metrics").await;
        assert!(
            text.contains(
                r#"apiserver_terminated_watchers_total{group="",resource="configmaps"} 1"#
            ),
            "{text}"
        );
    }

    async fn get_text(server: &crate::testing::TestServer, path: &str) -> String {
        let req = axum::http::Request::get(path)
            .body(axum::body::Body::empty())
            .expect("request");
        let body = axum::body::to_bytes(server.send(req).await.into_body(), usize::MAX)
            .await
            .expect("body");
        String::from_utf8_lossy(&body).into_owned()
    }

    /// The value of the unlabelled metric `name` in `text`.
    fn metric(text: &str, name: &str) -> usize {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("{name} in {text}"))
    }

    /// Issue 30's attack, scaled down: a large ConfigMap patched over and over while a watcher
    /// never reads. The history stays within its bound, the watcher is closed, and a watch from
    /// a revision forgotten since answers 410 Gone, so memory stays flat.
    #[tokio::test]
    async fn patching_a_large_object_while_a_watcher_never_reads_keeps_memory_bounded() {
        let limits = berth_store::Limits {
            watch_queue_events: usize::MAX,
            watch_queue_bytes: 1 << 20,
            history_bytes: 2 << 20,
        };
        let store = berth_store::Store::memory_with_limits(limits);
        let server = crate::testing::TestServer::with_store(store.clone()).await;
        let big = "x".repeat(64 << 10);
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"},
            "data": {"a": big}});
        let path = "/api/v1/namespaces/default/configmaps";
        let (code, _) = server.json(axum::http::Method::POST, path, cm).await;
        assert_eq!(code, axum::http::StatusCode::CREATED);
        let first = store.current_revision();
        let idle = watch_configmaps(&server, &store).await;
        for i in 0..100 {
            let patch = json!({"data": {"a": format!("{i}{big}")}});
            let (code, _) = server.merge_patch(&format!("{path}/big"), patch).await;
            assert_eq!(code, axum::http::StatusCode::OK);
            tokio::task::yield_now().await;
            let history = store.history().expect("a memory store keeps history");
            assert!(history.bytes <= limits.history_bytes, "{history:?}");
        }
        let text = get_text(&server, "/metrics").await;
        assert!(metric(&text, "berth_store_history_bytes") <= limits.history_bytes);
        assert_eq!(
            metric(&text, "berth_store_history_limit_bytes"),
            limits.history_bytes
        );
        assert!(
            text.contains(
                r#"apiserver_terminated_watchers_total{group="",resource="configmaps"} 1"#
            ),
            "{text}"
        );
        drop(idle);
        let gone = get_text(
            &server,
            &format!("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={first}"),
        )
        .await;
        let event: Value = serde_json::from_str(gone.trim()).expect("one event");
        assert_eq!(event["type"], "ERROR");
        assert_eq!(event["object"]["code"], 410);
        assert!(event["object"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("too old resource version")));
    }

    #[tokio::test]
    async fn a_watchs_output_waits_past_its_byte_bound_and_an_oversized_event_goes_alone() {
        let budget = Arc::new(Budget::default());
        assert!(
            budget.take(OUTPUT_BYTES * 2),
            "anything fits when nothing is in flight"
        );
        assert!(!budget.take(1));
        budget.give_back(OUTPUT_BYTES * 2);
        assert!(budget.take(OUTPUT_BYTES - 10));
        assert!(budget.take(10));
        let waiter = {
            let budget = Arc::clone(&budget);
            tokio::spawn(async move { budget.wait_take(100).await })
        };
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        budget.give_back(OUTPUT_BYTES - 10);
        tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .expect("woken once there is room")
            .expect("task");
    }
}
