//! Upstream's `workqueue_*` metrics for controllers that run level-triggered passes.
//!
//! Upstream's controllers take keys one at a time from a work queue; berth's drivers instead
//! wake on a change and sync every object of their informers in one pass. The work queue's
//! vocabulary maps onto a pass as follows, so that the series mean what an administrator
//! reading upstream's dashboards expects:
//!
//! - **add**: each object a pass is about to sync (`workqueue_adds_total`);
//! - **depth**: the objects of the running pass not synced yet, plus those whose sync failed
//!   and wait for the next pass (`workqueue_depth`; 0 when idle);
//! - **queue duration**: from the start of the pass to the start of the object's sync, the
//!   time it waited behind the objects before it (`workqueue_queue_duration_seconds`);
//! - **work duration**: one object's sync, API calls included (`workqueue_work_duration_seconds`);
//! - **retry**: an object whose sync failed and is synced again by a later pass
//!   (`workqueue_retries_total`);
//! - **unfinished work** and **longest running processor**: how long the object being synced
//!   now has been at it (each driver is one worker, so the two are equal), read when scraped.
//!
//! Durations are read from the injected [`Clock`]'s monotonic instant, so a paused runtime
//! stops them too. Each queue is labelled `name` with upstream's queue name
//! (`deployment`, `replicaset`, `garbage_collector_attempt_to_delete`, ...).

use crate::Clock;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use tokio::time::Instant;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueName {
    name: String,
}

/// Upstream's buckets for both durations: `ExponentialBuckets(10e-7, 10, 10)`, 1µs to 1000s.
fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-6, 10.0, 10))
}

type Seconds = Gauge<f64, AtomicU64>;

/// The object each queue is syncing now, if any: when its sync started.
type InFlight = Arc<Mutex<Option<Instant>>>;

/// The seven families, registered once per process; [`WorkQueues::queue`] hands out one
/// queue's series.
#[derive(Clone)]
pub struct WorkQueues {
    depth: Family<QueueName, Gauge>,
    adds: Family<QueueName, Counter>,
    latency: Family<QueueName, Histogram, fn() -> Histogram>,
    work: Family<QueueName, Histogram, fn() -> Histogram>,
    unfinished: Family<QueueName, Seconds>,
    longest: Family<QueueName, Seconds>,
    retries: Family<QueueName, Counter>,
    /// Every queue's in-flight sync, to set the two gauges when scraped.
    in_flight: Arc<Mutex<Vec<(QueueName, InFlight, Clock)>>>,
}

impl std::fmt::Debug for WorkQueues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkQueues").finish_non_exhaustive()
    }
}

impl WorkQueues {
    /// The families, registered in `registry` under upstream's names and help texts
    /// (BETA), verbatim ([`crate::verbatim_help`]).
    pub fn register(registry: &mut Registry) -> WorkQueues {
        let q = WorkQueues {
            depth: Family::default(),
            adds: Family::default(),
            latency: Family::new_with_constructor(duration_histogram),
            work: Family::new_with_constructor(duration_histogram),
            unfinished: Family::default(),
            longest: Family::default(),
            retries: Family::default(),
            in_flight: Arc::default(),
        };
        crate::verbatim_help::register(
            registry,
            "workqueue_depth",
            "[BETA] Current depth of workqueue",
            q.depth.clone(),
        );
        // prometheus-client adds `_total` to counters.
        crate::verbatim_help::register(
            registry,
            "workqueue_adds",
            "[BETA] Total number of adds handled by workqueue",
            q.adds.clone(),
        );
        crate::verbatim_help::register(
            registry,
            "workqueue_queue_duration_seconds",
            "[BETA] How long in seconds an item stays in workqueue before being requested",
            q.latency.clone(),
        );
        crate::verbatim_help::register(
            registry,
            "workqueue_work_duration_seconds",
            "[BETA] How long in seconds processing an item from workqueue takes",
            q.work.clone(),
        );
        crate::verbatim_help::register(
            registry,
            "workqueue_unfinished_work_seconds",
            "[BETA] How many seconds of work has done that is in progress and hasn't been \
             observed by work_duration. Large values indicate stuck threads. One can deduce \
             the number of stuck threads by observing the rate at which this increases",
            q.unfinished.clone(),
        );
        crate::verbatim_help::register(
            registry,
            "workqueue_longest_running_processor_seconds",
            "[BETA] How many seconds has the longest running processor for workqueue been running",
            q.longest.clone(),
        );
        crate::verbatim_help::register(
            registry,
            "workqueue_retries",
            "[BETA] Total number of retries handled by workqueue",
            q.retries.clone(),
        );
        q
    }

