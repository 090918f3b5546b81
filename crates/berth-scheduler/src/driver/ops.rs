//! Operations: the scheduler's Prometheus metrics (upstream names) and the plain-HTTP
//! `/metrics`, `/healthz` and `/readyz` endpoints.

use berth_core::loop_health::LoopHealth;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

type Labels = Vec<(String, String)>;
type HistogramFamily = Family<Labels, Histogram, fn() -> Histogram>;

/// Upstream's buckets for scheduling latencies: 1ms doubling 15 times (~16s).
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

/// Upstream's buckets for one plugin call: 10µs growing by 1.5 twenty times (~22ms).
fn plugin_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.00001, 1.5, 20))
}

/// Upstream samples plugin durations in this share of its scheduling cycles (percent).
pub const PLUGIN_METRICS_SAMPLE_PERCENT: u64 = 10;

/// A metric registered with its `# HELP` text written as given: prometheus-client's registry
/// ends every help text with a period, upstream's end as their authors wrote them (with the
/// stability prefix component-base adds, `[STABLE] `, `[ALPHA] `). As a collector, the metric
/// writes its own descriptor; it comes after the registry's other metrics.
#[derive(Debug)]
struct VerbatimHelp<M> {
    name: &'static str,
    help: &'static str,
    metric: M,
}

impl<M> prometheus_client::collector::Collector for VerbatimHelp<M>
where
    M: prometheus_client::encoding::EncodeMetric + std::fmt::Debug + Send + Sync + 'static,
{
    fn encode(
        &self,
        mut encoder: prometheus_client::encoding::DescriptorEncoder,
    ) -> Result<(), std::fmt::Error> {
        if self.metric.is_empty() {
            return Ok(());
        }
        let metric =
            encoder.encode_descriptor(self.name, self.help, None, self.metric.metric_type())?;
        self.metric.encode(metric)
    }
}

/// Registers `metric` as `name` (a counter without `_total`) with upstream's `help`, verbatim.
fn register<M>(registry: &mut Registry, name: &'static str, help: &'static str, metric: M)
where
    M: prometheus_client::encoding::EncodeMetric + std::fmt::Debug + Send + Sync + 'static,
{
    registry.register_collector(Box::new(VerbatimHelp { name, help, metric }));
}

fn labels(key: &str, value: &str) -> Labels {
    vec![(key.to_string(), value.to_string())]
}

/// Upstream's label order: `profile`, then `result`.
fn profile_result(profile: &str, result: AttemptResult) -> Labels {
    vec![
        ("profile".to_string(), profile.to_string()),
        ("result".to_string(), result.label().to_string()),
    ]
}

/// How one scheduling attempt ended (the `result` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptResult {
    /// A node was selected (and binding started).
    Scheduled,
    /// No node fits.
    Unschedulable,
    /// The attempt failed (engine or binding error).
    Error,
}

impl AttemptResult {
    const ALL: [AttemptResult; 3] = [
        AttemptResult::Scheduled,
        AttemptResult::Unschedulable,
        AttemptResult::Error,
    ];

    fn label(self) -> &'static str {
        match self {
            AttemptResult::Scheduled => "scheduled",
            AttemptResult::Unschedulable => "unschedulable",
            AttemptResult::Error => "error",
        }
    }
}

/// The scheduler's metrics; cloning shares them.
#[derive(Clone)]
struct Metrics {
    e2e: Histogram,
    /// Attempts a pod took to be scheduled (upstream's buckets 1, 2, 4, 8, 16).
    pod_attempts: Histogram,
    attempt: HistogramFamily,
    pending: Family<Labels, Gauge>,
    attempts: Family<Labels, Counter>,
    preemption: Counter,
    /// `scheduler_plugin_execution_duration_seconds{plugin,extension_point,status}`.
    plugin: HistogramFamily,
    /// Active, backoff, unschedulable.
    pending_by_queue: [Gauge; 3],
}

/// One profile's attempt series (counter and latency per [`AttemptResult`], in its order),
/// looked up once so an attempt costs no label lookup.
type ProfileSeries = [(Counter, Histogram); 3];

