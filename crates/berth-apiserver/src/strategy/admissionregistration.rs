//! `admissionregistration.k8s.io/v1`: webhook configurations and ValidatingAdmissionPolicies,
//! stored with upstream's defaults (`SetDefaults_ValidatingWebhook` and its siblings) and the
//! main rules of their validation. Calling the webhooks and evaluating the policies is
//! `crate::admission::dynamic`'s.

use super::{causes, defaults::default_at, Strategy};
use crate::error::{ApiResult, Cause};
use berth_api::registry::ResourceType;
use berth_core::validation::{self as v, FieldError};
use serde_json::{json, Value};

pub const GROUP: &str = "admissionregistration.k8s.io";

/// Upstream's default webhook timeout, in seconds (and its ceiling, 30).
const DEFAULT_TIMEOUT_SECONDS: i64 = 10;
const MAX_TIMEOUT_SECONDS: i64 = 30;

const SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun"];
const FAILURE_POLICIES: &[&str] = &["Fail", "Ignore"];
const REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];

/// Validating and mutating webhook configurations (the mutating ones also get a
/// `reinvocationPolicy`).
pub struct WebhookConfiguration;

impl Strategy for WebhookConfiguration {
    fn prepare_for_create(&self, obj: &mut Value) {
        default_webhooks(obj);
    }

    fn prepare_for_update(&self, _old: &Value, new: &mut Value) -> ApiResult<()> {
        default_webhooks(new);
        Ok(())
    }

    fn validate(&self, rt: &ResourceType, obj: &Value, _old: Option<&Value>) -> Vec<Cause> {
        let mut errors = v::validate_generic(obj, rt.namespaced);
        let mut names = Vec::new();
        for (i, w) in obj["webhooks"].as_array().into_iter().flatten().enumerate() {
            let at = format!("webhooks[{i}]");
            let name = w["name"].as_str().unwrap_or("");
            if name.is_empty() {
                errors.push(FieldError::required(format!("{at}.name"), ""));
            } else if names.contains(&name) {
                errors.push(FieldError::duplicate(format!("{at}.name"), name));
            } else if name.split('.').count() < 3 {
                errors.push(FieldError::invalid(
                    format!("{at}.name"),
                    name,
                    "should be a domain with at least three segments separated by dots",
                ));
            }
            names.push(name);
            match w["sideEffects"].as_str() {
                None => errors.push(FieldError::required(
                    format!("{at}.sideEffects"),
                    "must specify one of None, NoneOnDryRun",
                )),
                Some(s) if !SIDE_EFFECTS.contains(&s) => errors.push(FieldError::not_supported(
                    format!("{at}.sideEffects"),
                    s,
                    SIDE_EFFECTS,
                )),
                Some(_) => {}
            }
            let versions = w["admissionReviewVersions"].as_array();
            if versions.is_none_or(Vec::is_empty) {
                errors.push(FieldError::required(
                    format!("{at}.admissionReviewVersions"),
                    "must specify one of v1, v1beta1",
                ));
            } else if !versions
                .into_iter()
                .flatten()
                .any(|v| REVIEW_VERSIONS.contains(&v.as_str().unwrap_or("")))
            {
                errors.push(FieldError::invalid_rendered(
                    format!("{at}.admissionReviewVersions"),
                    &v::render_list(
                        &versions
                            .into_iter()
                            .flatten()
                            .map(|v| v.as_str().unwrap_or("").to_string())
                            .collect::<Vec<_>>(),
                    ),
                    "must include at least one of v1, v1beta1",
                ));
            }
            let policy = w["failurePolicy"].as_str().unwrap_or("Fail");
            if !FAILURE_POLICIES.contains(&policy) {
                errors.push(FieldError::not_supported(
                    format!("{at}.failurePolicy"),
                    policy,
                    FAILURE_POLICIES,
                ));
            }
            let timeout = w["timeoutSeconds"]
                .as_i64()
                .unwrap_or(DEFAULT_TIMEOUT_SECONDS);
            if !(1..=MAX_TIMEOUT_SECONDS).contains(&timeout) {
                errors.push(FieldError::invalid_rendered(
                    format!("{at}.timeoutSeconds"),
                    &timeout.to_string(),
                    "the timeout value must be between 1 and 30 seconds",
                ));
            }
            let cfg = &w["clientConfig"];
            if cfg["url"].is_string() == cfg["service"].is_object() {
                errors.push(FieldError::required(
                    format!("{at}.clientConfig"),
                    "exactly one of url or service is required",
                ));
            }
        }
        causes(errors)
    }
}

