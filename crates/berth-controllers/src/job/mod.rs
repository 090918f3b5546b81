//! The Job engine, as upstream's `pkg/controller/job` (NonIndexed and Indexed completion modes): how many pods
//! should run, when the Job has completed or failed, and the back-off before a failed pod is
//! replaced. Pure: counts and `now` in, a [`Step`] out. [`sync`] applies it to one Job and its
//! pods; the driver (`driver.rs`) carries the decisions out.

pub(crate) mod driver;
pub mod failure_policy;
pub mod indexed;
pub mod per_index;
pub mod success_policy;
pub mod sync;
pub mod tracking;

use chrono::{DateTime, Duration, Utc};

/// The first back-off after a failed pod; it doubles with each further failure.
pub const BACKOFF_BASE: Duration = Duration::seconds(10);
/// The longest back-off.
pub const BACKOFF_MAX: Duration = Duration::seconds(360);

/// What the engine reads of a Job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobSpec {
    /// `spec.completions`; `None` is a work queue: done once any pod succeeds and none runs.
    pub completions: Option<i32>,
    /// `spec.parallelism` (defaulted to 1 by the API server).
    pub parallelism: i32,
    /// `spec.backoffLimit` (defaulted to 6).
    pub backoff_limit: i32,
    pub active_deadline_seconds: Option<i64>,
    pub suspend: bool,
}

/// The Job's pods, counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodCounts {
    /// Not finished and not being deleted.
    pub active: i32,
    pub succeeded: i32,
    /// Failed pods that count towards `backoffLimit` (not those a `podFailurePolicy` ignores).
    pub failed: i32,
    /// The message of a failed pod's `FailJob` rule, when one matched.
    pub fail_job: Option<String>,
}

/// Why a Job failed, with upstream's reason and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    BackoffLimitExceeded,
    DeadlineExceeded,
    /// A failed pod matched a `FailJob` rule of the `podFailurePolicy`; the rule's message.
    PodFailurePolicy(String),
    /// More indexes failed than `maxFailedIndexes` allows.
    MaxFailedIndexesExceeded,
    /// Every index succeeded or failed, and some failed.
    FailedIndexes,
    /// The reason and message of an interim condition stored by an earlier pass
    /// (`FailureTarget`, `SuccessCriteriaMet`), or of a matched success policy: what the
    /// final condition repeats.
    Stored {
        reason: String,
        message: String,
    },
}

impl Failure {
    /// The condition's `reason`.
    pub fn reason(&self) -> &str {
        match self {
            Failure::BackoffLimitExceeded => "BackoffLimitExceeded",
            Failure::DeadlineExceeded => "DeadlineExceeded",
            Failure::PodFailurePolicy(_) => "PodFailurePolicy",
            Failure::MaxFailedIndexesExceeded => "MaxFailedIndexesExceeded",
            Failure::FailedIndexes => "FailedIndexes",
            Failure::Stored { reason, .. } => reason,
        }
    }

    /// The condition's `message`.
    pub fn message(&self) -> &str {
        match self {
            Failure::BackoffLimitExceeded => "Job has reached the specified backoff limit",
            Failure::DeadlineExceeded => "Job was active longer than specified deadline",
            Failure::PodFailurePolicy(message) => message,
            Failure::MaxFailedIndexesExceeded => {
                "Job has exceeded the specified maximal number of failed indexes"
            }
            Failure::FailedIndexes => "Job has failed indexes",
            Failure::Stored { message, .. } => message,
        }
    }
}

/// What one sync of a Job does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// The Job is finished: delete its active pods and set the `Failed` condition.
    Fail(Failure),
    /// Every completion is done: set the `Complete` condition.
    Complete,
    /// Create this many pods (after `wait`, when a failed pod is being replaced).
    Create { count: i32, wait: Duration },
    /// Delete this many active pods (parallelism lowered, or suspended).
    Delete(i32),
    /// Nothing to do now.
    Wait,
}

/// How many pods should be active (upstream `manageJob`'s `wantActive`).
pub fn want_active(spec: &JobSpec, counts: &PodCounts) -> i32 {
    if spec.suspend {
        return 0;
    }
    let parallelism = spec.parallelism.max(0);
    match spec.completions {
        // A work queue stops starting pods once one has succeeded.
        None if counts.succeeded > 0 => counts.active.min(parallelism),
        None => parallelism,
        Some(completions) => (completions - counts.succeeded).clamp(0, parallelism),
    }
}

/// The back-off before replacing a pod after `failed` failures (10s, 20s, 40s, ... 6m).
pub fn backoff(failed: i32) -> Duration {
    if failed <= 0 {
        return Duration::zero();
    }
    let doublings = (failed - 1).min(16) as u32;
    (BACKOFF_BASE * 2i32.pow(doublings)).min(BACKOFF_MAX)
}

