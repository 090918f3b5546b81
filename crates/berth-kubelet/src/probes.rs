//! Simulated readiness probes: a container with a readiness probe is not ready until the probe's
//! `initialDelaySeconds` have passed since it started; the simulated probe then succeeds at its
//! first run (upstream: a readiness probe is not run before its initial delay, and the container
//! is unready until it succeeds). Containers without a probe, or with no delay, are ready at once.

use k8s_openapi::api::core::v1::PodSpec;
use serde_json::{json, Value};

/// The containers whose readiness waits for their probe's initial delay.
pub fn delayed_containers(spec: &PodSpec) -> Vec<String> {
    spec.containers
        .iter()
        .filter(|c| {
            c.readiness_probe
                .as_ref()
                .and_then(|p| p.initial_delay_seconds)
                .is_some_and(|d| d > 0)
        })
        .map(|c| c.name.clone())
        .collect()
}

/// The status patch (merge) once every probe of the running `pod` has succeeded at `now`: its
/// running containers ready, and `Ready`/`ContainersReady` true.
pub fn ready_status(pod: &Value, now: &str) -> Value {
    let statuses: Vec<Value> = pod["status"]["containerStatuses"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut s| {
            if s["state"].get("running").is_some() {
                s["ready"] = json!(true);
            }
            s
        })
        .collect();
    let all_ready = statuses.iter().all(|s| s["ready"] == true);
    let conditions: Vec<Value> = pod["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|c| {
            let flips = matches!(c["type"].as_str(), Some("Ready" | "ContainersReady"))
                && c["status"] != "True";
            if flips && all_ready {
                json!({"type": c["type"], "status": "True", "lastProbeTime": null,
                       "lastTransitionTime": now})
            } else {
                c
            }
        })
        .collect();
    json!({"status": {"containerStatuses": statuses, "conditions": conditions}})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(containers: Value) -> PodSpec {
        serde_json::from_value(json!({ "containers": containers })).unwrap()
    }

    #[test]
    fn only_probes_with_an_initial_delay_hold_readiness_back() {
        let s = spec(json!([
            {"name": "delayed", "readinessProbe": {"initialDelaySeconds": 5, "exec": {"command": ["true"]}}},
            {"name": "no-delay", "readinessProbe": {"initialDelaySeconds": 0, "exec": {"command": ["true"]}}},
            {"name": "no-probe"},
        ]));
        assert_eq!(delayed_containers(&s), ["delayed"]);
    }

    #[test]
    fn after_the_delay_the_running_containers_and_the_pod_turn_ready() {
        let pod = json!({"status": {
            "conditions": [
                {"type": "Ready", "status": "False", "reason": "ContainersNotReady"},
                {"type": "ContainersReady", "status": "False", "reason": "ContainersNotReady"},
                {"type": "Initialized", "status": "True", "lastTransitionTime": "t0"}],
            "containerStatuses": [{"name": "c", "ready": false, "state": {"running": {"startedAt": "t0"}}}]}});
        let s = &ready_status(&pod, "t1")["status"];
        assert_eq!(s["containerStatuses"][0]["ready"], true);
        assert_eq!(s["conditions"][0]["status"], "True");
        assert_eq!(s["conditions"][0]["lastTransitionTime"], "t1");
        assert_eq!(s["conditions"][1]["status"], "True");
        assert_eq!(s["conditions"][2]["lastTransitionTime"], "t0");
    }

    #[test]
    fn a_terminated_container_keeps_the_pod_unready() {
        let pod = json!({"status": {
            "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [{"name": "c", "ready": false, "state": {"terminated": {"exitCode": 1}}}]}});
        let s = &ready_status(&pod, "t1")["status"];
        assert_eq!(s["containerStatuses"][0]["ready"], false);
        assert_eq!(s["conditions"][0]["status"], "False");
    }
}
