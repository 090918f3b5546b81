//! The kubelet's `/configz`: its configuration as upstream serves it, `{"kubeletconfig": {...}}`
//! with the KubeletConfiguration's fields (durations as Go prints them), from the node's pool.

use crate::config::NodeConfig;
use crate::eviction::{Resource, ThresholdValue};
use berth_core::quantity::Quantity;
use serde_json::{json, Map, Value};
use std::time::Duration;

/// How often a kubelet posts its node status when nothing changed (upstream's default).
pub const NODE_STATUS_REPORT_FREQUENCY: Duration = Duration::from_secs(300);

/// A duration as Go's `time.Duration` prints it (`10s`, `5m0s`, `1h0m0s`, `100ms`).
pub fn go_duration(d: Duration) -> String {
    let secs = d.as_secs();
    let millis = d.subsec_millis();
    if secs == 0 {
        return if millis == 0 {
            "0s".into()
        } else {
            format!("{millis}ms")
        };
    }
    let frac = if millis == 0 {
        String::new()
    } else {
        format!(".{millis:03}").trim_end_matches('0').to_string()
    };
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    match (h, m) {
        (0, 0) => format!("{s}{frac}s"),
        (0, _) => format!("{m}m{s}{frac}s"),
        _ => format!("{h}h{m}m{s}{frac}s"),
    }
}

fn threshold_value(resource: Resource, v: &ThresholdValue) -> String {
    match *v {
        ThresholdValue::Percentage(p) => format!("{}%", (f64::from(p) * 100.0).round()),
        ThresholdValue::Quantity(q) => match resource {
            Resource::Memory | Resource::EphemeralStorage => Quantity::from_bytes(q).to_string(),
            Resource::Inodes | Resource::Pids => q.to_string(),
        },
    }
}

fn list(l: &crate::allocatable::ResourceList) -> Value {
    l.iter()
        .map(|(k, v)| (k.clone(), json!(v.to_string())))
        .collect::<Map<String, Value>>()
        .into()
}

/// A map-valued kubelet argument (`system-reserved=cpu=500m,memory=1Gi`, or
/// `eviction-hard=memory.available<100Mi`) as `/configz` shows it: the configured strings as
/// given, since upstream echoes its configuration file rather than canonical quantities. None
/// when the node's configuration does not set the argument.
fn as_configured(config: &NodeConfig, arg: &str, separator: char) -> Option<Value> {
    let values = config.kubelet_args.get(arg)?;
    let map: Map<String, Value> = values
        .iter()
        .flat_map(|v| v.split(','))
        .filter_map(|entry| entry.split_once(separator))
        .map(|(k, v)| (k.trim().to_string(), json!(v.trim())))
        .collect();
    Some(map.into())
}

