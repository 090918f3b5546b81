//! Deleting objects: graceful pod termination, finalizers, terminating namespaces.

use crate::codec::{self, meta_mut};
use crate::context::Ctx;
use crate::error::{from_store, ApiError, ApiResult};
use crate::request::{ApiRequest, Query};
use crate::response::{answer, respond};
use crate::strategy::{Deletion, Strategy};
use crate::strict::FieldValidation;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

/// The parts of `DeleteOptions` (body or query) berth honours.
#[derive(Debug, Default, Clone)]
pub struct DeleteOptions {
    pub grace_period_seconds: Option<i64>,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<i64>,
    /// `dryRun=All` in the query or `"dryRun": ["All"]` in the body (kubectl sends the latter).
    pub dry_run: bool,
    /// The garbage collector's finalizer `propagationPolicy` asks for: `foregroundDeletion`
    /// for `Foreground`, `orphan` for `Orphan` (or the older `orphanDependents: true`).
    pub propagation_finalizer: Option<&'static str>,
}

impl DeleteOptions {
    pub fn from_request(req: &ApiRequest) -> ApiResult<DeleteOptions> {
        let body = options_body(req)?;
        DeleteOptions::from_value(&body, &req.query)
    }

    pub fn from_value(body: &Value, query: &Query) -> ApiResult<DeleteOptions> {
        let grace = match query.int("gracePeriodSeconds")? {
            Some(g) => Some(g),
            None => match body.get("gracePeriodSeconds") {
                None | Some(Value::Null) => None,
                // Any int64 is accepted, as upstream does; its arithmetic saturates.
                Some(g) => Some(g.as_i64().ok_or_else(|| {
                    ApiError::BadRequest(format!(
                        "error decoding DeleteOptions: gracePeriodSeconds must be an int64, got {g}"
                    ))
                })?),
            },
        };
        let dry_run = match body.get("dryRun") {
            None | Some(Value::Null) => false,
            Some(Value::Array(modes)) => {
                if let Some(bad) = modes.iter().find(|m| *m != "All") {
                    return Err(ApiError::BadRequest(format!(
                        "dryRun: Unsupported value: {bad}: supported values: \"All\""
                    )));
                }
                !modes.is_empty()
            }
            Some(other) => {
                return Err(ApiError::BadRequest(format!(
                    "error decoding DeleteOptions: dryRun must be a list, got {other}"
                )))
            }
        };
        let policy = query
            .get("propagationPolicy")
            .map(str::to_string)
            .or_else(|| body["propagationPolicy"].as_str().map(str::to_string));
        let propagation_finalizer = match policy.as_deref() {
            Some("Foreground") => Some("foregroundDeletion"),
            Some("Orphan") => Some("orphan"),
            Some("Background") => None,
            Some(other) => {
                return Err(ApiError::BadRequest(format!(
                    "propagationPolicy: Unsupported value: \"{other}\": supported values: \"Foreground\", \"Background\", \"Orphan\""
                )))
            }
            None if body["orphanDependents"].as_bool() == Some(true)
                || query.get("orphanDependents") == Some("true") =>
            {
                Some("orphan")
            }
            None => None,
        };
        Ok(DeleteOptions {
            propagation_finalizer,
            dry_run: dry_run || query.dry_run()?,
            grace_period_seconds: grace,
            precondition_uid: body["preconditions"]["uid"].as_str().map(str::to_string),
            precondition_rv: body["preconditions"]["resourceVersion"]
                .as_str()
                .and_then(|r| r.parse().ok()),
        })
    }
}

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