/// One sync. `started` is `status.startTime`; `last_failure` when the newest failed pod finished.
pub fn step(
    spec: &JobSpec,
    counts: PodCounts,
    started: Option<DateTime<Utc>>,
    last_failure: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Step {
    if let Some(message) = &counts.fail_job {
        return Step::Fail(Failure::PodFailurePolicy(message.clone()));
    }
    if counts.failed > spec.backoff_limit {
        return Step::Fail(Failure::BackoffLimitExceeded);
    }
    if let (Some(deadline), Some(started), false) =
        (spec.active_deadline_seconds, started, spec.suspend)
    {
        if now - started >= berth_core::clock::seconds(deadline) {
            return Step::Fail(Failure::DeadlineExceeded);
        }
    }
    let complete = match spec.completions {
        Some(completions) => counts.succeeded >= completions,
        None => counts.succeeded > 0 && counts.active == 0,
    };
    if complete {
        return Step::Complete;
    }
    let want = want_active(spec, &counts);
    if counts.active > want {
        return Step::Delete(counts.active - want);
    }
    if counts.active < want {
        let ready_at = last_failure.map_or(now, |t| t + backoff(counts.failed));
        let wait = (ready_at - now).max(Duration::zero());
        return Step::Create {
            count: want - counts.active,
            wait,
        };
    }
    Step::Wait
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 24, 12, 0, 0).unwrap()
    }

    fn spec(completions: Option<i32>, parallelism: i32) -> JobSpec {
        JobSpec {
            completions,
            parallelism,
            backoff_limit: 6,
            active_deadline_seconds: None,
            suspend: false,
        }
    }

    fn counts(active: i32, succeeded: i32, failed: i32) -> PodCounts {
        PodCounts {
            active,
            succeeded,
            failed,
            fail_job: None,
        }
    }

    #[test]
    fn completions_three_parallelism_two_runs_two_then_one() {
        let s = spec(Some(3), 2);
        assert_eq!(
            step(&s, counts(0, 0, 0), None, None, now()),
            Step::Create {
                count: 2,
                wait: Duration::zero()
            }
        );
        assert_eq!(step(&s, counts(2, 0, 0), None, None, now()), Step::Wait);
        assert_eq!(step(&s, counts(1, 2, 0), None, None, now()), Step::Wait);
        assert_eq!(
            step(&s, counts(0, 2, 0), None, None, now()),
            Step::Create {
                count: 1,
                wait: Duration::zero()
            }
        );
        assert_eq!(step(&s, counts(0, 3, 0), None, None, now()), Step::Complete);
    }

    #[test]
    fn a_work_queue_completes_when_one_succeeded_and_none_runs() {
        let s = spec(None, 3);
        assert_eq!(want_active(&s, &counts(0, 0, 0)), 3);
        assert_eq!(step(&s, counts(2, 1, 0), None, None, now()), Step::Wait);
        assert_eq!(step(&s, counts(0, 1, 0), None, None, now()), Step::Complete);
    }

    #[test]
    fn failures_past_the_backoff_limit_fail_the_job() {
        let mut s = spec(Some(1), 1);
        s.backoff_limit = 2;
        assert!(matches!(
            step(&s, counts(0, 0, 2), None, Some(now()), now()),
            Step::Create { .. }
        ));
        assert_eq!(
            step(&s, counts(0, 0, 3), None, None, now()),
            Step::Fail(Failure::BackoffLimitExceeded)
        );
        assert_eq!(
            Failure::BackoffLimitExceeded.message(),
            "Job has reached the specified backoff limit"
        );
    }

    #[test]
    fn a_fail_job_rule_fails_the_job_before_any_backoff_limit() {
        let mut c = counts(1, 0, 0);
        c.fail_job = Some("Container c for pod ns/p failed with exit code 42".into());
        let Step::Fail(failure) = step(&spec(Some(3), 2), c, None, None, now()) else {
            panic!("the Job should fail");
        };
        assert_eq!(failure.reason(), "PodFailurePolicy");
        assert_eq!(
            failure.message(),
            "Container c for pod ns/p failed with exit code 42"
        );
    }

    #[test]
    fn a_replacement_waits_out_the_exponential_backoff() {
        assert_eq!(backoff(1), Duration::seconds(10));
        assert_eq!(backoff(3), Duration::seconds(40));
        assert_eq!(backoff(30), BACKOFF_MAX);
        let s = spec(Some(1), 1);
        let failed_at = now() - Duration::seconds(15);
        assert_eq!(
            step(&s, counts(0, 0, 2), None, Some(failed_at), now()),
            Step::Create {
                count: 1,
                wait: Duration::seconds(5)
            }
        );
    }

    #[test]
    fn an_active_deadline_fails_the_job() {
        let mut s = spec(Some(1), 1);
        s.active_deadline_seconds = Some(30);
        let started = now() - Duration::seconds(30);
        assert_eq!(
            step(&s, counts(1, 0, 0), Some(started), None, now()),
            Step::Fail(Failure::DeadlineExceeded)
        );
        assert_eq!(
            step(&s, counts(1, 0, 0), Some(now()), None, now()),
            Step::Wait
        );
    }

    #[test]
    fn lowering_parallelism_or_suspending_deletes_active_pods() {
        assert_eq!(
            step(&spec(Some(10), 1), counts(3, 0, 0), None, None, now()),
            Step::Delete(2)
        );
        let mut s = spec(Some(10), 3);
        s.suspend = true;
        assert_eq!(
            step(&s, counts(3, 0, 0), None, None, now()),
            Step::Delete(3)
        );
    }
}
