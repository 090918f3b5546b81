//! The events upstream's controllers record, worded as they word them: what a driver records
//! after an API call succeeds or fails (the engines' plans say what to try; whether it worked
//! is only known to the driver). Each function is one `Eventf` call of upstream's.

use crate::model::{EventRecord, Involved};
use k8s_openapi::api::core::v1::Pod;

const NORMAL: &str = "Normal";
const WARNING: &str = "Warning";

fn event(
    involved: &Involved,
    type_: &'static str,
    reason: &'static str,
    message: String,
) -> EventRecord {
    EventRecord {
        involved: involved.clone(),
        type_,
        reason,
        message,
    }
}

/// `RealPodControl.CreatePods` succeeded (ReplicaSet, ReplicationController, Job, DaemonSet).
pub fn created_pod(owner: &Involved, pod: &str) -> EventRecord {
    event(
        owner,
        NORMAL,
        "SuccessfulCreate",
        format!("Created pod: {pod}"),
    )
}

/// `RealPodControl.DeletePod` succeeded.
pub fn deleted_pod(owner: &Involved, pod: &str) -> EventRecord {
    event(
        owner,
        NORMAL,
        "SuccessfulDelete",
        format!("Deleted pod: {pod}"),
    )
}

/// `RealPodControl.DeletePod` failed (a 404 is not a failure: the pod is gone).
pub fn failed_delete(owner: &Involved, api_message: &str) -> EventRecord {
    event(
        owner,
        WARNING,
        "FailedDelete",
        format!("Error deleting: {api_message}"),
    )
}

/// A StatefulSet's pod `verb` ("Create", "Delete") succeeded (`recordPodEvent`).
pub fn stateful_pod(set: &Involved, verb: &'static str, pod: &str, set_name: &str) -> EventRecord {
    let reason = match verb {
        "Create" => "SuccessfulCreate",
        "Update" => "SuccessfulUpdate",
        _ => "SuccessfulDelete",
    };
    let message = format!(
        "{} Pod {pod} in StatefulSet {set_name} successful",
        verb.to_lowercase()
    );
    event(set, NORMAL, reason, message)
}

/// A StatefulSet's pod delete failed (`recordPodEvent` with an error).
pub fn stateful_pod_failed(
    set: &Involved,
    verb: &'static str,
    pod: &str,
    set_name: &str,
    api_message: &str,
) -> EventRecord {
    let reason = match verb {
        "Create" => "FailedCreate",
        "Update" => "FailedUpdate",
        _ => "FailedDelete",
    };
    let message = format!(
        "{} Pod {pod} in StatefulSet {set_name} failed error: {api_message}",
        verb.to_lowercase()
    );
    event(set, WARNING, reason, message)
}

/// A Deployment scaled one of its ReplicaSets from `from` to `to` replicas
/// (`scaleReplicaSet`, and `getNewReplicaSet` for a new set: from 0); nothing when the size
/// did not change.
pub fn scaled_replica_set(
    deployment: &Involved,
    replica_set: &str,
    from: i32,
    to: i32,
) -> Option<EventRecord> {
    let direction = match to.cmp(&from) {
        std::cmp::Ordering::Greater => "up",
        std::cmp::Ordering::Less => "down",
        std::cmp::Ordering::Equal => return None,
    };
    Some(event(
        deployment,
        NORMAL,
        "ScalingReplicaSet",
        format!("Scaled {direction} replica set {replica_set} to {to} from {from}"),
    ))
}

/// The node lifecycle controller marked a pod of a not-ready node not ready
/// (`MarkPodsNotReady`).
pub fn pod_node_not_ready(pod: &Pod) -> EventRecord {
    event(
        &Involved::pod(pod),
        WARNING,
        "NodeNotReady",
        "Node is not ready".into(),
    )
}

/// The node lifecycle controller forgot a deleted node (`RecordNodeEvent`).
pub fn removing_node(name: &str, uid: &str) -> EventRecord {
    // The node is gone: no version to name.
    event(
        &Involved::Node {
            name: name.into(),
            uid: uid.into(),
            resource_version: String::new(),
        },
        NORMAL,
        "RemovingNode",
        format!("Node {name} event: Removing Node {name} from Controller"),
    )
}