struct Inner {
    registry: Registry,
    metrics: Metrics,
    synced: AtomicBool,
    leading: AtomicBool,
    /// The process's supervised loops, when this scheduler is the process (`berth scheduler`):
    /// their restarts are served with these metrics and a loop that is down fails `/readyz`.
    loops: Option<LoopHealth>,
}

/// Shared operational state of one scheduler: metrics, informer sync and leadership.
/// Cloning shares it. [`Ops::for_profile`] binds a clone to one profile, whose name the attempt
/// metrics carry in their `profile` label, as upstream's.
#[derive(Clone)]
pub struct Ops {
    inner: Arc<Inner>,
    /// The profile's series; unbound, attempts count under the profile `default-scheduler`.
    profile: Option<Arc<ProfileSeries>>,
}

impl Default for Ops {
    fn default() -> Self {
        Ops::new()
    }
}

impl Ops {
    /// Fresh metrics, registered under upstream's names; every label value starts at 0.
    pub fn new() -> Ops {
        Ops::build(None)
    }

    /// Fresh metrics that also serve `loops`' restart counts, with a `/readyz` that fails
    /// while one of them is down: for a process whose only component is this scheduler.
    pub fn with_loops(loops: LoopHealth) -> Ops {
        Ops::build(Some(loops))
    }

    fn build(loops: Option<LoopHealth>) -> Ops {
        let attempt: HistogramFamily = Family::new_with_constructor(latency_histogram);
        let attempts: Family<Labels, Counter> = Family::default();
        let pending: Family<Labels, Gauge> = Family::default();
        // Every label value exists from the start (at 0); a profile's, once it is bound.
        let pending_by_queue = ["active", "backoff", "unschedulable"]
            .map(|q| pending.get_or_create(&labels("queue", q)).clone());
        let metrics = Metrics {
            e2e: latency_histogram(),
            pod_attempts: Histogram::new(exponential_buckets(1.0, 2.0, 5)),
            attempt,
            pending,
            attempts,
            preemption: Counter::default(),
            plugin: Family::new_with_constructor(plugin_histogram),
            pending_by_queue,
        };
        let mut registry = Registry::default();
        // Upstream's help texts (pkg/scheduler/metrics), verbatim.
        register(
            &mut registry,
            "scheduler_e2e_scheduling_duration_seconds",
            // Upstream dropped it after 1.22; its text until then.
            "[ALPHA] E2e scheduling latency in seconds (scheduling algorithm + binding)",
            metrics.e2e.clone(),
        );
        register(
            &mut registry,
            "scheduler_pod_scheduling_attempts",
            "[STABLE] Number of attempts to successfully schedule a pod.",
            metrics.pod_attempts.clone(),
        );
        register(
            &mut registry,
            "scheduler_scheduling_attempt_duration_seconds",
            "[STABLE] Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            metrics.attempt.clone(),
        );
        register(
            &mut registry,
            "scheduler_pending_pods",
            "[STABLE] Number of pending pods, by the queue type. 'active' means number of pods in \
             activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number \
             of pods in unschedulablePods that the scheduler attempted to schedule and failed; \
             'gated' is the number of unschedulable pods that the scheduler never attempted to \
             schedule because they are gated.",
            metrics.pending.clone(),
        );
        register(
            &mut registry,
            "scheduler_schedule_attempts",
            "[STABLE] Number of attempts to schedule pods, by the result. 'unschedulable' means \
             a pod could not be scheduled, while 'error' means an internal scheduler problem.",
            metrics.attempts.clone(),
        );
        register(
            &mut registry,
            "scheduler_preemption_attempts",
            "[STABLE] Total preemption attempts in the cluster till now",
            metrics.preemption.clone(),
        );
        register(
            &mut registry,
            "scheduler_plugin_execution_duration_seconds",
            "[ALPHA] Duration for running a plugin at a specific extension point.",
            metrics.plugin.clone(),
        );
        Ops {
            inner: Arc::new(Inner {
                registry,
                metrics,
                synced: AtomicBool::new(false),
                leading: AtomicBool::new(false),
                loops,
            }),
            profile: None,
        }
    }