fn default_webhooks(obj: &mut Value) {
    let mutating = obj["kind"] == "MutatingWebhookConfiguration";
    for w in obj["webhooks"].as_array_mut().into_iter().flatten() {
        if !w.is_object() {
            continue;
        }
        default_at(w, "failurePolicy", json!("Fail"));
        default_at(w, "matchPolicy", json!("Equivalent"));
        default_at(w, "namespaceSelector", json!({}));
        default_at(w, "objectSelector", json!({}));
        default_at(w, "timeoutSeconds", json!(DEFAULT_TIMEOUT_SECONDS));
        if mutating {
            default_at(w, "reinvocationPolicy", json!("Never"));
        }
        for rule in w["rules"].as_array_mut().into_iter().flatten() {
            default_at(rule, "scope", json!("*"));
        }
        if let Some(svc) = w["clientConfig"]
            .get_mut("service")
            .filter(|s| s.is_object())
        {
            default_at(svc, "port", json!(443));
        }
    }
}

pub struct ValidatingAdmissionPolicy;

impl Strategy for ValidatingAdmissionPolicy {
    fn prepare_for_create(&self, p: &mut Value) {
        if let Some(o) = p.as_object_mut() {
            o.remove("status");
        }
        default_policy(p);
    }

    fn prepare_for_update(&self, _old: &Value, new: &mut Value) -> ApiResult<()> {
        default_policy(new);
        Ok(())
    }

    fn validate(&self, rt: &ResourceType, p: &Value, _old: Option<&Value>) -> Vec<Cause> {
        let mut errors = v::validate_generic(p, rt.namespaced);
        let spec = &p["spec"];
        let empty = |f: &str| spec[f].as_array().is_none_or(Vec::is_empty);
        if empty("validations") && empty("auditAnnotations") {
            errors.push(FieldError::required(
                "spec.validations",
                "validations or auditAnnotations must contain at least one item",
            ));
        }
        for (i, rule) in spec["validations"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            if rule["expression"].as_str().unwrap_or("").trim().is_empty() {
                errors.push(FieldError::required(
                    format!("spec.validations[{i}].expression"),
                    "expression is not specified",
                ));
            }
        }
        validate_audit_annotations(p, &mut errors);
        if !spec["matchConstraints"].is_object() {
            errors.push(FieldError::required("spec.matchConstraints", ""));
        }
        causes(errors)
    }
}

/// `auditAnnotations` as upstream validates them: `<policy name>/<key>` a qualified name, keys
/// unique, a `valueExpression` of at most 5 KiB.
fn validate_audit_annotations(p: &Value, errors: &mut Vec<FieldError>) {
    let name = p["metadata"]["name"].as_str().unwrap_or("");
    let mut seen = std::collections::BTreeSet::new();
    for (i, a) in p["spec"]["auditAnnotations"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let at = format!("spec.auditAnnotations[{i}]");
        let key = a["key"].as_str().unwrap_or("");
        if name.is_empty() {
            errors.push(FieldError::invalid(
                format!("{at}.key"),
                key,
                "requires metadata.name be non-empty",
            ));
        } else {
            let qualified = format!("{name}/{key}");
            for detail in v::names::qualified_name(&qualified) {
                errors.push(FieldError::invalid(format!("{at}.key"), &qualified, detail));
            }
        }
        if !seen.insert(key) {
            errors.push(FieldError::duplicate(format!("{at}.key"), key));
        }
        let value = a["valueExpression"].as_str().unwrap_or("").trim();
        if value.is_empty() {
            errors.push(FieldError::required(
                format!("{at}.valueExpression"),
                "valueExpression is not specified",
            ));
        } else if value.len() > 5 * 1024 {
            errors.push(FieldError::invalid(
                format!("{at}.valueExpression"),
                value,
                "must not exceed 5120 bytes in length",
            ));
        }
    }
}

