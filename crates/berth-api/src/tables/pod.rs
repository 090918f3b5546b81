//! Pod rows: `NAME READY STATUS RESTARTS AGE` + wide `IP NODE NOMINATED NODE READINESS GATES`.
//!
//! STATUS follows upstream's `printPod`: the phase, overridden by `status.reason`, by
//! `SchedulingGated`, by init container progress (`Init:0/1`, `Init:CrashLoopBackOff`), by the
//! last container's waiting/terminated reason (`ContainerCreating`, `Completed`, `ExitCode:1`),
//! and finally by `Terminating` (or `Unknown` for `NodeLost`) when a deletion is pending.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{
    age, arr_at, col, human_duration, int_at, parse_time, str_at, wide, Column, AGE, NAME,
};

pub(super) const COLUMNS: &[Column] = &[
    NAME,
    col(
        "Ready",
        "string",
        "The aggregate readiness state of this pod for accepting traffic.",
    ),
    col(
        "Status",
        "string",
        "The aggregate status of the containers in this pod.",
    ),
    col(
        "Restarts",
        "string",
        "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
    ),
    AGE,
    wide("IP", "string", "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated."),
    wide("Node", "string", "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName."),
    wide("Nominated Node", "string", "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods."),
    wide("Readiness Gates", "string", "If specified, all readiness gates will be evaluated for pod readiness."),
];

/// Reason upstream's node controller sets on pods of an unreachable node.
const NODE_LOST: &str = "NodeLost";

pub(super) fn cells(pod: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let summary = summarize(pod);
    let restarts = match summary.last_restart {
        Some(t) if summary.restarts != 0 => {
            format!("{} ({} ago)", summary.restarts, human_duration(now - t))
        }
        _ => summary.restarts.to_string(),
    };
    let pod_ip = arr_at(pod, "/status/podIPs")
        .first()
        .map(|ip| str_at(ip, "/ip"))
        .filter(|ip| !ip.is_empty())
        .unwrap_or_else(|| str_at(pod, "/status/podIP"));
    vec![
        json!(str_at(pod, "/metadata/name")),
        json!(format!("{}/{}", summary.ready, summary.total)),
        json!(summary.reason),
        json!(restarts),
        json!(age(pod, now)),
        json!(or_none(pod_ip)),
        json!(or_none(str_at(pod, "/spec/nodeName"))),
        json!(or_none(str_at(pod, "/status/nominatedNodeName"))),
        json!(readiness_gates(pod)),
    ]
}

fn or_none(s: &str) -> &str {
    if s.is_empty() {
        "<none>"
    } else {
        s
    }
}

/// What upstream's `printPod` derives from a pod's status.
struct Summary {
    ready: usize,
    total: usize,
    reason: String,
    restarts: i64,
    last_restart: Option<DateTime<Utc>>,
}

fn is_true(v: &Value, ptr: &str) -> bool {
    v.pointer(ptr).and_then(Value::as_bool).unwrap_or(false)
}

fn has_condition(pod: &Value, ty: &str) -> bool {
    arr_at(pod, "/status/conditions")
        .iter()
        .any(|c| str_at(c, "/type") == ty && str_at(c, "/status") == "True")
}

