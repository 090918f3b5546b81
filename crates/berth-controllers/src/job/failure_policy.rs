//! A Job's `podFailurePolicy` (batch/v1, GA in 1.31), as upstream's
//! `pkg/controller/job/pod_failure_policy.go`: the first rule that matches a failed pod decides
//! what its failure means — `FailJob` ends the Job at once, `Ignore` does not count it towards
//! `backoffLimit`, `Count` counts it as usual, `FailIndex` fails the pod's index. A rule matches
//! on the exit codes of the pod's terminated containers (`onExitCodes`, exit code 0 never
//! matches) or on the pod's conditions (`onPodConditions`, e.g. `DisruptionTarget`). Pure.

use k8s_openapi::api::batch::v1::{
    PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement,
    PodFailurePolicyOnPodConditionsPattern,
};
use k8s_openapi::api::core::v1::{ContainerStatus, Pod, PodCondition};

/// What a matching rule does with the failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    FailJob,
    FailIndex,
    Ignore,
    Count,
}

impl Action {
    fn parse(s: &str) -> Option<Action> {
        match s {
            "FailJob" => Some(Action::FailJob),
            "FailIndex" => Some(Action::FailIndex),
            "Ignore" => Some(Action::Ignore),
            "Count" => Some(Action::Count),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Action::FailJob => "FailJob",
            Action::FailIndex => "FailIndex",
            Action::Ignore => "Ignore",
            Action::Count => "Count",
        }
    }
}

/// The rule a failed pod matched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Matched {
    pub action: Action,
    /// Upstream's message naming the container's exit code or the pod's condition, and the
    /// rule's action and index; the Job's `Failed` condition carries it under `FailJob`.
    pub message: String,
}

/// The first rule of `policy` that the failed `pod` matches, if any (none: the failure counts).
pub fn matching_rule(policy: &PodFailurePolicy, pod: &Pod) -> Option<Matched> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    for (index, rule) in policy.rules.iter().enumerate() {
        let Some(action) = Action::parse(&rule.action) else {
            continue;
        };
        let verb = action.name();
        if let Some(req) = &rule.on_exit_codes {
            if let Some((container, code)) = exit_code_match(pod, req) {
                return Some(Matched {
                    action,
                    message: format!(
                        "Container {container} for pod {namespace}/{name} failed with exit code {code} matching {verb} rule at index {index}"
                    ),
                });
            }
        } else if let Some(patterns) = &rule.on_pod_conditions {
            if let Some(c) = condition_match(pod, patterns) {
                return Some(Matched {
                    action,
                    message: format!(
                        "Pod {namespace}/{name} has condition {} matching {verb} rule at index {index}",
                        c.type_
                    ),
                });
            }
        }
    }
    None
}

/// The first terminated container (app containers before init containers) whose non-zero exit
/// code satisfies the requirement: its name and exit code.
fn exit_code_match(
    pod: &Pod,
    req: &PodFailurePolicyOnExitCodesRequirement,
) -> Option<(String, i32)> {
    let status = pod.status.as_ref()?;
    let app = status.container_statuses.iter().flatten();
    let init = status.init_container_statuses.iter().flatten();
    app.chain(init).find_map(|s| {
        let code = exit_code(s)?;
        let named = req.container_name.as_ref().is_none_or(|n| *n == s.name);
        (named && code != 0 && operator_matches(req, code)).then(|| (s.name.clone(), code))
    })
}

fn exit_code(s: &ContainerStatus) -> Option<i32> {
    Some(s.state.as_ref()?.terminated.as_ref()?.exit_code)
}

fn operator_matches(req: &PodFailurePolicyOnExitCodesRequirement, code: i32) -> bool {
    match req.operator.as_str() {
        "In" => req.values.contains(&code),
        "NotIn" => !req.values.contains(&code),
        _ => false,
    }
}

