//! CEL for admission: the variables an expression sees (`object`, `oldObject`, `request`,
//! `params`, `namespaceObject`, `variables`) and `matchConditions`, on the `cel-interpreter`
//! crate, compiled with the same bounds as CRD validation rules
//! ([`crate::apiextensions::cel`]).

use serde_json::Value;
use std::sync::Arc;

/// Most `matchConditions` one webhook or policy may have (upstream's limit).
pub const MAX_MATCH_CONDITIONS: usize = 64;

/// An expression compiled once; a compile error is kept and reported when it is evaluated.
#[derive(Clone)]
pub struct Expression {
    pub text: String,
    program: Result<Arc<cel_interpreter::Program>, String>,
}

impl std::fmt::Debug for Expression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// What evaluating an expression gave.
pub type Outcome = Result<cel_interpreter::Value, String>;

impl Expression {
    pub fn compile(text: &str) -> Expression {
        Expression {
            text: text.to_string(),
            program: crate::apiextensions::cel::compile(text).map(Arc::new),
        }
    }

    /// Evaluates in `context`; the parser and interpreter are not ours, so a panic in them is
    /// an error here, not a crashed server.
    pub fn evaluate(&self, context: &cel_interpreter::Context) -> Outcome {
        let program = self.program.as_ref().map_err(Clone::clone)?;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| program.execute(context))) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("internal error evaluating the expression".into()),
        }
    }

    /// Evaluates an expression that must give a bool.
    pub fn evaluate_bool(&self, context: &cel_interpreter::Context) -> Result<bool, String> {
        match self.evaluate(context)? {
            cel_interpreter::Value::Bool(b) => Ok(b),
            other => Err(format!("expected bool, got {}", type_name(&other))),
        }
    }
}

pub fn type_name(v: &cel_interpreter::Value) -> &'static str {
    use cel_interpreter::Value as V;
    match v {
        V::List(_) => "list",
        V::Map(_) => "map",
        V::Function(..) => "function",
        V::Int(_) => "int",
        V::UInt(_) => "uint",
        V::Float(_) => "double",
        V::String(_) => "string",
        V::Bytes(_) => "bytes",
        V::Bool(_) => "bool",
        V::Null => "null",
        _ => "value",
    }
}

/// The variables of one evaluation.
pub struct Activation<'a> {
    pub object: Option<&'a Value>,
    pub old_object: Option<&'a Value>,
    pub request: &'a Value,
    pub params: Option<&'a Value>,
    pub namespace_object: Option<&'a Value>,
    /// The `authorizer` variable, given to expressions that use it.
    pub authorizer: Option<Arc<super::cel_authorizer::AuthorizerVar>>,
}

impl Activation<'_> {
    /// The CEL context: absent objects are `null`, as upstream's are.
    pub fn context(&self) -> cel_interpreter::Context<'static> {
        let mut context = cel_interpreter::Context::default();
        let null = Value::Null;
        let _ = context.add_variable("object", self.object.unwrap_or(&null));
        let _ = context.add_variable("oldObject", self.old_object.unwrap_or(&null));
        let _ = context.add_variable("request", self.request);
        let _ = context.add_variable("params", self.params.unwrap_or(&null));
        let _ = context.add_variable("namespaceObject", self.namespace_object.unwrap_or(&null));
        if let Some(var) = &self.authorizer {
            context.add_variable_from_value("authorizer", super::cel_authorizer::variable(var));
            super::cel_authorizer::register(&mut context, var.clone());
        }
        context
    }
}

/// `matchConditions`: named expressions that must all be true for the webhook or policy to
/// apply.
#[derive(Clone, Debug, Default)]
pub struct Conditions(Vec<(String, Expression)>);

impl Conditions {
    pub fn compile(v: &Value) -> Conditions {
        Conditions(
            v.as_array()
                .into_iter()
                .flatten()
                .take(MAX_MATCH_CONDITIONS)
                .map(|c| {
                    (
                        c["name"].as_str().unwrap_or("").to_string(),
                        Expression::compile(c["expression"].as_str().unwrap_or("")),
                    )
                })
                .collect(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether every condition holds. A false one decides at once; an error is returned only
    /// when no condition is false (upstream's `matchconditions.Matcher`).
    pub fn all_true(&self, context: &cel_interpreter::Context) -> Result<bool, String> {
        let mut error = None;
        for (name, expression) in &self.0 {
            match expression.evaluate_bool(context) {
                Ok(true) => {}
                Ok(false) => return Ok(false),
                Err(e) => {
                    error.get_or_insert(format!("failed to evaluate matchCondition {name:?}: {e}"));
                }
            }
        }
        match error {
            Some(e) => Err(e),
            None => Ok(true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx(object: &Value, request: &Value) -> cel_interpreter::Context<'static> {
        Activation {
            object: Some(object),
            old_object: None,
            request,
            params: None,
            namespace_object: None,
            authorizer: None,
        }
        .context()
    }

    #[test]
    fn expressions_see_object_old_object_and_request() {
        let obj =
            json!({"metadata": {"name": "web", "labels": {"app": "web"}}, "spec": {"replicas": 7}});
        let request = json!({"operation": "CREATE", "userInfo": {"username": "alice"}});
        let c = ctx(&obj, &request);
        let t = |e: &str| Expression::compile(e).evaluate_bool(&c);
        assert_eq!(t("object.spec.replicas <= 5"), Ok(false));
        assert_eq!(t("object.spec.replicas > 5"), Ok(true));
        assert_eq!(t("oldObject == null"), Ok(true));
        assert_eq!(t("request.operation == 'CREATE'"), Ok(true));
        assert_eq!(t("request.userInfo.username.startsWith('ali')"), Ok(true));
        assert_eq!(
            t("has(object.metadata.labels) && object.metadata.labels.app == 'web'"),
            Ok(true)
        );
        assert_eq!(t("params == null"), Ok(true));
        assert!(t("object.spec.missing > 1").is_err());
        assert_eq!(t("'x'"), Err("expected bool, got string".into()));
        assert!(
            t("object.spec.replicas >").is_err(),
            "a compile error is an error"
        );
    }

    #[test]
    fn a_false_condition_wins_over_an_error_and_errors_are_named() {
        let obj = json!({"metadata": {}});
        let request = json!({});
        let c = ctx(&obj, &request);
        let conditions = Conditions::compile(&json!([
            {"name": "broken", "expression": "object.nope == 1"},
            {"name": "never", "expression": "false"},
        ]));
        assert_eq!(conditions.all_true(&c), Ok(false));
        let erring = Conditions::compile(&json!([
            {"name": "broken", "expression": "object.nope == 1"},
            {"name": "always", "expression": "true"},
        ]));
        assert!(erring
            .all_true(&c)
            .unwrap_err()
            .starts_with("failed to evaluate matchCondition \"broken\""));
        assert_eq!(Conditions::default().all_true(&c), Ok(true));
    }
}