    /// The queue named `name` (upstream's queue name), timed by `clock`. Its series appear at
    /// once, at zero, as upstream's do when a controller makes its queue.
    pub fn queue(&self, name: &str, clock: &Clock) -> Queue {
        let label = QueueName {
            name: name.to_string(),
        };
        let in_flight = InFlight::default();
        if let Ok(mut all) = self.in_flight.lock() {
            all.push((label.clone(), in_flight.clone(), clock.clone()));
        }
        self.unfinished.get_or_create(&label).set(0.0);
        self.longest.get_or_create(&label).set(0.0);
        Queue {
            depth: self.depth.get_or_create(&label).clone(),
            adds: self.adds.get_or_create(&label).clone(),
            latency: self.latency.get_or_create(&label).clone(),
            work: self.work.get_or_create(&label).clone(),
            retries: self.retries.get_or_create(&label).clone(),
            in_flight,
            clock: clock.clone(),
        }
    }

    /// Sets every queue's unfinished-work and longest-running gauges from its sync in flight;
    /// called before the metrics are encoded, as upstream refreshes them periodically.
    pub fn refresh(&self) {
        let Ok(all) = self.in_flight.lock() else {
            return;
        };
        for (label, in_flight, clock) in all.iter() {
            let started = in_flight.lock().ok().and_then(|s| *s);
            let secs = started.map_or(0.0, |s| {
                clock.instant().saturating_duration_since(s).as_secs_f64()
            });
            self.unfinished.get_or_create(label).set(secs);
            self.longest.get_or_create(label).set(secs);
        }
    }
}

/// One controller's queue: what its driver reports as its passes run.
#[derive(Clone)]
pub struct Queue {
    depth: Gauge,
    adds: Counter,
    latency: Histogram,
    work: Histogram,
    retries: Counter,
    in_flight: InFlight,
    clock: Clock,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue").finish_non_exhaustive()
    }
}

impl Queue {
    /// A pass that will sync `items` objects starts: each is one add, and all of them (the
    /// retried ones of the last pass among them) are the queue's depth.
    pub fn pass(&self, items: usize) -> Pass<'_> {
        self.adds.inc_by(items as u64);
        self.depth.set(items as i64);
        Pass {
            queue: self,
            started: self.clock.instant(),
            left: items,
        }
    }
}

/// A running pass; dropping it leaves in the depth only the objects that wait for a retry.
#[must_use = "a pass counts its objects as they are synced"]
pub struct Pass<'q> {
    queue: &'q Queue,
    started: Instant,
    left: usize,
}

impl<'q> Pass<'q> {
    /// The next object's sync starts: it leaves the queue (its wait since the pass started is
    /// observed) and is timed until the returned [`Work`] is dropped.
    pub fn take(&mut self) -> Work<'q> {
        let now = self.queue.clock.instant();
        if self.left > 0 {
            self.left -= 1;
            self.queue.depth.dec();
        }
        let waited = now.saturating_duration_since(self.started);
        self.queue.latency.observe(waited.as_secs_f64());
        if let Ok(mut s) = self.queue.in_flight.lock() {
            *s = Some(now);
        }
        Work {
            queue: self.queue,
            started: now,
        }
    }
}

impl Pass<'_> {
    /// `n` objects the pass checked without I/O and found needing nothing (the engine decided
    /// for all of them at once): each leaves the queue as a sync of no time.
    pub fn skip(&mut self, n: usize) {
        for _ in 0..n.min(self.left) {
            drop(self.take());
        }
    }
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        // Objects the pass did not reach are not waiting: the next pass lists them again.
        self.queue.depth.dec_by(self.left as i64);
    }
}

/// One object's sync; its duration is observed when it is dropped.
#[must_use = "the sync is timed until this is dropped"]
pub struct Work<'q> {
    queue: &'q Queue,
    started: Instant,
}

impl Work<'_> {
    /// The sync failed and the object is synced again by a later pass: one retry, and it
    /// waits in the queue until then.
    pub fn retry(&self) {
        self.queue.retries.inc();
        self.queue.depth.inc();
    }
}

