//! Containers that finish: a pod annotated `berth.io/run-seconds: "30"` (and optionally
//! `berth.io/exit-code: "1"`, default 0) has its containers exit that long after they started,
//! and the pod then goes the way upstream's kubelet takes it for its `restartPolicy`:
//!
//! - `Never`: the pod ends, `Succeeded` when every container exited 0, else `Failed`;
//! - `OnFailure`: ends `Succeeded` on exit 0; a non-zero exit restarts the containers;
//! - `Always` (the default): the containers are restarted whatever their exit code.
//!
//! A restart waits out upstream's CrashLoopBackOff (10s, doubling, at most 5 minutes) with the
//! container `waiting` in `CrashLoopBackOff`, the exit in `lastState.terminated` and
//! `restartCount` one higher. Pure: the driver (`pods.rs`) sleeps and writes what these return.

use crate::container_exit::Ends;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// How long the containers run before they exit.
pub const RUN_SECONDS_ANNOTATION: &str = "berth.io/run-seconds";
/// The exit code they exit with (default 0).
pub const EXIT_CODE_ANNOTATION: &str = "berth.io/exit-code";

/// The first CrashLoopBackOff delay (upstream kubelet `backOffPeriod`).
pub const RESTART_BACKOFF_BASE: Duration = Duration::from_secs(10);
/// The longest CrashLoopBackOff delay (upstream `MaxContainerBackOff`).
pub const RESTART_BACKOFF_MAX: Duration = Duration::from_secs(300);
/// A container that ran this long before it exited starts its back-off over (upstream: twice
/// the longest back-off).
pub const RESTART_BACKOFF_RESET: Duration = Duration::from_secs(600);

/// The restarts that count towards the next back-off, of `restarts` so far, for a container
/// that ran `ran` before exiting: none after a long enough run.
pub fn backoff_restarts(restarts: i32, ran: Duration) -> i32 {
    if ran >= RESTART_BACKOFF_RESET {
        0
    } else {
        restarts
    }
}

/// The `BackOff` event's message (upstream's words).
pub fn backoff_message(container: &str, pod: &str, namespace: &str, uid: &str) -> String {
    format!("Back-off restarting failed container {container} in pod {pod}_{namespace}({uid})")
}

/// How a pod's containers run when they finish by themselves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    /// How long the containers run (the longest of them, when their commands say).
    pub after: Duration,
    /// The pod's exit for its restart policy: the first container's non-zero exit, else 0.
    pub exit_code: i32,
    /// Each container's own exit code, where it differs from `exit_code`'s source (derived
    /// from the commands); containers not named exit with `exit_code`.
    pub exit_codes: BTreeMap<String, i32>,
    /// Extra time before the first run ends: the init containers' run before it started.
    pub first_after: Duration,
}

impl Run {
    /// The run the pod's annotations ask for: `None` when it runs forever, an error naming the
    /// annotation when one is not a number (the pod then runs forever).
    pub fn of(annotations: &BTreeMap<String, String>) -> Result<Option<Run>, String> {
        let Some(seconds) = annotations.get(RUN_SECONDS_ANNOTATION) else {
            return Ok(None);
        };
        let seconds = seconds.trim().parse::<u64>().map_err(|_| {
            format!("{RUN_SECONDS_ANNOTATION}: {seconds:?} is not a whole number of seconds")
        })?;
        let exit_code = match annotations.get(EXIT_CODE_ANNOTATION) {
            None => 0,
            Some(code) => code
                .trim()
                .parse::<i32>()
                .map_err(|_| format!("{EXIT_CODE_ANNOTATION}: {code:?} is not an exit code"))?,
        };
        Ok(Some(Run {
            after: Duration::from_secs(seconds),
            exit_code,
            exit_codes: BTreeMap::new(),
            first_after: Duration::ZERO,
        }))
    }

    /// The run the containers' commands say ([`crate::container_exit`]): `None` when one of
    /// them runs until stopped (or there are none).
    pub fn derived(containers: &[(String, Ends)]) -> Option<Run> {
        let mut run = Run {
            after: Duration::ZERO,
            exit_code: 0,
            exit_codes: BTreeMap::new(),
            first_after: Duration::ZERO,
        };
        for (name, ends) in containers {
            let Ends::After { after, exit_code } = *ends else {
                return None;
            };
            run.after = run.after.max(after);
            if run.exit_code == 0 {
                run.exit_code = exit_code;
            }
            run.exit_codes.insert(name.clone(), exit_code);
        }
        (!containers.is_empty()).then_some(run)
    }

