//! ValidatingAdmissionPolicy and its bindings (upstream's `admission/plugin/policy/validating`):
//! CEL `validations` evaluated on the requests the policy's `matchConstraints` and the
//! binding's `matchResources` select, with the binding's parameters, and a failed validation
//! acted on as the binding's `validationActions` say (Deny, Warn, Audit).

use super::audit::AuditAnnotations;
use super::cel::{Activation, Conditions, Expression};
use super::cel_authorizer::AuthorizerVar;
use super::matching::{rules_match, Rule, Selectors};
use super::webhook::Refusal;
use super::{Attributes, Lookup};
use crate::error::ApiError;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// A `matchConstraints` or `matchResources`.
#[derive(Debug, Clone, Default)]
pub struct MatchResources {
    rules: Vec<Rule>,
    exclude: Vec<Rule>,
    equivalent: bool,
    selectors: Option<Selectors>,
}

impl MatchResources {
    pub fn parse(v: &Value) -> MatchResources {
        let rules = |k: &str| -> Vec<Rule> {
            v[k].as_array()
                .into_iter()
                .flatten()
                .map(Rule::parse)
                .collect()
        };
        MatchResources {
            rules: rules("resourceRules"),
            exclude: rules("excludeResourceRules"),
            equivalent: v["matchPolicy"].as_str() != Some("Exact"),
            selectors: Some(Selectors::parse(v)),
        }
    }

    /// Whether the request is selected. A binding without `resourceRules` takes every request
    /// its policy selects (`all_when_no_rules`); a policy without them selects none.
    fn matches(
        &self,
        a: &Attributes,
        lookup: &dyn Lookup,
        object: Option<&Value>,
        old: Option<&Value>,
        all_when_no_rules: bool,
    ) -> bool {
        let included = if self.rules.is_empty() {
            all_when_no_rules
        } else {
            rules_match(&self.rules, self.equivalent, a)
        };
        if !included || rules_match(&self.exclude, self.equivalent, a) {
            return false;
        }
        let Some(selectors) = &self.selectors else {
            return true;
        };
        if !selectors.object_matches(object, old) {
            return false;
        }
        if selectors.needs_namespace() {
            let labels = super::namespace_labels(a, lookup, object, old);
            return selectors.namespace_matches(a, labels.as_ref().and_then(Value::as_object));
        }
        true
    }
}

/// An `auditAnnotations` entry: its value is recorded as `<policy name>/<key>`.
struct AuditAnnotation {
    key: String,
    value: Expression,
}

/// Longest audit annotation value recorded (upstream's 10 KiB); longer ones are cut.
const MAX_AUDIT_ANNOTATION_VALUE: usize = 10 * 1024;

struct Validation {
    expression: Expression,
    message: String,
    message_expression: Option<Expression>,
    reason: String,
}

/// A ValidatingAdmissionPolicy, compiled.
pub struct Policy {
    pub name: String,
    /// `paramKind`'s (apiVersion, kind).
    param_kind: Option<(String, String)>,
    constraints: MatchResources,
    conditions: Conditions,
    variables: Vec<(String, Expression)>,
    validations: Vec<Validation>,
    audit_annotations: Vec<AuditAnnotation>,
    fail_open: bool,
    /// Whether an expression names the `authorizer` variable (which then is given).
    uses_authorizer: bool,
}

impl Policy {
    pub fn compile(p: &Value) -> Policy {
        let spec = &p["spec"];
        let s = |v: &Value| v.as_str().unwrap_or("").to_string();
        Policy {
            name: s(&p["metadata"]["name"]),
            param_kind: spec
                .get("paramKind")
                .filter(|k| k.is_object())
                .map(|k| (s(&k["apiVersion"]), s(&k["kind"]))),
            constraints: MatchResources::parse(&spec["matchConstraints"]),
            conditions: Conditions::compile(&spec["matchConditions"]),
            variables: spec["variables"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| (s(&v["name"]), Expression::compile(&s(&v["expression"]))))
                .collect(),
            validations: spec["validations"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| Validation {
                    expression: Expression::compile(&s(&v["expression"])),
                    message: s(&v["message"]),
                    message_expression: v["messageExpression"]
                        .as_str()
                        .filter(|m| !m.is_empty())
                        .map(Expression::compile),
                    reason: s(&v["reason"]),
                })
                .collect(),
            audit_annotations: spec["auditAnnotations"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| AuditAnnotation {
                    key: s(&v["key"]),
                    value: Expression::compile(&s(&v["valueExpression"])),
                })
                .collect(),
            fail_open: spec["failurePolicy"].as_str() == Some("Ignore"),
            uses_authorizer: spec.to_string().contains("authorizer"),
        }
    }
}