/// The `/configz` answer of the node `config` whose kubelet runs with `housekeeping` and
/// renews its lease each `lease_renew`.
pub fn configz(config: &NodeConfig, housekeeping: Duration, lease_renew: Duration) -> Value {
    let thresholds = |hard: bool| -> Value {
        config
            .eviction
            .thresholds
            .iter()
            .filter(|t| t.hard == hard)
            // allocatableMemory.available is derived from memory.available, not configured.
            .filter(|t| t.signal.name() != "allocatableMemory.available")
            .map(|t| {
                let v = threshold_value(t.signal.resource(), &t.value);
                (t.signal.name().to_string(), json!(v))
            })
            .collect::<Map<String, Value>>()
            .into()
    };
    let grace: Map<String, Value> = config
        .eviction
        .thresholds
        .iter()
        .filter(|t| !t.hard && t.signal.name() != "allocatableMemory.available")
        .map(|t| {
            (
                t.signal.name().to_string(),
                json!(go_duration(t.grace_period)),
            )
        })
        .collect();
    let max_pods = config.capacity.get("pods").map_or(110, Quantity::value);
    let pods_per_core = config
        .kubelet_args
        .get("pods-per-core")
        .and_then(|v| v.first())
        .and_then(|v| v.trim().parse::<i64>().ok())
        .unwrap_or(0);
    // In parts: one `json!` of them all is past the macro's recursion limit.
    let server = json!({
        "kind": "KubeletConfiguration",
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "enableServer": true,
        "staticPodPath": config.static_pod_path().unwrap_or(""),
        "syncFrequency": "1m0s",
        "fileCheckFrequency": "20s",
        "httpCheckFrequency": "20s",
        "address": "0.0.0.0",
        "port": 10250,
        "authentication": {"anonymous": {"enabled": false}, "webhook": {"enabled": true, "cacheTTL": "2m0s"}},
        "authorization": {"mode": "Webhook", "webhook": {"cacheAuthorizedTTL": "5m0s", "cacheUnauthorizedTTL": "30s"}},
        "registryPullQPS": 5,
        "registryBurst": 10,
        "eventRecordQPS": 50,
        "eventBurst": 100,
        "enableDebuggingHandlers": true,
        "healthzPort": 10248,
        "healthzBindAddress": "127.0.0.1",
        "clusterDomain": "cluster.local",
        "clusterDNS": ["10.96.0.10"],
        "streamingConnectionIdleTimeout": "4h0m0s",
    });
    let status = json!({
        "nodeStatusUpdateFrequency": go_duration(lease_renew),
        "nodeStatusReportFrequency": go_duration(NODE_STATUS_REPORT_FREQUENCY),
        "nodeLeaseDurationSeconds": 40,
        "imageMinimumGCAge": "2m0s",
        "imageGCHighThresholdPercent": 85,
        "imageGCLowThresholdPercent": 80,
        "volumeStatsAggPeriod": "1m0s",
    });
    let runtime = json!({
        "cgroupsPerQOS": true,
        "cgroupDriver": "systemd",
        "cpuManagerPolicy": "none",
        "memoryManagerPolicy": "None",
        "topologyManagerPolicy": "none",
        "runtimeRequestTimeout": "2m0s",
        "hairpinMode": "promiscuous-bridge",
        "maxPods": max_pods,
        "podsPerCore": pods_per_core,
        "podPidsLimit": -1,
        "resolvConf": "/etc/resolv.conf",
        "cpuCFSQuota": true,
        "cpuCFSQuotaPeriod": "100ms",
        "maxOpenFiles": 1000000,
        "contentType": "application/vnd.kubernetes.protobuf",
        "kubeAPIQPS": 50,
        "kubeAPIBurst": 100,
        "serializeImagePulls": true,
    });
    let eviction = json!({
        "evictionHard": as_configured(config, "eviction-hard", '<').unwrap_or_else(|| thresholds(true)),
        "evictionSoft": as_configured(config, "eviction-soft", '<').unwrap_or_else(|| thresholds(false)),
        "evictionSoftGracePeriod": as_configured(config, "eviction-soft-grace-period", '=')
            .unwrap_or_else(|| grace.into()),
        "evictionMinimumReclaim": as_configured(config, "eviction-minimum-reclaim", '=')
            .unwrap_or_else(|| json!({})),
        "evictionPressureTransitionPeriod": go_duration(config.eviction.pressure_transition_period),
        "evictionMaxPodGracePeriod": config.eviction.max_pod_grace_period,
        "housekeepingInterval": go_duration(housekeeping),
        "enableControllerAttachDetach": true,
        "makeIPTablesUtilChains": true,
        "failSwapOn": true,
        "containerLogMaxSize": "10Mi",
        "containerLogMaxFiles": 5,
        "systemReserved": as_configured(config, "system-reserved", '=')
            .unwrap_or_else(|| list(&config.system_reserved)),
        "kubeReserved": as_configured(config, "kube-reserved", '=')
            .unwrap_or_else(|| list(&config.kube_reserved)),
        "enforceNodeAllocatable": ["pods"],
        "featureGates": {"PodPriority": config.eviction.pod_priority},
        "registerNode": true,
        "shutdownGracePeriod": "0s",
        "shutdownGracePeriodCriticalPods": "0s",
    });
    let mut config = Map::new();
    for part in [server, status, runtime, eviction] {
        if let Value::Object(fields) = part {
            config.extend(fields);
        }
    }
    json!({"kubeletconfig": config})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_as_go_does() {
        let cases = [
            (0, "0s"),
            (10_000, "10s"),
            (100, "100ms"),
            (300_000, "5m0s"),
            (14_400_000, "4h0m0s"),
            (1_500, "1.5s"),
        ];
        for (ms, want) in cases {
            assert_eq!(go_duration(Duration::from_millis(ms)), want);
        }
    }

    #[test]
    fn configz_reports_the_pool_settings() {
        let node = &NodeConfig::quick(1)[0];
        let c = configz(node, Duration::from_secs(10), Duration::from_secs(10));
        let k = &c["kubeletconfig"];
        assert_eq!(k["kind"], "KubeletConfiguration");
        assert_eq!(k["evictionHard"]["memory.available"], "100Mi");
        assert_eq!(k["evictionHard"]["nodefs.available"], "10%");
        assert_eq!(k["nodeStatusReportFrequency"], "5m0s");
        assert_eq!(k["maxPods"], 110);
        assert_eq!(k["evictionPressureTransitionPeriod"], "5m0s");
    }
}