    /// These metrics, with the attempts of `profile` (a scheduler name) counted under its
    /// `profile` label; its series exist (at 0) from now on.
    pub fn for_profile(&self, profile: &str) -> Ops {
        let m = &self.inner.metrics;
        let series = AttemptResult::ALL.map(|r| {
            let l = profile_result(profile, r);
            (
                m.attempts.get_or_create(&l).clone(),
                m.attempt.get_or_create(&l).clone(),
            )
        });
        Ops {
            inner: self.inner.clone(),
            profile: Some(Arc::new(series)),
        }
    }

    /// Records one scheduling attempt: how it ended and how long the algorithm took.
    pub fn attempt(&self, result: AttemptResult, took: Duration) {
        let i = AttemptResult::ALL
            .iter()
            .position(|r| *r == result)
            .unwrap_or(0);
        let record = |(counter, histogram): &(Counter, Histogram)| {
            counter.inc();
            histogram.observe(took.as_secs_f64());
        };
        match &self.profile {
            Some(series) => record(&series[i]),
            None => {
                let m = &self.inner.metrics;
                let l = profile_result("default-scheduler", result);
                record(&(
                    m.attempts.get_or_create(&l).clone(),
                    m.attempt.get_or_create(&l).clone(),
                ));
            }
        }
    }

    /// Records a pod scheduled at its `attempts`-th attempt.
    pub fn scheduled_at_attempt(&self, attempts: u32) {
        self.inner.metrics.pod_attempts.observe(f64::from(attempts));
    }

    /// Records a pod scheduled and bound, `took` from the start of its attempt.
    pub fn scheduled_e2e(&self, took: Duration) {
        self.inner.metrics.e2e.observe(took.as_secs_f64());
    }

    /// Sets the pending pods per queue.
    pub fn pending(&self, active: usize, backoff: usize, unschedulable: usize) {
        let [a, b, u] = &self.inner.metrics.pending_by_queue;
        a.set(active as i64);
        b.set(backoff as i64);
        u.set(unschedulable as i64);
    }

    /// Records the plugin calls a sampled scheduling cycle timed.
    pub fn plugin_samples(&self, samples: &[crate::PluginSample]) {
        let family = &self.inner.metrics.plugin;
        // A cycle has a few dozen label sets and thousands of calls: each set is looked up
        // (and its labels allocated) once.
        let mut series: Vec<((&str, &str, &str), Histogram)> = Vec::new();
        for s in samples {
            let key = (&*s.plugin, s.extension_point, s.status);
            let at = match series.iter().position(|(k, _)| *k == key) {
                Some(at) => at,
                None => {
                    let l = vec![
                        ("plugin".to_string(), key.0.to_string()),
                        ("extension_point".to_string(), key.1.to_string()),
                        ("status".to_string(), key.2.to_string()),
                    ];
                    series.push((key, family.get_or_create(&l).clone()));
                    series.len() - 1
                }
            };
            series[at].1.observe(s.duration.as_secs_f64());
        }
    }

    /// Counts one preemption attempt.
    pub fn preemption_attempt(&self) {
        self.inner.metrics.preemption.inc();
    }

    /// Marks the informers' initial lists as done.
    pub fn set_synced(&self) {
        self.inner.synced.store(true, Ordering::SeqCst);
    }

    /// Whether the informers' initial lists are done.
    pub fn synced(&self) -> bool {
        self.inner.synced.load(Ordering::SeqCst)
    }

    /// Notes whether this instance currently leads (informational; `/readyz` is ok either way).
    pub fn set_leading(&self, leading: bool) {
        self.inner.leading.store(leading, Ordering::SeqCst);
    }

