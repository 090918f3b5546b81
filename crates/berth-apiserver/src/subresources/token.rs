//! `serviceaccounts/token`: TokenRequest (authentication.k8s.io/v1), what `kubectl create token`
//! and the kubelet ask for. It signs a bound token for the ServiceAccount, optionally bound to a
//! Pod, Secret or Node whose uid is checked as upstream's `saTokenREST` does; nothing is stored.

use super::parse_body;
use crate::authn::service_account::{BoundObject, BoundToken, Claims, Ref};
use crate::codec::meta_str;
use crate::context::Ctx;
use crate::error::{ApiError, ApiResult, Cause};
use crate::path;
use crate::request::ApiRequest;
use crate::response::answer;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

/// `expirationSeconds` when the request gives none (upstream's default).
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
const MIN_EXPIRATION_SECONDS: i64 = 600;
/// The lifetime kubelets ask for, an hour and seven seconds, so the API server can tell their
/// requests apart (upstream's `WarnOnlyBoundTokenExpirationSeconds`).
pub const KUBELET_EXPIRATION_SECONDS: i64 = 3607;
/// What such a token is signed for while `--service-account-extend-token-expiration` is on:
/// a year (upstream's `ExpirationExtensionSeconds`), so programs that never reread their token
/// file keep working; past the hour they asked for, their uses count as stale.
pub const EXTENDED_EXPIRATION_SECONDS: i64 = 24 * 365 * 60 * 60;
const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

/// Reads `plural`/`name` (core group) from the store, or the 404 upstream's getter answers.
fn read_core(ctx: &Ctx, plural: &str, namespace: Option<&str>, name: &str) -> ApiResult<Value> {
    let rt = berth_api::registry::find("", "v1", plural).ok_or(ApiError::NoRoute)?;
    let not_found = || ApiError::NotFound {
        resource: plural.to_string(),
        name: name.to_string(),
    };
    let kv = ctx
        .store
        .get(&path::key(rt, namespace, name))
        .map_err(|e| ApiError::Internal(e.to_string()))?
        .ok_or_else(not_found)?;
    let obj: Value = serde_json::from_slice(&kv.value)
        .map_err(|e| ApiError::Internal(format!("stored object {} is corrupt: {e}", kv.key)))?;
    Ok(obj)
}

/// Upstream's TokenRequest validation: the duration's bounds.
fn validate_expiration(name: &str, seconds: i64) -> ApiResult<()> {
    let message = if seconds < MIN_EXPIRATION_SECONDS {
        "may not specify a duration less than 10 minutes"
    } else if seconds > MAX_EXPIRATION_SECONDS {
        "may not specify a duration larger than 2^32 seconds"
    } else {
        return Ok(());
    };
    Err(ApiError::Invalid {
        kind: "TokenRequest".into(),
        name: name.into(),
        causes: vec![Cause {
            reason: "FieldValueInvalid".into(),
            message: format!("Invalid value: {seconds}: {message}"),
            field: "spec.expirationSeconds".into(),
        }],
    })
}

/// The lifetime a token is signed with, and the seconds after which it counts as stale: a
/// kubelet's pod-bound request for 3607 seconds for the API server's own audiences is extended
/// to a year, stale after the hour it asked for (upstream's `TokenREST.Create`); any other
/// request gets what it asked for.
pub fn signed_lifetime(
    requested: i64,
    pod_bound: bool,
    audiences: &[String],
    api_audiences: &[String],
    extend: bool,
) -> (i64, Option<i64>) {
    let own_audiences = audiences.iter().all(|a| api_audiences.contains(a));
    if extend && pod_bound && requested == KUBELET_EXPIRATION_SECONDS && own_audiences {
        (EXTENDED_EXPIRATION_SECONDS, Some(requested))
    } else {
        (requested, None)
    }
}

/// The object a token is bound to, checked as upstream does: it exists, a Pod runs as this
/// ServiceAccount, and a uid given in the reference is the object's. Also the pod's node.
fn bound_object(
    ctx: &Ctx,
    namespace: &str,
    sa: &str,
    reference: &Value,
) -> ApiResult<(Option<BoundObject>, Option<Ref>)> {
    if reference.is_null() {
        return Ok((None, None));
    }
    let kind = reference["kind"].as_str().unwrap_or("");
    let api_version = reference["apiVersion"].as_str().unwrap_or("");
    let name = reference["name"].as_str().unwrap_or("");
    let core = api_version.is_empty() || api_version == "v1";
    let (object, mut node) = match kind {
        "Pod" if core => {
            let pod = read_core(ctx, "pods", Some(namespace), name)?;
            if pod["spec"]["serviceAccountName"].as_str().unwrap_or("") != sa {
                return Err(ApiError::BadRequest(format!(
                    "cannot bind token for serviceaccount {sa:?} to pod running with different serviceaccount name."
                )));
            }
            let node = match pod["spec"]["nodeName"].as_str() {
                Some(n) if !n.is_empty() => Some(Ref {
                    name: n.to_string(),
                    uid: read_core(ctx, "nodes", None, n)
                        .map(|o| meta_str(&o, "uid").to_string())
                        .unwrap_or_default(),
                }),
                _ => None,
            };
            (pod, node)
        }
        "Secret" if core => (read_core(ctx, "secrets", Some(namespace), name)?, None),
        "Node" if core => (read_core(ctx, "nodes", None, name)?, None),
        _ => {
            let gvk = if api_version.is_empty() {
                format!(", Kind={kind}")
            } else if let Some((g, v)) = api_version.split_once('/') {
                format!("{g}/{v}, Kind={kind}")
            } else {
                format!("/{api_version}, Kind={kind}")
            };
            return Err(ApiError::BadRequest(format!(
                "cannot bind token to object of type {gvk}"
            )));
        }
    };
    let uid = meta_str(&object, "uid").to_string();
    if let Some(want) = reference["uid"].as_str().filter(|u| !u.is_empty()) {
        if want != uid {
            return Err(ApiError::Conflict {
                resource: kind.to_string(),
                name: name.to_string(),
                message: format!(
                    "Operation cannot be fulfilled on {kind} {name:?}: the UID in the bound object reference ({want}) does not match the UID in record. The object might have been deleted and then recreated"
                ),
            });
        }
    }
    let name = name.to_string();
    let bound = match kind {
        "Pod" => BoundObject::Pod { name, uid },
        "Secret" => BoundObject::Secret { name, uid },
        _ => {
            node = None;
            BoundObject::Node { name, uid }
        }
    };
    Ok((Some(bound), node))
}

