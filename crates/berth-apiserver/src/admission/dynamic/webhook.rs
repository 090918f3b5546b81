//! Admission webhooks (upstream's `admission/plugin/webhook/{mutating,validating}`): each
//! configured webhook compiled once from its stored configuration, then asked about the
//! requests its rules, selectors and `matchConditions` pick.
//!
//! Mutating webhooks are called one after another, in the order of their configurations'
//! names and then their order in the configuration; each JSONPatch answer is applied before
//! the next call, and a webhook with `reinvocationPolicy: IfNeeded` is called once more when a
//! later one changed the object. Validating webhooks are called all at once. A refusal is
//! answered with the webhook's status; a call that fails refuses the request under
//! `failurePolicy: Fail` and is passed over under `Ignore`.

use super::cel::{Activation, Conditions};
use super::client::{self, Endpoint};
use super::matching::{rules_match, Rule, Selectors};
use super::review::{self, Verdict};
use super::{Attributes, Lookup};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// Where a webhook is reached.
#[derive(Debug, Clone)]
enum Target {
    Url {
        url: String,
    },
    Service {
        namespace: String,
        name: String,
        path: String,
        port: u16,
    },
}

/// One webhook of a configuration, ready to be matched and called.
pub struct Webhook {
    pub name: String,
    /// The configuration it belongs to.
    pub configuration: String,
    pub mutating: bool,
    rules: Vec<Rule>,
    equivalent: bool,
    selectors: Selectors,
    conditions: Conditions,
    fail_open: bool,
    timeout: Duration,
    /// `sideEffects` is `None` or `NoneOnDryRun`: it may be called for dry-run requests.
    dry_run_safe: bool,
    pub reinvoke_if_needed: bool,
    target: Target,
    tls: Result<Arc<rustls::ClientConfig>, String>,
}

impl Webhook {
    /// Compiles webhook `w` of configuration `configuration` (stored, so defaulted).
    pub fn compile(configuration: &str, w: &Value, mutating: bool) -> Webhook {
        use base64::Engine;
        let cfg = &w["clientConfig"];
        let target = match cfg["url"].as_str() {
            Some(url) => Target::Url {
                url: url.to_string(),
            },
            None => {
                let s = &cfg["service"];
                Target::Service {
                    namespace: s["namespace"].as_str().unwrap_or("").to_string(),
                    name: s["name"].as_str().unwrap_or("").to_string(),
                    path: s["path"].as_str().unwrap_or("/").to_string(),
                    port: s["port"]
                        .as_u64()
                        .and_then(|p| u16::try_from(p).ok())
                        .unwrap_or(443),
                }
            }
        };
        let ca = cfg["caBundle"]
            .as_str()
            .map(|b| base64::engine::general_purpose::STANDARD.decode(b))
            .transpose();
        let tls = match ca {
            Ok(ca) => client::tls_config(&ca.unwrap_or_default()),
            Err(e) => Err(format!("caBundle is not base64: {e}")),
        };
        Webhook {
            name: w["name"].as_str().unwrap_or("").to_string(),
            configuration: configuration.to_string(),
            mutating,
            rules: w["rules"]
                .as_array()
                .into_iter()
                .flatten()
                .map(Rule::parse)
                .collect(),
            equivalent: w["matchPolicy"].as_str() != Some("Exact"),
            selectors: Selectors::parse(w),
            conditions: Conditions::compile(&w["matchConditions"]),
            fail_open: w["failurePolicy"].as_str() == Some("Ignore"),
            timeout: Duration::from_secs(w["timeoutSeconds"].as_u64().unwrap_or(10).clamp(1, 30)),
            dry_run_safe: matches!(w["sideEffects"].as_str(), Some("None" | "NoneOnDryRun")),
            reinvoke_if_needed: w["reinvocationPolicy"].as_str() == Some("IfNeeded"),
            target,
            tls,
        }
    }

    /// Whether the request's resource and operation are among the webhook's rules: the cheap
    /// test every write passes through.
    pub fn covers(&self, a: &Attributes) -> bool {
        rules_match(&self.rules, self.equivalent, a)
    }

    /// Whether the webhook is to be called: its rules, selectors and conditions all match.
    /// `Err` is a failure that `failurePolicy` decides on.
    fn applies(
        &self,
        a: &Attributes,
        lookup: &dyn Lookup,
        object: Option<&Value>,
        old: Option<&Value>,
        request: &Value,
    ) -> Result<bool, String> {
        if !self.covers(a) || !self.selectors.object_matches(object, old) {
            return Ok(false);
        }
        if self.selectors.needs_namespace() {
            let labels = super::namespace_labels(a, lookup, object, old);
            if !self
                .selectors
                .namespace_matches(a, labels.as_ref().and_then(Value::as_object))
            {
                return Ok(false);
            }
        }
        if self.conditions.is_empty() {
            return Ok(true);
        }
        let activation = Activation {
            object,
            old_object: old,
            request,
            params: None,
            namespace_object: None,
            authorizer: None,
        };
        self.conditions.all_true(&activation.context())
    }

