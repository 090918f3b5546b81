//! A simulated container's log: the lifecycle lines its node knows (started, usage, restarts,
//! stopping, exit), in the `/containerLogs` shape `kubectl logs` prints.

use crate::model::{Phase, PodState};
use chrono::{DateTime, Utc};
use std::time::Duration;

/// The query of a `/containerLogs` request (the options `kubectl logs` sends).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    pub previous: bool,
    pub timestamps: bool,
    pub follow: bool,
    pub tail_lines: Option<usize>,
}

impl Options {
    /// Reads the options from a query string; unknown or malformed ones are ignored.
    pub fn parse(query: Option<&str>) -> Options {
        let mut o = Options::default();
        for pair in query.unwrap_or_default().split('&') {
            let (k, v) = pair.split_once('=').unwrap_or((pair, "true"));
            let on = v == "true" || v == "1";
            match k {
                "previous" => o.previous = on,
                "timestamps" => o.timestamps = on,
                "follow" => o.follow = on,
                "tailLines" => o.tail_lines = v.parse().ok(),
                _ => {}
            }
        }
        o
    }
}

/// Why there is no log to return (upstream's messages).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LogError {
    #[error("pod {0} is not running on this node")]
    NoPod(String),
    #[error("container {container} is not valid for pod {pod}")]
    NoContainer { container: String, pod: String },
    #[error("previous terminated container \"{container}\" in pod \"{pod}\" not found")]
    NoPrevious { container: String, pod: String },
}