/// Later of `acc` and the container's `lastState.terminated.finishedAt`.
fn later_restart(acc: Option<DateTime<Utc>>, status: &Value) -> Option<DateTime<Utc>> {
    if status.pointer("/lastState/terminated").is_none() {
        return acc;
    }
    match (
        acc,
        parse_time(str_at(status, "/lastState/terminated/finishedAt")),
    ) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

fn summarize(pod: &Value) -> Summary {
    let phase = str_at(pod, "/status/phase");
    let status_reason = str_at(pod, "/status/reason");
    let mut reason = if status_reason.is_empty() {
        phase.to_string()
    } else {
        status_reason.to_string()
    };
    if arr_at(pod, "/status/conditions")
        .iter()
        .any(|c| str_at(c, "/type") == "PodScheduled" && str_at(c, "/reason") == "SchedulingGated")
    {
        reason = "SchedulingGated".to_string();
    }

    let init_specs = arr_at(pod, "/spec/initContainers");
    let is_sidecar = |name: &str| {
        init_specs
            .iter()
            .any(|c| str_at(c, "/name") == name && str_at(c, "/restartPolicy") == "Always")
    };
    let total = arr_at(pod, "/spec/containers").len()
        + init_specs
            .iter()
            .filter(|c| str_at(c, "/restartPolicy") == "Always")
            .count();
    let mut ready = 0;
    let mut restarts = 0;
    let mut sidecar_restarts = 0;
    let mut last_restart = None;
    let mut last_sidecar_restart = None;

    let mut initializing = false;
    for (i, c) in arr_at(pod, "/status/initContainerStatuses")
        .iter()
        .enumerate()
    {
        let sidecar = is_sidecar(str_at(c, "/name"));
        restarts += int_at(c, "/restartCount");
        last_restart = later_restart(last_restart, c);
        if sidecar {
            sidecar_restarts += int_at(c, "/restartCount");
            last_sidecar_restart = later_restart(last_sidecar_restart, c);
        }
        let terminated = c.pointer("/state/terminated");
        let waiting_reason = str_at(c, "/state/waiting/reason");
        if terminated.is_some() && int_at(c, "/state/terminated/exitCode") == 0 {
            continue;
        }
        if sidecar && is_true(c, "/started") {
            if is_true(c, "/ready") {
                ready += 1;
            }
            continue;
        }
        if let Some(t) = terminated {
            let r = str_at(t, "/reason");
            reason = if !r.is_empty() {
                format!("Init:{r}")
            } else if int_at(t, "/signal") != 0 {
                format!("Init:Signal:{}", int_at(t, "/signal"))
            } else {
                format!("Init:ExitCode:{}", int_at(t, "/exitCode"))
            };
        } else if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" {
            reason = format!("Init:{waiting_reason}");
        } else {
            reason = format!("Init:{}/{}", i, init_specs.len());
        }
        initializing = true;
        break;
    }

    if !initializing || has_condition(pod, "Initialized") {
        restarts = sidecar_restarts;
        last_restart = last_sidecar_restart;
        let mut has_running = false;
        for c in arr_at(pod, "/status/containerStatuses").iter().rev() {
            restarts += int_at(c, "/restartCount");
            last_restart = later_restart(last_restart, c);
            let waiting = str_at(c, "/state/waiting/reason");
            let terminated = c.pointer("/state/terminated");
            if !waiting.is_empty() {
                reason = waiting.to_string();
            } else if let Some(t) = terminated {
                let r = str_at(t, "/reason");
                reason = if !r.is_empty() {
                    r.to_string()
                } else if int_at(t, "/signal") != 0 {
                    format!("Signal:{}", int_at(t, "/signal"))
                } else {
                    format!("ExitCode:{}", int_at(t, "/exitCode"))
                };
            } else if is_true(c, "/ready") && c.pointer("/state/running").is_some() {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            reason = if has_condition(pod, "Ready") {
                "Running".to_string()
            } else {
                "NotReady".to_string()
            };
        }
    }

    let deleting = pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null());
    if deleting && status_reason == NODE_LOST {
        reason = "Unknown".to_string();
    } else if deleting && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".to_string();
    }

    Summary {
        ready,
        total,
        reason,
        restarts,
        last_restart,
    }
}

