//! Deleting objects: graceful pod termination, finalizers and namespace cascade.

use crate::codec::{self, encode, meta_mut, meta_str};
use crate::error::{from_store, ApiResult};
use crate::objects::{respond, ApiRequest, DeleteOptions};
use crate::path;
use crate::server::Ctx;
use crate::strict::FieldValidation;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

/// The `DeleteOptions` body of a DELETE, or `null` without one. JSON, YAML, or Kubernetes
/// protobuf: Go clients encode it like any other body, under their own group version
/// (`{apiVersion: "v1", kind: "DeleteOptions"}`), which the protobuf decoder accepts for any.
pub fn options_body(req: &ApiRequest) -> ApiResult<Value> {
    if req.body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Null);
    }
    let (options, _) = codec::decode_body(
        &req.body,
        &req.headers,
        FieldValidation::Ignore,
        "meta.k8s.io",
        "DeleteOptions",
        "v1",
    )?;
    Ok(options)
}

/// Deletes (or starts deleting) `current`, stored at revision `rv`.
pub async fn delete_object(
    ctx: &Ctx,
    req: &ApiRequest,
    mut current: Value,
    rv: i64,
    options: &DeleteOptions,
) -> ApiResult<Response> {
    let rt = req.target.rt;
    let expected = Some(options.precondition_rv.unwrap_or(rv));
    let now = ctx.clock.now();
    let graceful = match rt.kind {
        "Pod" => pod_grace_period(&current, options),
        "Namespace" => Some(0),
        _ => None,
    };
    let finalizers = current["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| !f.is_empty());
    let already_deleting = current["metadata"].get("deletionTimestamp").is_some();

    if rt.kind == "Namespace" {
        if !already_deleting {
            current["status"]["phase"] = json!("Terminating");
            mark_deleting(ctx, req, &mut current, &ctx.clock.timestamp(), 0, expected).await?;
            tokio::spawn(empty_namespace(ctx.clone(), req.name().to_string()));
        }
        return Ok(respond(ctx, req, StatusCode::OK, current));
    }

    if let Some(grace) = graceful.filter(|g| *g > 0) {
        // A bound, running pod terminates: its kubelet removes it when it has stopped.
        let deadline = (now + chrono::Duration::seconds(grace))
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let shorter = current["metadata"]["deletionGracePeriodSeconds"]
            .as_i64()
            .is_none_or(|g| grace < g);
        if !already_deleting || shorter {
            mark_deleting(ctx, req, &mut current, &deadline, grace, expected).await?;
        }
        return Ok(respond(ctx, req, StatusCode::OK, current));
    }

    if finalizers {
        // The object goes when its last finalizer is removed (objects::write_update).
        if !already_deleting {
            mark_deleting(ctx, req, &mut current, &ctx.clock.timestamp(), 0, expected).await?;
        }
        return Ok(respond(ctx, req, StatusCode::OK, current));
    }

    let kv = ctx
        .store
        .delete(&req.key(), expected)
        .await
        .map_err(|e| from_store(e, &req.resource(), req.name()))?;
    codec::stamp(&mut current, kv.mod_revision, &req.target);
    Ok(respond(ctx, req, StatusCode::OK, current))
}

/// Stores `current` with `deletionTimestamp` and `deletionGracePeriodSeconds` set.
async fn mark_deleting(
    ctx: &Ctx,
    req: &ApiRequest,
    current: &mut Value,
    deletion_timestamp: &str,
    grace: i64,
    expected: Option<i64>,
) -> ApiResult<()> {
    let meta = meta_mut(current);
    meta.insert("deletionTimestamp".into(), json!(deletion_timestamp));
    meta.insert("deletionGracePeriodSeconds".into(), json!(grace));
    let kv = ctx
        .store
        .update(&req.key(), encode(current), expected)
        .await
        .map_err(|e| from_store(e, &req.resource(), req.name()))?;
    codec::stamp(current, kv.mod_revision, &req.target);
    Ok(())
}

/// `Some(seconds)` when a pod must terminate gracefully, `Some(0)`/`None` when it goes at once.
fn pod_grace_period(pod: &Value, options: &DeleteOptions) -> Option<i64> {
    let bound = !pod["spec"]["nodeName"].as_str().unwrap_or("").is_empty();
    let phase = pod["status"]["phase"].as_str().unwrap_or("");
    if !bound || phase == "Succeeded" || phase == "Failed" {
        return Some(0);
    }
    let grace = options
        .grace_period_seconds
        .or_else(|| pod["spec"]["terminationGracePeriodSeconds"].as_i64())
        .unwrap_or(30);
    Some(grace.max(0))
}

/// Deletes everything in a terminating namespace, then the namespace itself.
async fn empty_namespace(ctx: Ctx, namespace: String) {
    for rt in berth_api::registry::all().iter().filter(|rt| rt.namespaced) {
        let prefix = path::collection_prefix(rt, Some(&namespace));
        let Ok(r) = ctx.store.range(&prefix, None, 0, None) else {
            continue;
        };
        for kv in r.kvs {
            // Pods in a deleted namespace go at once; there is nothing left to run them for.
            let _ = ctx.store.delete(&kv.key, None).await;
        }
    }
    let ns_rt = berth_api::registry::find("", "v1", "namespaces");
    if let Some(rt) = ns_rt {
        let key = path::key(rt, None, &namespace);
        let _ = ctx.store.delete(&key, None).await;
    }
    tracing::info!(namespace = %namespace, "namespace deleted");
}

/// True when `obj` is a namespace that is being deleted.
pub fn is_terminating(ns: &Value) -> bool {
    ns["status"]["phase"] == "Terminating" || !meta_str(ns, "deletionTimestamp").is_empty()
}
