//! The `ReplicaFailure` condition, as upstream's `calculateStatus` keeps it: set (status
//! "True", reason `FailedCreate` or `FailedDelete`, the API server's error as its message)
//! when a pass fails to create or delete a pod and the set has no such condition yet, removed
//! after a pass that changed the pods without error. A pass that did not try (its creates
//! held back by the back-off, or the count not trusted yet) leaves the condition as it is,
//! as upstream's set, waiting in the rate-limited queue, is not synced meanwhile.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

/// The condition's type.
pub const REPLICA_FAILURE: &str = "ReplicaFailure";
/// The reason when a pod could not be created.
pub const FAILED_CREATE: &str = "FailedCreate";
/// The reason when a pod could not be deleted.
pub const FAILED_DELETE: &str = "FailedDelete";

/// How a pass's pod changes went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every create and delete it tried succeeded (or none was needed).
    Succeeded,
    /// A create or delete was refused: the reason and the API server's message.
    Failed {
        reason: &'static str,
        message: String,
    },
    /// It did not try (back-off, or pods in flight): nothing is known.
    NotTried,
}

/// The set's `status.conditions` after a pass: `Some(new)` when they change, `None` when they
/// stay as `current` is.
pub fn conditions(current: &Value, outcome: &Outcome, now: DateTime<Utc>) -> Option<Value> {
    let list = current.as_array().cloned().unwrap_or_default();
    let has = list.iter().any(|c| c["type"] == REPLICA_FAILURE);
    match outcome {
        Outcome::Failed { reason, message } if !has => {
            let mut list = list;
            list.push(json!({
                "type": REPLICA_FAILURE,
                "status": "True",
                "lastTransitionTime": berth_core::clock::timestamp(now),
                "reason": reason,
                "message": message,
            }));
            Some(Value::Array(list))
        }
        Outcome::Succeeded if has => Some(Value::Array(
            list.into_iter()
                .filter(|c| c["type"] != REPLICA_FAILURE)
                .collect(),
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        "2026-11-25T10:00:00Z".parse().unwrap()
    }

    fn refused() -> Outcome {
        Outcome::Failed {
            reason: FAILED_CREATE,
            message: "pods is forbidden: User \"u\" cannot create resource \"pods\"".into(),
        }
    }

    #[test]
    fn a_refused_create_sets_replica_failure_with_the_error() {
        let got = conditions(&Value::Null, &refused(), now()).unwrap();
        assert_eq!(
            got,
            json!([{"type": "ReplicaFailure", "status": "True",
                    "lastTransitionTime": "2026-11-25T10:00:00Z", "reason": "FailedCreate",
                    "message": "pods is forbidden: User \"u\" cannot create resource \"pods\""}])
        );
    }

    #[test]
    fn an_existing_failure_is_kept_as_it_is_while_refusals_go_on() {
        let current = conditions(&Value::Null, &refused(), now()).unwrap();
        let again = Outcome::Failed {
            reason: FAILED_DELETE,
            message: "other".into(),
        };
        assert_eq!(conditions(&current, &again, now()), None);
        assert_eq!(conditions(&current, &Outcome::NotTried, now()), None);
    }

    #[test]
    fn a_pass_without_error_removes_only_the_failure() {
        let other = json!({"type": "Other", "status": "True"});
        let mut current = conditions(&Value::Null, &refused(), now()).unwrap();
        current.as_array_mut().unwrap().insert(0, other.clone());
        assert_eq!(
            conditions(&current, &Outcome::Succeeded, now()),
            Some(json!([other]))
        );
        assert_eq!(conditions(&json!([]), &Outcome::Succeeded, now()), None);
    }
}