    fn endpoint(&self, lookup: &dyn Lookup) -> Result<Endpoint, String> {
        match &self.target {
            Target::Url { url } => {
                let (host, port, path) = client::parse_url(url)?;
                let address = if host.contains(':') {
                    format!("[{host}]:{port}")
                } else {
                    format!("{host}:{port}")
                };
                let path_and_query = client::with_timeout(&path, self.timeout);
                Ok(Endpoint {
                    url: format!("https://{address}{path_and_query}"),
                    server_name: host,
                    address,
                    path_and_query,
                })
            }
            Target::Service {
                namespace,
                name,
                path,
                port,
            } => {
                let address = lookup.service_address(namespace, name, *port)?;
                let server_name = format!("{name}.{namespace}.svc");
                let path_and_query = client::with_timeout(path, self.timeout);
                Ok(Endpoint {
                    url: format!("https://{server_name}:{port}{path_and_query}"),
                    server_name,
                    address,
                    path_and_query,
                })
            }
        }
    }

    /// Calls the webhook with `request` (an AdmissionReview's request).
    async fn call(
        &self,
        lookup: &dyn Lookup,
        request: &Value,
        uid: &str,
    ) -> Result<Verdict, Failure> {
        let endpoint = self
            .endpoint(lookup)
            .map_err(|e| Failure::Call(format!("failed to call webhook: {e}")))?;
        let tls = self
            .tls
            .clone()
            .map_err(|e| Failure::Call(format!("failed to call webhook: {e}")))?;
        let body = serde_json::to_vec(&review::review(request.clone()))
            .map_err(|e| Failure::Call(e.to_string()))?;
        let answer = client::post(&endpoint, tls, body, self.timeout)
            .await
            .map_err(|e| Failure::Call(format!("failed to call webhook: {e}")))?;
        review::verdict(&answer, uid, self.mutating)
            .map_err(|e| Failure::Call(format!("received invalid webhook response: {e}")))
    }
}

/// Why calling a webhook did not give a verdict.
enum Failure {
    /// The call failed or its answer was unusable: `failurePolicy` decides.
    Call(String),
}

/// What dynamic admission refuses a request with: a whole Status (a webhook's own, or an
/// internal error naming the webhook).
pub type Refusal = Value;

/// Upstream's `NewInternalError`: 500 with the error's words.
pub fn internal_error(message: &str) -> Refusal {
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("Internal error occurred: {message}"),
        "reason": "InternalError",
        "details": {"causes": [{"message": message}]},
        "code": 500,
    })
}

fn bad_request(message: String) -> Refusal {
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": "BadRequest", "code": 400,
    })
}

/// Upstream's `ErrCallingWebhook` under `failurePolicy: Fail`.
fn call_failed(name: &str, reason: &str) -> Refusal {
    internal_error(&format!("failed calling webhook {name:?}: {reason}"))
}

/// Whether a matching webhook may be called for this request at all.
fn dry_run_check(hook: &Webhook, a: &Attributes) -> Result<(), Refusal> {
    if a.dry_run && !hook.dry_run_safe {
        return Err(bad_request(format!(
            "admission webhook {:?} does not support dry run",
            hook.name
        )));
    }
    Ok(())
}

fn verdict_warnings(v: &Verdict, warnings: &mut Vec<String>) {
    warnings.extend(v.warnings.iter().cloned());
}

/// Runs the mutating webhooks on `object` (their order is the slice's).
pub async fn mutate(
    hooks: &[Arc<Webhook>],
    a: &Attributes<'_>,
    lookup: &dyn Lookup,
    object: &mut Value,
    old: Option<&Value>,
    warnings: &mut Vec<String>,
) -> Result<(), Refusal> {
    // Webhooks called so far that want to be called again after a later change.
    let mut reinvocable: Vec<usize> = Vec::new();
    let mut reinvoke = vec![false; hooks.len()];
    for round in 0..2 {
        for (i, hook) in hooks.iter().enumerate() {
            if round == 1 && !reinvoke[i] {
                continue;
            }
            let changed = call_mutating(hook, a, lookup, object, old, warnings).await?;
            let Some(changed) = changed else { continue };
            if round == 0 {
                if changed {
                    for &k in &reinvocable {
                        reinvoke[k] = true;
                    }
                }
                if hook.reinvoke_if_needed {
                    reinvocable.push(i);
                }
            }
        }
        if !reinvoke.iter().any(|r| *r) {
            break;
        }
    }
    Ok(())
}

