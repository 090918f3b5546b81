//! API Priority and Fairness (`flowcontrol.apiserver.k8s.io/v1`), as upstream's
//! `WithPriorityAndFairness` filter: every request is classified by the FlowSchemas into a
//! priority level and a flow, and waits for one of its level's seats in a fairly served queue,
//! or is refused with 429 when its queue is full, its level rejects, or it waited too long.
//!
//! Where to start: [`FlowControl`] is the handle the request path holds.
//! [`FlowControl::admit`] returns a [`Permit`] to hold while the request executes (dropping it
//! frees the seat) or a [`Rejected`] to answer with; [`FlowControl::follow`] keeps the
//! configuration current from the store's FlowSchemas and PriorityLevelConfigurations.
//!
//! The pieces, one concern each:
//! - [`classify`]: which FlowSchema, priority level and flow a request belongs to;
//! - [`dispatch`]: the concurrency split among levels and each level's fair queues;
//! - [`retry`]: the adaptive `Retry-After` of a rejection;
//! - [`bootstrap`]: upstream's mandatory and suggested objects.
//!
//! Wiring (done by the request path, not here): build the request's
//! [`Attributes`] after authentication, `admit` it, set [`FLOW_SCHEMA_UID_HEADER`] and
//! [`PRIORITY_LEVEL_UID_HEADER`] from the permit (or the rejection) on the response, and hold the
//! permit until the response is produced. Upstream holds a watch's seat only until the watch is
//! initialized and does not count other long-running requests (exec, attach, port-forward,
//! proxy); the caller decides which requests to admit.
//!
//! Differences from upstream, each documented where it lives: every request costs one seat
//! (upstream's work estimator charges big LISTs more), levels do not lend or borrow seats, and
//! queues are served round robin rather than by virtual finish time.

pub mod bootstrap;
pub mod classify;
pub mod dispatch;
pub mod retry;

use crate::authorizer::Attributes;
use berth_store::{EventKind, KeyValue, Store};
use classify::FlowSchema;
use dispatch::{Offer, QueueSet, Reason, Response, Seat};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;
use tokio::sync::oneshot;

pub use dispatch::{DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT, DEFAULT_MAX_REQUESTS_INFLIGHT};

/// How long a request may wait in its queue before it is refused: upstream's wait limit is a
/// quarter of the request timeout (60 s), so a request refused after waiting still leaves the
/// client time to retry within its own deadline.
pub const QUEUE_WAIT_LIMIT: Duration = Duration::from_secs(15);

/// The response header naming (by uid) the FlowSchema a request matched.
pub const FLOW_SCHEMA_UID_HEADER: &str = "X-Kubernetes-PF-FlowSchema-UID";

/// The response header naming (by uid) the priority level a request was served at.
pub const PRIORITY_LEVEL_UID_HEADER: &str = "X-Kubernetes-PF-PriorityLevel-UID";

/// The body upstream answers a refused request with (`http.Error` text, status 429), with a
/// `Retry-After` header of [`Rejected::retry_after`] seconds.
pub const TOO_MANY_REQUESTS: &str = "Too many requests, please try again later.";

/// Where both kinds are stored.
const PREFIX: &str = "/registry/flowcontrol.apiserver.k8s.io/";

/// Upstream's defaults of a Limited level's members left out.
const DEFAULT_SHARES: u32 = 30;
const DEFAULT_QUEUES: u32 = 64;
const DEFAULT_HAND_SIZE: u32 = 8;
const DEFAULT_QUEUE_LENGTH_LIMIT: u32 = 50;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where a request was classified: what its response headers and the metrics name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Classification {
    pub flow_schema: String,
    pub flow_schema_uid: String,
    pub priority_level: String,
    pub priority_level_uid: String,
    /// The flow distinguisher (user name, namespace, or empty).
    pub distinguisher: String,
}

/// A priority level: its seats and queues, and its rejections' `Retry-After`.
struct Level {
    name: String,
    uid: String,
    queues: Mutex<QueueSet<oneshot::Sender<Seat>>>,
    retry: Mutex<retry::RetryAfter>,
}

