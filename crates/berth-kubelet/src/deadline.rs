//! `activeDeadlineSeconds`: a pod active on its node longer than its deadline (counted from
//! `status.startTime`) is failed by the kubelet with reason `DeadlineExceeded` and its containers
//! are killed (upstream `kubelet` `pastActiveDeadline`). The deadline may be lowered while the pod
//! runs: each change arms a new timer, and a timer that fires re-reads the pod and acts only if
//! the deadline the pod shows then has passed.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use std::time::Duration;

/// `status.reason` of a pod past its deadline (upstream's words).
pub const REASON: &str = "DeadlineExceeded";
/// `status.message` of a pod past its deadline (upstream's words).
pub const MESSAGE: &str = "Pod was active on the node longer than the specified deadline";
/// The exit code of a container killed at the deadline (SIGKILL).
pub const KILLED_EXIT_CODE: i32 = 137;

/// How long until the pod that started at `start` passes its deadline of `seconds`, from
/// `now`: zero when it has passed.
pub fn remaining(start: DateTime<Utc>, seconds: i64, now: DateTime<Utc>) -> Duration {
    let end = start + chrono::Duration::seconds(seconds.max(0));
    (end - now).to_std().unwrap_or(Duration::ZERO)
}

/// The pod's start (`status.startTime`) and deadline, when it has both and is live.
pub fn of(pod: &Value) -> Option<(DateTime<Utc>, i64)> {
    let seconds = pod["spec"]["activeDeadlineSeconds"].as_i64()?;
    if matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    ) || !pod["metadata"]["deletionTimestamp"].is_null()
    {
        return None;
    }
    let start = pod["status"]["startTime"].as_str()?;
    let start = DateTime::parse_from_rfc3339(start).ok()?.to_utc();
    Some((start, seconds))
}

/// The status patch (merge) failing `pod` at `now`: phase `Failed`, reason and message,
/// running containers terminated, `Ready`/`ContainersReady` false.
pub fn exceeded_status(pod: &Value, now: &str) -> Value {
    let statuses: Vec<Value> = pod["status"]["containerStatuses"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut s| {
            let started = s["state"]["running"]["startedAt"].clone();
            if !started.is_null() || s["state"].get("waiting").is_some() {
                s["state"] = json!({"terminated": {"exitCode": KILLED_EXIT_CODE, "reason": "Error",
                    "startedAt": started, "finishedAt": now, "containerID": s["containerID"]}});
            }
            s["ready"] = json!(false);
            s["started"] = json!(false);
            s
        })
        .collect();
    let conditions: Vec<Value> = pod["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|c| {
            if matches!(c["type"].as_str(), Some("Ready" | "ContainersReady")) {
                json!({"type": c["type"], "status": "False", "reason": "PodFailed",
                       "lastProbeTime": null, "lastTransitionTime": now})
            } else {
                c
            }
        })
        .collect();
    json!({"status": {"phase": "Failed", "reason": REASON, "message": MESSAGE,
                      "containerStatuses": statuses, "conditions": conditions}})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().to_utc()
    }

    #[test]
    fn the_deadline_counts_from_the_pod_start() {
        let start = at("2026-11-27T10:00:00Z");
        let cases = [
            (
                "before the deadline, the rest of it",
                "2026-11-27T10:00:02Z",
                5,
                3,
            ),
            ("at the deadline, nothing", "2026-11-27T10:00:05Z", 5, 0),
            ("past the deadline, nothing", "2026-11-27T10:01:00Z", 5, 0),
            (
                "a negative deadline is already past",
                "2026-11-27T10:00:00Z",
                -1,
                0,
            ),
        ];
        for (name, now, seconds, want) in cases {
            assert_eq!(
                remaining(start, seconds, at(now)),
                Duration::from_secs(want),
                "{name}"
            );
        }
    }

    #[test]
    fn only_a_live_started_pod_with_a_deadline_has_one() {
        let pod = |phase: &str, deleting: bool| {
            json!({"metadata": {"deletionTimestamp": if deleting { json!("t") } else { Value::Null }},
                   "spec": {"activeDeadlineSeconds": 5},
                   "status": {"phase": phase, "startTime": "2026-11-27T10:00:00Z"}})
        };
        assert_eq!(
            of(&pod("Running", false)),
            Some((at("2026-11-27T10:00:00Z"), 5))
        );
        assert_eq!(of(&pod("Succeeded", false)), None);
        assert_eq!(of(&pod("Running", true)), None);
        assert_eq!(
            of(&json!({"spec": {}, "status": {"startTime": "2026-11-27T10:00:00Z"}})),
            None
        );
    }

    #[test]
    fn a_pod_past_its_deadline_fails_with_its_containers_killed() {
        let pod = json!({"status": {"phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}],
            "containerStatuses": [{"name": "c", "ready": true, "containerID": "berth://u-c",
                "state": {"running": {"startedAt": "2026-11-27T10:00:00Z"}}}]}});
        let s = &exceeded_status(&pod, "2026-11-27T10:00:05Z")["status"];
        assert_eq!(s["phase"], "Failed");
        assert_eq!(s["reason"], "DeadlineExceeded");
        assert_eq!(
            s["message"],
            "Pod was active on the node longer than the specified deadline"
        );
        let t = &s["containerStatuses"][0]["state"]["terminated"];
        assert_eq!(t["exitCode"], 137);
        assert_eq!(t["startedAt"], "2026-11-27T10:00:00Z");
        assert_eq!(s["conditions"][0]["status"], "False");
        assert_eq!(s["conditions"][1]["status"], "True");
    }
}