/// Deletes (or starts deleting) `current`, stored at revision `rv`, as its kind's strategy says.
pub async fn delete_object(
    ctx: &Ctx,
    req: &ApiRequest,
    strategy: &dyn Strategy,
    mut current: Value,
    rv: i64,
    options: &DeleteOptions,
) -> ApiResult<Response> {
    let expected = Some(options.precondition_rv.unwrap_or(rv));
    let now = ctx.clock.now();
    let deletion = strategy.deletion(&current, options.grace_period_seconds);
    let already_deleting = current["metadata"].get("deletionTimestamp").is_some();
    if let (Some(finalizer), false, true) = (
        options.propagation_finalizer,
        already_deleting,
        deletion != Deletion::Cascade,
    ) {
        // The garbage collector removes it once the dependents are deleted or orphaned.
        add_finalizer(&mut current, finalizer);
    }
    let finalizers = current["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| !f.is_empty());

    if deletion == Deletion::Cascade {
        // The namespace controller empties it, then removes its `kubernetes` finalizer
        // (`finalize`), which removes it.
        if !already_deleting {
            current["status"]["phase"] = json!("Terminating");
            mark_deleting(ctx, req, &mut current, &ctx.clock.timestamp(), 0, expected).await?;
        }
        return Ok(respond(ctx, req, StatusCode::OK, current));
    }

    if let Deletion::Graceful(grace) = deletion {
        // A bound, running pod terminates: its kubelet removes it when it has stopped.
        // Saturating: any int64 is a valid grace period (issue 30: i64::MAX panicked here).
        let deadline = berth_core::clock::timestamp(berth_core::clock::add_seconds(now, grace));
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

    let started = berth_core::clock::Stopwatch::now();
    let deleted = ctx.store.delete(&req.key(), expected).await;
    ctx.metrics
        .storage_request("delete", req.target.rt, started.elapsed());
    let kv = deleted.map_err(|e| from_store(e, &req.resource(), req.name()))?;
    codec::stamp(&mut current, kv.mod_revision, &req.target);
    if strategy.returns_deleted_object() {
        return Ok(respond(ctx, req, StatusCode::OK, current));
    }
    Ok(answer(
        req.answer,
        StatusCode::OK,
        &deleted_status(req, &current),
    ))
}

/// The `Status` upstream answers a delete with when the object is gone and its kind does not
/// return it (`genericregistry.Store` without `ReturnDeletedObject`).
fn deleted_status(req: &ApiRequest, deleted: &Value) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {
            "name": codec::meta_str(deleted, "name"),
            "group": req.target.rt.group,
            "kind": req.target.rt.plural,
            "uid": codec::meta_str(deleted, "uid"),
        },
    })
}