impl Level {
    /// Gives `seat` back and hands freed seats to waiters; a waiter that has gone gives its
    /// seat back in turn.
    fn release(&self, seat: Seat) {
        let mut free = vec![seat];
        while let Some(seat) = free.pop() {
            let started = lock(&self.queues).release(seat);
            for (seat, waiter) in started {
                if let Err(seat) = waiter.send(seat) {
                    free.push(seat);
                }
            }
        }
    }

    fn start(&self, started: Vec<(Seat, oneshot::Sender<Seat>)>) {
        for (seat, waiter) in started {
            if let Err(seat) = waiter.send(seat) {
                self.release(seat);
            }
        }
    }
}

/// The compiled configuration: FlowSchemas in matching order and the levels by name.
struct Config {
    schemas: Vec<FlowSchema>,
    levels: HashMap<String, Arc<Level>>,
}

/// Gauges per (priority level, FlowSchema): requests waiting and executing.
type Gauges = BTreeMap<(String, String), (i64, i64)>;

struct Inner {
    server_limit: u32,
    wait_limit: Duration,
    clock: crate::Clock,
    config: RwLock<Arc<Config>>,
    tickets: AtomicU64,
    /// The stored objects by key, while following the store.
    objects: Mutex<BTreeMap<String, Value>>,
    gauges: Mutex<Gauges>,
    rejected: Mutex<BTreeMap<(String, String, Reason), u64>>,
}

/// The API Priority and Fairness handle: cheap to clone, shared by every request.
#[derive(Clone)]
pub struct FlowControl {
    inner: Arc<Inner>,
}

/// A seat held by an executing request; dropping it frees the seat for the next waiter.
pub struct Permit {
    level: Arc<Level>,
    seat: Option<Seat>,
    classification: Classification,
    inner: Arc<Inner>,
}

impl Permit {
    /// Where the request was classified (its response headers' values).
    pub fn classification(&self) -> &Classification {
        &self.classification
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(seat) = self.seat.take() {
            self.inner.gauge(&self.classification, 0, -1);
            self.level.release(seat);
        }
    }
}

impl std::fmt::Debug for Permit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Permit")
            .field("classification", &self.classification)
            .finish()
    }
}

/// A refused request: answer 429 with [`TOO_MANY_REQUESTS`], `Retry-After: retry_after` and
/// the classification's headers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    pub classification: Classification,
    pub reason: Reason,
    /// Seconds, for the `Retry-After` header.
    pub retry_after: u64,
}

/// A waiting request's place; if the request goes away (its future is dropped), it leaves its
/// queue, or gives back the seat it was handed meanwhile.
struct Waiting {
    level: Arc<Level>,
    queue: u32,
    ticket: u64,
    seat: oneshot::Receiver<Seat>,
    done: bool,
}

impl Waiting {
    /// Leaves the queue; `Some(seat)` if a seat was handed over first.
    fn leave(&mut self) -> Option<Seat> {
        self.done = true;
        let mut queues = lock(&self.level.queues);
        if queues.cancel(self.queue, self.ticket).is_some()
            || queues.cancel_anywhere(self.ticket).is_some()
        {
            return None;
        }
        drop(queues);
        // Started (or being started): after close() no seat can arrive unseen.
        self.seat.close();
        self.seat.try_recv().ok()
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if !self.done {
            if let Some(seat) = self.leave() {
                self.level.release(seat);
            }
        }
    }
}

