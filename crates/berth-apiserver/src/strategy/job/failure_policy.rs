//! A Job's `podFailurePolicy`: upstream's defaults (`onPodConditions[].status` is `True`) and
//! validation (`validatePodFailurePolicy` in `apis/batch/validation`), with its messages.

use berth_core::validation::{names, FieldError, FieldErrorKind};
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// Upstream's limits.
const MAX_RULES: usize = 20;
const MAX_EXIT_CODES: usize = 255;
const MAX_CONDITION_PATTERNS: usize = 20;

/// The actions, operators and statuses upstream accepts, sorted as its messages list them.
const ACTIONS: &[&str] = &["Count", "FailIndex", "FailJob", "Ignore"];
const OPERATORS: &[&str] = &["In", "NotIn"];
const STATUSES: &[&str] = &["False", "True", "Unknown"];

/// Upstream `SetDefaults_Job` for the policy: a condition pattern without a status matches `True`.
pub(super) fn default(spec: &mut Value) {
    // `get_mut`, not `[]`: indexing a missing key mutably would insert it.
    let Some(rules) = spec
        .get_mut("podFailurePolicy")
        .and_then(|p| p.get_mut("rules"))
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for rule in rules {
        let patterns = rule
            .get_mut("onPodConditions")
            .and_then(Value::as_array_mut);
        for pattern in patterns.into_iter().flatten() {
            if pattern.is_object() && pattern["status"].is_null() {
                pattern["status"] = json!("True");
            }
        }
    }
}

/// The policy's field errors, for a Job spec at `at`.
pub(super) fn validate(spec: &Value, at: &str) -> Vec<FieldError> {
    let policy = &spec["podFailurePolicy"];
    if !policy.is_object() {
        return Vec::new();
    }
    let mut out = Vec::new();
    if let Some(p) = spec["podReplacementPolicy"]
        .as_str()
        .filter(|p| *p != "Failed")
    {
        out.push(FieldError::not_supported(
            format!("{at}.podReplacementPolicy"),
            p,
            &["Failed"],
        ));
    }
    let rules_at = format!("{at}.podFailurePolicy.rules");
    let rules = policy["rules"].as_array().map_or(&[][..], Vec::as_slice);
    if rules.len() > MAX_RULES {
        out.push(too_many(&rules_at, rules.len(), MAX_RULES));
    }
    let containers = container_names(&spec["template"]["spec"]);
    for (i, rule) in rules.iter().enumerate() {
        out.extend(validate_rule(
            spec,
            rule,
            &format!("{rules_at}[{i}]"),
            &containers,
        ));
    }
    out
}

