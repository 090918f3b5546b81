//! The `authorizer` CEL variable of admission policies (upstream's `cel/library/authz.go`):
//! `authorizer.group(g).resource(r).namespace(ns).name(n).check(verb).allowed()`,
//! `authorizer.path(p).check(verb)`, `.reason()`, `.errored()`, `.error()`,
//! `authorizer.serviceAccount(ns, name)` and `authorizer.requestResource`, answered by the
//! server's own authorizer for the requesting user.
//!
//! The `cel-interpreter` crate has no object types, so each step of the chain is a map whose
//! keys start with `_` (never a method's name) and the methods are functions that read them.
//! The functions are registered only for policies that mention `authorizer`: a registered
//! function named `name` would otherwise answer `object.metadata.name` on an object without
//! one. Each evaluation may ask the authorizer at most [`MAX_CHECKS`] times.

use crate::authorizer::{Attributes, Authorizer, Decision};
use crate::user::UserInfo;
use cel_interpreter::extractors::{Arguments, This};
use cel_interpreter::{ExecutionError, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Authorizer checks one request's policy evaluations may make: each is an RBAC lookup,
/// and a comprehension could otherwise make one per element of a list.
pub const MAX_CHECKS: usize = 64;

/// What the `authorizer` variable answers with: the authorizer and the requesting user.
pub struct AuthorizerVar {
    pub authorizer: Arc<dyn Authorizer>,
    pub user: UserInfo,
    /// The request's (group, resource, subresource, namespace, name).
    pub request_resource: [String; 5],
    checks: AtomicUsize,
}

impl AuthorizerVar {
    pub fn new(
        authorizer: Arc<dyn Authorizer>,
        user: UserInfo,
        request_resource: [String; 5],
    ) -> AuthorizerVar {
        AuthorizerVar {
            authorizer,
            user,
            request_resource,
            checks: AtomicUsize::new(0),
        }
    }
}

const KIND: &str = "_kind";

fn text(s: &str) -> Value {
    Value::String(Arc::new(s.to_string()))
}

fn map(entries: Vec<(&str, Value)>) -> Value {
    let m: HashMap<String, Value> = entries
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    Value::from(m)
}

fn field(v: &Value, key: &str) -> Option<Value> {
    match v {
        Value::Map(m) => m.get(&Arc::new(key.to_string()).into()).cloned(),
        _ => None,
    }
}

fn field_str(v: &Value, key: &str) -> String {
    match field(v, key) {
        Some(Value::String(s)) => s.to_string(),
        _ => String::new(),
    }
}

fn kind_of(v: &Value) -> String {
    field_str(v, KIND)
}

/// `v` with `key` set to `value`.
fn with(v: &Value, key: &str, value: Value) -> Value {
    let mut entries: HashMap<String, Value> = HashMap::new();
    if let Value::Map(m) = v {
        for (k, x) in m.map.iter() {
            entries.insert(k.to_string(), x.clone());
        }
    }
    entries.insert(key.to_string(), value);
    Value::from(entries)
}

fn arg_str(args: &Arguments, i: usize, function: &str) -> Result<String, ExecutionError> {
    match args.0.get(i) {
        Some(Value::String(s)) => Ok(s.to_string()),
        _ => Err(ExecutionError::function_error(
            function,
            "expected a string argument",
        )),
    }
}

fn expect(this: &Value, kind: &str, function: &str) -> Result<(), ExecutionError> {
    if kind_of(this) == kind {
        Ok(())
    } else {
        Err(ExecutionError::function_error(
            function,
            format!("no such overload: {function} on {}", describe(this)),
        ))
    }
}

fn describe(v: &Value) -> String {
    match kind_of(v).as_str() {
        "" => "value".into(),
        k => k.into(),
    }
}

/// The `authorizer` variable: the requesting user (`_user` empty) or a service account.
pub fn variable(var: &AuthorizerVar) -> Value {
    let [group, resource, subresource, namespace, name] = &var.request_resource;
    map(vec![
        (KIND, text("Authorizer")),
        ("_user", text("")),
        (
            "requestResource",
            map(vec![
                (KIND, text("ResourceCheck")),
                ("_user", text("")),
                ("_group", text(group)),
                ("_resource", text(resource)),
                ("_subresource", text(subresource)),
                ("_namespace", text(namespace)),
                ("_name", text(name)),
            ]),
        ),
    ])
}

/// The user a check is made for: the requester, or the service account the chain names.
fn user_of(var: &AuthorizerVar, this: &Value) -> UserInfo {
    let name = field_str(this, "_user");
    if name.is_empty() {
        return var.user.clone();
    }
    let namespace = name
        .strip_prefix("system:serviceaccount:")
        .and_then(|r| r.split_once(':'))
        .map(|(ns, _)| ns.to_string())
        .unwrap_or_default();
    UserInfo {
        name,
        groups: vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{namespace}"),
            "system:authenticated".into(),
        ],
        ..UserInfo::default()
    }
}