/// A PriorityLevelConfiguration, compiled: `None` if it has no name or an unknown type.
fn compile_level(obj: &Value) -> Option<(String, String, u32, Response)> {
    let name = obj["metadata"]["name"].as_str()?.to_string();
    let uid = obj["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let spec = &obj["spec"];
    let number = |v: &Value, default: u32| {
        v.as_u64()
            .map_or(default, |n| u32::try_from(n).unwrap_or(u32::MAX))
    };
    let (shares, response) = match spec["type"].as_str()? {
        "Exempt" => (
            number(&spec["exempt"]["nominalConcurrencyShares"], 0),
            Response::Exempt,
        ),
        "Limited" => {
            let limited = &spec["limited"];
            let response = &limited["limitResponse"];
            let response = match response["type"].as_str() {
                Some("Reject") => Response::Reject,
                _ => {
                    let q = &response["queuing"];
                    Response::Queue {
                        queues: number(&q["queues"], DEFAULT_QUEUES).max(1),
                        hand_size: number(&q["handSize"], DEFAULT_HAND_SIZE).max(1),
                        queue_length_limit: number(
                            &q["queueLengthLimit"],
                            DEFAULT_QUEUE_LENGTH_LIMIT,
                        ),
                    }
                }
            };
            (
                number(&limited["nominalConcurrencyShares"], DEFAULT_SHARES),
                response,
            )
        }
        _ => return None,
    };
    Some((name, uid, shares, response))
}

impl FlowControl {
    /// Flow control over `server_limit` seats (upstream: `--max-requests-inflight` plus
    /// `--max-mutating-requests-inflight`), configured with the bootstrap objects until
    /// [`FlowControl::reload`] or [`FlowControl::follow`] brings the stored ones.
    /// `clock` is the API server's (time only through it: paused and accelerated with it).
    pub fn new(server_limit: u32, clock: crate::Clock) -> FlowControl {
        FlowControl::with_wait_limit(server_limit, QUEUE_WAIT_LIMIT, clock)
    }

    /// As [`FlowControl::new`], with another queue wait limit (tests).
    pub fn with_wait_limit(
        server_limit: u32,
        wait_limit: Duration,
        clock: crate::Clock,
    ) -> FlowControl {
        let fc = FlowControl {
            inner: Arc::new(Inner {
                server_limit,
                wait_limit,
                clock,
                config: RwLock::new(Arc::new(Config {
                    schemas: Vec::new(),
                    levels: HashMap::new(),
                })),
                tickets: AtomicU64::new(0),
                objects: Mutex::new(BTreeMap::new()),
                gauges: Mutex::new(BTreeMap::new()),
                rejected: Mutex::new(BTreeMap::new()),
            }),
        };
        fc.reload(&bootstrap::flow_schemas(), &bootstrap::priority_levels());
        fc
    }

    /// Replaces the configuration with these FlowSchemas and PriorityLevelConfigurations (as
    /// stored JSON). The mandatory `exempt` and `catch-all` objects are added when missing, as
    /// upstream. Levels keep their executing and waiting requests across a reload; a removed
    /// level's requests finish under its old limit.
    pub fn reload(&self, schemas: &[Value], levels: &[Value]) {
        let mut compiled: Vec<_> = levels.iter().filter_map(compile_level).collect();
        let mut schemas: Vec<FlowSchema> = schemas.iter().filter_map(FlowSchema::compile).collect();
        let mandatory = [bootstrap::priority_levels(), bootstrap::flow_schemas()];
        for name in ["exempt", "catch-all"] {
            if !compiled.iter().any(|l| l.0 == name) {
                if let Some(l) = mandatory[0]
                    .iter()
                    .find(|l| l["metadata"]["name"] == name)
                    .and_then(compile_level)
                {
                    compiled.push(l);
                }
            }
            if !schemas.iter().any(|s| s.name == name) {
                if let Some(s) = mandatory[1]
                    .iter()
                    .find(|s| s["metadata"]["name"] == name)
                    .and_then(FlowSchema::compile)
                {
                    schemas.push(s);
                }
            }
        }
        classify::sort(&mut schemas);
        let shares: Vec<u32> = compiled.iter().map(|l| l.2).collect();
        let limits = dispatch::nominal_limits(self.inner.server_limit, &shares);

        let mut config = self.inner.config.write().unwrap_or_else(|e| e.into_inner());
        let mut levels = HashMap::new();
        let mut to_start = Vec::new();
        for ((name, uid, _, response), limit) in compiled.into_iter().zip(limits) {
            let level = match config.levels.get(&name) {
                Some(old) if old.uid == uid => {
                    let started = lock(&old.queues).reconfigure(limit, response);
                    to_start.push((old.clone(), started));
                    old.clone()
                }
                // New, or the same name for another object (deleted and created again): a
                // replaced level keeps serving its own requests until they finish.
                _ => Arc::new(Level {
                    name: name.clone(),
                    uid,
                    queues: Mutex::new(QueueSet::new(limit, response)),
                    retry: Mutex::new(retry::RetryAfter::default()),
                }),
            };
            levels.insert(name, level);
        }
        *config = Arc::new(Config { schemas, levels });
        drop(config);
        for (level, started) in to_start {
            level.start(started);
        }
    }

    /// Follows the store: loads the stored FlowSchemas and PriorityLevelConfigurations now and
    /// reloads on every change, in a task (so this must run inside the Tokio runtime).
    pub fn follow(&self, store: &Store) -> Result<(), berth_store::Error> {
        let (this, that) = (self.clone(), self.clone());
        crate::follow::follow_prefix(
            store,
            PREFIX,
            move |kvs| {
                let mut objects = lock(&this.inner.objects);
                objects.clear();
                for kv in kvs {
                    if let Ok(v) = serde_json::from_slice(&kv.value) {
                        objects.insert(kv.key.clone(), v);
                    }
                }
                drop(objects);
                this.reload_objects();
            },
            move |kind, kv: &KeyValue| {
                let mut objects = lock(&that.inner.objects);
                match (kind, serde_json::from_slice(&kv.value)) {
                    (EventKind::Put, Ok(v)) => objects.insert(kv.key.clone(), v),
                    _ => objects.remove(&kv.key),
                };
                drop(objects);
                that.reload_objects();
            },
        )
    }

    fn reload_objects(&self) {
        let objects = lock(&self.inner.objects);
        let of = |plural: &str| -> Vec<Value> {
            let prefix = format!("{PREFIX}{plural}/");
            objects
                .iter()
                .filter(|(k, _)| k.starts_with(&prefix))
                .map(|(_, v)| v.clone())
                .collect()
        };
        let (schemas, levels) = (of("flowschemas"), of("prioritylevelconfigurations"));
        drop(objects);
        self.reload(&schemas, &levels);
    }

    /// Classifies `a` without admitting it.
    pub fn classify(&self, a: &Attributes<'_>) -> Classification {
        let config = self.config();
        self.classify_in(&config, a).0
    }

    fn config(&self) -> Arc<Config> {
        self.inner
            .config
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn classify_in(&self, config: &Config, a: &Attributes<'_>) -> (Classification, Arc<Level>) {
        let schema = classify::classify(&config.schemas, a, |pl| config.levels.contains_key(pl));
        let level = schema
            .and_then(|fs| config.levels.get(&fs.priority_level))
            .or_else(|| config.levels.get("catch-all"))
            .cloned()
            // reload always adds catch-all; this is a level of last resort that never exists.
            .unwrap_or_else(|| {
                Arc::new(Level {
                    name: "catch-all".into(),
                    uid: String::new(),
                    queues: Mutex::new(QueueSet::new(dispatch::MIN_SEATS, Response::Reject)),
                    retry: Mutex::new(retry::RetryAfter::default()),
                })
            });
        let classification = Classification {
            flow_schema: schema.map_or("catch-all".into(), |fs| fs.name.clone()),
            flow_schema_uid: schema.map(|fs| fs.uid.clone()).unwrap_or_default(),
            priority_level: level.name.clone(),
            priority_level_uid: level.uid.clone(),
            distinguisher: schema
                .map(|fs| fs.distinguisher_of(a).to_string())
                .unwrap_or_default(),
        };
        (classification, level)
    }

    /// Admits the request `a`: a [`Permit`] once it holds a seat of its priority level (at once,
    /// or after waiting at most the queue wait limit), or why it was refused.
    pub async fn admit(&self, a: &Attributes<'_>) -> Result<Permit, Rejected> {
        let config = self.config();
        let (classification, level) = self.classify_in(&config, a);
        drop(config);
        let flow = dispatch::flow_hash(&classification.flow_schema, &classification.distinguisher);
        let ticket = self.inner.tickets.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        let offer = lock(&level.queues).offer(flow, ticket, tx);
        let queue = match offer {
            Offer::Execute(seat) => return Ok(self.permit(level, seat, classification)),
            Offer::Rejected(reason, _) => return Err(self.reject(&level, classification, reason)),
            Offer::Queued { queue } => queue,
        };
        self.inner.gauge(&classification, 1, 0);
        let mut waiting = Waiting {
            level: level.clone(),
            queue,
            ticket,
            seat: rx,
            done: false,
        };
        let wait = self.inner.clock.tokio_duration(self.inner.wait_limit);
        let waited = tokio::time::timeout(wait, &mut waiting.seat).await;
        self.inner.gauge(&classification, -1, 0);
        let outcome = match waited {
            Ok(Ok(seat)) => {
                waiting.done = true;
                Ok(seat)
            }
            Ok(Err(_)) => {
                waiting.done = true;
                Err(Reason::Cancelled)
            }
            Err(_) => waiting.leave().ok_or(Reason::TimeOut),
        };
        match outcome {
            Ok(seat) => Ok(self.permit(level, seat, classification)),
            Err(reason) => Err(self.reject(&level, classification, reason)),
        }
    }

    fn permit(&self, level: Arc<Level>, seat: Seat, classification: Classification) -> Permit {
        self.inner.gauge(&classification, 0, 1);
        Permit {
            level,
            seat: Some(seat),
            classification,
            inner: self.inner.clone(),
        }
    }

    fn reject(&self, level: &Level, classification: Classification, reason: Reason) -> Rejected {
        let now = u64::try_from(self.inner.clock.now().timestamp()).unwrap_or(0);
        let retry_after = {
            let mut retry = lock(&level.retry);
            retry.record(now);
            retry.get()
        };
        *lock(&self.inner.rejected)
            .entry((
                classification.flow_schema.clone(),
                classification.priority_level.clone(),
                reason,
            ))
            .or_default() += 1;
        Rejected {
            classification,
            reason,
            retry_after,
        }
    }

    /// Appends the flow-control metrics in Prometheus text format, under upstream's names.
    pub fn encode(&self, out: &mut String) {
        let config = self.config();
        let esc = |s: &str| {
            s.replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n")
        };
        let _ = writeln!(out, "# HELP apiserver_flowcontrol_nominal_limit_seats Nominal number of execution seats configured for each priority level");
        let _ = writeln!(
            out,
            "# TYPE apiserver_flowcontrol_nominal_limit_seats gauge"
        );
        let mut levels: Vec<_> = config.levels.values().collect();
        levels.sort_by(|a, b| a.name.cmp(&b.name));
        for level in levels {
            let limit = lock(&level.queues).limit();
            let _ = writeln!(
                out,
                "apiserver_flowcontrol_nominal_limit_seats{{priority_level=\"{}\"}} {limit}",
                esc(&level.name)
            );
        }
        let gauges = lock(&self.inner.gauges).clone();
        for (name, help, pick) in [
            (
                "apiserver_flowcontrol_current_inqueue_requests",
                "Number of requests currently pending in queues of the API Priority and Fairness subsystem",
                0,
            ),
            (
                "apiserver_flowcontrol_current_executing_requests",
                "Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem",
                1,
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} gauge");
            for ((pl, fs), (waiting, executing)) in &gauges {
                let v = if pick == 0 { waiting } else { executing };
                let _ = writeln!(
                    out,
                    "{name}{{flow_schema=\"{}\",priority_level=\"{}\"}} {v}",
                    esc(fs),
                    esc(pl)
                );
            }
        }
        let name = "apiserver_flowcontrol_rejected_requests_total";
        let _ = writeln!(
            out,
            "# HELP {name} Number of requests rejected by API Priority and Fairness subsystem"
        );
        let _ = writeln!(out, "# TYPE {name} counter");
        for ((fs, pl, reason), n) in lock(&self.inner.rejected).iter() {
            let _ = writeln!(
                out,
                "{name}{{flow_schema=\"{}\",priority_level=\"{}\",reason=\"{}\"}} {n}",
                esc(fs),
                esc(pl),
                reason.label()
            );
        }
    }
}

impl Inner {
    fn gauge(&self, c: &Classification, waiting: i64, executing: i64) {
        let mut gauges = lock(&self.gauges);
        let g = gauges
            .entry((c.priority_level.clone(), c.flow_schema.clone()))
            .or_default();
        g.0 += waiting;
        g.1 += executing;
    }
}

#[cfg(test)]
mod tests;