fn readiness_gates(pod: &Value) -> String {
    let gates = arr_at(pod, "/spec/readinessGates");
    if gates.is_empty() {
        return "<none>".to_string();
    }
    let conditions = arr_at(pod, "/status/conditions");
    let true_count = gates
        .iter()
        .filter(|g| {
            let ty = str_at(g, "/conditionType");
            conditions
                .iter()
                .find(|c| str_at(c, "/type") == ty)
                .is_some_and(|c| str_at(c, "/status") == "True")
        })
        .count();
    format!("{}/{}", true_count, gates.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::tests::{ago, now};

    fn pod(spec: Value, status: Value) -> Value {
        json!({"metadata": {"name": "p1", "namespace": "default", "creationTimestamp": ago(300)},
               "spec": spec, "status": status})
    }

    fn one_container() -> Value {
        json!({"containers": [{"name": "c", "image": "nginx"}]})
    }

    fn status_of(p: &Value) -> String {
        cells(p, now())[2].as_str().unwrap().to_string()
    }

    #[test]
    fn pending_unscheduled_pod() {
        let p = pod(one_container(), json!({"phase": "Pending"}));
        assert_eq!(
            cells(&p, now()),
            vec![
                json!("p1"),
                json!("0/1"),
                json!("Pending"),
                json!("0"),
                json!("5m"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>")
            ]
        );
    }

    #[test]
    fn running_pod_wide_cells() {
        let mut spec = one_container();
        spec["nodeName"] = json!("n1");
        let p = pod(
            spec,
            json!({"phase": "Running", "podIP": "10.1.0.5", "podIPs": [{"ip": "10.1.0.5"}],
                   "nominatedNodeName": "n2",
                   "containerStatuses": [{"name": "c", "ready": true, "restartCount": 0,
                                          "state": {"running": {"startedAt": ago(200)}}}]}),
        );
        assert_eq!(
            cells(&p, now()),
            vec![
                json!("p1"),
                json!("1/1"),
                json!("Running"),
                json!("0"),
                json!("5m"),
                json!("10.1.0.5"),
                json!("n1"),
                json!("n2"),
                json!("<none>")
            ]
        );
    }

    #[test]
    fn pod_ip_falls_back_to_pod_ip_field() {
        let p = pod(
            one_container(),
            json!({"phase": "Running", "podIP": "10.0.0.9"}),
        );
        assert_eq!(cells(&p, now())[5], json!("10.0.0.9"));
    }

    #[test]
    fn container_creating_and_crash_loop() {
        let p = pod(
            one_container(),
            json!({"phase": "Pending", "containerStatuses": [{"name": "c", "ready": false,
                   "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}]}),
        );
        assert_eq!(status_of(&p), "ContainerCreating");
        let p = pod(
            one_container(),
            json!({"phase": "Running", "containerStatuses": [{"name": "c", "ready": false,
                   "restartCount": 5, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                   "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(120)}}}]}),
        );
        let c = cells(&p, now());
        assert_eq!(c[2], json!("CrashLoopBackOff"));
        assert_eq!(c[3], json!("5 (2m ago)"));
        assert_eq!(c[1], json!("0/1"));
    }

    #[test]
    fn restarts_without_finished_at_have_no_ago() {
        let p = pod(
            one_container(),
            json!({"phase": "Running", "containerStatuses": [{"name": "c", "ready": true,
                   "restartCount": 2, "state": {"running": {}}}]}),
        );
        assert_eq!(cells(&p, now())[3], json!("2"));
    }

    #[test]
    fn completed_and_exit_codes() {
        let p = pod(
            one_container(),
            json!({"phase": "Succeeded", "containerStatuses": [{"name": "c", "ready": false,
                   "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}),
        );
        assert_eq!(status_of(&p), "Completed");
        let p = pod(
            one_container(),
            json!({"phase": "Failed", "containerStatuses": [{"name": "c", "ready": false,
                   "restartCount": 0, "state": {"terminated": {"exitCode": 3}}}]}),
        );
        assert_eq!(status_of(&p), "ExitCode:3");
        let p = pod(
            one_container(),
            json!({"phase": "Failed", "containerStatuses": [{"name": "c",
                   "state": {"terminated": {"exitCode": 137, "signal": 9}}}]}),
        );
        assert_eq!(status_of(&p), "Signal:9");
    }

    #[test]
    fn completed_with_running_sibling_is_running_or_not_ready() {
        let spec = json!({"containers": [{"name": "a"}, {"name": "b"}]});
        let statuses = json!([
            {"name": "a", "ready": true, "state": {"running": {}}},
            {"name": "b", "ready": false, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
        ]);
        let p = pod(
            spec.clone(),
            json!({"phase": "Running", "containerStatuses": statuses,
                   "conditions": [{"type": "Ready", "status": "True"}]}),
        );
        assert_eq!(status_of(&p), "Running");
        assert_eq!(cells(&p, now())[1], json!("1/2"));
        let p = pod(
            spec,
            json!({"phase": "Running", "containerStatuses": statuses}),
        );
        assert_eq!(status_of(&p), "NotReady");
    }

    #[test]
    fn evicted_pod_shows_reason() {
        let p = pod(
            one_container(),
            json!({"phase": "Failed", "reason": "Evicted",
                   "message": "The node was low on resource: memory."}),
        );
        assert_eq!(status_of(&p), "Evicted");
    }

    #[test]
    fn terminating_unless_terminal_and_unknown_when_node_lost() {
        let mut p = pod(
            one_container(),
            json!({"phase": "Running", "containerStatuses": [{"name": "c", "ready": true,
                   "state": {"running": {}}}]}),
        );
        p["metadata"]["deletionTimestamp"] = json!(ago(5));
        assert_eq!(status_of(&p), "Terminating");
        p["status"]["phase"] = json!("Succeeded");
        p["status"]["containerStatuses"] = json!([]);
        assert_eq!(status_of(&p), "Succeeded");
        p["status"]["phase"] = json!("Running");
        p["status"]["reason"] = json!("NodeLost");
        assert_eq!(status_of(&p), "Unknown");
    }

    #[test]
    fn scheduling_gated() {
        let p = pod(
            one_container(),
            json!({"phase": "Pending", "conditions": [{"type": "PodScheduled",
                   "status": "False", "reason": "SchedulingGated"}]}),
        );
        assert_eq!(status_of(&p), "SchedulingGated");
    }

    #[test]
    fn init_containers() {
        let spec = json!({"initContainers": [{"name": "i1"}, {"name": "i2"}],
                          "containers": [{"name": "c"}]});
        let p = pod(
            spec.clone(),
            json!({"phase": "Pending", "initContainerStatuses": [
                {"name": "i1", "state": {"terminated": {"exitCode": 0}}},
                {"name": "i2", "state": {"waiting": {"reason": "PodInitializing"}}}],
                "containerStatuses": [{"name": "c", "state": {"waiting": {"reason": "PodInitializing"}}}]}),
        );
        assert_eq!(status_of(&p), "Init:1/2");
        let p = pod(
            spec.clone(),
            json!({"phase": "Pending", "initContainerStatuses": [
                {"name": "i1", "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}),
        );
        assert_eq!(status_of(&p), "Init:CrashLoopBackOff");
        assert_eq!(cells(&p, now())[3], json!("3"));
        let p = pod(
            spec.clone(),
            json!({"phase": "Failed", "initContainerStatuses": [
                {"name": "i1", "state": {"terminated": {"exitCode": 2}}}]}),
        );
        assert_eq!(status_of(&p), "Init:ExitCode:2");
        let p = pod(
            spec,
            json!({"phase": "Pending", "initContainerStatuses": [
                {"name": "i1", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}),
        );
        assert_eq!(status_of(&p), "Init:Error");
    }

    #[test]
    fn sidecar_counts_toward_ready_and_total() {
        let spec = json!({"initContainers": [{"name": "side", "restartPolicy": "Always"}],
                          "containers": [{"name": "c"}]});
        let p = pod(
            spec,
            json!({"phase": "Running",
                   "conditions": [{"type": "Initialized", "status": "True"}],
                   "initContainerStatuses": [{"name": "side", "started": true, "ready": true,
                        "restartCount": 1, "state": {"running": {}},
                        "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(30)}}}],
                   "containerStatuses": [{"name": "c", "ready": true, "state": {"running": {}}}]}),
        );
        let c = cells(&p, now());
        assert_eq!(c[1], json!("2/2"));
        assert_eq!(c[2], json!("Running"));
        assert_eq!(c[3], json!("1 (30s ago)"));
    }

    #[test]
    fn readiness_gates_count_true_conditions() {
        let mut spec = one_container();
        spec["readinessGates"] = json!([{"conditionType": "a"}, {"conditionType": "b"}]);
        let p = pod(
            spec,
            json!({"phase": "Running", "conditions": [
                {"type": "a", "status": "True"}, {"type": "b", "status": "False"}]}),
        );
        assert_eq!(cells(&p, now())[8], json!("1/2"));
    }
}
