//! `rest_client_requests_total{code,host,method}`: the requests this process's API clients
//! made, by HTTP code, server and method, as client-go counts them (one process-wide family,
//! as client-go's is). The binary's client layer records; each component's `/metrics` that
//! is the process's own renders it.
//!
//! Recording a request after the first of its labels costs a read lock and one atomic add.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{OnceLock, RwLock};

type Key = (String, String, &'static str);

fn counts() -> &'static RwLock<BTreeMap<Key, AtomicU64>> {
    static COUNTS: OnceLock<RwLock<BTreeMap<Key, AtomicU64>>> = OnceLock::new();
    COUNTS.get_or_init(Default::default)
}

/// Counts one request: its HTTP `code` (`<error>` when none came back, as client-go), the
/// server's `host` and the `method`.
pub fn record(code: &str, host: &str, method: &'static str) {
    if let Ok(map) = counts().read() {
        if let Some(c) = map.get(&(code.to_string(), host.to_string(), method)) {
            c.fetch_add(1, Ordering::Relaxed);
            return;
        }
    }
    if let Ok(mut map) = counts().write() {
        map.entry((code.to_string(), host.to_string(), method))
            .or_insert_with(|| AtomicU64::new(0))
            .fetch_add(1, Ordering::Relaxed);
    }
}

/// The family as OpenMetrics text (no `# EOF`).
pub fn render() -> String {
    let mut out = String::from(
        "# HELP rest_client_requests Number of HTTP requests, partitioned by status code, method, and host.\n\
         # TYPE rest_client_requests counter\n",
    );
    if let Ok(map) = counts().read() {
        for ((code, host, method), n) in map.iter() {
            out.push_str(&format!(
                "rest_client_requests_total{{code=\"{}\",host=\"{}\",method=\"{method}\"}} {}\n",
                escape(code),
                escape(host),
                n.load(Ordering::Relaxed)
            ));
        }
    }
    out
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_counted_by_code_host_and_method() {
        record("200", "test-host:1", "GET");
        record("200", "test-host:1", "GET");
        record("<error>", "test-host:1", "POST");
        let text = render();
        assert!(
            text.contains("# TYPE rest_client_requests counter\n"),
            "{text}"
        );
        assert!(text.contains(
            "rest_client_requests_total{code=\"200\",host=\"test-host:1\",method=\"GET\"} 2\n"
        ));
        assert!(text.contains(
            "rest_client_requests_total{code=\"<error>\",host=\"test-host:1\",method=\"POST\"} 1\n"
        ));
    }
}
