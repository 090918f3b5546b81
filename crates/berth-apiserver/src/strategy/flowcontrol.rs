//! FlowSchemas and PriorityLevelConfigurations (`flowcontrol.apiserver.k8s.io/v1`): upstream's
//! defaults and the cheap part of its validation (required members, enums, ranges), so that a
//! stored object is one the flow-control engine ([`crate::flowcontrol`]) reads as written.

use super::{causes, Strategy};
use crate::error::Cause;
use berth_api::registry::ResourceType;
use berth_core::validation::{self as v, FieldError};
use serde_json::{json, Value};

/// Upstream's range of `matchingPrecedence`.
const PRECEDENCE: std::ops::RangeInclusive<i64> = 1..=10_000;

/// Upstream's bound on a hand's entropy: `handSize * log2(queues)` bits at most.
const MAX_HAND_ENTROPY_BITS: f64 = 60.0;

/// Upstream's ceiling of `queues` (see [`crate::flowcontrol::dispatch::MAX_QUEUES`]).
const MAX_QUEUES: i64 = crate::flowcontrol::dispatch::MAX_QUEUES as i64;

pub struct FlowSchema;
pub struct PriorityLevelConfiguration;

fn default(obj: &mut Value, member: &str, value: Value) {
    if obj.get(member).is_none_or(Value::is_null) {
        obj[member] = value;
    }
}

impl Strategy for FlowSchema {
    fn prepare_for_create(&self, fs: &mut Value) {
        if let Some(spec) = fs.get_mut("spec").filter(|s| s.is_object()) {
            default(spec, "matchingPrecedence", json!(1000));
        }
    }

    fn validate(&self, rt: &ResourceType, fs: &Value, _old: Option<&Value>) -> Vec<Cause> {
        let mut errs = v::validate_generic(fs, rt.namespaced);
        validate_flow_schema(&fs["spec"], &mut errs);
        causes(errs)
    }
}

impl Strategy for PriorityLevelConfiguration {
    fn prepare_for_create(&self, pl: &mut Value) {
        let Some(spec) = pl.get_mut("spec").filter(|s| s.is_object()) else {
            return;
        };
        if let Some(exempt) = spec.get_mut("exempt").filter(|e| e.is_object()) {
            default(exempt, "nominalConcurrencyShares", json!(0));
            default(exempt, "lendablePercent", json!(0));
        }
        if let Some(limited) = spec.get_mut("limited").filter(|l| l.is_object()) {
            default(limited, "nominalConcurrencyShares", json!(30));
            default(limited, "lendablePercent", json!(0));
            if let Some(response) = limited
                .get_mut("limitResponse")
                .filter(|r| r["type"] == "Queue")
            {
                default(response, "queuing", json!({}));
                if let Some(q) = response.get_mut("queuing").filter(|q| q.is_object()) {
                    default(q, "queues", json!(64));
                    default(q, "handSize", json!(8));
                    default(q, "queueLengthLimit", json!(50));
                }
            }
        }
    }

    fn validate(&self, rt: &ResourceType, pl: &Value, _old: Option<&Value>) -> Vec<Cause> {
        let mut errs = v::validate_generic(pl, rt.namespaced);
        validate_priority_level(&pl["spec"], &mut errs);
        causes(errs)
    }
}