    /// The exit code of container `name`.
    pub fn exit_code_of(&self, name: &str) -> i32 {
        self.exit_codes.get(name).copied().unwrap_or(self.exit_code)
    }
}

/// What follows a container exit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterExit {
    /// The pod ends in this phase (`Succeeded` or `Failed`).
    End(&'static str),
    /// The containers start again after this back-off.
    Restart(Duration),
}

/// What the kubelet does after the containers exited with `exit_code`, having restarted
/// `restarts` times before (upstream `kuberuntime` `ShouldContainerBeRestarted` and pod phase).
pub fn after_exit(restart_policy: &str, exit_code: i32, restarts: i32) -> AfterExit {
    let restart = match restart_policy {
        "Never" => false,
        "OnFailure" => exit_code != 0,
        _ => true,
    };
    if restart {
        AfterExit::Restart(restart_backoff(restarts))
    } else if exit_code == 0 {
        AfterExit::End("Succeeded")
    } else {
        AfterExit::End("Failed")
    }
}

/// The CrashLoopBackOff before the restart that follows `restarts` earlier ones.
pub fn restart_backoff(restarts: i32) -> Duration {
    let doublings = restarts.clamp(0, 16) as u32;
    (RESTART_BACKOFF_BASE * 2u32.pow(doublings)).min(RESTART_BACKOFF_MAX)
}

/// A container's `terminated` state (reason `Completed` on 0, `Error` otherwise).
pub fn terminated(exit_code: i32, started_at: &Value, finished_at: &str, id: &Value) -> Value {
    let reason = if exit_code == 0 { "Completed" } else { "Error" };
    json!({"exitCode": exit_code, "reason": reason, "startedAt": started_at,
           "finishedAt": finished_at, "containerID": id})
}

/// The status patch (merge) for the containers of `pod` exiting at `now` as `run` says,
/// followed by `after`.
pub fn exited_status(pod: &Value, run: &Run, after: AfterExit, now: &str) -> Value {
    let statuses: Vec<Value> = pod["status"]["containerStatuses"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut s| {
            let started = s["state"]["running"]["startedAt"].clone();
            let exit_code = run.exit_code_of(s["name"].as_str().unwrap_or(""));
            let exit = terminated(exit_code, &started, now, &s["containerID"]);
            s["ready"] = json!(false);
            s["started"] = json!(false);
            match after {
                AfterExit::End(_) => s["state"] = json!({"terminated": exit}),
                AfterExit::Restart(backoff) => {
                    let restarts = s["restartCount"].as_i64().unwrap_or(0) + 1;
                    let message = format!(
                        "back-off {} restarting failed container={} pod={}_{}({})",
                        human(backoff),
                        s["name"].as_str().unwrap_or(""),
                        pod["metadata"]["name"].as_str().unwrap_or(""),
                        pod["metadata"]["namespace"].as_str().unwrap_or(""),
                        pod["metadata"]["uid"].as_str().unwrap_or(""),
                    );
                    s["restartCount"] = json!(restarts);
                    s["lastState"] = json!({"terminated": exit});
                    s["state"] =
                        json!({"waiting": {"reason": "CrashLoopBackOff", "message": message}});
                }
            }
            s
        })
        .collect();
    let reason = match after {
        AfterExit::End(_) => "PodCompleted",
        AfterExit::Restart(_) => "ContainersNotReady",
    };
    let conditions = not_ready(pod, reason, now);
    let mut status = json!({"containerStatuses": statuses, "conditions": conditions});
    if let AfterExit::End(phase) = after {
        status["phase"] = json!(phase);
    }
    json!({"status": status})
}

/// The status patch (merge) for the containers of `pod` starting again at `now`.
pub fn restarted_status(pod: &Value, now: &str) -> Value {
    let statuses: Vec<Value> = pod["status"]["containerStatuses"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut s| {
            s["ready"] = json!(true);
            s["started"] = json!(true);
            s["state"] = json!({"running": {"startedAt": now}});
            s
        })
        .collect();
    let conditions: Vec<Value> = pod["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut c| {
            if matches!(c["type"].as_str(), Some("Ready" | "ContainersReady")) {
                c = json!({"type": c["type"], "status": "True", "lastProbeTime": null,
                           "lastTransitionTime": now});
            }
            c
        })
        .collect();
    json!({"status": {"containerStatuses": statuses, "conditions": conditions}})
}