fn default_policy(p: &mut Value) {
    let spec = &mut p["spec"];
    if !spec.is_object() {
        return;
    }
    default_at(spec, "failurePolicy", json!("Fail"));
    if let Some(m) = spec.get_mut("matchConstraints").filter(|m| m.is_object()) {
        default_at(m, "matchPolicy", json!("Equivalent"));
        default_at(m, "namespaceSelector", json!({}));
        default_at(m, "objectSelector", json!({}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_api::registry::find;

    fn webhook() -> Value {
        json!({"name": "deny.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "clientConfig": {"service": {"namespace": "d", "name": "s"}},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]})
    }

    #[test]
    fn a_webhook_gets_upstream_defaults() {
        let mut c = json!({"kind": "MutatingWebhookConfiguration", "webhooks": [webhook()]});
        WebhookConfiguration.prepare_for_create(&mut c);
        let w = &c["webhooks"][0];
        assert_eq!(w["failurePolicy"], "Fail");
        assert_eq!(w["matchPolicy"], "Equivalent");
        assert_eq!(w["timeoutSeconds"], 10);
        assert_eq!(w["reinvocationPolicy"], "Never");
        assert_eq!(w["rules"][0]["scope"], "*");
        assert_eq!(w["clientConfig"]["service"]["port"], 443);
    }

    #[test]
    fn a_webhook_must_say_its_side_effects_and_review_versions() {
        let rt = find(GROUP, "v1", "validatingwebhookconfigurations").unwrap();
        let mut w = webhook();
        w.as_object_mut().unwrap().remove("sideEffects");
        w["admissionReviewVersions"] = json!([]);
        w["timeoutSeconds"] = json!(31);
        let c = json!({"metadata": {"name": "c"}, "webhooks": [w]});
        let fields: Vec<String> = WebhookConfiguration
            .validate(rt, &c, None)
            .into_iter()
            .map(|c| c.field)
            .collect();
        assert_eq!(
            fields,
            vec![
                "webhooks[0].sideEffects",
                "webhooks[0].admissionReviewVersions",
                "webhooks[0].timeoutSeconds"
            ]
        );
    }

    #[test]
    fn a_policy_needs_a_validation_and_match_constraints() {
        let rt = find(GROUP, "v1", "validatingadmissionpolicies").unwrap();
        let p = json!({"metadata": {"name": "p"}, "spec": {"validations": [{"expression": " "}]}});
        let fields: Vec<String> = ValidatingAdmissionPolicy
            .validate(rt, &p, None)
            .into_iter()
            .map(|c| c.field)
            .collect();
        assert_eq!(
            fields,
            vec!["spec.validations[0].expression", "spec.matchConstraints"]
        );
    }

    #[test]
    fn audit_annotation_keys_are_qualified_unique_and_have_expressions() {
        let rt = find(GROUP, "v1", "validatingadmissionpolicies").unwrap();
        let p = json!({"metadata": {"name": "p"}, "spec": {
        "matchConstraints": {},
        "auditAnnotations": [
            {"key": "ok", "valueExpression": "'v'"},
            {"key": "ok", "valueExpression": " "},
            {"key": "bad key", "valueExpression": "null"},
        ]}});
        let fields: Vec<(String, String)> = ValidatingAdmissionPolicy
            .validate(rt, &p, None)
            .into_iter()
            .map(|c| (c.field, c.message))
            .collect();
        assert_eq!(
            fields.iter().map(|f| f.0.as_str()).collect::<Vec<_>>(),
            vec![
                "spec.auditAnnotations[1].key",
                "spec.auditAnnotations[1].valueExpression",
                "spec.auditAnnotations[2].key",
            ],
            "{fields:?}"
        );
    }
}
