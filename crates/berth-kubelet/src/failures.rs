//! A failure schedule for repeatable demos: the cluster file says which nodes fail, when
//! (relative to the start of `berth serve`), how (`stopped`, `partitioned`, `not-ready`) and
//! for how long; for example
//!
//! ```yaml
//! pools:
//! - name: small
//!   count: 4
//!   zone: zone-a
//!   failures:
//!   - {node: small-2, stop: 30s, for: 60s, mode: partitioned}
//!   - {stop: 5m}          # no node: every node of the pool; no `for`: never comes back
//! ```
//!
//! A failure is carried out through the `berth.io/simulate` annotation, as `kubectl annotate`
//! or `berth node stop` would, so `kubectl get node -o yaml` shows it and a user can end it
//! early. Times run on berth's injected clock (a paused or accelerated runtime moves them).
//!
//! [`timeline`] turns the schedule into annotation changes (pure); [`run`] writes them when
//! they are due; [`supervise`] runs it under a loop supervisor, resuming after the changes
//! already made when it is restarted.

use crate::simulate::{Simulate, SIMULATE_ANNOTATION};
use berth_core::clock::Clock;
use berth_core::supervisor::Supervisor;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// One failure of one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// When the node fails, from the start.
    pub stop: Duration,
    /// How long it stays failed; `None`: until someone starts it again.
    pub duration: Option<Duration>,
    /// How it fails (never [`Simulate::Running`]).
    pub mode: Simulate,
}

/// The name the failure schedule's loop is supervised under.
pub const LOOP_NAME: &str = "node-failure-schedule";

/// A change of one node's behaviour, due `at` after the start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub at: Duration,
    pub node: String,
    pub mode: Simulate,
}

/// Every node's failures as changes in the order they are due (ties: by node name, a
/// recovery before a failure, so back-to-back failures of one node both happen).
pub fn timeline<'a>(nodes: impl IntoIterator<Item = (&'a str, &'a [Failure])>) -> Vec<Change> {
    let mut changes = Vec::new();
    for (node, failures) in nodes {
        for f in failures {
            changes.push(Change {
                at: f.stop,
                node: node.to_string(),
                mode: f.mode,
            });
            if let Some(d) = f.duration {
                changes.push(Change {
                    at: f.stop.saturating_add(d),
                    node: node.to_string(),
                    mode: Simulate::Running,
                });
            }
        }
    }
    changes.sort_by(|a, b| {
        (a.at, &a.node, a.mode != Simulate::Running).cmp(&(
            b.at,
            &b.node,
            b.mode != Simulate::Running,
        ))
    });
    changes
}

/// Writes each change's annotation when it is due, from now on.
pub async fn run(client: kube::Client, clock: Clock, changes: Vec<Change>) {
    let progress = Progress::new(&clock);
    resume(client, clock, changes.into(), progress).await;
}

/// How far a schedule got: when it started and how many changes it has made, shared by the
/// runs of one schedule so that a restarted run neither replays nor shifts them.
#[derive(Clone, Debug)]
struct Progress {
    start: Instant,
    done: Arc<AtomicUsize>,
}

impl Progress {
    fn new(clock: &Clock) -> Progress {
        Progress {
            start: clock.instant(),
            done: Arc::default(),
        }
    }
}

/// Runs the schedule as `name` under `supervisor`: a run that panics is restarted with the
/// changes not yet made, each still due at its time from the first start. A schedule that is
/// done stays done (its task waits, rather than being restarted).
pub fn supervise(
    supervisor: &Supervisor,
    name: &'static str,
    client: kube::Client,
    clock: Clock,
    changes: Vec<Change>,
) {
    let changes: Arc<[Change]> = changes.into();
    let progress = Progress::new(&clock);
    supervisor.spawn(name, move || {
        let run = resume(
            client.clone(),
            clock.clone(),
            changes.clone(),
            progress.clone(),
        );
        async move {
            run.await;
            std::future::pending::<()>().await;
        }
    });
}

/// Writes the changes `progress` has not made yet, each when it is due.
async fn resume(client: kube::Client, clock: Clock, changes: Arc<[Change]>, progress: Progress) {
    let api: Api<Node> = Api::all(client);
    while let Some(change) = changes.get(progress.done.load(Ordering::SeqCst)) {
        // A time too far to represent is never due (and does not overflow).
        let Some(due) = progress.start.checked_add(clock.tokio_duration(change.at)) else {
            return;
        };
        tokio::time::sleep_until(due).await;
        let patch = serde_json::json!({"metadata": {"annotations": {
            SIMULATE_ANNOTATION: change.mode.as_str()}}});
        // Counted first: a change that panics the run is not tried again.
        progress.done.fetch_add(1, Ordering::SeqCst);
        match api
            .patch(&change.node, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => tracing::info!(node = %change.node, mode = %change.mode.as_str(),
                                    "failure schedule: node behaviour set"),
            Err(e) => tracing::warn!(node = %change.node, error = %e,
                                     "failure schedule: setting the node's behaviour failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn a_failure_is_a_change_and_its_end_another() {
        let a = [Failure {
            stop: s(30),
            duration: Some(s(60)),
            mode: Simulate::Partitioned,
        }];
        let b = [Failure {
            stop: s(10),
            duration: None,
            mode: Simulate::Stopped,
        }];
        let t = timeline([("a", &a[..]), ("b", &b[..])]);
        let got: Vec<(u64, &str, Simulate)> = t
            .iter()
            .map(|c| (c.at.as_secs(), c.node.as_str(), c.mode))
            .collect();
        assert_eq!(
            got,
            [
                (10, "b", Simulate::Stopped),
                (30, "a", Simulate::Partitioned),
                (90, "a", Simulate::Running),
            ]
        );
    }

    #[test]
    fn back_to_back_failures_of_one_node_recover_then_fail_again() {
        let f = [
            Failure {
                stop: s(0),
                duration: Some(s(10)),
                mode: Simulate::Stopped,
            },
            Failure {
                stop: s(10),
                duration: Some(s(5)),
                mode: Simulate::NotReady,
            },
        ];
        let modes: Vec<Simulate> = timeline([("n", &f[..])]).iter().map(|c| c.mode).collect();
        assert_eq!(
            modes,
            [
                Simulate::Stopped,
                Simulate::Running,
                Simulate::NotReady,
                Simulate::Running
            ]
        );
    }
}
