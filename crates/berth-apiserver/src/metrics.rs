//! The API server's own Prometheus metrics at `/metrics`, under upstream's names:
//! `apiserver_request_total`, `apiserver_request_duration_seconds`,
//! `apiserver_current_inflight_requests`, `apiserver_storage_objects`,
//! `etcd_request_duration_seconds` (the store's latency, whichever backend) and the process
//! metrics;
//! followed by the metrics of the components running in the same process (`berth serve`), so
//! one scrape sees the whole control plane.
//!
//! Recording a request costs one look-up in a map keyed by static strings and a few atomic
//! additions: the labels of a request are `&'static str`s taken from the resource registry, so
//! nothing is allocated per request. Object counts are read from the store at scrape time.

use crate::overload::RequestKind;
use crate::path;
use berth_api::registry::{self, ResourceType};
use berth_store::Store;
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::collections::BTreeSet;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// Upstream's buckets of `apiserver_request_duration_seconds`.
const DURATION_BUCKETS: [f64; 23] = [
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// What a request was, as upstream's `RequestInfo` labels it.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// `GET`, `LIST`, `WATCH`, `POST`, `PUT`, `PATCH`, `APPLY`, `DELETE`, `DELETECOLLECTION`,
    /// `CONNECT`.
    pub verb: &'static str,
    pub group: &'static str,
    pub version: &'static str,
    pub resource: &'static str,
    pub subresource: &'static str,
    /// `resource` (one named object), `namespace`, `cluster`, or empty for a non-resource path.
    pub scope: &'static str,
    pub component: &'static str,
}

impl RequestLabels {
    /// A non-resource request (`/healthz`, discovery, `/metrics`) until routing says more.
    pub fn non_resource(method: &axum::http::Method) -> RequestLabels {
        RequestLabels {
            verb: method_verb(method),
            group: "",
            version: "",
            resource: "",
            subresource: "",
            scope: "",
            component: "apiserver",
        }
    }

    /// A request for `rt`.
    pub fn resource(
        &mut self,
        rt: &'static ResourceType,
        subresource: Option<&str>,
        namespace: Option<&str>,
        named: bool,
    ) {
        self.group = rt.group;
        self.version = rt.version;
        self.resource = rt.plural;
        self.subresource = subresource.map_or("", static_subresource);
        self.scope = if named {
            "resource"
        } else if namespace.is_some() {
            "namespace"
        } else {
            "cluster"
        };
    }

    /// Refines the verb of a resource request (`GET` of a collection is `LIST`, ...).
    pub fn verb(&mut self, verb: &'static str) {
        self.verb = verb;
    }

    fn long_running(&self) -> bool {
        matches!(self.verb, "WATCH" | "CONNECT")
    }
}

fn method_verb(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET | Method::HEAD => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        _ => "CONNECT",
    }
}

/// The subresources berth serves, as static label values (anything else is `other`).
fn static_subresource(s: &str) -> &'static str {
    const KNOWN: [&str; 10] = [
        "status", "scale", "binding", "eviction", "log", "proxy", "exec", "attach", "finalize",
        "approval",
    ];
    KNOWN.iter().find(|k| **k == s).copied().unwrap_or("other")
}

/// Labels of a counted request: the request and its HTTP code.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabels {
    #[prometheus(flatten)]
    request: RequestLabels,
    code: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    request_kind: &'static str,
}

/// `etcd_request_duration_seconds`' labels: the store operation and the resource
/// (`pods`, `deployments.apps`), as upstream's storage layer records them.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StorageLabels {
    operation: &'static str,
    r#type: &'static str,
}

/// `apiserver_terminated_watchers_total`'s labels, as upstream's cacher records them.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GroupResource {
    group: &'static str,
    resource: &'static str,
}

