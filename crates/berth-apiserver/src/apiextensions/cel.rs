//! `x-kubernetes-validations`: CEL rules of a structural schema, compiled once when the CRD is
//! read and evaluated with `self` (and `oldSelf` on update) at the node that carries them,
//! as upstream's `apiextensions-apiserver/pkg/apiserver/schema/cel` does. The language is
//! the `cel-interpreter` crate's.
//!
//! # Cost
//!
//! Upstream estimates each rule's worst-case cost from the schema's bounds and refuses a CRD
//! over budget. berth bounds the same thing by the rule's shape: a rule is at most
//! [`MAX_RULE_CHARS`] long and has at most [`MAX_COMPREHENSIONS`] comprehension macro
//! (`all`, `exists`, `exists_one`, `map`, `filter`), so evaluating it is linear in the size of
//! the node it checks, which the store's object bound (1.5 MiB) bounds in turn; a schema has
//! at most [`MAX_RULES`] rules.

use serde_json::Value;
use std::sync::Arc;

/// Longest rule (or messageExpression) accepted, in characters.
pub const MAX_RULE_CHARS: usize = 4096;

/// Comprehension macros a rule may use: one keeps its evaluation linear in the checked
/// node's size; two nested would make it quadratic.
pub const MAX_COMPREHENSIONS: usize = 1;

/// Rules one CRD version's schema may carry: each runs on every write of every object.
pub const MAX_RULES: usize = 256;

const COMPREHENSIONS: &[&str] = &[".all(", ".exists(", ".exists_one(", ".map(", ".filter("];

/// One validation rule.
#[derive(Clone)]
pub struct Rule {
    pub rule: String,
    program: Arc<cel_interpreter::Program>,
    pub message: String,
    message_expression: Option<Arc<cel_interpreter::Program>>,
    /// `FieldValueInvalid` (default), `FieldValueForbidden`, `FieldValueRequired`,
    /// `FieldValueDuplicate`.
    pub reason: String,
    /// A path below the node, where the error is reported (`.spec.replicas`).
    pub field_path: String,
    /// Whether the rule reads `oldSelf` (a transition rule: run on update only).
    pub transition: bool,
    pub optional_old_self: bool,
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rule").field("rule", &self.rule).finish()
    }
}

pub(crate) fn compile(text: &str) -> Result<cel_interpreter::Program, String> {
    if text.chars().count() > MAX_RULE_CHARS {
        return Err(format!(
            "Forbidden: rule is longer than {MAX_RULE_CHARS} characters"
        ));
    }
    let comprehensions: usize = COMPREHENSIONS.iter().map(|c| text.matches(c).count()).sum();
    if comprehensions > MAX_COMPREHENSIONS {
        return Err(format!(
            "Forbidden: estimated rule cost exceeds budget: at most {MAX_COMPREHENSIONS} comprehension (all, exists, exists_one, map, filter) per rule"
        ));
    }
    // The parser is not ours: whatever it does with hostile text must not take the server down.
    let parsed = std::panic::catch_unwind(|| cel_interpreter::Program::compile(text));
    match parsed {
        Ok(Ok(p)) => Ok(p),
        Ok(Err(e)) => Err(format!("compilation failed: {e}")),
        Err(_) => Err("compilation failed".into()),
    }
}

