//! Pod conditions as upstream's `UpdatePodCondition` sets them, and the `DisruptionTarget`
//! condition each component that deletes a pod for a disruption writes first (so a Job's
//! `podFailurePolicy` can tell a disruption from a failure).
//!
//! Upstream writes the condition to the pod's status, then deletes the pod; the drivers here do
//! the same, with [`update`] deciding whether the status write is needed at all.

use serde_json::{json, Value};

/// The condition type.
pub const DISRUPTION_TARGET: &str = "DisruptionTarget";
/// The scheduler's reason when it deletes a victim to make room for a higher-priority pod.
pub const PREEMPTION_BY_SCHEDULER: &str = "PreemptionByScheduler";
/// The taint manager's reason when it deletes a pod that does not tolerate a `NoExecute` taint.
pub const DELETION_BY_TAINT_MANAGER: &str = "DeletionByTaintManager";
/// The taint manager's message.
pub const TAINT_MANAGER_MESSAGE: &str = "Taint manager: deleting due to NoExecute taint";
/// Pod GC's reason when it deletes a pod bound to a node that no longer exists.
pub const DELETION_BY_POD_GC: &str = "DeletionByPodGC";
/// Pod GC's message for such a pod.
pub const POD_GC_MESSAGE: &str = "PodGC: node no longer exists";

/// The scheduler's message, naming the preemptor's `spec.schedulerName`.
pub fn preemption_message(scheduler_name: &str) -> String {
    format!("{scheduler_name}: preempting to accommodate a higher priority pod")
}

/// A `DisruptionTarget` condition with status `True`, before [`update`] stamps it.
pub fn disruption_target(reason: &str, message: &str) -> Value {
    json!({"type": DISRUPTION_TARGET, "status": "True", "lastProbeTime": null,
           "reason": reason, "message": message})
}

/// The condition as it should be written into a status whose conditions are `conditions` (the
/// pod's `status.conditions`, possibly null), or `None` when the pod already carries it exactly.
///
/// As upstream: a new condition, or one whose status changes, gets `lastTransitionTime = now`;
/// an unchanged status keeps its old transition time; reason, message and probe time are
/// compared too.
pub fn update(conditions: &Value, condition: &Value, now: &str) -> Option<Value> {
    let mut condition = condition.clone();
    condition["lastTransitionTime"] = json!(now);
    let old = conditions
        .as_array()
        .and_then(|list| list.iter().find(|c| c["type"] == condition["type"]));
    let Some(old) = old else {
        return Some(condition);
    };
    if old["status"] == condition["status"] {
        condition["lastTransitionTime"] = old["lastTransitionTime"].clone();
    }
    let same = |field: &str| {
        let normal = |v: &Value| if v.is_null() { Value::Null } else { v.clone() };
        normal(&old[field]) == normal(&condition[field])
    };
    let equal = [
        "status",
        "reason",
        "message",
        "lastProbeTime",
        "lastTransitionTime",
    ]
    .iter()
    .all(|f| same(f));
    (!equal).then_some(condition)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: &str = "2026-01-01T00:00:10Z";
    const BEFORE: &str = "2026-01-01T00:00:00Z";

    fn taint_manager() -> Value {
        disruption_target(DELETION_BY_TAINT_MANAGER, TAINT_MANAGER_MESSAGE)
    }

    #[test]
    fn a_pod_without_the_condition_gets_it_stamped_now() {
        let conditions = json!([{"type": "Ready", "status": "True"}]);
        let c = update(&conditions, &taint_manager(), NOW).expect("added");
        assert_eq!(c["type"], "DisruptionTarget");
        assert_eq!(c["status"], "True");
        assert_eq!(c["reason"], "DeletionByTaintManager");
        assert_eq!(
            c["message"],
            "Taint manager: deleting due to NoExecute taint"
        );
        assert_eq!(c["lastTransitionTime"], NOW);
        assert!(update(&Value::Null, &taint_manager(), NOW).is_some());
    }

    #[test]
    fn a_pod_that_already_carries_the_same_condition_needs_no_write() {
        let mut existing = taint_manager();
        existing["lastTransitionTime"] = json!(BEFORE);
        assert_eq!(update(&json!([existing]), &taint_manager(), NOW), None);
    }

    #[test]
    fn another_reason_with_the_same_status_keeps_the_transition_time() {
        let mut existing = disruption_target("EvictionByEvictionAPI", "Eviction API: evicting");
        existing["lastTransitionTime"] = json!(BEFORE);
        let c = update(&json!([existing]), &taint_manager(), NOW).expect("changed");
        assert_eq!(c["lastTransitionTime"], BEFORE);
        assert_eq!(c["reason"], "DeletionByTaintManager");
    }

    #[test]
    fn a_status_change_moves_the_transition_time() {
        let existing = json!({"type": "DisruptionTarget", "status": "False",
                              "lastTransitionTime": BEFORE});
        let c = update(&json!([existing]), &taint_manager(), NOW).expect("changed");
        assert_eq!(c["lastTransitionTime"], NOW);
    }

    #[test]
    fn messages_are_upstreams() {
        assert_eq!(
            preemption_message("default-scheduler"),
            "default-scheduler: preempting to accommodate a higher priority pod"
        );
        assert_eq!(POD_GC_MESSAGE, "PodGC: node no longer exists");
        assert_eq!(DELETION_BY_POD_GC, "DeletionByPodGC");
        assert_eq!(PREEMPTION_BY_SCHEDULER, "PreemptionByScheduler");
    }
}
