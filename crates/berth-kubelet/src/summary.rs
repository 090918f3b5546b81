//! The node's stats in the kubelet summary API shape (`/stats/summary`), from the model.

use crate::eviction::FsStats;
use crate::model::{NodeModel, Phase};
use serde_json::{json, Value};
use std::time::Duration;

fn fs(f: FsStats, time: &str) -> Value {
    json!({"time": time, "availableBytes": f.available_bytes(), "capacityBytes": f.capacity_bytes,
           "usedBytes": f.used_bytes, "inodesFree": f.inodes_free(), "inodes": f.inodes, "inodesUsed": f.inodes_used})
}

fn cpu(milli: i64, uptime: Duration, time: &str) -> Value {
    let nano_cores = milli * 1_000_000;
    json!({"time": time, "usageNanoCores": nano_cores,
           "usageCoreNanoSeconds": (nano_cores as f64 * uptime.as_secs_f64()) as i64})
}

fn memory(ws: i64, available: Option<i64>, time: &str) -> Value {
    let mut m = json!({"time": time, "usageBytes": ws, "workingSetBytes": ws, "rssBytes": ws * 3 / 4,
                       "pageFaults": 0, "majorPageFaults": 0});
    if let Some(a) = available {
        m["availableBytes"] = json!(a);
    }
    m
}

/// The summary of `node` at `now` (model time; `wall` is the wall-clock time at `now`): start
/// times are when each pod was admitted and each container last started, the node's when its
/// kubelet started (model time zero).
pub fn summary(node: &NodeModel, now: Duration, wall: chrono::DateTime<chrono::Utc>) -> Value {
    let stamp =
        |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let time_owned = stamp(wall);
    let time = time_owned.as_str();
    let at = |t: Duration| {
        stamp(wall - chrono::Duration::from_std(now.saturating_sub(t)).unwrap_or_default())
    };
    let stats = node.stats(now);
    let sys = node.config.system_usage;
    let pods_cpu: i64 = node
        .pods
        .values()
        .filter(|p| matches!(p.phase, Phase::Running | Phase::Terminating))
        .map(|p| p.usage(now).cpu_milli)
        .sum();
    // System daemons' use split between the kubelet (60%) and the runtime (40%).
    let share = |v: i64, kubelet: bool| if kubelet { v * 3 / 5 } else { v - v * 3 / 5 };
    let mut system: Vec<Value> = [("kubelet", true), ("runtime", false)]
        .into_iter()
        .map(|(name, k)| {
            json!({"name": name, "startTime": at(Duration::ZERO),
                   "cpu": cpu(share(sys.cpu_milli, k), now, time),
                   "memory": memory(share(sys.memory, k), None, time)})
        })
        .collect();
    // The pods' cgroup (upstream's `pods` system container): what the pods use together,
    // with what is left of its limit (allocatable memory for pods).
    system.push(json!({"name": "pods", "startTime": at(Duration::ZERO),
        "cpu": cpu(pods_cpu, now, time),
        "memory": memory(stats.pods_memory_working_set,
                         Some(stats.pods_memory_limit - stats.pods_memory_working_set), time)}));
    let pods: Vec<Value> = node
        .pods
        .values()
        .filter(|p| matches!(p.phase, Phase::Running | Phase::Terminating))
        .map(|p| {
            let (ns, name) = p.key.split_once('/').unwrap_or(("", &p.key));
            let containers: Vec<Value> = p
                .container_usage(now)
                .into_iter()
                .map(|(c, u, _)| {
                    json!({"name": c, "startTime": at(p.started_at),
                       "cpu": cpu(u.cpu_milli, now.saturating_sub(p.started_at), time),
                       "memory": memory(u.amounts.memory, None, time),
                       "rootfs": {"time": time, "usedBytes": u.amounts.ephemeral_storage, "inodesUsed": u.amounts.inodes},
                       "logs": {"time": time, "usedBytes": 0, "inodesUsed": 0}})
                })
                .collect();
            let u = p.usage(now);
            json!({"podRef": {"name": name, "namespace": ns, "uid": p.uid}, "startTime": at(p.admitted_at),
                   "containers": containers,
                   "cpu": cpu(u.cpu_milli, now.saturating_sub(p.started_at), time),
                   "memory": memory(u.amounts.memory, None, time),
                   "ephemeral-storage": {"time": time, "usedBytes": u.amounts.ephemeral_storage, "inodesUsed": u.amounts.inodes},
                   "process_stats": {"process_count": u.amounts.pids}})
        })
        .collect();
    json!({
        "node": {
            "nodeName": node.config.name,
            "systemContainers": system,
            "startTime": at(Duration::ZERO),
            "cpu": cpu(pods_cpu + sys.cpu_milli, now, time),
            "memory": memory(stats.memory_working_set, Some(stats.memory_capacity - stats.memory_working_set), time),
            "fs": fs(stats.nodefs, time),
            "runtime": {"imageFs": fs(stats.image_fs(), time)},
            "rlimit": {"time": time, "maxpid": stats.pid_max, "curproc": stats.pids},
        },
        "pods": pods,
    })
}