impl Rule {
    /// Reads and compiles one `x-kubernetes-validations` entry.
    pub fn parse(v: &Value) -> Result<Rule, String> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let rule = s("rule");
        if rule.trim().is_empty() {
            return Err("rule: Required value".into());
        }
        let program = compile(&rule).map_err(|e| format!("rule: Invalid value: {rule:?}: {e}"))?;
        let message_expression = match s("messageExpression") {
            m if m.is_empty() => None,
            m => Some(Arc::new(compile(&m).map_err(|e| {
                format!("messageExpression: Invalid value: {m:?}: {e}")
            })?)),
        };
        let reason = match s("reason").as_str() {
            "" => "FieldValueInvalid".to_string(),
            r @ ("FieldValueInvalid"
            | "FieldValueForbidden"
            | "FieldValueRequired"
            | "FieldValueDuplicate") => r.to_string(),
            other => {
                return Err(format!(
                    "reason: Unsupported value: {other:?}: supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""
                ))
            }
        };
        Ok(Rule {
            transition: rule.contains("oldSelf"),
            optional_old_self: v
                .get("optionalOldSelf")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            rule,
            program: Arc::new(program),
            message: s("message"),
            message_expression,
            reason,
            field_path: s("fieldPath"),
        })
    }

    /// The rule's verdict on `value` (and `old`, its value before an update): `None` when it
    /// holds or does not apply, else the cause's (reason, field path, message). When
    /// `unchanged` (the value, or its nearest ancestor with an old value, equals its old
    /// value), a rule that does not read `oldSelf` and fails is not reported (upstream's
    /// ratcheting, `shouldRatchetError`); a rule that cannot be evaluated still is.
    pub fn check(
        &self,
        value: &Value,
        old: Option<&Value>,
        path: &str,
        type_name: &str,
        unchanged: bool,
    ) -> Option<(String, String, String)> {
        if self.transition && old.is_none() && !self.optional_old_self {
            return None;
        }
        let mut context = cel_interpreter::Context::default();
        context.add_variable("self", value).ok()?;
        if let Some(old) = old {
            context.add_variable("oldSelf", old).ok()?;
        }
        let field = if self.field_path.is_empty() {
            path.to_string()
        } else {
            format!("{path}{}", self.field_path)
        };
        let field = field.trim_start_matches('.').to_string();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.program.execute(&context)
        }));
        match outcome {
            Ok(Ok(cel_interpreter::Value::Bool(true))) => None,
            Ok(Ok(cel_interpreter::Value::Bool(false))) if unchanged && !self.transition => None,
            Ok(Ok(cel_interpreter::Value::Bool(false))) => {
                let message = self.message(&context);
                let body = match self.reason.as_str() {
                    "FieldValueForbidden" => format!("Forbidden: {message}"),
                    "FieldValueRequired" => format!("Required value: {message}"),
                    "FieldValueDuplicate" => format!("Duplicate value: {message}"),
                    _ => format!("Invalid value: \"{type_name}\": {message}"),
                };
                Some((self.reason.clone(), field, body))
            }
            Ok(Ok(_)) => Some((
                "FieldValueInvalid".into(),
                field,
                format!(
                    "Invalid value: \"{type_name}\": rule did not evaluate to a bool: {}",
                    self.rule
                ),
            )),
            Ok(Err(e)) => Some((
                "FieldValueInvalid".into(),
                field,
                format!(
                    "Invalid value: \"{type_name}\": {e} evaluating rule: {}",
                    self.rule
                ),
            )),
            Err(_) => Some((
                "InternalError".into(),
                field,
                format!("Internal error: evaluating rule: {}", self.rule),
            )),
        }
    }

    fn message(&self, context: &cel_interpreter::Context) -> String {
        if let Some(expr) = &self.message_expression {
            if let Ok(Ok(cel_interpreter::Value::String(s))) =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| expr.execute(context)))
            {
                let s = s.trim();
                if !s.is_empty() && !s.contains('\n') {
                    return s.to_string();
                }
            }
        }
        if !self.message.is_empty() {
            return self.message.clone();
        }
        format!("failed rule: {}", self.rule)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(v: Value) -> Rule {
        Rule::parse(&v).unwrap()
    }

    #[test]
    fn a_rule_that_holds_says_nothing_and_one_that_fails_says_its_message() {
        let r = rule(json!({"rule": "self.minReplicas <= self.replicas",
                            "message": "replicas should be greater than or equal to minReplicas"}));
        assert!(r
            .check(
                &json!({"minReplicas": 1, "replicas": 3}),
                None,
                "spec",
                "object",
                false
            )
            .is_none());
        let (reason, field, body) = r
            .check(
                &json!({"minReplicas": 5, "replicas": 3}),
                None,
                "spec",
                "object",
                false,
            )
            .unwrap();
        assert_eq!(reason, "FieldValueInvalid");
        assert_eq!(field, "spec");
        assert_eq!(
            body,
            "Invalid value: \"object\": replicas should be greater than or equal to minReplicas"
        );
    }

    #[test]
    fn without_a_message_the_failed_rule_is_named() {
        let r = rule(json!({"rule": "self > 0"}));
        let (_, _, body) = r
            .check(&json!(-1), None, "spec.x", "integer", false)
            .unwrap();
        assert_eq!(body, "Invalid value: \"integer\": failed rule: self > 0");
    }

    #[test]
    fn message_expression_reason_and_field_path_shape_the_error() {
        let r = rule(json!({"rule": "self.x < 10",
            "messageExpression": "'x is ' + string(self.x) + ', over the limit'",
            "reason": "FieldValueForbidden", "fieldPath": ".x"}));
        let (reason, field, body) = r
            .check(&json!({"x": 12}), None, "spec", "object", false)
            .unwrap();
        assert_eq!(reason, "FieldValueForbidden");
        assert_eq!(field, "spec.x");
        assert_eq!(body, "Forbidden: x is 12, over the limit");
    }

    #[test]
    fn transition_rules_run_only_on_update() {
        let r = rule(json!({"rule": "self == oldSelf", "message": "Value is immutable"}));
        assert!(r
            .check(&json!("a"), None, "spec.name", "string", false)
            .is_none());
        assert!(r
            .check(&json!("a"), Some(&json!("a")), "spec.name", "string", false)
            .is_none());
        let (_, _, body) = r
            .check(&json!("b"), Some(&json!("a")), "spec.name", "string", false)
            .unwrap();
        assert_eq!(body, "Invalid value: \"string\": Value is immutable");
    }

    #[test]
    fn rules_over_the_cost_bound_or_not_compiling_are_refused() {
        let nested = json!({"rule": "self.a.all(x, self.b.exists(y, x == y))"});
        assert!(Rule::parse(&nested)
            .unwrap_err()
            .contains("cost exceeds budget"));
        assert!(Rule::parse(&json!({"rule": "self.x >"}))
            .unwrap_err()
            .contains("compilation failed"));
        assert!(Rule::parse(&json!({"rule": "true", "reason": "Nope"})).is_err());
    }
}
