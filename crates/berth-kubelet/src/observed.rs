//! Which generation of a pod a status write reflects (1.35's `PodObservedGenerationTracking`,
//! on by default): the kubelet stamps every status it writes with the `metadata.generation` of
//! the pod it computed that status from, in `status.observedGeneration` and in the conditions
//! it owns. A spec change (an image, a toleration, `activeDeadlineSeconds`) moves the pod's
//! generation on; the next status the kubelet writes says it has seen it.

use k8s_openapi::api::core::v1::Pod;
use serde_json::{json, Value};

/// The patch that tells the API the kubelet has seen `pod`'s current spec, when the status it
/// last wrote reflects an older generation (a toleration, an image or `activeDeadlineSeconds`
/// changed since): a strategic merge patch that moves `observedGeneration` on in the status and
/// in each condition (merged by `type`, so a concurrent write of a condition is not undone).
/// `None` while the kubelet has written no status for the pod yet (its first status carries the
/// generation) or the status is current.
pub fn catch_up(pod: &Pod) -> Option<Value> {
    let generation = pod.metadata.generation.filter(|g| *g > 0)?;
    let status = pod.status.as_ref()?;
    let observed = status.observed_generation?;
    if observed >= generation {
        return None;
    }
    let conditions: Vec<Value> = status
        .conditions
        .iter()
        .flatten()
        .map(|c| json!({"type": c.type_, "observedGeneration": generation}))
        .collect();
    Some(json!({"status": {"observedGeneration": generation, "conditions": conditions}}))
}

/// Stamps `patch` (`{"status": {...}}`, as the kubelet sends to `pods/<name>/status`) with the
/// `generation` of the pod it was computed from, in the status and in every condition the patch carries: once a pod is
/// bound its kubelet writes all of them (`PodScheduled` included, as upstream's
/// `generateAPIPodStatus`). A pod without a generation (written before the API server set
/// them) is left as it is.
pub fn stamp(generation: Option<i64>, patch: &mut Value) {
    let Some(generation) = generation.filter(|g| *g > 0) else {
        return;
    };
    let Some(status) = patch.get_mut("status").and_then(Value::as_object_mut) else {
        return;
    };
    status.insert("observedGeneration".into(), json!(generation));
    if let Some(conditions) = status.get_mut("conditions").and_then(Value::as_array_mut) {
        for c in conditions.iter_mut().filter(|c| c.is_object()) {
            c["observedGeneration"] = json!(generation);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(generation: Option<i64>) -> Pod {
        let mut p = Pod::default();
        p.metadata.generation = generation;
        p
    }

    #[test]
    fn the_status_and_the_kubelets_conditions_carry_the_pods_generation() {
        let mut patch = json!({"status": {"phase": "Running", "conditions": [
            {"type": "PodScheduled", "status": "True", "observedGeneration": 1},
            {"type": "Ready", "status": "True"},
            {"type": "ContainersReady", "status": "True"},
        ]}});
        stamp(Some(3), &mut patch);
        assert_eq!(patch["status"]["observedGeneration"], 3);
        let c = &patch["status"]["conditions"];
        assert_eq!(
            c[0]["observedGeneration"], 3,
            "a bound pod's conditions are the kubelet's"
        );
        assert_eq!(c[1]["observedGeneration"], 3);
        assert_eq!(c[2]["observedGeneration"], 3);
    }

    fn with_status(generation: i64, observed: Option<i64>) -> Pod {
        let mut p = pod(Some(generation));
        p.status = Some(
            serde_json::from_value(json!({
                "observedGeneration": observed,
                "conditions": [{"type": "PodScheduled", "status": "True"},
                               {"type": "Ready", "status": "True"}],
            }))
            .unwrap(),
        );
        p
    }

    #[test]
    fn a_spec_change_after_the_last_status_is_caught_up_condition_by_condition() {
        let patch = catch_up(&with_status(4, Some(3))).expect("behind");
        assert_eq!(
            patch,
            json!({"status": {"observedGeneration": 4, "conditions": [
                {"type": "PodScheduled", "observedGeneration": 4},
                {"type": "Ready", "observedGeneration": 4},
            ]}})
        );
        assert_eq!(catch_up(&with_status(4, Some(4))), None, "current");
        assert_eq!(
            catch_up(&with_status(4, None)),
            None,
            "no status of the kubelet's yet"
        );
    }

    #[test]
    fn a_pod_without_a_generation_is_left_alone() {
        let mut patch = json!({"status": {"phase": "Running"}});
        stamp(None, &mut patch);
        assert_eq!(patch, json!({"status": {"phase": "Running"}}));
    }

    #[test]
    fn a_patch_without_a_status_is_left_alone() {
        let mut patch = json!({"metadata": {"labels": {"a": "b"}}});
        stamp(Some(2), &mut patch);
        assert_eq!(patch, json!({"metadata": {"labels": {"a": "b"}}}));
    }
}