/// Registers the library's functions in `context`, answering with `var`.
pub fn register(context: &mut cel_interpreter::Context, var: Arc<AuthorizerVar>) {
    context.add_function(
        "serviceAccount",
        |This(this): This<Value>, args: Arguments| -> Result<Value, ExecutionError> {
            expect(&this, "Authorizer", "serviceAccount")?;
            let namespace = arg_str(&args, 0, "serviceAccount")?;
            let name = arg_str(&args, 1, "serviceAccount")?;
            Ok(with(
                &this,
                "_user",
                text(&format!("system:serviceaccount:{namespace}:{name}")),
            ))
        },
    );
    context.add_function(
        "path",
        |This(this): This<Value>, args: Arguments| -> Result<Value, ExecutionError> {
            expect(&this, "Authorizer", "path")?;
            let path = arg_str(&args, 0, "path")?;
            Ok(map(vec![
                (KIND, text("PathCheck")),
                ("_user", text(&field_str(&this, "_user"))),
                ("_path", text(&path)),
            ]))
        },
    );
    context.add_function(
        "group",
        |This(this): This<Value>, args: Arguments| -> Result<Value, ExecutionError> {
            expect(&this, "Authorizer", "group")?;
            let group = arg_str(&args, 0, "group")?;
            Ok(map(vec![
                (KIND, text("GroupCheck")),
                ("_user", text(&field_str(&this, "_user"))),
                ("_group", text(&group)),
            ]))
        },
    );
    context.add_function(
        "resource",
        |This(this): This<Value>, args: Arguments| -> Result<Value, ExecutionError> {
            expect(&this, "GroupCheck", "resource")?;
            let resource = arg_str(&args, 0, "resource")?;
            let this = with(&this, KIND, text("ResourceCheck"));
            Ok(with(&this, "_resource", text(&resource)))
        },
    );
    for (function, key) in [
        ("subresource", "_subresource"),
        ("namespace", "_namespace"),
        ("name", "_name"),
    ] {
        context.add_function(
            function,
            move |This(this): This<Value>, args: Arguments| -> Result<Value, ExecutionError> {
                expect(&this, "ResourceCheck", function)?;
                let value = arg_str(&args, 0, function)?;
                Ok(with(&this, key, text(&value)))
            },
        );
    }
    context.add_function(
        "check",
        move |This(this): This<Value>, args: Arguments| -> Result<Value, ExecutionError> {
            let verb = arg_str(&args, 0, "check")?;
            let kind = kind_of(&this);
            if kind != "ResourceCheck" && kind != "PathCheck" {
                return Err(ExecutionError::function_error(
                    "check",
                    format!("no such overload: check on {}", describe(&this)),
                ));
            }
            if var.checks.fetch_add(1, Ordering::Relaxed) >= MAX_CHECKS {
                return Err(ExecutionError::function_error(
                    "check",
                    "operation cancelled: actual cost limit exceeded",
                ));
            }
            let user = user_of(&var, &this);
            let (group, resource, subresource, namespace, name, path) = (
                field_str(&this, "_group"),
                field_str(&this, "_resource"),
                field_str(&this, "_subresource"),
                field_str(&this, "_namespace"),
                field_str(&this, "_name"),
                field_str(&this, "_path"),
            );
            let decision = var.authorizer.authorize(&Attributes {
                user: &user,
                verb: &verb,
                api_group: &group,
                resource: &resource,
                subresource: &subresource,
                namespace: &namespace,
                name: &name,
                path: &path,
                field_selector: "",
            });
            let (allowed, reason) = match decision {
                Decision::Allow => (true, String::new()),
                Decision::Deny(reason) => (false, reason),
            };
            Ok(map(vec![
                (KIND, text("Decision")),
                ("_allowed", Value::Bool(allowed)),
                ("_reason", text(&reason)),
            ]))
        },
    );
    context.add_function(
        "allowed",
        |This(this): This<Value>| -> Result<Value, ExecutionError> {
            expect(&this, "Decision", "allowed")?;
            Ok(field(&this, "_allowed").unwrap_or(Value::Bool(false)))
        },
    );
    context.add_function(
        "reason",
        |This(this): This<Value>| -> Result<Value, ExecutionError> {
            expect(&this, "Decision", "reason")?;
            Ok(text(&field_str(&this, "_reason")))
        },
    );
    // berth's authorizer answers from memory and never fails: no decision is an error.
    context.add_function(
        "errored",
        |This(this): This<Value>| -> Result<Value, ExecutionError> {
            expect(&this, "Decision", "errored")?;
            Ok(Value::Bool(false))
        },
    );
    context.add_function(
        "error",
        |This(this): This<Value>| -> Result<Value, ExecutionError> {
            expect(&this, "Decision", "error")?;
            Ok(text(""))
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::dynamic::cel::Expression;

    /// Alice may list secrets in `team`; the service account `team/robot` may get `/healthz`.
    struct Fixed;

    impl Authorizer for Fixed {
        fn authorize(&self, a: &Attributes<'_>) -> Decision {
            let ok = match a.user.name.as_str() {
                "alice" => {
                    a.verb == "list"
                        && a.resource == "secrets"
                        && a.api_group.is_empty()
                        && a.namespace == "team"
                }
                "system:serviceaccount:team:robot" => {
                    a.path == "/healthz"
                        && a.verb == "get"
                        && a.user
                            .groups
                            .iter()
                            .any(|g| g == "system:serviceaccounts:team")
                }
                _ => false,
            };
            if ok {
                Decision::Allow
            } else {
                Decision::Deny(format!("{} may not", a.user.name))
            }
        }
    }

    fn eval(user: &str, e: &str) -> Result<Value, String> {
        let var = Arc::new(AuthorizerVar::new(
            Arc::new(Fixed),
            UserInfo {
                name: user.into(),
                ..UserInfo::default()
            },
            [
                String::new(),
                "secrets".into(),
                String::new(),
                "team".into(),
                "s1".into(),
            ],
        ));
        let mut context = cel_interpreter::Context::default();
        context.add_variable_from_value("authorizer", variable(&var));
        register(&mut context, var);
        Expression::compile(e).evaluate(&context)
    }

    #[test]
    fn resource_checks_ask_the_authorizer_for_the_requesting_user() {
        let e =
            "authorizer.group('').resource('secrets').namespace('team').check('list').allowed()";
        assert_eq!(eval("alice", e), Ok(Value::Bool(true)));
        assert_eq!(eval("bob", e), Ok(Value::Bool(false)));
        assert_eq!(
            eval(
                "alice",
                "authorizer.group('').resource('secrets').namespace('other').check('list').allowed()"
            ),
            Ok(Value::Bool(false))
        );
        assert_eq!(
            eval(
                "bob",
                "authorizer.group('').resource('secrets').check('list').reason()"
            ),
            Ok(text("bob may not"))
        );
        assert_eq!(
            eval(
                "alice",
                "authorizer.group('').resource('secrets').check('list').errored()"
            ),
            Ok(Value::Bool(false))
        );
        assert_eq!(
            eval(
                "alice",
                "authorizer.requestResource.check('list').allowed()"
            ),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            eval(
                "alice",
                "authorizer.group('').resource('secrets').subresource('x').name('n').namespace('team').check('list').allowed()"
            ),
            Ok(Value::Bool(true))
        );
    }

    #[test]
    fn paths_and_service_accounts() {
        assert_eq!(
            eval(
                "alice",
                "authorizer.serviceAccount('team', 'robot').path('/healthz').check('get').allowed()"
            ),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            eval(
                "alice",
                "authorizer.path('/healthz').check('get').allowed()"
            ),
            Ok(Value::Bool(false))
        );
    }

    #[test]
    fn misuse_is_an_error_and_checks_are_bounded() {
        assert!(eval("alice", "authorizer.resource('secrets')").is_err());
        assert!(eval("alice", "authorizer.group('').check('get')").is_err());
        assert!(eval("alice", "authorizer.group(1)").is_err());
        let many = "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64,65].all(i, !authorizer.path('/x').check('get').allowed())";
        let r = eval("alice", many);
        assert!(
            r.as_ref()
                .is_err_and(|e| e.contains("actual cost limit exceeded")),
            "{r:?}"
        );
    }
}
