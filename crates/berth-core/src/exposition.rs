//! How `/metrics` is written to a scraper: the Prometheus text format (version 0.0.4) by default,
//! OpenMetrics only when the scraper's `Accept` asks for it, as upstream's components answer
//! (client_golang's `promhttp` negotiation).
//!
//! berth's registries render OpenMetrics (what `prometheus-client` writes); [`to_prometheus_text`]
//! rewrites that text into 0.0.4 without re-encoding a sample: a counter family is named as its
//! samples are (`# TYPE apiserver_request_total counter`, where OpenMetrics says
//! `apiserver_request`), `# UNIT` and `# EOF` go, and the types 0.0.4 lacks become `untyped`
//! (`info` a gauge). A text parser of 0.0.4 (Prometheus', `prometheus_client.parser`) then keeps
//! every family's type, which it loses on OpenMetrics' counter names.

use std::collections::HashSet;

/// The Content-Type of the Prometheus text format.
pub const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";
/// The Content-Type of OpenMetrics text.
pub const OPENMETRICS_TEXT: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Which text a scraper gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Prometheus text format 0.0.4, the default.
    PrometheusText,
    /// OpenMetrics 1.0, when asked for.
    OpenMetrics,
}

impl Format {
    /// The format an `Accept` header asks for: OpenMetrics when it names
    /// `application/openmetrics-text` (with a non-zero quality), else Prometheus text.
    pub fn negotiate(accept: Option<&str>) -> Format {
        let asks = accept.unwrap_or_default().split(',').any(|range| {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or_default();
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .and_then(|q| q.parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            media.eq_ignore_ascii_case("application/openmetrics-text") && !refused
        });
        if asks {
            Format::OpenMetrics
        } else {
            Format::PrometheusText
        }
    }

    /// The Content-Type of this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::PrometheusText => PROMETHEUS_TEXT,
            Format::OpenMetrics => OPENMETRICS_TEXT,
        }
    }

    /// `openmetrics` (one text ending in `# EOF`, as the registries render it) in this format.
    pub fn write(self, openmetrics: String) -> String {
        match self {
            Format::OpenMetrics => openmetrics,
            Format::PrometheusText => to_prometheus_text(&openmetrics),
        }
    }
}

/// OpenMetrics text rewritten as Prometheus text 0.0.4 (see the module's doc).
pub fn to_prometheus_text(openmetrics: &str) -> String {
    // Counter families whose samples carry `_total` beyond the family's name.
    let renamed: HashSet<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_once(' '))
        .filter(|(name, ty)| *ty == "counter" && !name.ends_with("_total"))
        .map(|(name, _)| name)
        .collect();
    let mut out = String::with_capacity(openmetrics.len() + renamed.len() * 12);
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            out.push_str("# HELP ");
            out.push_str(name);
            if renamed.contains(name) {
                out.push_str("_total");
            }
            out.push(' ');
            out.push_str(help);
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, ty) = rest.split_once(' ').unwrap_or((rest, "unknown"));
            let ty = match ty {
                "counter" | "gauge" | "histogram" | "summary" => ty,
                "info" => "gauge",
                _ => "untyped",
            };
            out.push_str("# TYPE ");
            out.push_str(name);
            if renamed.contains(name) {
                out.push_str("_total");
            }
            out.push(' ');
            out.push_str(ty);
        } else if line.starts_with('#') {
            continue;
        } else {
            // An exemplar (` # {...} value`) has no place in 0.0.4.
            let sample = line.split_once(" # ").map_or(line, |(s, _)| s);
            if is_created(sample, &renamed) {
                continue;
            }
            out.push_str(sample);
        }
        out.push('\n');
    }
    out
}

/// Whether `sample` is a counter's `_created` sample, which 0.0.4 would read as another family.
fn is_created(sample: &str, counters: &HashSet<&str>) -> bool {
    let name = sample
        .split(['{', ' '])
        .next()
        .unwrap_or_default()
        .strip_suffix("_created");
    name.is_some_and(|n| counters.contains(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPENMETRICS: &str = "# HELP apiserver_request Counter of apiserver requests.\n\
        # TYPE apiserver_request counter\n\
        apiserver_request_total{verb=\"LIST\",code=\"200\"} 2\n\
        apiserver_request_created{verb=\"LIST\",code=\"200\"} 1700000000.0\n\
        # HELP etcd_request_duration_seconds Etcd request latency.\n\
        # TYPE etcd_request_duration_seconds histogram\n\
        # UNIT etcd_request_duration_seconds seconds\n\
        etcd_request_duration_seconds_sum{operation=\"get\"} 0.5\n\
        etcd_request_duration_seconds_count{operation=\"get\"} 1\n\
        etcd_request_duration_seconds_bucket{le=\"+Inf\",operation=\"get\"} 1 # {trace_id=\"x\"} 0.5\n\
        # HELP build Build.\n\
        # TYPE build info\n\
        build_info{version=\"1\"} 1\n\
        # HELP process_cpu_seconds CPU.\n\
        # TYPE process_cpu_seconds counter\n\
        process_cpu_seconds_total 3\n\
        # HELP x_total Already named as 0.0.4 names it.\n\
        # TYPE x_total counter\n\
        x_total 1\n\
        # EOF\n";

    #[test]
    fn counters_are_named_as_their_samples_and_openmetrics_lines_go() {
        let text = to_prometheus_text(OPENMETRICS);
        assert_eq!(
            text,
            "# HELP apiserver_request_total Counter of apiserver requests.\n\
             # TYPE apiserver_request_total counter\n\
             apiserver_request_total{verb=\"LIST\",code=\"200\"} 2\n\
             # HELP etcd_request_duration_seconds Etcd request latency.\n\
             # TYPE etcd_request_duration_seconds histogram\n\
             etcd_request_duration_seconds_sum{operation=\"get\"} 0.5\n\
             etcd_request_duration_seconds_count{operation=\"get\"} 1\n\
             etcd_request_duration_seconds_bucket{le=\"+Inf\",operation=\"get\"} 1\n\
             # HELP build Build.\n\
             # TYPE build gauge\n\
             build_info{version=\"1\"} 1\n\
             # HELP process_cpu_seconds_total CPU.\n\
             # TYPE process_cpu_seconds_total counter\n\
             process_cpu_seconds_total 3\n\
             # HELP x_total Already named as 0.0.4 names it.\n\
             # TYPE x_total counter\n\
             x_total 1\n"
        );
    }

    #[test]
    fn openmetrics_only_when_the_accept_header_asks() {
        let cases = [
            (None, Format::PrometheusText),
            (Some("*/*"), Format::PrometheusText),
            (Some("text/plain;version=0.0.4;q=0.3,*/*;q=0.2"), Format::PrometheusText),
            (
                Some("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
                Format::OpenMetrics,
            ),
            (Some("application/openmetrics-text; q=0"), Format::PrometheusText),
            (Some("Application/OpenMetrics-Text"), Format::OpenMetrics),
        ];
        for (accept, want) in cases {
            assert_eq!(Format::negotiate(accept), want, "{accept:?}");
        }
        assert_eq!(Format::PrometheusText.content_type(), PROMETHEUS_TEXT);
        assert_eq!(
            Format::OpenMetrics.write(OPENMETRICS.into()),
            OPENMETRICS,
            "OpenMetrics passes unchanged"
        );
    }
}