/// Calls one mutating webhook if it applies: `None` when it did not, else whether it changed
/// the object.
async fn call_mutating(
    hook: &Webhook,
    a: &Attributes<'_>,
    lookup: &dyn Lookup,
    object: &mut Value,
    old: Option<&Value>,
    warnings: &mut Vec<String>,
) -> Result<Option<bool>, Refusal> {
    let uid = uuid::Uuid::new_v4().to_string();
    let request = review::request(a, &uid, Some(object), old);
    match hook.applies(a, lookup, Some(object), old, &request) {
        Ok(false) => return Ok(None),
        Ok(true) => {}
        Err(e) => return failed(hook, &e).map(|()| None),
    }
    dry_run_check(hook, a)?;
    let verdict = match hook.call(lookup, &request, &uid).await {
        Ok(v) => v,
        Err(Failure::Call(e)) => return failed(hook, &e).map(|()| Some(false)),
    };
    verdict_warnings(&verdict, warnings);
    if !verdict.allowed {
        return Err(review::denial(&hook.name, &verdict.status));
    }
    let Some(patch) = verdict.patch else {
        return Ok(Some(false));
    };
    let mut patched = object.clone();
    json_patch::patch(&mut patched, &patch).map_err(|e| internal_error(&e.to_string()))?;
    let changed = patched != *object;
    *object = patched;
    Ok(Some(changed))
}

/// Runs the mutating webhooks on a deletion of `old`: each that applies is called once, with
/// no `object`, and may admit or refuse but not change anything (upstream refuses a
/// non-empty patch with an internal error).
pub async fn mutate_deletion(
    hooks: &[Arc<Webhook>],
    a: &Attributes<'_>,
    lookup: &dyn Lookup,
    old: &Value,
    warnings: &mut Vec<String>,
) -> Result<(), Refusal> {
    for hook in hooks {
        let uid = uuid::Uuid::new_v4().to_string();
        let request = review::request(a, &uid, None, Some(old));
        match hook.applies(a, lookup, None, Some(old), &request) {
            Ok(false) => continue,
            Ok(true) => {}
            Err(e) => {
                failed(hook, &e)?;
                continue;
            }
        }
        dry_run_check(hook, a)?;
        let verdict = match hook.call(lookup, &request, &uid).await {
            Ok(v) => v,
            Err(Failure::Call(e)) => {
                failed(hook, &e)?;
                continue;
            }
        };
        verdict_warnings(&verdict, warnings);
        if !verdict.allowed {
            return Err(review::denial(&hook.name, &verdict.status));
        }
        if verdict.patch.is_some_and(|p| !p.0.is_empty()) {
            return Err(internal_error(&format!(
                "admission webhook {:?} attempted to modify the object, which is not supported for this operation",
                hook.name
            )));
        }
    }
    Ok(())
}

/// A failed call or condition: passed over under `failurePolicy: Ignore`, a refusal under
/// `Fail`.
fn failed(hook: &Webhook, reason: &str) -> Result<(), Refusal> {
    if hook.fail_open {
        tracing::warn!(webhook = %hook.name, configuration = %hook.configuration, reason, "failed calling webhook, failing open");
        Ok(())
    } else {
        tracing::warn!(webhook = %hook.name, configuration = %hook.configuration, reason, "failed calling webhook, failing closed");
        Err(call_failed(&hook.name, reason))
    }
}

/// Runs the validating webhooks on `object` concurrently; the first refusal in their order
/// is the answer.
pub async fn validate(
    hooks: &[Arc<Webhook>],
    a: &Attributes<'_>,
    lookup: &dyn Lookup,
    object: Option<&Value>,
    old: Option<&Value>,
    warnings: &mut Vec<String>,
) -> Result<(), Refusal> {
    let uid = uuid::Uuid::new_v4().to_string();
    let request = review::request(a, &uid, object, old);
    let mut calls = Vec::new();
    for hook in hooks {
        match hook.applies(a, lookup, object, old, &request) {
            Ok(false) => {}
            Ok(true) => {
                dry_run_check(hook, a)?;
                calls.push(hook.clone());
            }
            Err(e) => failed(hook, &e)?,
        }
    }
    if calls.is_empty() {
        return Ok(());
    }
    let answers =
        futures::future::join_all(calls.iter().map(|hook| hook.call(lookup, &request, &uid))).await;
    let mut refusal = None;
    for (hook, answer) in calls.iter().zip(answers) {
        let outcome = match answer {
            Ok(verdict) => {
                verdict_warnings(&verdict, warnings);
                if verdict.allowed {
                    Ok(())
                } else {
                    Err(review::denial(&hook.name, &verdict.status))
                }
            }
            Err(Failure::Call(e)) => failed(hook, &e),
        };
        if let Err(e) = outcome {
            refusal.get_or_insert(e);
        }
    }
    match refusal {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