fn list(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

fn required_list(v: &Value, field: &str, errs: &mut Vec<FieldError>) {
    if list(v).is_empty() {
        errs.push(FieldError::required(
            field,
            format!(
                "{} must contain at least one value",
                field.rsplit('.').next().unwrap_or(field)
            ),
        ));
    }
}

fn validate_flow_schema(spec: &Value, errs: &mut Vec<FieldError>) {
    match spec["matchingPrecedence"].as_i64() {
        Some(p) if !PRECEDENCE.contains(&p) => errs.push(FieldError::invalid_rendered(
            "spec.matchingPrecedence",
            &p.to_string(),
            "must be between 1 and 10000, inclusive",
        )),
        _ => {}
    }
    if spec["priorityLevelConfiguration"]["name"]
        .as_str()
        .is_none_or(str::is_empty)
    {
        errs.push(FieldError::required(
            "spec.priorityLevelConfiguration.name",
            "must reference a priority level",
        ));
    }
    if let Some(t) = spec["distinguisherMethod"].get("type") {
        let t = t.as_str().unwrap_or_default();
        if t != "ByUser" && t != "ByNamespace" {
            errs.push(FieldError::not_supported(
                "spec.distinguisherMethod.type",
                t,
                &["ByNamespace", "ByUser"],
            ));
        }
    }
    for (i, rule) in list(&spec["rules"]).iter().enumerate() {
        let at = format!("spec.rules[{i}]");
        required_list(&rule["subjects"], &format!("{at}.subjects"), errs);
        for (j, s) in list(&rule["subjects"]).iter().enumerate() {
            let at = format!("{at}.subjects[{j}]");
            let kind = s["kind"].as_str().unwrap_or_default();
            let member = match kind {
                "User" => "user",
                "Group" => "group",
                "ServiceAccount" => "serviceAccount",
                _ => {
                    errs.push(FieldError::not_supported(
                        format!("{at}.kind"),
                        kind,
                        &["Group", "ServiceAccount", "User"],
                    ));
                    continue;
                }
            };
            if s[member]["name"].as_str().is_none_or(str::is_empty) {
                errs.push(FieldError::required(
                    format!("{at}.{member}"),
                    format!("{member} is required when subject kind is '{kind}'"),
                ));
            }
            if kind == "ServiceAccount" && s[member]["namespace"].as_str().is_none_or(str::is_empty)
            {
                errs.push(FieldError::required(
                    format!("{at}.{member}.namespace"),
                    "must specify namespace for service account",
                ));
            }
        }
        if list(&rule["resourceRules"]).is_empty() && list(&rule["nonResourceRules"]).is_empty() {
            errs.push(FieldError::required(
                at.clone(),
                "at least one of resourceRules and nonResourceRules has to be non-empty",
            ));
        }
        for (j, r) in list(&rule["resourceRules"]).iter().enumerate() {
            let at = format!("{at}.resourceRules[{j}]");
            for member in ["verbs", "apiGroups", "resources"] {
                required_list(&r[member], &format!("{at}.{member}"), errs);
            }
            if list(&r["namespaces"]).is_empty() && r["clusterScope"] != true {
                errs.push(FieldError::required(
                    format!("{at}.namespaces"),
                    "resource rules that are not cluster scoped must supply at least one namespace",
                ));
            }
        }
        for (j, r) in list(&rule["nonResourceRules"]).iter().enumerate() {
            let at = format!("{at}.nonResourceRules[{j}]");
            for member in ["verbs", "nonResourceURLs"] {
                required_list(&r[member], &format!("{at}.{member}"), errs);
            }
        }
    }
}

fn non_negative(v: &Value, field: &str, errs: &mut Vec<FieldError>) {
    if let Some(n) = v.as_i64().filter(|n| *n < 0) {
        errs.push(FieldError::invalid_rendered(
            field,
            &n.to_string(),
            "must be a non-negative integer",
        ));
    }
}

fn percent(v: &Value, field: &str, errs: &mut Vec<FieldError>) {
    if let Some(n) = v.as_i64().filter(|n| !(0..=100).contains(n)) {
        errs.push(FieldError::invalid_rendered(
            field,
            &n.to_string(),
            "must be between 0 and 100, inclusive",
        ));
    }
}

fn validate_priority_level(spec: &Value, errs: &mut Vec<FieldError>) {
    let t = spec["type"].as_str().unwrap_or_default();
    let present = |m: &str| spec.get(m).is_some_and(|v| !v.is_null());
    match t {
        "Exempt" => {
            if present("limited") {
                errs.push(FieldError::forbidden(
                    "spec.limited",
                    "must be nil if the type is not Limited",
                ));
            }
            non_negative(
                &spec["exempt"]["nominalConcurrencyShares"],
                "spec.exempt.nominalConcurrencyShares",
                errs,
            );
            percent(
                &spec["exempt"]["lendablePercent"],
                "spec.exempt.lendablePercent",
                errs,
            );
        }
        "Limited" => {
            if present("exempt") {
                errs.push(FieldError::forbidden(
                    "spec.exempt",
                    "must be nil if the type is Limited",
                ));
            }
            if !present("limited") {
                errs.push(FieldError::required(
                    "spec.limited",
                    "must not be empty when type is Limited",
                ));
                return;
            }
            validate_limited(&spec["limited"], errs);
        }
        "" => errs.push(FieldError::required("spec.type", "")),
        other => errs.push(FieldError::not_supported(
            "spec.type",
            other,
            &["Exempt", "Limited"],
        )),
    }
}

fn validate_limited(limited: &Value, errs: &mut Vec<FieldError>) {
    non_negative(
        &limited["nominalConcurrencyShares"],
        "spec.limited.nominalConcurrencyShares",
        errs,
    );
    percent(
        &limited["lendablePercent"],
        "spec.limited.lendablePercent",
        errs,
    );
    non_negative(
        &limited["borrowingLimitPercent"],
        "spec.limited.borrowingLimitPercent",
        errs,
    );
    let response = &limited["limitResponse"];
    let queuing = &response["queuing"];
    match response["type"].as_str().unwrap_or_default() {
        "Reject" => {
            if !queuing.is_null() {
                errs.push(FieldError::forbidden(
                    "spec.limited.limitResponse.queuing",
                    "must be nil if limited.limitResponse.type is not Limited",
                ));
            }
        }
        "Queue" => {
            if queuing.is_null() {
                errs.push(FieldError::required(
                    "spec.limited.limitResponse.queuing",
                    "must not be empty if limited.limitResponse.type is Limited",
                ));
                return;
            }
            validate_queuing(queuing, errs);
        }
        "" => errs.push(FieldError::required("spec.limited.limitResponse.type", "")),
        other => errs.push(FieldError::not_supported(
            "spec.limited.limitResponse.type",
            other,
            &["Queue", "Reject"],
        )),
    }
}

fn validate_queuing(q: &Value, errs: &mut Vec<FieldError>) {
    let at = "spec.limited.limitResponse.queuing";
    let positive = |member: &str, errs: &mut Vec<FieldError>| -> Option<i64> {
        let n = q[member].as_i64()?;
        if n <= 0 {
            errs.push(FieldError::invalid_rendered(
                format!("{at}.{member}"),
                &n.to_string(),
                "must be positive",
            ));
            return None;
        }
        Some(n)
    };
    let queues = positive("queues", errs);
    let hand = positive("handSize", errs);
    positive("queueLengthLimit", errs);
    if let Some(queues) = queues.filter(|&n| n > MAX_QUEUES) {
        errs.push(FieldError::invalid_rendered(
            format!("{at}.queues"),
            &queues.to_string(),
            &format!("must not be greater than {MAX_QUEUES}"),
        ));
        return;
    }
    if let (Some(queues), Some(hand)) = (queues, hand) {
        if hand > queues {
            errs.push(FieldError::invalid_rendered(
                format!("{at}.handSize"),
                &hand.to_string(),
                &format!("should not be greater than queues ({queues})"),
            ));
        } else if hand as f64 * (queues as f64).log2() > MAX_HAND_ENTROPY_BITS {
            errs.push(FieldError::invalid_rendered(
                format!("{at}.handSize"),
                &hand.to_string(),
                &format!(
                    "required entropy bits of deckSize {queues} and handSize {hand} should not be greater than {MAX_HAND_ENTROPY_BITS}"
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flowcontrol::bootstrap;

    fn errors_of_level(spec: Value) -> Vec<String> {
        let mut errs = Vec::new();
        validate_priority_level(&spec, &mut errs);
        errs.iter().map(FieldError::message).collect()
    }

    fn errors_of_schema(spec: Value) -> Vec<String> {
        let mut errs = Vec::new();
        validate_flow_schema(&spec, &mut errs);
        errs.iter().map(FieldError::message).collect()
    }

    #[test]
    fn the_bootstrap_objects_are_valid() {
        for pl in bootstrap::priority_levels() {
            assert_eq!(
                errors_of_level(pl["spec"].clone()),
                Vec::<String>::new(),
                "{pl}"
            );
        }
        for fs in bootstrap::flow_schemas() {
            assert_eq!(
                errors_of_schema(fs["spec"].clone()),
                Vec::<String>::new(),
                "{fs}"
            );
        }
    }

    #[test]
    fn priority_levels_are_refused_as_upstream() {
        let cases = [
            (json!({}), "spec.type: Required value"),
            (
                json!({"type": "Sideways"}),
                "spec.type: Unsupported value: \"Sideways\": supported values: \"Exempt\", \"Limited\"",
            ),
            (
                json!({"type": "Limited"}),
                "spec.limited: Required value: must not be empty when type is Limited",
            ),
            (
                json!({"type": "Limited", "limited": {"limitResponse": {"type": "Queue",
                    "queuing": {"queues": 0, "handSize": 1, "queueLengthLimit": 1}}}}),
                "spec.limited.limitResponse.queuing.queues: Invalid value: 0: must be positive",
            ),
            (
                json!({"type": "Limited", "limited": {"limitResponse": {"type": "Queue",
                    "queuing": {"queues": 4, "handSize": 5, "queueLengthLimit": 1}}}}),
                "spec.limited.limitResponse.queuing.handSize: Invalid value: 5: should not be greater than queues (4)",
            ),
            (
                json!({"type": "Limited", "limited": {"lendablePercent": 101,
                    "limitResponse": {"type": "Reject"}}}),
                "spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
            ),
        ];
        for (spec, want) in cases {
            let got = errors_of_level(spec.clone());
            assert!(got.iter().any(|e| e == want), "{spec}: {got:?}");
        }
    }

    #[test]
    fn flow_schemas_are_refused_as_upstream() {
        let cases = [
            (
                json!({"matchingPrecedence": 0, "priorityLevelConfiguration": {"name": "x"}}),
                "spec.matchingPrecedence: Invalid value: 0: must be between 1 and 10000, inclusive",
            ),
            (
                json!({}),
                "spec.priorityLevelConfiguration.name: Required value: must reference a priority level",
            ),
            (
                json!({"priorityLevelConfiguration": {"name": "x"}, "distinguisherMethod": {"type": "ByMood"}}),
                "spec.distinguisherMethod.type: Unsupported value: \"ByMood\": supported values: \"ByNamespace\", \"ByUser\"",
            ),
            (
                json!({"priorityLevelConfiguration": {"name": "x"}, "rules": [{"subjects": [{"kind": "User"}],
                    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}),
                "spec.rules[0].subjects[0].user: Required value: user is required when subject kind is 'User'",
            ),
            (
                json!({"priorityLevelConfiguration": {"name": "x"}, "rules": [{"subjects": [
                    {"kind": "Group", "group": {"name": "g"}}]}]}),
                "spec.rules[0]: Required value: at least one of resourceRules and nonResourceRules has to be non-empty",
            ),
        ];
        for (spec, want) in cases {
            let got = errors_of_schema(spec.clone());
            assert!(got.iter().any(|e| e == want), "{spec}: {got:?}");
        }
    }

    #[test]
    fn defaults_fill_what_upstream_defaults() {
        let mut pl =
            json!({"spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue"}}}});
        PriorityLevelConfiguration.prepare_for_create(&mut pl);
        assert_eq!(
            pl["spec"]["limited"],
            json!({"nominalConcurrencyShares": 30, "lendablePercent": 0, "limitResponse": {
                "type": "Queue", "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}}})
        );
        let mut fs = json!({"spec": {}});
        FlowSchema.prepare_for_create(&mut fs);
        assert_eq!(fs["spec"]["matchingPrecedence"], 1000);
        // Junk is left for validation to refuse, never a panic.
        for mut junk in [
            json!(null),
            json!({"spec": 5}),
            json!({"spec": {"limited": {"limitResponse": {"type": "Queue", "queuing": 3}}}}),
        ] {
            PriorityLevelConfiguration.prepare_for_create(&mut junk);
            FlowSchema.prepare_for_create(&mut junk);
        }
    }
}