/// The pod's conditions with `Ready` and `ContainersReady` turned `False` for `reason`.
fn not_ready(pod: &Value, reason: &str, now: &str) -> Vec<Value> {
    pod["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut c| {
            if matches!(c["type"].as_str(), Some("Ready" | "ContainersReady")) {
                c = json!({"type": c["type"], "status": "False", "reason": reason,
                           "lastProbeTime": null, "lastTransitionTime": now});
            }
            c
        })
        .collect()
}

/// `10s`, `1m20s`, `5m0s` as Go prints durations in the back-off message.
pub(crate) fn human(d: Duration) -> String {
    let s = d.as_secs();
    if s < 60 {
        format!("{s}s")
    } else {
        format!("{}m{}s", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn annotated(seconds: u64, exit_code: i32) -> Run {
        Run {
            after: Duration::from_secs(seconds),
            exit_code,
            exit_codes: BTreeMap::new(),
            first_after: Duration::ZERO,
        }
    }

    #[test]
    fn derived_runs_last_as_the_longest_container_and_fail_with_the_first_failure() {
        let after = |s: u64, exit_code: i32| Ends::After {
            after: Duration::from_secs(s),
            exit_code,
        };
        let run = Run::derived(&[("a".into(), after(1, 0)), ("b".into(), after(3, 2))]).unwrap();
        assert_eq!(run.after, Duration::from_secs(3));
        assert_eq!(run.exit_code, 2);
        assert_eq!((run.exit_code_of("a"), run.exit_code_of("b")), (0, 2));
        assert_eq!(
            Run::derived(&[("a".into(), after(1, 0)), ("b".into(), Ends::Never)]),
            None,
            "a container that serves keeps the pod running"
        );
        assert_eq!(Run::derived(&[]), None);
    }

    #[test]
    fn each_container_exits_with_its_own_code() {
        let mut pod = running_pod();
        let mut second = pod["status"]["containerStatuses"][0].clone();
        second["name"] = json!("d");
        pod["status"]["containerStatuses"]
            .as_array_mut()
            .unwrap()
            .push(second);
        let mut run = annotated(1, 1);
        run.exit_codes = BTreeMap::from([("c".to_string(), 0), ("d".to_string(), 1)]);
        let patch = exited_status(&pod, &run, AfterExit::End("Failed"), "t");
        let codes: Vec<_> = patch["status"]["containerStatuses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["state"]["terminated"]["exitCode"].clone())
            .collect();
        assert_eq!(codes, [json!(0), json!(1)]);
    }

    fn running_pod() -> Value {
        json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u"},
               "status": {"phase": "Running",
                 "conditions": [{"type": "Initialized", "status": "True"},
                                {"type": "Ready", "status": "True"},
                                {"type": "ContainersReady", "status": "True"}],
                 "containerStatuses": [{"name": "c", "ready": true, "started": true,
                    "restartCount": 0, "containerID": "berth://u-c",
                    "state": {"running": {"startedAt": "2026-11-24T12:00:00Z"}}}]}})
    }

    #[test]
    fn a_pod_without_the_annotation_runs_forever() {
        assert_eq!(Run::of(&annotations(&[])), Ok(None));
    }

    #[test]
    fn run_seconds_and_exit_code_are_read_with_exit_code_defaulting_to_zero() {
        assert_eq!(
            Run::of(&annotations(&[(RUN_SECONDS_ANNOTATION, "30")])),
            Ok(Some(annotated(30, 0)))
        );
        assert_eq!(
            Run::of(&annotations(&[
                (RUN_SECONDS_ANNOTATION, "5"),
                (EXIT_CODE_ANNOTATION, "3")
            ])),
            Ok(Some(annotated(5, 3)))
        );
    }

    #[test]
    fn bad_annotations_are_errors_naming_the_annotation() {
        let e = Run::of(&annotations(&[(RUN_SECONDS_ANNOTATION, "soon")])).unwrap_err();
        assert!(e.contains(RUN_SECONDS_ANNOTATION), "{e}");
        let e = Run::of(&annotations(&[
            (RUN_SECONDS_ANNOTATION, "1"),
            (EXIT_CODE_ANNOTATION, "x"),
        ]))
        .unwrap_err();
        assert!(e.contains(EXIT_CODE_ANNOTATION), "{e}");
    }

    #[test]
    fn restart_policy_decides_between_phase_and_restart() {
        assert_eq!(after_exit("Never", 0, 0), AfterExit::End("Succeeded"));
        assert_eq!(after_exit("Never", 1, 0), AfterExit::End("Failed"));
        assert_eq!(after_exit("OnFailure", 0, 0), AfterExit::End("Succeeded"));
        assert_eq!(
            after_exit("OnFailure", 2, 0),
            AfterExit::Restart(Duration::from_secs(10))
        );
        assert_eq!(
            after_exit("Always", 0, 1),
            AfterExit::Restart(Duration::from_secs(20))
        );
        assert_eq!(
            after_exit("", 0, 0),
            AfterExit::Restart(Duration::from_secs(10))
        );
    }

    #[test]
    fn crash_loop_backoff_doubles_up_to_five_minutes() {
        assert_eq!(restart_backoff(0), Duration::from_secs(10));
        assert_eq!(restart_backoff(2), Duration::from_secs(40));
        assert_eq!(restart_backoff(5), Duration::from_secs(300));
        assert_eq!(restart_backoff(100), RESTART_BACKOFF_MAX);
    }

    #[test]
    fn an_ending_container_is_terminated_and_the_pod_takes_its_phase() {
        let now = "2026-11-24T12:00:30Z";
        let patch = exited_status(
            &running_pod(),
            &annotated(0, 1),
            AfterExit::End("Failed"),
            now,
        );
        let s = &patch["status"];
        assert_eq!(s["phase"], "Failed");
        let t = &s["containerStatuses"][0]["state"]["terminated"];
        assert_eq!(t["exitCode"], 1);
        assert_eq!(t["reason"], "Error");
        assert_eq!(t["startedAt"], "2026-11-24T12:00:00Z");
        assert_eq!(t["finishedAt"], now);
        assert_eq!(s["containerStatuses"][0]["ready"], false);
        let ready = s["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Ready")
            .unwrap();
        assert_eq!(ready["status"], "False");
        assert_eq!(ready["reason"], "PodCompleted");
        let ok = exited_status(
            &running_pod(),
            &annotated(0, 0),
            AfterExit::End("Succeeded"),
            now,
        );
        assert_eq!(
            ok["status"]["containerStatuses"][0]["state"]["terminated"]["reason"],
            "Completed"
        );
    }

    #[test]
    fn a_restarting_container_waits_in_crash_loop_back_off_with_its_last_state() {
        let now = "2026-11-24T12:00:30Z";
        let patch = exited_status(
            &running_pod(),
            &annotated(0, 0),
            AfterExit::Restart(Duration::from_secs(10)),
            now,
        );
        let s = &patch["status"];
        assert!(s.get("phase").is_none());
        let c = &s["containerStatuses"][0];
        assert_eq!(c["restartCount"], 1);
        assert_eq!(c["state"]["waiting"]["reason"], "CrashLoopBackOff");
        assert_eq!(c["lastState"]["terminated"]["reason"], "Completed");
        let again = restarted_status(&json!({"metadata": {}, "status": s}), now);
        let c = &again["status"]["containerStatuses"][0];
        assert_eq!(c["state"]["running"]["startedAt"], now);
        assert_eq!(c["restartCount"], 1);
        assert_eq!(c["lastState"]["terminated"]["exitCode"], 0);
    }

    #[test]
    fn a_long_run_starts_the_back_off_over() {
        assert_eq!(backoff_restarts(5, Duration::from_secs(599)), 5);
        assert_eq!(backoff_restarts(5, Duration::from_secs(600)), 0);
        assert_eq!(
            restart_backoff(backoff_restarts(5, Duration::from_secs(600))),
            RESTART_BACKOFF_BASE
        );
        assert_eq!(restart_backoff(5), RESTART_BACKOFF_MAX);
    }

    #[test]
    fn the_back_off_event_says_which_container_of_which_pod() {
        assert_eq!(
            backoff_message("c", "p", "ns", "u"),
            "Back-off restarting failed container c in pod p_ns(u)"
        );
    }
}