/// The log of `container` of `pod` on `node` at `now` (the model's time; `wall` is the
/// wall-clock time at `now`).
pub fn log(
    pod: &PodState,
    node: &str,
    container: &str,
    now: Duration,
    wall: DateTime<Utc>,
    options: &Options,
) -> Result<String, LogError> {
    let name = pod.key.split_once('/').map_or(pod.key.as_str(), |(_, n)| n);
    let spec = pod
        .containers
        .iter()
        .chain(&pod.init_containers)
        .find(|c| c.name == container)
        .ok_or_else(|| LogError::NoContainer {
            container: container.to_string(),
            pod: name.to_string(),
        })?;
    let at = |t: Duration| {
        let ago = chrono::Duration::from_std(now.saturating_sub(t)).unwrap_or_default();
        (wall - ago).to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
    };
    let mut lines: Vec<(String, String)> = Vec::new();
    if options.previous {
        if pod.restarts == 0 {
            return Err(LogError::NoPrevious {
                container: container.to_string(),
                pod: name.to_string(),
            });
        }
        // The run before the last restart ended where the current one began.
        let ended = at(pod.started_at);
        lines.push((
            ended.clone(),
            format!(
                "berth: container {container} (image {}) was running on node {node}",
                spec.image
            ),
        ));
        let how = pod
            .last_exit
            .as_deref()
            .unwrap_or("was OOM-killed (exit code 137)");
        lines.push((ended, format!("berth: container {container} {how}")));
    } else {
        if let Some(t) = pod.scheduled_at {
            lines.push((
                t.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true),
                format!(
                    "berth: pod {name} scheduled to node {node} at {}",
                    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                ),
            ));
        }
        let started = at(pod.started_at);
        if pod.restarts > 0 {
            lines.push((
                started.clone(),
                format!(
                    "berth: container {container} restarted ({} restarts)",
                    pod.restarts
                ),
            ));
        }
        lines.push((
            started.clone(),
            format!(
                "berth: container {container} (image {}) started on node {node}",
                spec.image
            ),
        ));
        let usage = |t: Duration| {
            pod.container_usage(t)
                .into_iter()
                .find(|(c, _, _)| c == container)
                .map(|(_, u, _)| (u.cpu_milli, u.amounts.memory))
        };
        if let Some((cpu, memory)) = usage(pod.started_at) {
            lines.push((started, format!("berth: using cpu={cpu}m memory={memory}")));
        }
        let current = usage(now);
        if current != usage(pod.started_at) && pod.phase != Phase::Terminated {
            if let Some((cpu, memory)) = current {
                lines.push((at(now), format!("berth: using cpu={cpu}m memory={memory}")));
            }
        }
        match pod.phase {
            Phase::Terminating => lines.push((at(now), "berth: stopping".into())),
            Phase::Terminated => lines.push((
                at(now),
                format!("berth: {}", pod.ended.as_deref().unwrap_or("exited")),
            )),
            Phase::Pending | Phase::Running => {}
        }
    }
    let skip = options
        .tail_lines
        .map_or(0, |n| lines.len().saturating_sub(n));
    Ok(lines
        .into_iter()
        .skip(skip)
        .map(|(ts, line)| {
            if options.timestamps {
                format!("{ts} {line}\n")
            } else {
                format!("{line}\n")
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn pod(restarts: i32) -> PodState {
        let v = json!({"metadata": {"namespace": "ns", "name": "p", "uid": "u",
                        "annotations": {"berth.io/usage": "cpu=200m,memory=1Gi"}},
                       "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                       "status": {"phase": "Running"}});
        let (mut p, _) = PodState::from_pod(&v, Duration::ZERO);
        p.phase = Phase::Running;
        p.restarts = restarts;
        p
    }

    fn wall() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-01-01T00:01:00Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default()
    }

    #[test]
    fn a_running_container_logs_its_start_and_usage() {
        let log = log(
            &pod(0),
            "node-1",
            "c",
            Duration::from_secs(60),
            wall(),
            &Options::default(),
        );
        assert_eq!(
            log,
            Ok("berth: container c (image nginx) started on node node-1\n\
                berth: using cpu=200m memory=1073741824\n"
                .to_string())
        );
    }

    #[test]
    fn timestamps_count_back_from_the_wall_clock() {
        let o = Options::parse(Some("timestamps=true&tailLines=1"));
        let log = log(&pod(0), "n", "c", Duration::from_secs(60), wall(), &o);
        assert_eq!(
            log,
            Ok("2026-01-01T00:00:00.000000000Z berth: using cpu=200m memory=1073741824\n".into())
        );
    }

    #[test]
    fn previous_needs_a_restart() {
        let o = Options::parse(Some("previous=true"));
        assert_eq!(
            log(&pod(0), "n", "c", Duration::ZERO, wall(), &o),
            Err(LogError::NoPrevious {
                container: "c".into(),
                pod: "p".into()
            })
        );
        let previous = log(&pod(1), "n", "c", Duration::ZERO, wall(), &o);
        assert!(previous.is_ok_and(|l| l.contains("OOM-killed (exit code 137)")));
    }

    #[test]
    fn an_ended_pod_says_how_it_ended() {
        let mut p = pod(0);
        p.phase = Phase::Terminated;
        let o = Options::default();
        let log = log(&p, "n", "c", Duration::ZERO, wall(), &o).unwrap_or_default();
        assert!(log.ends_with("berth: exited\n"), "{log}");
        p.ended = Some("evicted: The node was low on resource: memory.".into());
        let log = super::log(&p, "n", "c", Duration::ZERO, wall(), &o).unwrap_or_default();
        assert!(
            log.ends_with("berth: evicted: The node was low on resource: memory.\n"),
            "{log}"
        );
    }

    #[test]
    fn an_unknown_container_is_refused() {
        let o = Options::default();
        assert_eq!(
            log(&pod(0), "n", "x", Duration::ZERO, wall(), &o),
            Err(LogError::NoContainer {
                container: "x".into(),
                pod: "p".into()
            })
        );
    }

    proptest! {
        #[test]
        fn any_query_parses(q in ".*") {
            let _ = Options::parse(Some(&q));
        }
    }

    #[test]
    fn a_scheduled_pod_logs_where_and_when_first() {
        let mut p = pod(0);
        p.scheduled_at = Some(wall() - chrono::Duration::seconds(90));
        let log = log(
            &p,
            "node-1",
            "c",
            Duration::from_secs(60),
            wall(),
            &Options::default(),
        );
        assert_eq!(
            log,
            Ok(
                "berth: pod p scheduled to node node-1 at 2025-12-31T23:59:30Z\n\
                berth: container c (image nginx) started on node node-1\n\
                berth: using cpu=200m memory=1073741824\n"
                    .to_string()
            )
        );
    }

    #[test]
    fn the_scheduled_time_comes_from_the_pod_scheduled_condition() {
        let v = json!({"metadata": {"namespace": "ns", "name": "p"},
                       "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                       "status": {"conditions": [
                           {"type": "PodScheduled", "status": "True",
                            "lastTransitionTime": "2026-01-01T00:00:05Z"}]}});
        let (p, _) = PodState::from_pod(&v, Duration::ZERO);
        assert_eq!(p.scheduled_at, Some(wall() - chrono::Duration::seconds(55)));
        let unscheduled = json!({"metadata": {"namespace": "ns", "name": "p"},
                                 "spec": {"containers": []}, "status": {}});
        assert_eq!(
            PodState::from_pod(&unscheduled, Duration::ZERO)
                .0
                .scheduled_at,
            None
        );
    }
}