impl Drop for Work<'_> {
    fn drop(&mut self) {
        let took = self
            .queue
            .clock
            .instant()
            .saturating_duration_since(self.started);
        self.queue.work.observe(took.as_secs_f64());
        if let Ok(mut s) = self.queue.in_flight.lock() {
            *s = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;
    use std::time::Duration;

    fn setup() -> (Registry, WorkQueues, Clock) {
        let mut registry = Registry::default();
        let queues = WorkQueues::register(&mut registry);
        (
            registry,
            queues,
            Clock::starting_at(berth_core::clock::earliest()),
        )
    }

    fn text(registry: &Registry) -> String {
        let mut out = String::new();
        encode(&mut out, registry).unwrap();
        out
    }

    #[tokio::test(start_paused = true)]
    async fn a_new_queue_shows_its_series_at_zero_under_upstream_names() {
        let (registry, queues, clock) = setup();
        let _q = queues.queue("deployment", &clock);
        let t = text(&registry);
        for line in [
            "workqueue_depth{name=\"deployment\"} 0",
            "workqueue_adds_total{name=\"deployment\"} 0",
            "workqueue_retries_total{name=\"deployment\"} 0",
            "workqueue_queue_duration_seconds_count{name=\"deployment\"} 0",
            "workqueue_work_duration_seconds_count{name=\"deployment\"} 0",
            "workqueue_unfinished_work_seconds{name=\"deployment\"} 0.0",
            "workqueue_longest_running_processor_seconds{name=\"deployment\"} 0.0",
        ] {
            assert!(t.contains(line), "{line} missing in\n{t}");
        }
        assert!(t.contains("# HELP workqueue_depth [BETA] Current depth of workqueue\n"));
    }

    #[tokio::test(start_paused = true)]
    async fn each_object_of_a_pass_is_one_add_and_one_sync() {
        let (registry, queues, clock) = setup();
        let q = queues.queue("replicaset", &clock);
        {
            let mut pass = q.pass(3);
            assert_eq!(q.depth.get(), 3);
            for left in [2, 1, 0] {
                let _work = pass.take();
                assert_eq!(q.depth.get(), left);
            }
        }
        let t = text(&registry);
        assert!(
            t.contains("workqueue_adds_total{name=\"replicaset\"} 3"),
            "{t}"
        );
        assert!(t.contains("workqueue_work_duration_seconds_count{name=\"replicaset\"} 3"));
        assert!(t.contains("workqueue_queue_duration_seconds_count{name=\"replicaset\"} 3"));
        assert!(t.contains("workqueue_depth{name=\"replicaset\"} 0"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_sync_is_a_retry_that_waits_in_the_queue_for_the_next_pass() {
        let (_registry, queues, clock) = setup();
        let q = queues.queue("job", &clock);
        {
            let mut pass = q.pass(2);
            pass.take().retry();
            let _ok = pass.take();
        }
        assert_eq!(q.retries.get(), 1);
        assert_eq!(q.depth.get(), 1);
        // The next pass lists the retried object with the others.
        drop(q.pass(2));
        assert_eq!(q.depth.get(), 0);
        assert_eq!(q.adds.get(), 4);
    }

    #[tokio::test(start_paused = true)]
    async fn objects_found_current_are_synced_at_once() {
        let (registry, queues, clock) = setup();
        let q = queues.queue("endpoint", &clock);
        {
            let mut pass = q.pass(3);
            pass.skip(2);
            assert_eq!(q.depth.get(), 1);
            // Never more than the pass holds.
            pass.skip(5);
            assert_eq!(q.depth.get(), 0);
        }
        assert_eq!(q.adds.get(), 3);
        let t = text(&registry);
        assert!(
            t.contains("workqueue_work_duration_seconds_count{name=\"endpoint\"} 3"),
            "{t}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn objects_a_pass_did_not_reach_leave_the_depth() {
        let (_registry, queues, clock) = setup();
        let q = queues.queue("statefulset", &clock);
        {
            let mut pass = q.pass(5);
            let _ = pass.take();
        }
        assert_eq!(q.depth.get(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn durations_follow_the_injected_clock() {
        let (_registry, queues, clock) = setup();
        let q = queues.queue("daemonset", &clock);
        let mut pass = q.pass(2);
        drop(pass.take());
        tokio::time::advance(Duration::from_secs(2)).await;
        let work = pass.take();
        tokio::time::advance(Duration::from_secs(3)).await;
        // While the second object syncs, the scrape sees 3s of unfinished work.
        queues.refresh();
        let label = QueueName {
            name: "daemonset".into(),
        };
        assert_eq!(queues.unfinished.get_or_create(&label).get(), 3.0);
        assert_eq!(queues.longest.get_or_create(&label).get(), 3.0);
        drop(work);
        drop(pass);
        queues.refresh();
        assert_eq!(queues.unfinished.get_or_create(&label).get(), 0.0);
        // Waits: 0s and 2s; syncs: 0s and 3s.
        let mut registry = Registry::default();
        registry.register("latency", "", q.latency.clone());
        registry.register("work", "", q.work.clone());
        let t = text(&registry);
        assert!(t.contains("latency_sum 2.0"), "{t}");
        assert!(t.contains("work_sum 3.0"), "{t}");
    }
}
