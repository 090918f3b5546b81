//! The controllers' Prometheus metrics, under upstream's names: the node lifecycle
//! controller's `node_collector_zone_health`, `node_collector_zone_size`,
//! `node_collector_unhealthy_nodes_in_zone` and `node_collector_evictions_total` (one per
//! zone) and the taint manager's `taint_eviction_controller_pod_deletions_total`. berth's
//! `berth_control_loop_restarts_total{loop}` is counted by the loops' supervisor in a
//! [`LoopHealth`] (one per process, shared by every component's loops) and served next to
//! these by [`serve`] in `berth controllers`. The controllers' passes report upstream's
//! `workqueue_*` series, one queue per controller ([`crate::workqueue`]).
//!
//! The engines count nothing themselves: their drivers report what the engines decided.

use berth_core::loop_health::LoopHealth;
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ZoneLabel {
    zone: String,
}

/// One zone as the last monitor pass counted it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneCount {
    /// The zone key (`region:zone`, `zone`, or empty for nodes without zone labels).
    pub zone: String,
    /// Nodes in the zone.
    pub size: usize,
    /// Nodes whose Ready condition is not `True`.
    pub unhealthy: usize,
}

impl ZoneCount {
    /// Upstream's zone health: the percentage of the zone's nodes that are healthy.
    pub fn health(&self) -> f64 {
        if self.size == 0 {
            return 100.0;
        }
        100.0 * (self.size - self.unhealthy) as f64 / self.size as f64
    }
}

struct Inner {
    registry: Registry,
    zone_health: Family<ZoneLabel, Gauge<f64, AtomicU64>>,
    zone_size: Family<ZoneLabel, Gauge>,
    unhealthy: Family<ZoneLabel, Gauge>,
    evictions: Family<ZoneLabel, Counter>,
    pod_deletions: Counter,
    queues: crate::workqueue::WorkQueues,
}

/// The controllers' metrics; cloning shares them.
#[derive(Clone)]
pub struct ControllerMetrics {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ControllerMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerMetrics").finish_non_exhaustive()
    }
}

impl Default for ControllerMetrics {
    fn default() -> Self {
        ControllerMetrics::new()
    }
}

impl ControllerMetrics {
    /// Fresh metrics, registered under upstream's names and help texts (verbatim: see
    /// [`crate::verbatim_help`]).
    pub fn new() -> ControllerMetrics {
        let zone_health: Family<ZoneLabel, Gauge<f64, AtomicU64>> = Family::default();
        let zone_size: Family<ZoneLabel, Gauge> = Family::default();
        let unhealthy: Family<ZoneLabel, Gauge> = Family::default();
        let evictions: Family<ZoneLabel, Counter> = Family::default();
        let pod_deletions = Counter::default();
        let mut registry = Registry::default();
        crate::verbatim_help::register(
            &mut registry,
            "node_collector_zone_health",
            "[ALPHA] Gauge measuring percentage of healthy nodes per zone.",
            zone_health.clone(),
        );
        crate::verbatim_help::register(
            &mut registry,
            "node_collector_zone_size",
            "[ALPHA] Gauge measuring number of registered Nodes per zones.",
            zone_size.clone(),
        );
        crate::verbatim_help::register(
            &mut registry,
            "node_collector_unhealthy_nodes_in_zone",
            "[ALPHA] Gauge measuring number of not Ready Nodes per zones.",
            unhealthy.clone(),
        );
        // prometheus-client adds `_total` to counters.
        crate::verbatim_help::register(
            &mut registry,
            "node_collector_evictions",
            "[STABLE] Number of Node evictions that happened since current instance of NodeController started.",
            evictions.clone(),
        );
        crate::verbatim_help::register(
            &mut registry,
            "taint_eviction_controller_pod_deletions",
            "[ALPHA] Total number of Pods deleted by TaintEvictionController since its start.",
            pod_deletions.clone(),
        );
        let queues = crate::workqueue::WorkQueues::register(&mut registry);
        ControllerMetrics {
            inner: Arc::new(Inner {
                queues,
                registry,
                zone_health,
                zone_size,
                unhealthy,
                evictions,
                pod_deletions,
            }),
        }
    }

    /// Sets the zone gauges from a monitor pass; zones no longer seen are dropped.
    pub fn zones(&self, zones: &[ZoneCount]) {
        let i = &self.inner;
        for family in [&i.zone_size, &i.unhealthy] {
            family.clear();
        }
        i.zone_health.clear();
        for z in zones {
            let label = ZoneLabel {
                zone: z.zone.clone(),
            };
            i.zone_size.get_or_create(&label).set(z.size as i64);
            i.unhealthy.get_or_create(&label).set(z.unhealthy as i64);
            i.zone_health.get_or_create(&label).set(z.health());
        }
    }

