//! Watches: newline-delimited JSON events from a store revision, filtered by selectors.

use crate::codec::decode;
use crate::error::{from_store, ApiError, ApiResult};
use crate::objects::ApiRequest;
use crate::path::{self, Target};
use crate::request::Answer;
use crate::selectors::Selectors;
use crate::server::{streaming, Ctx};
use berth_api::tables::{self, IncludeObject};
use berth_store::{EventKind, WatchEvent};
use bytes::Bytes;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::sync::mpsc;

/// How often an idle watch that allows bookmarks gets one.
const BOOKMARK_EVERY: Duration = Duration::from_secs(30);
/// Upper bound on a watch without `timeoutSeconds` (upstream: 30 min, randomised).
const MAX_WATCH: Duration = Duration::from_secs(1800);

pub async fn watch(ctx: &Ctx, req: &ApiRequest) -> ApiResult<Response> {
    let rt = req.target.rt;
    let selectors = Selectors::from_query(rt, &req.query)?;
    if req.query.flag("sendInitialEvents") {
        return Err(ApiError::BadRequest(
            "sendInitialEvents is not supported by this server".into(),
        ));
    }
    let timeout = req
        .query
        .int("timeoutSeconds")?
        .map(|s| Duration::from_secs(s.max(0) as u64))
        .unwrap_or(MAX_WATCH);
    let prefix = path::collection_prefix(rt, req.target.namespace.as_deref());
    let rv_param = req.query.get("resourceVersion").unwrap_or("");
    let mut initial = Vec::new();
    let from = if rv_param.is_empty() || rv_param == "0" {
        // "Start at most recent": the current objects first, as ADDED events.
        let r = ctx
            .store
            .range(&prefix, None, 0, None)
            .map_err(|e| from_store(e, &req.resource(), ""))?;
        for kv in &r.kvs {
            let obj = decode(kv, &req.target)?;
            if selectors.matches(&obj) {
                initial.push(("ADDED", obj));
            }
        }
        r.revision
    } else {
        rv_param
            .parse::<i64>()
            .map_err(|_| ApiError::BadRequest(format!("invalid resource version: {rv_param}")))?
    };
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(256);
    let events = match ctx.store.watch(&prefix, from) {
        Ok(events) => Some(events),
        Err(e) => {
            // Expired versions are reported inside a 200 stream, which is what clients relist on.
            let status = from_store(e, &req.resource(), "").status();
            let _ = tx.try_send(Ok(line(&json!({"type": "ERROR", "object": status}))));
            None
        }
    };
    let stream = WatchStream {
        target: req.target.clone(),
        selectors,
        table: req.answer == Answer::Table,
        include: match req.query.get("includeObject") {
            Some("None") => IncludeObject::None,
            Some("Object") => IncludeObject::Object,
            _ => IncludeObject::Metadata,
        },
        bookmarks: req.query.flag("allowWatchBookmarks"),
        headers_sent: false,
        last_revision: from,
        ctx: ctx.clone(),
    };
    if let Some(events) = events {
        tokio::spawn(stream.run(initial, events, tx, timeout));
    }
    Ok(streaming(tokio_stream::wrappers::ReceiverStream::new(rx)))
}

use axum::response::Response;

struct WatchStream {
    target: Target,
    selectors: Selectors,
    table: bool,
    include: IncludeObject,
    bookmarks: bool,
    headers_sent: bool,
    last_revision: i64,
    ctx: Ctx,
}

fn line(v: &Value) -> Bytes {
    let mut s = v.to_string();
    s.push('\n');
    Bytes::from(s)
}

impl WatchStream {
    async fn run(
        mut self,
        initial: Vec<(&'static str, Value)>,
        mut events: mpsc::UnboundedReceiver<WatchEvent>,
        tx: mpsc::Sender<Result<Bytes, std::io::Error>>,
        timeout: Duration,
    ) {
        for (kind, obj) in initial {
            let ev = self.event(kind, obj);
            if tx.send(Ok(ev)).await.is_err() {
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
                _ = tx.closed() => return,
                _ = bookmark.tick(), if self.bookmarks => {
                    let obj = json!({"kind": self.target.rt.kind, "apiVersion": self.target.rt.api_version(),
                        "metadata": {"resourceVersion": self.last_revision.to_string()}});
                    if tx.send(Ok(line(&json!({"type": "BOOKMARK", "object": obj})))).await.is_err() {
                        return;
                    }
                }
                ev = events.recv() => {
                    let Some(ev) = ev else { return };
                    self.last_revision = ev.kv.mod_revision;
                    if let Some(bytes) = self.translate(&ev) {
                        if tx.send(Ok(bytes)).await.is_err() {
                            return;
                        }
                    }
                }
            }
        }
    }

    /// A store event as the client sees it: ADDED/MODIFIED/DELETED relative to its selectors.
    fn translate(&mut self, ev: &WatchEvent) -> Option<Bytes> {
        let obj = decode(&ev.kv, &self.target).ok()?;
        let now_matches = self.selectors.matches(&obj);
        let kind = match ev.kind {
            EventKind::Delete => now_matches.then_some("DELETED"),
            EventKind::Put => {
                let before = ev.prev.as_ref().and_then(|p| decode(p, &self.target).ok());
                let was_matching = before.as_ref().is_some_and(|b| self.selectors.matches(b));
                match (was_matching, now_matches) {
                    (true, true) => Some("MODIFIED"),
                    (false, true) => Some("ADDED"),
                    (true, false) => Some("DELETED"),
                    (false, false) => None,
                }
            }
        }?;
        Some(self.event(kind, obj))
    }

    fn event(&mut self, kind: &str, obj: Value) -> Bytes {
        if !self.table {
            return line(&json!({"type": kind, "object": obj}));
        }
        let meta = json!({"resourceVersion": obj["metadata"]["resourceVersion"]});
        let t = tables::table(
            self.target.rt,
            &[obj],
            meta,
            self.include,
            self.ctx.clock.now(),
            !self.headers_sent,
        );
        self.headers_sent = true;
        line(&json!({"type": kind, "object": t}))
    }
}