/// `POST .../serviceaccounts/NAME/token`.
pub async fn create(ctx: &Ctx, req: &ApiRequest) -> ApiResult<Response> {
    let Some(keys) = ctx.service_account_keys.as_ref() else {
        return Err(ApiError::NoRoute);
    };
    let namespace = req.target.namespace.clone().unwrap_or_default();
    let name = req.name().to_string();
    let mut request = parse_body(req, "authentication.k8s.io", "v1", "TokenRequest")?;
    ctx.admission
        .admit_token_request(&req.user, &namespace, &name, &request)?;
    let sa = read_core(ctx, "serviceaccounts", Some(&namespace), &name)?;
    let spec = request.get("spec").cloned().unwrap_or(Value::Null);
    let expiration = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
        Some(v) => v.as_i64().ok_or_else(|| {
            ApiError::BadRequest("spec.expirationSeconds: must be an integer".into())
        })?,
    };
    validate_expiration(&name, expiration)?;
    let audiences: Vec<String> = match spec.get("audiences").and_then(Value::as_array) {
        Some(a) if !a.is_empty() => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => ctx.api_audiences.clone(),
    };
    let reference = spec.get("boundObjectRef").cloned().unwrap_or(Value::Null);
    let (bound, node) = bound_object(ctx, &namespace, &name, &reference)?;
    let now = ctx.clock.now();
    let (lifetime, warn_after_seconds) = signed_lifetime(
        expiration,
        matches!(bound, Some(BoundObject::Pod { .. })),
        &audiences,
        &ctx.api_audiences,
        ctx.extend_token_expiration,
    );
    let claims = Claims::bound(BoundToken {
        namespace: &namespace,
        service_account: Ref {
            name: name.clone(),
            uid: meta_str(&sa, "uid").to_string(),
        },
        audiences: audiences.clone(),
        now,
        expiration_seconds: lifetime,
        warn_after_seconds,
        bound,
        node,
        jti: uuid::Uuid::new_v4().to_string(),
    });
    let token = keys.sign(&claims).map_err(ApiError::Internal)?;
    // The status gives the lifetime asked for, even when the token lasts a year: the kubelet
    // refreshes on it as usual.
    let expires = now + chrono::Duration::seconds(expiration);
    request["apiVersion"] = json!("authentication.k8s.io/v1");
    request["kind"] = json!("TokenRequest");
    request["metadata"] = json!({"name": name, "namespace": namespace, "creationTimestamp": null});
    request["spec"] = json!({"audiences": audiences, "expirationSeconds": expiration});
    if !reference.is_null() {
        request["spec"]["boundObjectRef"] = reference;
    }
    request["status"] = json!({"token": token,
        "expirationTimestamp": berth_core::clock::timestamp(expires)});
    Ok(answer(req.answer, StatusCode::CREATED, &request))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kubelets_hour_long_pod_token_is_signed_for_a_year_and_stale_after_the_hour() {
        let api = vec!["https://kubernetes.default.svc.cluster.local".to_string()];
        assert_eq!(
            signed_lifetime(3607, true, &api, &api, true),
            (EXTENDED_EXPIRATION_SECONDS, Some(3607))
        );
        // Not bound to a pod, another lifetime, another audience, or the flag off: as asked.
        assert_eq!(signed_lifetime(3607, false, &api, &api, true), (3607, None));
        assert_eq!(signed_lifetime(3600, true, &api, &api, true), (3600, None));
        let vault = vec!["vault".to_string()];
        assert_eq!(
            signed_lifetime(3607, true, &vault, &api, true),
            (3607, None)
        );
        assert_eq!(signed_lifetime(3607, true, &api, &api, false), (3607, None));
    }

    #[test]
    fn durations_under_ten_minutes_or_over_2_32_seconds_are_invalid() {
        assert!(validate_expiration("sa", 600).is_ok());
        assert!(validate_expiration("sa", 1 << 32).is_ok());
        let e = validate_expiration("sa", 599).unwrap_err();
        assert_eq!(
            e.message(),
            "TokenRequest \"sa\" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"
        );
        assert!(validate_expiration("sa", (1 << 32) + 1).is_err());
    }
}