/// The node's `/metrics/resource` in Prometheus text, from its summary (`ts_ms`: the sample
/// time in milliseconds), with the metric names a real kubelet uses.
pub fn resource_metrics(summary: &Value, ts_ms: i64) -> String {
    let seconds = |v: &Value| v["cpu"]["usageCoreNanoSeconds"].as_i64().unwrap_or(0) as f64 / 1e9;
    let bytes = |v: &Value| v["memory"]["workingSetBytes"].as_i64().unwrap_or(0);
    let node = &summary["node"];
    let pods = summary["pods"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut out = String::new();
    let mut family = |name: &str, kind: &str, help: &str, samples: Vec<(String, String)>| {
        out.push_str(&format!(
            "# HELP {name} {help}
# TYPE {name} {kind}
"
        ));
        for (labels, value) in samples {
            out.push_str(&format!("{name}{labels} {value} {ts_ms}\n"));
        }
    };
    let pod_labels = |p: &Value| {
        format!(
            "namespace=\"{}\",pod=\"{}\"",
            p["podRef"]["namespace"].as_str().unwrap_or_default(),
            p["podRef"]["name"].as_str().unwrap_or_default()
        )
    };
    let containers = |f: &dyn Fn(&Value) -> String| -> Vec<(String, String)> {
        pods.iter()
            .flat_map(|p| {
                p["containers"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(move |c| {
                        let labels = format!(
                            "{{container=\"{}\",{}}}",
                            c["name"].as_str().unwrap_or_default(),
                            pod_labels(p)
                        );
                        (labels, f(c))
                    })
            })
            .collect()
    };
    let per_pod = |f: &dyn Fn(&Value) -> String| -> Vec<(String, String)> {
        pods.iter()
            .map(|p| (format!("{{{}}}", pod_labels(p)), f(p)))
            .collect()
    };
    family(
        "container_cpu_usage_seconds_total",
        "counter",
        "[STABLE] Cumulative cpu time consumed by the container in core-seconds",
        containers(&|c| seconds(c).to_string()),
    );
    family(
        "container_memory_working_set_bytes",
        "gauge",
        "[STABLE] Current working set of the container in bytes",
        containers(&|c| bytes(c).to_string()),
    );
    family(
        "node_cpu_usage_seconds_total",
        "counter",
        "[STABLE] Cumulative cpu time consumed by the node in core-seconds",
        vec![(String::new(), seconds(node).to_string())],
    );
    family(
        "node_memory_working_set_bytes",
        "gauge",
        "[STABLE] Current working set of the node in bytes",
        vec![(String::new(), bytes(node).to_string())],
    );
    family(
        "pod_cpu_usage_seconds_total",
        "counter",
        "[STABLE] Cumulative cpu time consumed by the pod in core-seconds",
        per_pod(&|p| seconds(p).to_string()),
    );
    family(
        "pod_memory_working_set_bytes",
        "gauge",
        "[STABLE] Current working set of the pod in bytes",
        per_pod(&|p| bytes(p).to_string()),
    );
    out.push_str("# HELP scrape_error [ALPHA] 1 if there was an error while getting container metrics, 0 otherwise\n# TYPE scrape_error gauge\nscrape_error 0\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::NodeConfig;
    use crate::model::PodState;

    #[test]
    fn summary_reflects_usage() {
        let mut n = NodeModel::new(NodeConfig::quick(1).remove(0));
        let pod = json!({"metadata": {"namespace": "ns", "name": "p", "uid": "u",
                          "annotations": {"berth.io/usage": "cpu=200m,memory=1Gi,ephemeral-storage=2Gi"}},
                         "spec": {"containers": [{"name": "c", "image": "i"}]}, "status": {"phase": "Running"}});
        let (mut p, _) = PodState::from_pod(&pod, Duration::from_secs(4));
        p.started_at = Duration::from_secs(7);
        n.pods.insert(p.key.clone(), p);
        let wall = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:10Z")
            .unwrap()
            .to_utc();
        let s = summary(&n, Duration::from_secs(10), wall);
        // Start times are when each began, not the request's time.
        assert_eq!(s["node"]["startTime"], "2026-01-01T00:00:00Z");
        assert_eq!(s["pods"][0]["startTime"], "2026-01-01T00:00:04Z");
        assert_eq!(
            s["pods"][0]["containers"][0]["startTime"],
            "2026-01-01T00:00:07Z"
        );
        let pods = &s["node"]["systemContainers"][2];
        assert_eq!(pods["name"], "pods");
        assert_eq!(pods["memory"]["workingSetBytes"], 1i64 << 30);
        assert_eq!(s["node"]["nodeName"], "node-1");
        assert_eq!(s["pods"][0]["memory"]["workingSetBytes"], 1i64 << 30);
        assert_eq!(s["pods"][0]["podRef"]["name"], "p");
        assert_eq!(s["pods"][0]["cpu"]["usageNanoCores"], 200_000_000);
        assert_eq!(
            s["node"]["memory"]["workingSetBytes"],
            (1i64 << 30) + (256 << 20)
        );
        assert_eq!(s["node"]["fs"]["usedBytes"], 2i64 << 30);
        assert_eq!(s["node"]["systemContainers"][0]["name"], "kubelet");
        let m = resource_metrics(&s, 7);
        assert!(m.contains(
            "container_memory_working_set_bytes{container=\"c\",namespace=\"ns\",pod=\"p\"} 1073741824 7\n"
        ));
        assert!(
            m.contains("pod_memory_working_set_bytes{namespace=\"ns\",pod=\"p\"} 1073741824 7\n")
        );
        assert!(m.contains("node_cpu_usage_seconds_total "));
        assert!(m.ends_with("scrape_error 0\n"));
    }
}