    /// Counts a node tainted `NoExecute` for failing (upstream counts these as evictions).
    pub fn eviction(&self, zone: &str) {
        self.inner
            .evictions
            .get_or_create(&ZoneLabel {
                zone: zone.to_string(),
            })
            .inc();
    }

    /// Counts a pod the taint manager deleted.
    pub fn pod_deleted(&self) {
        self.inner.pod_deletions.inc();
    }

    /// The work queue named `name` (upstream's queue name), timed by `clock`: what a
    /// controller's driver reports its passes to ([`crate::workqueue`]).
    pub fn queue(&self, name: &str, clock: &crate::Clock) -> crate::workqueue::Queue {
        self.inner.queues.queue(name, clock)
    }

    /// The metrics in the Prometheus text format (ends with `# EOF`).
    pub fn render(&self) -> String {
        self.inner.queues.refresh();
        let mut out = String::new();
        if encode(&mut out, &self.inner.registry).is_err() {
            out.clear();
        }
        out
    }
}

/// The controllers' metrics followed by the loops' restart counts, as one text ending with
/// `# EOF`.
pub fn render_with_loops(metrics: &ControllerMetrics, loops: &LoopHealth) -> String {
    let mut out = metrics.render();
    if let Some(at) = out.rfind("# EOF") {
        out.truncate(at);
    }
    out.push_str(&loops.render_metrics());
    // The controllers are the process: its clients' requests are theirs.
    out.push_str(&berth_core::client_metrics::render());
    out.push_str("# EOF\n");
    out
}

/// Serves `/metrics`, `/healthz` and `/readyz` over plain HTTP on `listener` (`berth
/// controllers --metrics-bind-address`) until the process ends. `/metrics` adds the restart
/// counts in `loops`; `/readyz` fails, naming them, while any loop is down.
pub async fn serve(
    listener: tokio::net::TcpListener,
    metrics: ControllerMetrics,
    loops: LoopHealth,
) -> std::io::Result<()> {
    use axum::http::{header, StatusCode};
    use axum::routing::get;
    let render = {
        let loops = loops.clone();
        move |headers: axum::http::HeaderMap| {
            let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
            let format = berth_core::exposition::Format::negotiate(accept);
            let text = format.write(render_with_loops(&metrics, &loops));
            async move { ([(header::CONTENT_TYPE, format.content_type())], text) }
        }
    };
    let readyz = move || {
        let failing = loops.failing();
        async move {
            if failing.is_empty() {
                (StatusCode::OK, "ok".to_string())
            } else {
                let names = failing.join(", ");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("control loops down: {names}"),
                )
            }
        }
    };
    let app = axum::Router::new()
        .route("/metrics", get(render))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz));
    axum::serve(listener, app).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_are_reported_as_upstream_names_them() {
        let m = ControllerMetrics::new();
        m.zones(&[ZoneCount {
            zone: "zone-a".into(),
            size: 4,
            unhealthy: 3,
        }]);
        m.eviction("zone-a");
        m.pod_deleted();
        let text = m.render();
        for line in [
            "node_collector_zone_size{zone=\"zone-a\"} 4",
            "node_collector_unhealthy_nodes_in_zone{zone=\"zone-a\"} 3",
            "node_collector_zone_health{zone=\"zone-a\"} 25.0",
            "node_collector_evictions_total{zone=\"zone-a\"} 1",
            "taint_eviction_controller_pod_deletions_total 1",
            // Upstream's help, with its stability and its one period.
            "# HELP node_collector_zone_size [ALPHA] Gauge measuring number of registered Nodes per zones.\n",
        ] {
            assert!(text.contains(line), "{line} missing in\n{text}");
        }
        // A zone that is gone is no longer reported.
        m.zones(&[]);
        assert!(!m.render().contains("node_collector_zone_size{"));
    }

    #[test]
    fn the_loops_restart_counts_are_served_with_the_controllers_metrics() {
        let m = ControllerMetrics::new();
        let loops = LoopHealth::new();
        loops.restarted("taint-manager");
        let text = render_with_loops(&m, &loops);
        assert!(text.contains("berth_control_loop_restarts_total{loop=\"taint-manager\"} 1\n"));
        assert!(text.contains("taint_eviction_controller_pod_deletions_total 0"));
        assert_eq!(text.matches("# EOF").count(), 1);
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn an_empty_zone_counts_as_healthy() {
        let z = ZoneCount {
            zone: String::new(),
            size: 0,
            unhealthy: 0,
        };
        assert_eq!(z.health(), 100.0);
    }
}