/// `paramRef`.
struct ParamRef {
    name: String,
    namespace: String,
    selector: Option<berth_core::labels::Selector>,
    deny_when_missing: bool,
}

/// A ValidatingAdmissionPolicyBinding, compiled.
pub struct Binding {
    pub name: String,
    pub policy_name: String,
    param_ref: Option<ParamRef>,
    resources: Option<MatchResources>,
    deny: bool,
    warn: bool,
    audit: bool,
    /// `validationActions` as written, for the audit record.
    actions: Vec<String>,
}

impl Binding {
    pub fn compile(b: &Value) -> Binding {
        let spec = &b["spec"];
        let s = |v: &Value| v.as_str().unwrap_or("").to_string();
        let actions: Vec<String> = spec["validationActions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(s)
            .collect();
        let has = |a: &str| actions.iter().any(|x| x == a);
        Binding {
            name: s(&b["metadata"]["name"]),
            policy_name: s(&spec["policyName"]),
            param_ref: spec
                .get("paramRef")
                .filter(|r| r.is_object())
                .map(|r| ParamRef {
                    name: s(&r["name"]),
                    namespace: s(&r["namespace"]),
                    selector: r.get("selector").filter(|x| x.is_object()).map(|x| {
                        berth_core::labels::Selector::from_label_selector(x)
                            .unwrap_or_else(|_| berth_core::labels::Selector::nothing())
                    }),
                    deny_when_missing: r["parameterNotFoundAction"].as_str() == Some("Deny"),
                }),
            resources: spec
                .get("matchResources")
                .filter(|m| m.is_object())
                .map(MatchResources::parse),
            deny: has("Deny"),
            warn: has("Warn"),
            audit: has("Audit"),
            actions,
        }
    }
}

/// A policy with one of its bindings: what is evaluated.
#[derive(Clone)]
pub struct Bound {
    pub policy: Arc<Policy>,
    pub binding: Arc<Binding>,
}

/// A failed validation.
struct Failure {
    message: String,
    reason: String,
    /// Which of the policy's validations failed (`None`: not a validation's verdict).
    expression_index: Option<usize>,
}

impl Failure {
    fn configuration(message: String) -> Failure {
        Failure {
            message,
            reason: String::new(),
            expression_index: None,
        }
    }
}

/// What one evaluation of a policy gave: its failed validations, and its audit annotations'
/// values (or the errors that, under `failurePolicy: Fail`, deny as failures do).
#[derive(Default)]
struct Evaluation {
    failures: Vec<Failure>,
    annotations: Vec<(String, String)>,
    annotation_errors: Vec<Failure>,
}

/// Evaluates every bound policy that selects the request; the audit annotations they make
/// are added to `annotations`.
pub fn validate(
    bound: &[Bound],
    a: &Attributes,
    lookup: &dyn Lookup,
    object: Option<&Value>,
    old: Option<&Value>,
    warnings: &mut Vec<String>,
    annotations: &mut AuditAnnotations,
) -> Result<(), Refusal> {
    let mut request = None;
    let mut namespace_object = None;
    let mut authorizer = None;
    let mut audited = Vec::new();
    let mut result = Ok(());
    for b in bound {
        let (policy, binding) = (&*b.policy, &*b.binding);
        if !policy.constraints.matches(a, lookup, object, old, false) {
            continue;
        }
        if let Some(r) = &binding.resources {
            if !r.matches(a, lookup, object, old, true) {
                continue;
            }
        }
        let request = request.get_or_insert_with(|| super::review::request(a, "", object, old));
        let namespace_object = namespace_object.get_or_insert_with(|| {
            (a.rt.namespaced && !a.namespace.is_empty())
                .then(|| lookup.namespace(a.namespace))
                .flatten()
        });
        let authorizer = if policy.uses_authorizer {
            authorizer
                .get_or_insert_with(|| authorizer_var(a, lookup))
                .clone()
        } else {
            None
        };
        let params = match params(policy, binding, a, lookup) {
            Ok(p) => p,
            Err(e) => {
                let failure = Failure::configuration(format!("failed to configure binding: {e}"));
                result = act(policy, binding, a, failure, warnings, &mut audited);
                if result.is_err() {
                    break;
                }
                continue;
            }
        };
        for param in &params {
            let activation = Activation {
                object,
                old_object: old,
                request,
                params: param.as_ref(),
                namespace_object: namespace_object.as_deref(),
                authorizer: authorizer.clone(),
            };
            let evaluation = evaluate(policy, &activation);
            for (key, value) in evaluation.annotations {
                annotations.add(format!("{}/{key}", policy.name), value);
            }
            // An audit annotation that cannot be made denies whatever the binding's actions.
            if let Some(e) = evaluation.annotation_errors.into_iter().next() {
                result = Err(denial(policy, binding, a, &e));
                break;
            }
            for failure in evaluation.failures {
                result = act(policy, binding, a, failure, warnings, &mut audited);
                if result.is_err() {
                    break;
                }
            }
            if result.is_err() {
                break;
            }
        }
        if result.is_err() {
            break;
        }
    }
    if !audited.is_empty() {
        annotations.add(
            super::audit::VALIDATION_FAILURE.to_string(),
            Value::Array(audited).to_string(),
        );
    }
    result
}

/// The `authorizer` variable for the request's user, when the server has an authorizer.
fn authorizer_var(a: &Attributes, lookup: &dyn Lookup) -> Option<Arc<AuthorizerVar>> {
    let authorizer = lookup.authorizer()?;
    Some(Arc::new(AuthorizerVar::new(
        authorizer,
        a.user.clone(),
        [
            a.rt.group.to_string(),
            a.rt.plural.to_string(),
            a.subresource.to_string(),
            a.namespace.to_string(),
            a.name.to_string(),
        ],
    )))
}

/// The parameter objects to evaluate with: `[None]` for a policy without `paramKind`.
fn params(
    policy: &Policy,
    binding: &Binding,
    a: &Attributes,
    lookup: &dyn Lookup,
) -> Result<Vec<Option<Value>>, String> {
    let Some((api_version, kind)) = &policy.param_kind else {
        return Ok(vec![None]);
    };
    let Some(r) = &binding.param_ref else {
        return Err("paramKind is specified but paramRef is missing".into());
    };
    let namespace = if r.namespace.is_empty() {
        a.namespace
    } else {
        &r.namespace
    };
    let found = lookup.params(api_version, kind, namespace, &r.name, r.selector.as_ref())?;
    if found.is_empty() {
        if r.deny_when_missing {
            return Err(
                "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
            );
        }
        return Ok(Vec::new());
    }
    Ok(found.into_iter().map(Some).collect())
}

/// The policy's verdict for one activation (no failures when it admits).
fn evaluate(policy: &Policy, activation: &Activation) -> Evaluation {
    let mut context = activation.context();
    let mut out = Evaluation::default();
    match policy.conditions.all_true(&context) {
        Ok(true) => {}
        Ok(false) => return out,
        Err(e) => {
            if !policy.fail_open {
                out.failures.push(Failure::configuration(e));
            }
            return out;
        }
    }
    if !policy.variables.is_empty() {
        // Each variable sees the ones before it; one that fails is left out, so only the
        // expressions that use it fail.
        let mut values: HashMap<String, cel_interpreter::Value> = HashMap::new();
        for (name, expression) in &policy.variables {
            context.add_variable_from_value("variables", values.clone());
            if let Ok(v) = expression.evaluate(&context) {
                values.insert(name.clone(), v);
            }
        }
        context.add_variable_from_value("variables", values);
    }
    for (index, v) in policy.validations.iter().enumerate() {
        match v.expression.evaluate_bool(&context) {
            Ok(true) => {}
            Ok(false) => out.failures.push(Failure {
                message: message(v, &context),
                reason: v.reason.clone(),
                expression_index: Some(index),
            }),
            Err(e) if !policy.fail_open => out.failures.push(Failure {
                message: format!("expression '{}' resulted in error: {e}", v.expression.text),
                reason: v.reason.clone(),
                expression_index: Some(index),
            }),
            Err(_) => {}
        }
    }
    for annotation in &policy.audit_annotations {
        let text = &annotation.value.text;
        let error = match annotation.value.evaluate(&context) {
            Ok(cel_interpreter::Value::String(v)) if v.is_empty() => None,
            Ok(cel_interpreter::Value::String(v)) => {
                let mut value = v.to_string();
                if value.len() > MAX_AUDIT_ANNOTATION_VALUE {
                    let mut end = MAX_AUDIT_ANNOTATION_VALUE;
                    while !value.is_char_boundary(end) {
                        end -= 1;
                    }
                    value.truncate(end);
                }
                out.annotations.push((annotation.key.clone(), value));
                None
            }
            Ok(cel_interpreter::Value::Null) => None,
            Ok(other) => Some(format!(
                "valueExpression '{text}' resulted in unsupported return type: {}. Return type must be either string or null.",
                super::cel::type_name(&other)
            )),
            Err(e) => Some(format!("expression '{text}' resulted in error: {e}")),
        };
        if let Some(message) = error.filter(|_| !policy.fail_open) {
            out.annotation_errors.push(Failure::configuration(message));
        }
    }
    out
}

/// A failed validation's message: its `messageExpression`'s (a non-empty single line), its
/// `message`, or the expression itself.
fn message(v: &Validation, context: &cel_interpreter::Context) -> String {
    if let Some(m) = &v.message_expression {
        if let Ok(cel_interpreter::Value::String(s)) = m.evaluate(context) {
            let s = s.trim();
            if !s.is_empty() && !s.contains('\n') {
                return s.to_string();
            }
        }
    }
    if !v.message.is_empty() {
        return v.message.clone();
    }
    format!("failed expression: {}", v.expression.text)
}

/// Carries out the binding's `validationActions` for one failure; an `Audit` action's
/// record is added to `audited`.
fn act(
    policy: &Policy,
    binding: &Binding,
    a: &Attributes,
    failure: Failure,
    warnings: &mut Vec<String>,
    audited: &mut Vec<Value>,
) -> Result<(), Refusal> {
    if binding.warn {
        warnings.push(format!(
            "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
            policy.name, binding.name, failure.message
        ));
    }
    if binding.audit {
        let mut record = json!({
            "message": failure.message,
            "policy": policy.name,
            "binding": binding.name,
            "validationActions": binding.actions,
        });
        if let Some(i) = failure.expression_index {
            record["expressionIndex"] = json!(i);
        }
        audited.push(record);
    }
    if binding.deny {
        return Err(denial(policy, binding, a, &failure));
    }
    Ok(())
}

/// Upstream's denial: a Forbidden naming the object, with the validation's reason and its code.
fn denial(policy: &Policy, binding: &Binding, a: &Attributes, failure: &Failure) -> Refusal {
    let message = format!(
        "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {}",
        policy.name, binding.name, failure.message
    );
    let mut status = ApiError::Denied {
        group: a.rt.group.to_string(),
        resource: a.rt.plural.to_string(),
        name: a.name.to_string(),
        reason: message.clone(),
    }
    .status();
    let reason = if failure.reason.is_empty() {
        "Invalid"
    } else {
        &failure.reason
    };
    let code = match reason {
        "Unauthorized" => 401,
        "Forbidden" => 403,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    };
    status["reason"] = json!(reason);
    status["code"] = json!(code);
    status["details"]["causes"] = json!([{ "message": message }]);
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::dynamic::audit::VALIDATION_FAILURE;
    use crate::admission::dynamic::{testing::NoLookup, Operation};
    use crate::user::UserInfo;

    fn deployment(replicas: i64) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
               "spec": {"replicas": replicas}})
    }

    fn attrs(user: &UserInfo) -> Attributes<'_> {
        Attributes {
            operation: Operation::Create,
            rt: berth_api::registry::find("apps", "v1", "deployments").expect("deployments"),
            subresource: "",
            namespace: "default",
            name: "web",
            user,
            dry_run: false,
            options: Value::Null,
        }
    }

    fn replicas_policy(extra: Value) -> Arc<Policy> {
        let mut spec = json!({
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
            "validations": [{"expression": "object.spec.replicas <= 5"}],
        });
        if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                s.insert(k.clone(), v.clone());
            }
        }
        Arc::new(Policy::compile(
            &json!({"metadata": {"name": "demo-policy.example.com"}, "spec": spec}),
        ))
    }

    fn binding(actions: &[&str]) -> Arc<Binding> {
        Arc::new(Binding::compile(&json!({
            "metadata": {"name": "demo-binding-test.example.com"},
            "spec": {"policyName": "demo-policy.example.com", "validationActions": actions},
        })))
    }

    fn run(
        policy: Arc<Policy>,
        binding: Arc<Binding>,
        obj: &Value,
    ) -> (Result<(), Refusal>, Vec<String>) {
        let (r, warnings, _) = run_audited(policy, binding, obj, &NoLookup);
        (r, warnings)
    }

    /// The verdict, the warnings and the published audit annotations.
    type Audited = (Result<(), Refusal>, Vec<String>, Vec<(String, String)>);

    fn run_audited(
        policy: Arc<Policy>,
        binding: Arc<Binding>,
        obj: &Value,
        lookup: &dyn Lookup,
    ) -> Audited {
        let user = UserInfo {
            name: "alice".into(),
            ..UserInfo::default()
        };
        let mut warnings = Vec::new();
        let mut annotations = AuditAnnotations::default();
        let r = validate(
            &[Bound { policy, binding }],
            &attrs(&user),
            lookup,
            Some(obj),
            None,
            &mut warnings,
            &mut annotations,
        );
        (r, warnings, annotations.published())
    }

    /// A cluster whose authorizer lets `alice` list secrets and nothing else.
    struct AliceListsSecrets;

    impl Lookup for AliceListsSecrets {
        fn namespace(&self, n: &str) -> Option<Arc<Value>> {
            NoLookup.namespace(n)
        }
        fn service_address(&self, ns: &str, n: &str, p: u16) -> Result<String, String> {
            NoLookup.service_address(ns, n, p)
        }
        fn params(
            &self,
            v: &str,
            k: &str,
            ns: &str,
            n: &str,
            s: Option<&berth_core::labels::Selector>,
        ) -> Result<Vec<Value>, String> {
            NoLookup.params(v, k, ns, n, s)
        }
        fn authorizer(&self) -> Option<Arc<dyn crate::authorizer::Authorizer>> {
            struct Fixed;
            impl crate::authorizer::Authorizer for Fixed {
                fn authorize(
                    &self,
                    a: &crate::authorizer::Attributes<'_>,
                ) -> crate::authorizer::Decision {
                    if a.user.name == "alice" && a.verb == "list" && a.resource == "secrets" {
                        crate::authorizer::Decision::Allow
                    } else {
                        crate::authorizer::Decision::Deny(String::new())
                    }
                }
            }
            Some(Arc::new(Fixed))
        }
    }

    #[test]
    fn audit_annotations_are_recorded_under_the_policy_name_and_null_records_nothing() {
        let policy = replicas_policy(json!({
            "auditAnnotations": [
                {"key": "high-replica-count", "valueExpression": "object.spec.replicas > 5 ? 'Deployment spec.replicas set to ' + string(object.spec.replicas) : null"},
                {"key": "empty", "valueExpression": "''"},
            ],
        }));
        let (r, _, annotations) = run_audited(
            policy.clone(),
            binding(&["Audit"]),
            &deployment(7),
            &NoLookup,
        );
        assert!(r.is_ok());
        assert_eq!(
            annotations,
            vec![
                (
                    "demo-policy.example.com/high-replica-count".to_string(),
                    "Deployment spec.replicas set to 7".to_string()
                ),
                (
                    VALIDATION_FAILURE.to_string(),
                    r#"[{"binding":"demo-binding-test.example.com","expressionIndex":0,"message":"failed expression: object.spec.replicas <= 5","policy":"demo-policy.example.com","validationActions":["Audit"]}]"#.to_string()
                ),
            ]
        );
        let (_, _, annotations) =
            run_audited(policy, binding(&["Deny"]), &deployment(3), &NoLookup);
        assert!(annotations.is_empty(), "{annotations:?}");
    }

    #[test]
    fn an_audit_annotation_of_the_wrong_type_denies_under_fail() {
        let policy = replicas_policy(json!({
            "validations": [{"expression": "true"}],
            "auditAnnotations": [{"key": "k", "valueExpression": "1"}],
        }));
        let (r, _, _) = run_audited(policy, binding(&["Warn"]), &deployment(1), &NoLookup);
        assert!(r.unwrap_err()["message"].as_str().unwrap().ends_with(
            "denied request: valueExpression '1' resulted in unsupported return type: int. Return type must be either string or null."
        ));
        let ignored = replicas_policy(json!({
            "failurePolicy": "Ignore",
            "validations": [{"expression": "true"}],
            "auditAnnotations": [{"key": "k", "valueExpression": "1"}],
        }));
        assert!(
            run_audited(ignored, binding(&["Deny"]), &deployment(1), &NoLookup)
                .0
                .is_ok()
        );
    }

    #[test]
    fn the_authorizer_variable_asks_for_the_requesting_user() {
        let policy = replicas_policy(json!({
            "validations": [{
                "expression": "authorizer.group('').resource('secrets').check('list').allowed()",
                "message": "may not list secrets"}],
        }));
        let (r, _, _) = run_audited(
            policy.clone(),
            binding(&["Deny"]),
            &deployment(1),
            &AliceListsSecrets,
        );
        assert!(r.is_ok());
        let denying = replicas_policy(json!({
            "validations": [{
                "expression": "authorizer.group('').resource('secrets').check('delete').allowed()",
                "message": "may not delete secrets"}],
        }));
        let (r, _, _) = run_audited(
            denying,
            binding(&["Deny"]),
            &deployment(1),
            &AliceListsSecrets,
        );
        assert!(r.unwrap_err()["message"]
            .as_str()
            .unwrap()
            .ends_with("denied request: may not delete secrets"));
        let request_resource = replicas_policy(json!({
            "validations": [{"expression": "authorizer.requestResource.check('create').allowed()"}],
        }));
        assert!(run_audited(
            request_resource,
            binding(&["Deny"]),
            &deployment(1),
            &AliceListsSecrets
        )
        .0
        .is_err());
    }

    #[test]
    fn a_failed_validation_denies_with_upstreams_message() {
        let (r, _) = run(
            replicas_policy(json!({})),
            binding(&["Deny"]),
            &deployment(7),
        );
        let status = r.unwrap_err();
        assert_eq!(status["code"], 422);
        assert_eq!(status["reason"], "Invalid");
        assert_eq!(
            status["message"],
            "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding-test.example.com' denied request: failed expression: object.spec.replicas <= 5"
        );
        assert_eq!(
            status["details"]["causes"][0]["message"],
            "ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding-test.example.com' denied request: failed expression: object.spec.replicas <= 5"
        );
        assert!(run(
            replicas_policy(json!({})),
            binding(&["Deny"]),
            &deployment(3)
        )
        .0
        .is_ok());
    }

    #[test]
    fn warn_and_audit_actions_admit() {
        let (r, warnings) = run(
            replicas_policy(json!({})),
            binding(&["Warn", "Audit"]),
            &deployment(7),
        );
        assert!(r.is_ok());
        assert_eq!(
            warnings,
            vec!["Validation failed for ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding-test.example.com': failed expression: object.spec.replicas <= 5".to_string()]
        );
    }

    #[test]
    fn messages_reasons_and_variables() {
        let policy = replicas_policy(json!({
            "variables": [{"name": "max", "expression": "5"}, {"name": "over", "expression": "object.spec.replicas > variables.max"}],
            "validations": [{"expression": "!variables.over", "reason": "Forbidden",
                "messageExpression": "'replicas ' + string(object.spec.replicas) + ' over ' + string(variables.max)"}],
        }));
        let status = run(policy, binding(&["Deny"]), &deployment(9))
            .0
            .unwrap_err();
        assert_eq!(status["code"], 403);
        assert!(status["message"]
            .as_str()
            .unwrap()
            .ends_with("denied request: replicas 9 over 5"));
        let with_message = replicas_policy(json!({
            "validations": [{"expression": "object.spec.replicas <= 5", "message": "too many"}],
        }));
        let status = run(with_message, binding(&["Deny"]), &deployment(9))
            .0
            .unwrap_err();
        assert!(status["message"]
            .as_str()
            .unwrap()
            .ends_with("denied request: too many"));
    }

    #[test]
    fn errors_follow_the_failure_policy_and_conditions_gate() {
        let broken = json!({"validations": [{"expression": "object.spec.nothing > 1"}]});
        let status = run(
            replicas_policy(broken.clone()),
            binding(&["Deny"]),
            &deployment(1),
        )
        .0
        .unwrap_err();
        assert!(status["message"]
            .as_str()
            .unwrap()
            .contains("expression 'object.spec.nothing > 1' resulted in error"));
        let mut ignore = broken;
        ignore["failurePolicy"] = json!("Ignore");
        assert!(
            run(replicas_policy(ignore), binding(&["Deny"]), &deployment(1))
                .0
                .is_ok()
        );
        let gated = replicas_policy(
            json!({"matchConditions": [{"name": "not-web", "expression": "object.metadata.name != 'web'"}]}),
        );
        assert!(run(gated, binding(&["Deny"]), &deployment(9)).0.is_ok());
    }

    #[test]
    fn match_constraints_and_binding_resources_select() {
        let pods_only = replicas_policy(
            json!({"matchConstraints": {"resourceRules": [{"apiGroups": [""],
            "apiVersions": ["v1"], "operations": ["*"], "resources": ["pods"]}]}}),
        );
        assert!(run(pods_only, binding(&["Deny"]), &deployment(9)).0.is_ok());
        let narrowed = Arc::new(Binding::compile(&json!({
            "metadata": {"name": "b"},
            "spec": {"policyName": "demo-policy.example.com", "validationActions": ["Deny"],
                     "matchResources": {"objectSelector": {"matchLabels": {"app": "other"}}}},
        })));
        assert!(run(replicas_policy(json!({})), narrowed, &deployment(9))
            .0
            .is_ok());
    }

    #[test]
    fn missing_params_deny_or_admit_as_the_binding_says() {
        let policy =
            replicas_policy(json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}));
        let deny = Arc::new(Binding::compile(&json!({
            "metadata": {"name": "b"},
            "spec": {"policyName": "demo-policy.example.com", "validationActions": ["Deny"],
                     "paramRef": {"name": "limits", "parameterNotFoundAction": "Deny"}},
        })));
        let status = run(policy.clone(), deny, &deployment(1)).0.unwrap_err();
        assert!(status["message"].as_str().unwrap().ends_with(
            "denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
        ));
        let allow = Arc::new(Binding::compile(&json!({
            "metadata": {"name": "b"},
            "spec": {"policyName": "demo-policy.example.com", "validationActions": ["Deny"],
                     "paramRef": {"name": "limits", "parameterNotFoundAction": "Allow"}},
        })));
        assert!(run(policy, allow, &deployment(9)).0.is_ok());
    }
}