    /// The metrics in the Prometheus/OpenMetrics text format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if encode(&mut out, &self.inner.registry).is_err() {
            out.clear();
        }
        if let Some(loops) = &self.inner.loops {
            if let Some(at) = out.rfind("# EOF") {
                out.truncate(at);
            }
            out.push_str(&loops.render_metrics());
            // This scheduler is the process: its clients' requests are its own.
            out.push_str(&berth_core::client_metrics::render());
            out.push_str("# EOF\n");
        }
        out
    }

    fn readyz(&self) -> (u16, String) {
        if let Some(loops) = &self.inner.loops {
            let failing = loops.failing();
            if !failing.is_empty() {
                return (500, format!("control loops down: {}", failing.join(", ")));
            }
        }
        let leader = if self.inner.leading.load(Ordering::SeqCst) {
            "leading"
        } else {
            "not leading"
        };
        if self.synced() {
            (200, format!("ok ({leader})"))
        } else {
            (500, "informers not synced yet".to_string())
        }
    }
}

/// Serves `/metrics`, `/healthz` and `/readyz` over plain HTTP on `listener` until the process
/// ends.
pub async fn serve(listener: tokio::net::TcpListener, ops: Ops) -> std::io::Result<()> {
    use axum::http::{header, StatusCode};
    use axum::routing::get;
    let metrics = {
        let ops = ops.clone();
        move |headers: axum::http::HeaderMap| {
            let ops = ops.clone();
            async move {
                let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
                let format = berth_core::exposition::Format::negotiate(accept);
                (
                    [(header::CONTENT_TYPE, format.content_type())],
                    format.write(ops.render()),
                )
            }
        }
    };
    let readyz = move || {
        let ops = ops.clone();
        async move {
            let (code, body) = ops.readyz();
            (StatusCode::from_u16(code).unwrap_or(StatusCode::OK), body)
        }
    };
    let app = axum::Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok" }))
        .route("/livez", get(|| async { "ok" }))
        .route("/readyz", get(readyz));
    axum::serve(listener, app).await
}

#[cfg(test)]
mod tests {
    use super::{AttemptResult, Ops};
    use std::time::Duration;

    #[test]
    fn metrics_carry_upstream_names_and_start_at_zero() {
        let ops = Ops::new().for_profile("default-scheduler");
        let text = ops.render();
        for line in [
            "scheduler_schedule_attempts_total{profile=\"default-scheduler\",result=\"scheduled\"} 0",
            "scheduler_schedule_attempts_total{profile=\"default-scheduler\",result=\"unschedulable\"} 0",
            "scheduler_schedule_attempts_total{profile=\"default-scheduler\",result=\"error\"} 0",
            "scheduler_pending_pods{queue=\"active\"} 0",
            "scheduler_pending_pods{queue=\"backoff\"} 0",
            "scheduler_pending_pods{queue=\"unschedulable\"} 0",
            "scheduler_preemption_attempts_total 0",
            "scheduler_e2e_scheduling_duration_seconds_count 0",
            "scheduler_pod_scheduling_attempts_count 0",
        ] {
            assert!(text.contains(line), "{line} missing in\n{text}");
        }
    }

    #[test]
    fn sampled_plugin_calls_are_observed_under_upstream_labels() {
        let ops = Ops::new();
        let call = |plugin: &str, point, status, micros| crate::PluginSample {
            plugin: plugin.into(),
            extension_point: point,
            status,
            duration: Duration::from_micros(micros),
        };
        ops.plugin_samples(&[
            call("NodeResourcesFit", "Filter", "Success", 5),
            call(
                "TaintToleration",
                "Filter",
                "UnschedulableAndUnresolvable",
                5,
            ),
            call("NodeResourcesFit", "Filter", "Success", 50),
            call("NodeResourcesFit", "Score", "Success", 5),
        ]);
        let text = ops.render();
        for line in [
            "# HELP scheduler_plugin_execution_duration_seconds [ALPHA] Duration for running a plugin at a specific extension point.\n",
            "# HELP scheduler_preemption_attempts [STABLE] Total preemption attempts in the cluster till now\n",
            "scheduler_plugin_execution_duration_seconds_count{plugin=\"NodeResourcesFit\",extension_point=\"Filter\",status=\"Success\"} 2",
            "scheduler_plugin_execution_duration_seconds_count{plugin=\"TaintToleration\",extension_point=\"Filter\",status=\"UnschedulableAndUnresolvable\"} 1",
            "scheduler_plugin_execution_duration_seconds_count{plugin=\"NodeResourcesFit\",extension_point=\"Score\",status=\"Success\"} 1",
        ] {
            assert!(text.contains(line), "{line} missing in\n{text}");
        }
        // Upstream's buckets: 10µs times 1.5, twenty of them (and +Inf).
        let buckets = text
            .lines()
            .filter(|l| {
                l.starts_with("scheduler_plugin_execution_duration_seconds_bucket{")
                    && l.contains("extension_point=\"Score\"")
            })
            .count();
        assert_eq!(buckets, 21);
    }