fn validate_rule(
    spec: &Value,
    rule: &Value,
    at: &str,
    containers: &BTreeSet<&str>,
) -> Vec<FieldError> {
    let mut out = Vec::new();
    let action_at = format!("{at}.action");
    match rule["action"].as_str().unwrap_or("") {
        "" => out.push(FieldError::required(
            action_at,
            format!("valid values: {}", go_list(ACTIONS)),
        )),
        "FailIndex" if spec["backoffLimitPerIndex"].is_null() => out.push(FieldError::invalid(
            action_at,
            "FailIndex",
            "requires the backoffLimitPerIndex to be set",
        )),
        a if !ACTIONS.contains(&a) => out.push(FieldError::not_supported(action_at, a, ACTIONS)),
        _ => {}
    }
    let on_exit_codes = rule["onExitCodes"].is_object();
    let patterns = rule["onPodConditions"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    if on_exit_codes {
        out.extend(validate_exit_codes(
            &rule["onExitCodes"],
            &format!("{at}.onExitCodes"),
            containers,
        ));
    }
    if !patterns.is_empty() {
        out.extend(validate_conditions(
            patterns,
            &format!("{at}.onPodConditions"),
        ));
    }
    if on_exit_codes && !patterns.is_empty() {
        out.push(invalid_omitted(
            at,
            "specifying both OnExitCodes and OnPodConditions is not supported",
        ));
    }
    if !on_exit_codes && patterns.is_empty() {
        out.push(invalid_omitted(
            at,
            "specifying one of OnExitCodes and OnPodConditions is required",
        ));
    }
    out
}

fn validate_exit_codes(req: &Value, at: &str, containers: &BTreeSet<&str>) -> Vec<FieldError> {
    let mut out = Vec::new();
    let operator = req["operator"].as_str().unwrap_or("");
    let operator_at = format!("{at}.operator");
    if operator.is_empty() {
        out.push(FieldError::required(
            operator_at,
            format!("valid values: {}", go_list(OPERATORS)),
        ));
    } else if !OPERATORS.contains(&operator) {
        out.push(FieldError::not_supported(operator_at, operator, OPERATORS));
    }
    if let Some(name) = req["containerName"].as_str() {
        if !containers.contains(name) {
            out.push(FieldError::invalid(
                format!("{at}.containerName"),
                name,
                "must be one of the container or initContainer names in the pod template",
            ));
        }
    }
    let values_at = format!("{at}.values");
    let values: Vec<i64> = req["values"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_i64)
        .collect();
    if values.is_empty() {
        out.push(FieldError::invalid_rendered(
            values_at.as_str(),
            "[]int32(nil)",
            "at least one value is required",
        ));
    } else if values.len() > MAX_EXIT_CODES {
        out.push(too_many(&values_at, values.len(), MAX_EXIT_CODES));
    }
    let mut seen = BTreeSet::new();
    for (j, v) in values.iter().enumerate() {
        let value_at = format!("{values_at}[{j}]");
        if operator == "In" && *v == 0 {
            out.push(FieldError::invalid_rendered(
                value_at.as_str(),
                "0",
                "must not be 0 for the In operator",
            ));
        }
        if !seen.insert(*v) {
            out.push(FieldError {
                field: value_at,
                kind: FieldErrorKind::Duplicate,
                value: None,
                detail: v.to_string(),
            });
        }
    }
    if values.windows(2).any(|w| w[0] > w[1]) {
        let rendered: Vec<String> = values.iter().map(i64::to_string).collect();
        out.push(FieldError::invalid_rendered(
            values_at.as_str(),
            &format!("[]int32{{{}}}", rendered.join(", ")),
            "must be ordered",
        ));
    }
    out
}

fn validate_conditions(patterns: &[Value], at: &str) -> Vec<FieldError> {
    let mut out = Vec::new();
    if patterns.len() > MAX_CONDITION_PATTERNS {
        out.push(too_many(at, patterns.len(), MAX_CONDITION_PATTERNS));
    }
    for (j, pattern) in patterns.iter().enumerate() {
        let pattern_at = format!("{at}[{j}]");
        let type_ = pattern["type"].as_str().unwrap_or("");
        for detail in names::qualified_name(type_) {
            out.push(FieldError::invalid(
                format!("{pattern_at}.type"),
                type_,
                detail,
            ));
        }
        let status_at = format!("{pattern_at}.status");
        match pattern["status"].as_str().unwrap_or("") {
            "" => out.push(FieldError::required(
                status_at,
                format!("valid values: {}", go_list(STATUSES)),
            )),
            s if !STATUSES.contains(&s) => {
                out.push(FieldError::not_supported(status_at, s, STATUSES))
            }
            _ => {}
        }
    }
    out
}

/// The names of the template's containers and init containers.
fn container_names(pod_spec: &Value) -> BTreeSet<&str> {
    ["containers", "initContainers"]
        .iter()
        .flat_map(|k| pod_spec[k].as_array().into_iter().flatten())
        .filter_map(|c| c["name"].as_str())
        .collect()
}

/// Go's `%q` of a string slice: `["a" "b"]`.
fn go_list(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| names::go_quote(s)).collect();
    format!("[{}]", quoted.join(" "))
}

/// `Too many: <n>: must have at most <max> items`.
fn too_many(at: &str, n: usize, max: usize) -> FieldError {
    FieldError {
        field: at.to_string(),
        kind: FieldErrorKind::TooMany,
        value: None,
        detail: format!("{n}: must have at most {max} items"),
    }
}