/// Adds `finalizer` to the object's `metadata.finalizers` unless it is there.
fn add_finalizer(current: &mut Value, finalizer: &str) {
    let meta = meta_mut(current);
    let list = meta
        .entry("finalizers")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !list.is_array() {
        *list = Value::Array(Vec::new());
    }
    if let Some(list) = list.as_array_mut() {
        if !list.iter().any(|f| f == finalizer) {
            list.push(json!(finalizer));
        }
    }
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
    // Setting the deletion timestamp is a change of intent its controllers must see: the
    // generation moves on, as upstream's `BeforeDelete` and `markAsDeleting` move it (not when
    // a later delete only shortens the grace period).
    if !meta.contains_key("deletionTimestamp") {
        if let Some(generation) = meta
            .get("generation")
            .and_then(Value::as_i64)
            .filter(|g| *g > 0)
        {
            meta.insert("generation".into(), json!(generation.saturating_add(1)));
        }
    }
    meta.insert("deletionTimestamp".into(), json!(deletion_timestamp));
    meta.insert("deletionGracePeriodSeconds".into(), json!(grace));
    let kv = ctx
        .store
        .update(
            &req.key(),
            codec::encode_for(current, req.target.rt),
            expected,
        )
        .await
        .map_err(|e| from_store(e, &req.resource(), req.name()))?;
    codec::stamp(current, kv.mod_revision, &req.target);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delete_options_dry_run_from_the_body_as_kubectl_sends_it() {
        let none = Query::default();
        let body = json!({"propagationPolicy": "Background", "dryRun": ["All"]});
        assert!(DeleteOptions::from_value(&body, &none).unwrap().dry_run);
        let query = Query::parse(Some("dryRun=All"));
        assert!(
            DeleteOptions::from_value(&Value::Null, &query)
                .unwrap()
                .dry_run
        );
        assert!(
            !DeleteOptions::from_value(&json!({}), &none)
                .unwrap()
                .dry_run
        );
        assert!(
            !DeleteOptions::from_value(&json!({"dryRun": []}), &none)
                .unwrap()
                .dry_run
        );
        assert!(DeleteOptions::from_value(&json!({"dryRun": ["Some"]}), &none).is_err());
        assert!(DeleteOptions::from_value(&json!({"dryRun": "All"}), &none).is_err());
    }

    #[test]
    fn a_grace_period_in_the_body_is_any_int64_and_nothing_else() {
        let none = Query::default();
        let grace =
            |body: Value| DeleteOptions::from_value(&body, &none).map(|o| o.grace_period_seconds);
        assert_eq!(
            grace(json!({"gracePeriodSeconds": i64::MAX})).unwrap(),
            Some(i64::MAX)
        );
        assert_eq!(grace(json!({"gracePeriodSeconds": null})).unwrap(), None);
        assert!(grace(json!({"gracePeriodSeconds": "30"})).is_err());
        assert!(grace(json!({"gracePeriodSeconds": 1.5})).is_err());
        assert!(grace(json!({"gracePeriodSeconds": u64::MAX})).is_err());
    }

    /// Upstream's `BeforeDelete`: setting the deletion timestamp moves the generation on; a
    /// later delete that only shortens the grace period does not.
    #[tokio::test]
    async fn the_first_deletion_moves_the_generation_on() {
        use axum::http::Method;
        let server = crate::testing::TestServer::new().await;
        let pods = "/api/v1/namespaces/default/pods";
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}]}});
        let (code, created) = server.json(Method::POST, pods, pod).await;
        assert_eq!(code, StatusCode::CREATED, "{created}");
        assert_eq!(created["metadata"]["generation"], 1);
        let path = format!("{pods}/p?gracePeriodSeconds=300");
        let (code, deleting) = server.json(Method::DELETE, &path, Value::Null).await;
        assert_eq!(code, StatusCode::OK, "{deleting}");
        assert_eq!(deleting["metadata"]["generation"], 2);
        let path = format!("{pods}/p?gracePeriodSeconds=100");
        let (code, shorter) = server.json(Method::DELETE, &path, Value::Null).await;
        assert_eq!(code, StatusCode::OK, "{shorter}");
        assert_eq!(shorter["metadata"]["deletionGracePeriodSeconds"], 100);
        assert_eq!(shorter["metadata"]["generation"], 2);
    }

    /// Issue 30: deleting a running pod with `gracePeriodSeconds=9223372036854775807` (in the
    /// query or the body) or a `terminationGracePeriodSeconds` that large panicked the handler
    /// and dropped the connection. Upstream accepts any int64; the deadline saturates.
    #[tokio::test]
    async fn r30_an_enormous_grace_period_saturates_the_deletion_timestamp() {
        use axum::http::Method;
        let server = crate::testing::TestServer::new().await;
        let pods = "/api/v1/namespaces/default/pods";
        let bound = |name: &str, grace: Option<i64>| {
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                   "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": grace,
                            "containers": [{"name": "c", "image": "nginx"}]}})
        };
        for name in ["query", "body", "spec"] {
            let grace = (name == "spec").then_some(i64::MAX);
            let (code, body) = server.json(Method::POST, pods, bound(name, grace)).await;
            assert_eq!(code, StatusCode::CREATED, "{body}");
        }
        let max = i64::MAX;
        let deletes = [
            (
                "query",
                format!("{pods}/query?gracePeriodSeconds={max}"),
                Value::Null,
            ),
            (
                "body",
                format!("{pods}/body"),
                json!({"gracePeriodSeconds": max}),
            ),
            ("spec", format!("{pods}/spec"), Value::Null),
        ];
        for (name, path, options) in deletes {
            let (code, pod) = server.json(Method::DELETE, &path, options).await;
            assert_eq!(code, StatusCode::OK, "{name}: {pod}");
            assert_eq!(
                pod["metadata"]["deletionTimestamp"], "9999-12-31T23:59:59Z",
                "{name}"
            );
            assert_eq!(pod["metadata"]["deletionGracePeriodSeconds"], max, "{name}");
        }
        let (code, status) = server
            .json(
                Method::DELETE,
                &format!("{pods}/query?gracePeriodSeconds=9223372036854775808"),
                Value::Null,
            )
            .await;
        assert_eq!(code, StatusCode::BAD_REQUEST, "{status}");
    }
}