/// Gauges of the store's in-memory history, set at each scrape.
struct HistoryGauges {
    bytes: Gauge,
    events: Gauge,
    limit_bytes: Gauge,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResourceLabel {
    resource: String,
}

/// A resource as upstream's storage metrics name it: `pods`, `deployments.apps`.
fn storage_type(rt: &ResourceType) -> String {
    if rt.group.is_empty() {
        rt.plural.to_string()
    } else {
        format!("{}.{}", rt.plural, rt.group)
    }
}

/// Metrics text of another component in the process, rendered at each scrape.
pub type Source = Arc<dyn Fn() -> String + Send + Sync>;

/// The API server's metrics; shared by all of one server's routers.
pub struct ApiMetrics {
    registry: Registry,
    requests: Family<CodeLabels, Counter>,
    durations: Family<RequestLabels, Histogram, fn() -> Histogram>,
    /// readOnly, mutating.
    inflight: [Gauge; 2],
    storage: Family<ResourceLabel, Gauge>,
    storage_requests: Family<StorageLabels, Histogram, fn() -> Histogram>,
    /// Each resource type's `type` label, made once (keyed by the registry entry's address).
    storage_types: std::collections::HashMap<usize, &'static str>,
    /// By component name: a component started again (a replica leading again) replaces its
    /// own source instead of adding a second copy of its metrics.
    sources: RwLock<Vec<(&'static str, Source)>>,
    /// Uses of extended ServiceAccount tokens: before, and after, their `warnafter`.
    valid_tokens: Counter,
    stale_tokens: Counter,
    legacy_tokens: Counter,
    /// Watches ended because their reader fell behind the store's bound on their queue.
    terminated_watchers: Family<GroupResource, Counter>,
    history: HistoryGauges,
}

impl std::fmt::Debug for ApiMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiMetrics").finish_non_exhaustive()
    }
}

impl Default for ApiMetrics {
    fn default() -> Self {
        ApiMetrics::new()
    }
}

/// Counts a request in flight until dropped.
pub struct InFlight<'a>(Option<&'a Gauge>);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Some(g) = self.0 {
            g.dec();
        }
    }
}

impl ApiMetrics {
    /// Fresh metrics under upstream's names.
    pub fn new() -> ApiMetrics {
        let requests: Family<CodeLabels, Counter> = Family::default();
        let durations: Family<RequestLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(duration_histogram);
        let inflight_family: Family<KindLabel, Gauge> = Family::default();
        let inflight = ["readOnly", "mutating"].map(|k| {
            inflight_family
                .get_or_create(&KindLabel { request_kind: k })
                .clone()
        });
        let storage: Family<ResourceLabel, Gauge> = Family::default();
        let storage_requests: Family<StorageLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(duration_histogram);
        // One leaked name per registry entry: a bounded set, so labels need no allocation.
        let storage_types = registry::RESOURCES
            .iter()
            .map(|rt| {
                let name: &'static str = Box::leak(storage_type(rt).into_boxed_str());
                (rt as *const ResourceType as usize, name)
            })
            .collect();
        let mut registry = Registry::default();
        // prometheus-client adds `_total` to counters.
        registry.register(
            "apiserver_request",
            "Counter of apiserver requests broken out for each verb, group, version, resource, scope, component, and HTTP response code",
            requests.clone(),
        );
        registry.register(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, group, version, resource, subresource, scope and component",
            durations.clone(),
        );
        registry.register(
            "apiserver_current_inflight_requests",
            "Maximal number of currently used inflight request limit of this apiserver per request kind in last second",
            inflight_family,
        );
        registry.register(
            "apiserver_storage_objects",
            "Number of stored objects at the time of last check split by kind",
            storage.clone(),
        );
        registry.register(
            "etcd_request_duration_seconds",
            "Etcd request latency in seconds for each operation and object type.",
            storage_requests.clone(),
        );
        let valid_tokens = Counter::default();
        let stale_tokens = Counter::default();
        let legacy_tokens = Counter::default();
        registry.register(
            "serviceaccount_legacy_tokens",
            "Cumulative legacy service account tokens used",
            legacy_tokens.clone(),
        );
        registry.register(
            "serviceaccount_valid_tokens",
            "Cumulative valid projected service account tokens used",
            valid_tokens.clone(),
        );
        registry.register(
            "serviceaccount_stale_tokens",
            "Cumulative stale projected service account tokens used",
            stale_tokens.clone(),
        );
        let terminated_watchers: Family<GroupResource, Counter> = Family::default();
        registry.register(
            "apiserver_terminated_watchers",
            "Counter of watchers closed due to unresponsiveness broken by resource type.",
            terminated_watchers.clone(),
        );
        let history = HistoryGauges {
            bytes: Gauge::default(),
            events: Gauge::default(),
            limit_bytes: Gauge::default(),
        };
        registry.register(
            "berth_store_history_bytes",
            "Bytes of keys and values held in the store's in-memory history (what watches and paged lists from an older resourceVersion read)",
            history.bytes.clone(),
        );
        registry.register(
            "berth_store_history_events",
            "Changes held in the store's in-memory history",
            history.events.clone(),
        );
        registry.register(
            "berth_store_history_limit_bytes",
            "Bound on berth_store_history_bytes: past it the oldest changes are forgotten",
            history.limit_bytes.clone(),
        );
        ApiMetrics {
            registry,
            terminated_watchers,
            history,
            valid_tokens,
            stale_tokens,
            legacy_tokens,
            requests,
            durations,
            inflight,
            storage,
            storage_requests,
            storage_types,
            sources: RwLock::new(Vec::new()),
        }
    }

