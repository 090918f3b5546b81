//! Registering a metric whose `# HELP` text is written exactly as given.
//!
//! prometheus-client ends every help text a metric is registered with by a period (its
//! registry's descriptor appends one), where upstream's texts end as their authors wrote them:
//! the work queue's without one, the node collector's with one (which came out doubled). A
//! metric registered here is a collector that writes its own descriptor, with the text as
//! given, so the `# HELP` line is upstream's, byte for byte. It is encoded after the registry's
//! other metrics; an empty family (no series yet) is left out, as the registry leaves it out.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::registry::Registry;

#[derive(Debug)]
struct Verbatim<M> {
    name: String,
    help: String,
    metric: M,
}

impl<M> Collector for Verbatim<M>
where
    M: EncodeMetric + std::fmt::Debug + Send + Sync + 'static,
{
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        if self.metric.is_empty() {
            return Ok(());
        }
        let metric =
            encoder.encode_descriptor(&self.name, &self.help, None, self.metric.metric_type())?;
        self.metric.encode(metric)
    }
}

/// Registers `metric` as `name` (a counter without its `_total`, which the encoder adds) with
/// the help text `help`, verbatim.
pub(crate) fn register<M>(registry: &mut Registry, name: &str, help: &str, metric: M)
where
    M: EncodeMetric + std::fmt::Debug + Send + Sync + 'static,
{
    registry.register_collector(Box::new(Verbatim {
        name: name.to_string(),
        help: help.to_string(),
        metric,
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;
    use prometheus_client::metrics::counter::Counter;
    use prometheus_client::metrics::family::Family;

    #[test]
    fn the_help_text_is_written_as_given_and_a_counter_keeps_its_total() {
        let mut registry = Registry::default();
        let c: Counter = Counter::default();
        c.inc();
        register(
            &mut registry,
            "workqueue_adds",
            "[BETA] Total number of adds handled by workqueue",
            c,
        );
        let zone: Counter = Counter::default();
        register(
            &mut registry,
            "zone",
            "Gauge measuring number of registered Nodes per zones.",
            zone,
        );
        let empty: Family<Vec<(String, String)>, Counter> = Family::default();
        register(&mut registry, "unused", "Never shown", empty);
        let mut out = String::new();
        encode(&mut out, &registry).unwrap();
        assert!(
            out.contains(
                "# HELP workqueue_adds [BETA] Total number of adds handled by workqueue\n"
            ),
            "{out}"
        );
        assert!(
            out.contains("# TYPE workqueue_adds counter\nworkqueue_adds_total 1\n"),
            "{out}"
        );
        assert!(
            out.contains("# HELP zone Gauge measuring number of registered Nodes per zones.\n"),
            "{out}"
        );
        assert!(!out.contains("unused"), "{out}");
    }
}