    #[test]
    fn attempts_pending_and_latencies_are_recorded() {
        let ops = Ops::new().for_profile("default-scheduler");
        ops.attempt(AttemptResult::Unschedulable, Duration::from_millis(3));
        ops.attempt(AttemptResult::Unschedulable, Duration::from_millis(3));
        ops.scheduled_e2e(Duration::from_millis(20));
        ops.pending(1, 2, 3);
        let text = ops.render();
        for line in [
            "scheduler_schedule_attempts_total{profile=\"default-scheduler\",result=\"unschedulable\"} 2",
            "scheduler_scheduling_attempt_duration_seconds_count{profile=\"default-scheduler\",result=\"unschedulable\"} 2",
            "scheduler_e2e_scheduling_duration_seconds_count 1",
            "scheduler_pending_pods{queue=\"backoff\"} 2",
            "scheduler_pending_pods{queue=\"unschedulable\"} 3",
        ] {
            assert!(text.contains(line), "{line} missing in\n{text}");
        }
    }

    #[test]
    fn each_profile_counts_its_attempts_under_its_name() {
        let ops = Ops::new();
        let default = ops.for_profile("default-scheduler");
        let custom = ops.for_profile("custom-scheduler");
        default.attempt(AttemptResult::Scheduled, Duration::from_millis(1));
        custom.attempt(AttemptResult::Scheduled, Duration::from_millis(1));
        custom.attempt(AttemptResult::Error, Duration::from_millis(1));
        // One registry: every profile in one scrape.
        let text = ops.render();
        for line in [
            "scheduler_schedule_attempts_total{profile=\"default-scheduler\",result=\"scheduled\"} 1",
            "scheduler_schedule_attempts_total{profile=\"custom-scheduler\",result=\"scheduled\"} 1",
            "scheduler_schedule_attempts_total{profile=\"custom-scheduler\",result=\"error\"} 1",
            "scheduler_schedule_attempts_total{profile=\"default-scheduler\",result=\"error\"} 0",
        ] {
            assert!(text.contains(line), "{line} missing in\n{text}");
        }
    }

    #[test]
    fn ready_once_synced_whether_leading_or_not() {
        let ops = Ops::new();
        assert_eq!(ops.readyz().0, 500);
        ops.set_synced();
        assert_eq!(ops.readyz(), (200, "ok (not leading)".to_string()));
        ops.set_leading(true);
        assert_eq!(ops.readyz(), (200, "ok (leading)".to_string()));
    }

    #[test]
    fn with_loops_a_loop_down_fails_readyz_and_restarts_are_served() {
        let loops = berth_core::loop_health::LoopHealth::new();
        let ops = Ops::with_loops(loops.clone());
        ops.set_synced();
        loops.down("scheduler");
        loops.restarted("scheduler");
        assert_eq!(
            ops.readyz(),
            (500, "control loops down: scheduler".to_string())
        );
        let text = ops.render();
        assert!(text.contains("berth_control_loop_restarts_total{loop=\"scheduler\"} 1\n"));
        assert_eq!(text.matches("# EOF").count(), 1);
        loops.up("scheduler");
        assert_eq!(ops.readyz().0, 200);
    }
}
