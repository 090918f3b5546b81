//! The Deployment's `status.conditions` (upstream `deployment/util` and `progress.go`):
//! `Available` (minimum availability) and `Progressing` (new ReplicaSet created, progressing,
//! complete, or past `progressDeadlineSeconds`), with upstream's reasons and messages.

use chrono::{DateTime, Duration, Utc};

pub const AVAILABLE: &str = "Available";
pub const PROGRESSING: &str = "Progressing";

pub const MINIMUM_REPLICAS_AVAILABLE: &str = "MinimumReplicasAvailable";
pub const MINIMUM_REPLICAS_UNAVAILABLE: &str = "MinimumReplicasUnavailable";
pub const NEW_RS_CREATED: &str = "NewReplicaSetCreated";
pub const FOUND_NEW_RS: &str = "FoundNewReplicaSet";
pub const RS_UPDATED: &str = "ReplicaSetUpdated";
pub const NEW_RS_AVAILABLE: &str = "NewReplicaSetAvailable";
pub const TIMED_OUT: &str = "ProgressDeadlineExceeded";
pub const PAUSED: &str = "DeploymentPaused";
pub const RESUMED: &str = "DeploymentResumed";

/// One `status.conditions` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
    pub last_update: DateTime<Utc>,
    pub last_transition: DateTime<Utc>,
}

impl Condition {
    pub fn new(
        type_: &str,
        status: &str,
        reason: &str,
        message: String,
        now: DateTime<Utc>,
    ) -> Self {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message,
            last_update: now,
            last_transition: now,
        }
    }
}

/// The condition of `type_`, if there is one.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Upstream `SetDeploymentCondition`: the same status and reason leave the condition as it is;
/// the same status keeps its transition time.
pub fn set(conditions: &mut Vec<Condition>, mut new: Condition) {
    if let Some(current) = find(conditions, &new.type_) {
        if current.status == new.status && current.reason == new.reason {
            return;
        }
        if current.status == new.status {
            new.last_transition = current.last_transition;
        }
    }
    conditions.retain(|c| c.type_ != new.type_);
    conditions.push(new);
}

/// Upstream's progressing update: the condition is replaced (fresh `lastUpdateTime`, which
/// restarts the progress deadline) and keeps its transition time while it stays `True`.
pub fn refresh(conditions: &mut Vec<Condition>, mut new: Condition) {
    if let Some(current) = find(conditions, &new.type_) {
        if current.status == new.status {
            new.last_transition = current.last_transition;
        }
    }
    conditions.retain(|c| c.type_ != new.type_);
    conditions.push(new);
}

/// The `Available` condition for `available` of `replicas` pods, `max_unavailable` allowed.
pub fn available(
    available: i32,
    replicas: i32,
    max_unavailable: i32,
    now: DateTime<Utc>,
) -> Condition {
    if available >= replicas - max_unavailable {
        Condition::new(
            AVAILABLE,
            "True",
            MINIMUM_REPLICAS_AVAILABLE,
            "Deployment has minimum availability.".into(),
            now,
        )
    } else {
        Condition::new(
            AVAILABLE,
            "False",
            MINIMUM_REPLICAS_UNAVAILABLE,
            "Deployment does not have minimum availability.".into(),
            now,
        )
    }
}

/// Whether the rollout is past its deadline (upstream `DeploymentTimedOut`): the `Progressing`
/// condition was last updated more than `deadline` seconds ago and the rollout is not complete.
pub fn timed_out(conditions: &[Condition], deadline: Option<i64>, now: DateTime<Utc>) -> bool {
    let (Some(deadline), Some(c)) = (deadline, find(conditions, PROGRESSING)) else {
        return false;
    };
    match c.reason.as_str() {
        NEW_RS_AVAILABLE => false,
        TIMED_OUT => true,
        _ => c.last_update + Duration::seconds(deadline) < now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> DateTime<Utc> {
        DateTime::<Utc>::from_timestamp(1_700_000_000 + s, 0).unwrap()
    }

    #[test]
    fn setting_the_same_status_and_reason_changes_nothing() {
        let mut cs = vec![available(3, 3, 0, at(0))];
        set(&mut cs, available(3, 3, 0, at(10)));
        assert_eq!(cs[0].last_update, at(0));
        set(&mut cs, available(1, 3, 0, at(20)));
        assert_eq!(cs[0].status, "False");
        assert_eq!(cs[0].reason, MINIMUM_REPLICAS_UNAVAILABLE);
        assert_eq!(cs[0].last_transition, at(20));
    }

    #[test]
    fn a_refresh_keeps_the_transition_time_of_a_true_condition() {
        let first = Condition::new(PROGRESSING, "True", NEW_RS_CREATED, "m".into(), at(0));
        let mut cs = vec![first];
        refresh(
            &mut cs,
            Condition::new(PROGRESSING, "True", RS_UPDATED, "m".into(), at(5)),
        );
        assert_eq!((cs[0].last_transition, cs[0].last_update), (at(0), at(5)));
    }

    #[test]
    fn availability_allows_max_unavailable() {
        assert_eq!(available(2, 3, 1, at(0)).status, "True");
        assert_eq!(available(1, 3, 1, at(0)).status, "False");
    }

    #[test]
    fn the_deadline_counts_from_the_last_progress() {
        let cs = vec![Condition::new(
            PROGRESSING,
            "True",
            RS_UPDATED,
            "m".into(),
            at(0),
        )];
        assert!(!timed_out(&cs, Some(600), at(600)));
        assert!(timed_out(&cs, Some(600), at(601)));
        assert!(!timed_out(&cs, None, at(6000)));
        let done = vec![Condition::new(
            PROGRESSING,
            "True",
            NEW_RS_AVAILABLE,
            "m".into(),
            at(0),
        )];
        assert!(!timed_out(&done, Some(1), at(6000)));
    }
}