    /// Records one store operation (`get`, `list`, `create`, `update`, `delete`) on `rt`.
    pub fn storage_request(&self, operation: &'static str, rt: &ResourceType, took: Duration) {
        let Some(r#type) = self
            .storage_types
            .get(&(rt as *const ResourceType as usize))
            .copied()
        else {
            return;
        };
        self.storage_requests
            .get_or_create(&StorageLabels { operation, r#type })
            .observe(took.as_secs_f64());
    }

    /// Counts a request of `kind` as in flight until the guard is dropped: read-only and
    /// mutating ones under their `request_kind`; long-running ones (watches, exec, logs, ...)
    /// not at all, as upstream. The kind is known before routing, so a watch is never counted.
    pub fn start(&self, kind: RequestKind) -> InFlight<'_> {
        let g = match kind {
            RequestKind::LongRunning => return InFlight(None),
            RequestKind::ReadOnly => &self.inflight[0],
            RequestKind::Mutating => &self.inflight[1],
        };
        g.inc();
        InFlight(Some(g))
    }

    /// Records a finished request.
    pub fn observe(&self, labels: RequestLabels, code: u16, took: Duration) {
        self.requests
            .get_or_create(&CodeLabels {
                request: labels,
                code,
            })
            .inc();
        if !labels.long_running() {
            self.durations
                .get_or_create(&labels)
                .observe(took.as_secs_f64());
        }
    }

    /// Counts a watch of `rt` ended because its reader fell behind (upstream: a cacher's
    /// watcher whose buffer stayed full).
    pub fn watcher_terminated(&self, rt: &'static ResourceType) {
        self.terminated_watchers
            .get_or_create(&GroupResource {
                group: rt.group,
                resource: rt.plural,
            })
            .inc();
    }

    /// Counts one authentication with a legacy (Secret-kept) ServiceAccount token.
    pub fn legacy_service_account_token_used(&self) {
        self.legacy_tokens.inc();
    }

    /// Counts one authentication with an extended ServiceAccount token.
    pub fn service_account_token_used(&self, stale: bool) {
        if stale {
            self.stale_tokens.inc();
        } else {
            self.valid_tokens.inc();
        }
    }

    /// Adds the metrics of another component of the process, `name`, to every scrape, in
    /// place of any earlier source of that name.
    pub fn add_source(&self, name: &'static str, source: Source) {
        if let Ok(mut s) = self.sources.write() {
            match s.iter_mut().find(|(n, _)| *n == name) {
                Some(slot) => slot.1 = source,
                None => s.push((name, source)),
            }
        }
    }

    /// The text served at `/metrics`: the API server's, the process's, then each source's.
    pub fn render(&self, store: &Store) -> String {
        self.count_objects(store);
        if let Some(history) = store.history() {
            let gauge = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
            self.history.bytes.set(gauge(history.bytes));
            self.history.events.set(gauge(history.changes));
            self.history.limit_bytes.set(gauge(history.limit_bytes));
        }
        let mut out = String::new();
        if encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        strip_eof(&mut out);
        out.push_str(&process_metrics());
        if let Ok(sources) = self.sources.read() {
            for (_, source) in sources.iter() {
                let mut text = source();
                strip_eof(&mut text);
                out.push_str(&text);
            }
        }
        out.push_str("# EOF\n");
        out
    }

    fn count_objects(&self, store: &Store) {
        let mut seen = BTreeSet::new();
        for rt in registry::all() {
            let prefix = path::type_prefix(rt);
            if !seen.insert(prefix.clone()) {
                continue;
            }
            // Resources without storage of their own (reviews, bindings) have no keys.
            let Ok(found) = store.range(&prefix, None, 0, None) else {
                continue;
            };
            let resource = if rt.group.is_empty() {
                rt.plural.to_string()
            } else {
                format!("{}.{}", rt.plural, rt.group)
            };
            self.storage
                .get_or_create(&ResourceLabel { resource })
                .set(found.kvs.len() as i64);
        }
    }
}

/// Removes the `# EOF` line that ends one registry's text, so that several can be joined.
fn strip_eof(text: &mut String) {
    if let Some(at) = text.rfind("# EOF") {
        text.truncate(at);
    }
}

/// `process_*` metrics from `/proc/self` (Linux), as upstream's process collector names them;
/// nothing elsewhere.
fn process_metrics() -> String {
    let mut out = String::new();
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return out;
    };
    // Fields after the command name (which may hold spaces), from field 3 on.
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
        return out;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<f64>().ok());
    // Clock ticks per second: 100 on every Linux berth runs on.
    const TICKS: f64 = 100.0;
    const PAGE: f64 = 4096.0;
    if let (Some(utime), Some(stime)) = (field(14), field(15)) {
        out.push_str("# HELP process_cpu_seconds Total user and system CPU time spent in seconds.\n# TYPE process_cpu_seconds counter\n");
        out.push_str(&format!(
            "process_cpu_seconds_total {}\n",
            (utime + stime) / TICKS
        ));
    }
    if let Some(rss) = field(24) {
        out.push_str("# HELP process_resident_memory_bytes Resident memory size in bytes.\n# TYPE process_resident_memory_bytes gauge\n");
        out.push_str(&format!("process_resident_memory_bytes {}\n", rss * PAGE));
    }
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        out.push_str("# HELP process_open_fds Number of open file descriptors.\n# TYPE process_open_fds gauge\n");
        out.push_str(&format!("process_open_fds {}\n", fds.count()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Method;

    fn pods() -> &'static ResourceType {
        registry::find("", "v1", "pods").expect("pods are served")
    }

    #[test]
    fn a_request_is_counted_by_its_labels_and_code() {
        let m = ApiMetrics::new();
        let mut l = RequestLabels::non_resource(&Method::GET);
        l.resource(pods(), None, Some("default"), false);
        l.verb("LIST");
        {
            let _f = m.start(RequestKind::ReadOnly);
            assert!(m
                .render(&Store::memory())
                .contains("apiserver_current_inflight_requests{request_kind=\"readOnly\"} 1"));
        }
        m.observe(l, 200, Duration::from_millis(3));
        m.observe(l, 200, Duration::from_millis(3));
        let text = m.render(&Store::memory());
        assert!(text.contains("apiserver_request_total{verb=\"LIST\",group=\"\",version=\"v1\",resource=\"pods\",subresource=\"\",scope=\"namespace\",component=\"apiserver\",code=\"200\"} 2"), "{text}");
        assert!(
            text.contains("apiserver_request_duration_seconds_bucket{le=\"0.005\",verb=\"LIST\"")
                || text.contains("apiserver_request_duration_seconds_count{verb=\"LIST\""),
            "{text}"
        );
        assert!(text.contains("apiserver_current_inflight_requests{request_kind=\"readOnly\"} 0"));
        assert_eq!(text.matches("# EOF").count(), 1);
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn watches_are_counted_but_neither_timed_nor_in_flight() {
        let m = ApiMetrics::new();
        let mut l = RequestLabels::non_resource(&Method::GET);
        l.resource(pods(), None, None, false);
        l.verb("WATCH");
        let _f = m.start(RequestKind::LongRunning);
        m.observe(l, 200, Duration::from_secs(300));
        let text = m.render(&Store::memory());
        assert!(text.contains("verb=\"WATCH\""), "{text}");
        assert!(!text.contains("apiserver_request_duration_seconds_count{verb=\"WATCH\""));
        assert!(text.contains("apiserver_current_inflight_requests{request_kind=\"readOnly\"} 0"));
    }

    #[test]
    fn other_components_follow_with_one_eof() {
        let m = ApiMetrics::new();
        m.add_source("x", Arc::new(|| "# TYPE x gauge\nx 1\n# EOF\n".to_string()));
        let text = m.render(&Store::memory());
        assert!(text.contains("\nx 1\n"));
        assert_eq!(text.matches("# EOF").count(), 1);
    }

    #[test]
    fn a_component_started_again_replaces_its_metrics() {
        let m = ApiMetrics::new();
        m.add_source("x", Arc::new(|| "# TYPE x gauge\nx 1\n".to_string()));
        m.add_source("x", Arc::new(|| "# TYPE x gauge\nx 2\n".to_string()));
        let text = m.render(&Store::memory());
        assert!(!text.contains("\nx 1\n"), "{text}");
        assert_eq!(text.matches("# TYPE x gauge").count(), 1, "{text}");
    }

    #[tokio::test]
    async fn stored_objects_are_counted_per_resource() {
        let store = Store::memory();
        let key = path::key(pods(), Some("default"), "p");
        store
            .create(&key, bytes::Bytes::from_static(b"{}"))
            .await
            .expect("created");
        let text = ApiMetrics::new().render(&store);
        assert!(
            text.contains("apiserver_storage_objects{resource=\"pods\"} 1"),
            "{text}"
        );
        assert!(text.contains("apiserver_storage_objects{resource=\"deployments.apps\"} 0"));
    }

    #[tokio::test]
    async fn the_history_and_its_bound_are_gauges_and_terminated_watchers_a_counter() {
        let store = Store::memory();
        store
            .create("/registry/x", bytes::Bytes::from_static(b"0123456789"))
            .await
            .expect("created");
        let m = ApiMetrics::new();
        m.watcher_terminated(pods());
        m.watcher_terminated(pods());
        let text = m.render(&store);
        let bytes = std::mem::size_of::<berth_store::WatchEvent>() + "/registry/x".len() + 10;
        assert!(
            text.contains(&format!("berth_store_history_bytes {bytes}\n")),
            "{text}"
        );
        assert!(text.contains("berth_store_history_events 1\n"), "{text}");
        assert!(text.contains(&format!(
            "berth_store_history_limit_bytes {}\n",
            berth_store::HISTORY_BYTES
        )));
        assert!(
            text.contains("apiserver_terminated_watchers_total{group=\"\",resource=\"pods\"} 2"),
            "{text}"
        );
    }

    #[test]
    fn unknown_subresources_get_one_label_value() {
        assert_eq!(static_subresource("status"), "status");
        assert_eq!(static_subresource("whatever"), "other");
    }
}