/// The pod's first condition that one of the patterns names, with the pattern's status
/// (`True` when the pattern leaves it out, as upstream defaults it).
fn condition_match<'p>(
    pod: &'p Pod,
    patterns: &[PodFailurePolicyOnPodConditionsPattern],
) -> Option<&'p PodCondition> {
    let conditions = pod.status.as_ref()?.conditions.as_ref()?;
    conditions.iter().find(|c| {
        patterns.iter().any(|p| {
            let status = if p.status.is_empty() {
                "True"
            } else {
                &p.status
            };
            p.type_ == c.type_ && status == c.status
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn policy(rules: Value) -> PodFailurePolicy {
        serde_json::from_value(json!({ "rules": rules })).unwrap()
    }

    fn failed_pod(containers: Value, init: Value, conditions: Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "pi-abc", "namespace": "ns"},
            "status": {"phase": "Failed", "containerStatuses": containers,
                       "initContainerStatuses": init, "conditions": conditions},
        }))
        .unwrap()
    }

    fn exited(name: &str, code: i32) -> Value {
        json!({"name": name, "image": "busybox", "imageID": "", "ready": false,
               "restartCount": 0, "state": {"terminated": {"exitCode": code}}})
    }

    fn exiting(name: &str, code: i32) -> Pod {
        failed_pod(json!([exited(name, code)]), json!([]), json!([]))
    }

    fn disrupted() -> Pod {
        failed_pod(
            json!([exited("main", 137)]),
            json!([]),
            json!([{"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet"}]),
        )
    }

    #[test]
    fn fail_job_on_exit_code_in_names_the_container_code_and_rule() {
        let p = policy(json!([
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}
        ]));
        let m = matching_rule(&p, &exiting("main", 42)).unwrap();
        assert_eq!(m.action, Action::FailJob);
        assert_eq!(
            m.message,
            "Container main for pod ns/pi-abc failed with exit code 42 matching FailJob rule at index 0"
        );
        assert_eq!(matching_rule(&p, &exiting("main", 1)), None);
    }

    #[test]
    fn not_in_matches_every_other_non_zero_exit_code() {
        let p = policy(json!([
            {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [1, 2]}}
        ]));
        assert_eq!(
            matching_rule(&p, &exiting("c", 3)).map(|m| m.action),
            Some(Action::Count)
        );
        assert_eq!(matching_rule(&p, &exiting("c", 2)), None);
        // A container that exited 0 never matches, not even NotIn.
        let ok = failed_pod(json!([exited("c", 0)]), json!([]), json!([]));
        assert_eq!(matching_rule(&p, &ok), None);
    }

    #[test]
    fn container_name_restricts_the_match_and_init_containers_are_read_too() {
        let p = policy(json!([
            {"action": "FailJob", "onExitCodes": {"containerName": "setup", "operator": "In", "values": [5]}}
        ]));
        assert_eq!(matching_rule(&p, &exiting("main", 5)), None);
        let init = failed_pod(json!([]), json!([exited("setup", 5)]), json!([]));
        let m = matching_rule(&p, &init).unwrap();
        assert!(m
            .message
            .starts_with("Container setup for pod ns/pi-abc failed with exit code 5"));
    }

    #[test]
    fn a_running_container_has_no_exit_code_to_match() {
        let p = policy(json!([
            {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [0]}}
        ]));
        let running = json!({"name": "c", "image": "busybox", "imageID": "", "ready": true,
                             "restartCount": 0, "state": {"running": {}}});
        assert_eq!(
            matching_rule(&p, &failed_pod(json!([running]), json!([]), json!([]))),
            None
        );
    }

    #[test]
    fn ignore_on_disruption_target_matches_an_evicted_pod() {
        let p = policy(json!([
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}
        ]));
        let m = matching_rule(&p, &disrupted()).unwrap();
        assert_eq!(m.action, Action::Ignore);
        assert_eq!(
            m.message,
            "Pod ns/pi-abc has condition DisruptionTarget matching Ignore rule at index 0"
        );
        assert_eq!(matching_rule(&p, &exiting("main", 1)), None);
    }

    #[test]
    fn a_condition_pattern_matches_on_its_status() {
        let p = policy(json!([
            {"action": "Count", "onPodConditions": [{"type": "DisruptionTarget", "status": "False"}]}
        ]));
        assert_eq!(matching_rule(&p, &disrupted()), None);
    }

    #[test]
    fn the_first_matching_rule_wins_and_its_index_is_named() {
        let p = policy(json!([
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [1]}},
            {"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [137]}}
        ]));
        let m = matching_rule(&p, &disrupted()).unwrap();
        assert_eq!(m.action, Action::FailJob);
        assert!(m.message.ends_with("matching FailJob rule at index 1"));
    }

    #[test]
    fn fail_index_is_reported_as_such() {
        let p = policy(json!([
            {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [7]}}
        ]));
        assert_eq!(
            matching_rule(&p, &exiting("c", 7)).map(|m| m.action),
            Some(Action::FailIndex)
        );
    }

    #[test]
    fn an_unknown_action_is_skipped() {
        let p = policy(json!([
            {"action": "Explode", "onExitCodes": {"operator": "In", "values": [1]}},
            {"action": "Count", "onExitCodes": {"operator": "In", "values": [1]}}
        ]));
        assert_eq!(
            matching_rule(&p, &exiting("c", 1)).map(|m| m.action),
            Some(Action::Count)
        );
    }
}