/// `Invalid value: <omitted>`-style errors, whose value upstream leaves out.
fn invalid_omitted(at: &str, detail: &str) -> FieldError {
    FieldError {
        field: at.to_string(),
        kind: FieldErrorKind::Invalid,
        value: None,
        detail: detail.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(policy: Value) -> Value {
        json!({"podReplacementPolicy": "Failed", "podFailurePolicy": policy,
               "template": {"spec": {"restartPolicy": "Never",
                   "containers": [{"name": "main"}], "initContainers": [{"name": "setup"}]}}})
    }

    fn messages(spec: &Value) -> Vec<String> {
        validate(spec, "spec")
            .iter()
            .map(FieldError::message)
            .collect()
    }

    #[test]
    fn a_valid_policy_has_no_errors() {
        let s = spec(json!({"rules": [
            {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [1, 42]}},
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
            {"action": "Count", "onExitCodes": {"containerName": "setup", "operator": "NotIn", "values": [0]}}]}));
        assert_eq!(messages(&s), Vec::<String>::new());
    }

    #[test]
    fn actions_are_checked_with_upstreams_messages() {
        let s = spec(json!({"rules": [
            {"onExitCodes": {"operator": "In", "values": [1]}},
            {"action": "Explode", "onExitCodes": {"operator": "In", "values": [1]}},
            {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1]}}]}));
        assert_eq!(
            messages(&s),
            [
                r#"spec.podFailurePolicy.rules[0].action: Required value: valid values: ["Count" "FailIndex" "FailJob" "Ignore"]"#,
                r#"spec.podFailurePolicy.rules[1].action: Unsupported value: "Explode": supported values: "Count", "FailIndex", "FailJob", "Ignore""#,
                r#"spec.podFailurePolicy.rules[2].action: Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set"#,
            ]
        );
    }

    #[test]
    fn exit_codes_are_checked_with_upstreams_messages() {
        let s = spec(json!({"rules": [
            {"action": "FailJob", "onExitCodes": {"containerName": "nope", "operator": "In", "values": [0, 5, 5, 3]}},
            {"action": "FailJob", "onExitCodes": {"operator": "Maybe", "values": []}}]}));
        assert_eq!(
            messages(&s),
            [
                r#"spec.podFailurePolicy.rules[0].onExitCodes.containerName: Invalid value: "nope": must be one of the container or initContainer names in the pod template"#,
                "spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator",
                "spec.podFailurePolicy.rules[0].onExitCodes.values[2]: Duplicate value: 5",
                "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: []int32{0, 5, 5, 3}: must be ordered",
                r#"spec.podFailurePolicy.rules[1].onExitCodes.operator: Unsupported value: "Maybe": supported values: "In", "NotIn""#,
                "spec.podFailurePolicy.rules[1].onExitCodes.values: Invalid value: []int32(nil): at least one value is required",
            ]
        );
    }

    #[test]
    fn a_rule_needs_exactly_one_requirement() {
        let s = spec(json!({"rules": [
            {"action": "Ignore"},
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [1]},
             "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}));
        assert_eq!(
            messages(&s),
            [
                "spec.podFailurePolicy.rules[0]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required",
                "spec.podFailurePolicy.rules[1]: Invalid value: specifying both OnExitCodes and OnPodConditions is not supported",
            ]
        );
    }

    #[test]
    fn condition_patterns_are_checked() {
        let s = spec(json!({"rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "Bad Type", "status": "Maybe"}]}]}));
        let m = messages(&s);
        assert_eq!(m.len(), 2);
        assert!(m[0].starts_with(
            r#"spec.podFailurePolicy.rules[0].onPodConditions[0].type: Invalid value: "Bad Type""#
        ));
        assert_eq!(
            m[1],
            r#"spec.podFailurePolicy.rules[0].onPodConditions[0].status: Unsupported value: "Maybe": supported values: "False", "True", "Unknown""#
        );
    }

    #[test]
    fn the_replacement_policy_must_be_failed() {
        let mut s = spec(json!({"rules": []}));
        s["podReplacementPolicy"] = json!("TerminatingOrFailed");
        assert_eq!(
            messages(&s),
            [
                r#"spec.podReplacementPolicy: Unsupported value: "TerminatingOrFailed": supported values: "Failed""#
            ]
        );
    }

    #[test]
    fn defaulting_adds_nothing_to_a_job_without_a_policy() {
        let mut s = json!({"template": {}});
        default(&mut s);
        assert_eq!(s, json!({"template": {}}));
        let mut s = spec(json!({"rules": [{"action": "FailJob", "onExitCodes": {}}]}));
        let before = s.clone();
        default(&mut s);
        assert_eq!(s, before);
    }

    #[test]
    fn a_pattern_without_status_defaults_to_true() {
        let mut s = spec(json!({"rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}));
        default(&mut s);
        assert_eq!(
            s["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"],
            "True"
        );
    }
}