/// A Job finished (`Complete`) or failed with `reason` and `message` (the Failed condition's).
pub fn job_finished(job: &Involved, failure: Option<(&'static str, &str)>) -> EventRecord {
    match failure {
        None => event(job, NORMAL, "Completed", "Job completed".into()),
        Some((reason, message)) => event(job, WARNING, reason, message.to_string()),
    }
}

/// A Job's `spec.suspend` changed (`Suspended` / `Resumed`).
pub fn job_suspended(job: &Involved, suspended: bool) -> EventRecord {
    if suspended {
        event(job, NORMAL, "Suspended", "Job suspended".into())
    } else {
        event(job, NORMAL, "Resumed", "Job resumed".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rs() -> Involved {
        Involved::Workload {
            api_version: "apps/v1",
            kind: "ReplicaSet",
            namespace: "ns".into(),
            name: "web-5d4f".into(),
            uid: "u".into(),
            resource_version: "7".into(),
        }
    }

    fn said(e: &EventRecord) -> (&str, &str, &str) {
        (e.type_, e.reason, e.message.as_str())
    }

    #[test]
    fn pod_control_words_creates_and_deletes_as_upstream() {
        assert_eq!(
            said(&created_pod(&rs(), "web-5d4f-abc12")),
            ("Normal", "SuccessfulCreate", "Created pod: web-5d4f-abc12")
        );
        assert_eq!(
            said(&deleted_pod(&rs(), "web-5d4f-abc12")),
            ("Normal", "SuccessfulDelete", "Deleted pod: web-5d4f-abc12")
        );
        assert_eq!(
            said(&failed_delete(&rs(), "forbidden")),
            ("Warning", "FailedDelete", "Error deleting: forbidden")
        );
    }

    #[test]
    fn stateful_set_pod_events_name_the_verb_pod_and_set() {
        assert_eq!(
            said(&stateful_pod(&rs(), "Create", "web-0", "web")),
            (
                "Normal",
                "SuccessfulCreate",
                "create Pod web-0 in StatefulSet web successful"
            )
        );
        assert_eq!(
            said(&stateful_pod(&rs(), "Delete", "web-2", "web")),
            (
                "Normal",
                "SuccessfulDelete",
                "delete Pod web-2 in StatefulSet web successful"
            )
        );
        assert_eq!(
            said(&stateful_pod_failed(
                &rs(),
                "Delete",
                "web-2",
                "web",
                "boom"
            )),
            (
                "Warning",
                "FailedDelete",
                "delete Pod web-2 in StatefulSet web failed error: boom"
            )
        );
    }

    #[test]
    fn scaling_says_the_direction_the_new_size_and_the_old() {
        let up = scaled_replica_set(&rs(), "web-5d4f", 0, 3).unwrap();
        assert_eq!(
            said(&up),
            (
                "Normal",
                "ScalingReplicaSet",
                "Scaled up replica set web-5d4f to 3 from 0"
            )
        );
        let down = scaled_replica_set(&rs(), "web-5d4f", 3, 1).unwrap();
        assert_eq!(down.message, "Scaled down replica set web-5d4f to 1 from 3");
        assert_eq!(scaled_replica_set(&rs(), "web-5d4f", 2, 2), None);
    }

    #[test]
    fn node_lifecycle_events_are_upstreams() {
        let mut pod = Pod::default();
        pod.metadata.namespace = Some("ns".into());
        pod.metadata.name = Some("p".into());
        pod.metadata.uid = Some("u".into());
        pod.metadata.resource_version = Some("42".into());
        let not_ready = pod_node_not_ready(&pod);
        assert_eq!(
            said(&not_ready),
            ("Warning", "NodeNotReady", "Node is not ready")
        );
        // Upstream's ObjectReference names the version the controller saw.
        let reference = crate::recorder::reference(&not_ready.involved);
        assert_eq!(reference.resource_version.as_deref(), Some("42"));
        assert_eq!(reference.uid.as_deref(), Some("u"));
        assert_eq!(reference.api_version.as_deref(), Some("v1"));
        assert_eq!(
            said(&removing_node("n1", "u")),
            (
                "Normal",
                "RemovingNode",
                "Node n1 event: Removing Node n1 from Controller"
            )
        );
    }

    #[test]
    fn job_outcomes_are_upstreams() {
        assert_eq!(
            said(&job_finished(&rs(), None)),
            ("Normal", "Completed", "Job completed")
        );
        assert_eq!(
            said(&job_finished(
                &rs(),
                Some((
                    "BackoffLimitExceeded",
                    "Job has reached the specified backoff limit"
                ))
            )),
            (
                "Warning",
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit"
            )
        );
        assert_eq!(
            said(&job_suspended(&rs(), true)),
            ("Normal", "Suspended", "Job suspended")
        );
        assert_eq!(
            said(&job_suspended(&rs(), false)),
            ("Normal", "Resumed", "Job resumed")
        );
    }
}
