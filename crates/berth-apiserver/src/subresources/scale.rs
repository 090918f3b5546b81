//! The `scale` subresource of deployments, replica sets, stateful sets (`apps/v1`) and
//! replication controllers (`v1`): an `autoscaling/v1` `Scale` view of the parent's
//! `spec.replicas`, `status.replicas` and selector, as upstream's `ScaleREST` serves it.
//!
//! GET builds the `Scale` from the stored parent. PUT takes a `Scale` and PATCH a patch of the
//! parent's `Scale` (what `kubectl scale` sends: `{"spec":{"replicas":N}}` as a merge patch);
//! both write only the parent's `spec.replicas`. A `metadata.resourceVersion` in the resulting
//! `Scale` is a precondition on the parent (409 when it moved), a `metadata.uid` likewise.

use crate::codec::{self, encode, meta_str};
use crate::context::{read, Ctx};
use crate::error::{from_store, ApiError, ApiResult, Cause};
use crate::patch::apply_patch;
use crate::request::ApiRequest;
use crate::response::answer;
use crate::strategy;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use berth_core::labels::Selector;
use serde_json::{json, Value};

/// How many times an unconditional write is retried when the parent changes under it.
const RETRIES: usize = 16;

/// Serves GET, PUT and PATCH on `<parent>/scale`.
pub async fn handle(ctx: &Ctx, req: &ApiRequest, method: &Method) -> ApiResult<Response> {
    let custom = ctx.custom.of(req.target.rt).and_then(|s| s.scale.clone());
    let view = |parent: &Value, rv: i64| match &custom {
        Some(paths) => custom_scale_of(parent, rv, paths),
        None => scale_of(parent, rv),
    };
    match *method {
        Method::GET => {
            let (parent, rv) = read(ctx, req)?;
            Ok(answer(req.answer, StatusCode::OK, &view(&parent, rv)))
        }
        Method::PUT => {
            let (body, _) = codec::decode_body(
                &req.body,
                &req.headers,
                req.query.field_validation()?,
                "autoscaling",
                "Scale",
                "v1",
            )?;
            write(ctx, req, custom.as_ref(), |_| Ok(body.clone())).await
        }
        Method::PATCH => {
            let (ctype, patch) = patch_document(req)?;
            write(ctx, req, custom.as_ref(), |current| {
                apply_patch(&ctype, current, &patch, "Scale")
            })
            .await
        }
        _ => Err(ApiError::MethodNotAllowed(
            "the server does not allow this method on the requested resource".into(),
        )),
    }
}

/// The patch body and its media type; server-side apply of a `Scale` is a merge of its fields.
fn patch_document(req: &ApiRequest) -> ApiResult<(String, Value)> {
    let ctype = crate::request::content_type(&req.headers);
    let doc = match ctype.as_str() {
        "application/apply-patch+yaml" => {
            let doc = crate::strict::parse_yaml(&req.body)
                .map_err(|e| ApiError::BadRequest(format!("error decoding YAML: {e}")))?;
            return Ok(("application/merge-patch+json".into(), doc));
        }
        "application/json-patch+json"
        | "application/merge-patch+json"
        | "application/strategic-merge-patch+json" => serde_json::from_slice(&req.body)
            .map_err(|e| ApiError::BadRequest(format!("error decoding patch: {e}")))?,
        other => {
            return Err(ApiError::UnsupportedMediaType(format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {other:?})"
            )))
        }
    };
    Ok((ctype, doc))
}

/// Reads the parent, turns its `Scale` into the desired one with `desired`, and stores the
/// parent with the desired replicas. Retries on a concurrent write unless the desired `Scale`
/// names the resourceVersion it was made from.
async fn write(
    ctx: &Ctx,
    req: &ApiRequest,
    custom: Option<&crate::apiextensions::ScalePaths>,
    desired: impl Fn(&Value) -> ApiResult<Value>,
) -> ApiResult<Response> {
    let rt = req.target.rt;
    let strategy = strategy::for_request(ctx, rt);
    let scale_of = |parent: &Value, rv: i64| match custom {
        Some(paths) => custom_scale_of(parent, rv, paths),
        None => scale_of(parent, rv),
    };
    for _ in 0..RETRIES {
        let (old, rv) = read(ctx, req)?;
        let scale = desired(&scale_of(&old, rv))?;
        check_identity(req, &old, &scale)?;
        let precondition =
            match meta_str(&scale, "resourceVersion") {
                "" => None,
                given => Some(given.parse::<i64>().map_err(|_| {
                    ApiError::BadRequest(format!("invalid resourceVersion: {given}"))
                })?),
            };
        if precondition.is_some_and(|p| p != rv) {
            return Err(conflict(req));
        }
        let replicas = replicas_of(req, &scale)?;
        let mut new = old.clone();
        match custom {
            Some(paths) => set_at(&mut new, &paths.spec_replicas, json!(replicas)),
            None => new["spec"]["replicas"] = json!(replicas),
        }
        if new != old {
            let generation = old["metadata"]["generation"].as_i64().unwrap_or(1);
            codec::meta_mut(&mut new).insert("generation".into(), json!(generation + 1));
        }
        crate::managed::on_update(ctx, req, &old, &mut new, "scale");
        let warnings = strategy::admit_update(ctx, req, &*strategy, rt, &old, &mut new).await?;
        if new == old || req.query.dry_run()? {
            return Ok(crate::response::with_warnings(
                answer(req.answer, StatusCode::OK, &scale_of(&new, rv)),
                &warnings,
            ));
        }
        match ctx.store.update(&req.key(), encode(&new), Some(rv)).await {
            Ok(kv) => {
                return Ok(crate::response::with_warnings(
                    answer(req.answer, StatusCode::OK, &scale_of(&new, kv.mod_revision)),
                    &warnings,
                ))
            }
            Err(berth_store::Error::Conflict { .. }) if precondition.is_none() => continue,
            Err(e) => return Err(from_store(e, &req.resource(), req.name())),
        }
    }
    Err(ApiError::Conflict {
        resource: req.resource(),
        name: req.name().to_string(),
        message: format!(
            "Operation cannot be fulfilled on {} \"{}\": too many concurrent updates",
            req.resource(),
            req.name()
        ),
    })
}

/// The name and namespace of the `Scale` must be the URL's; its uid, when given, the parent's.
fn check_identity(req: &ApiRequest, parent: &Value, scale: &Value) -> ApiResult<()> {
    let name = meta_str(scale, "name");
    if !name.is_empty() && name != req.name() {
        return Err(ApiError::BadRequest(format!(
            "the name of the object ({name}) does not match the name on the URL ({})",
            req.name()
        )));
    }
    let namespace = meta_str(scale, "namespace");
    if !namespace.is_empty() && Some(namespace) != req.target.namespace.as_deref() {
        return Err(ApiError::BadRequest(
            "the namespace of the provided object does not match the namespace sent on the request"
                .into(),
        ));
    }
    let uid = meta_str(scale, "uid");
    if !uid.is_empty() && uid != meta_str(parent, "uid") {
        return Err(ApiError::Conflict {
            resource: req.resource(),
            name: req.name().to_string(),
            message: format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                meta_str(parent, "uid")
            ),
        });
    }
    Ok(())
}

/// `spec.replicas` of a `Scale`: absent is 0 (Go's `omitempty` int32), negative is invalid.
fn replicas_of(req: &ApiRequest, scale: &Value) -> ApiResult<i64> {
    let replicas = match &scale["spec"]["replicas"] {
        Value::Null => 0,
        v => v.as_i64().filter(|r| i32::try_from(*r).is_ok()).ok_or_else(|| {
            ApiError::BadRequest(format!(
                "Scale in version \"v1\" cannot be handled as a Scale: spec.replicas must be a 32-bit integer, got {v}"
            ))
        })?,
    };
    if replicas < 0 {
        return Err(ApiError::Invalid {
            kind: "Scale".into(),
            name: req.name().to_string(),
            causes: vec![Cause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: {replicas}: must be greater than or equal to 0"),
                field: "spec.replicas".into(),
            }],
        });
    }
    Ok(replicas)
}

fn conflict(req: &ApiRequest) -> ApiError {
    from_store(
        berth_store::Error::Conflict {
            key: req.key(),
            expected: 0,
            actual: 0,
        },
        &req.resource(),
        req.name(),
    )
}

/// The `autoscaling/v1` `Scale` of a stored parent at revision `rv`.
pub fn scale_of(parent: &Value, rv: i64) -> Value {
    let meta = &parent["metadata"];
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    for field in ["name", "namespace", "uid", "creationTimestamp"] {
        if let Some(v) = meta.get(field).filter(|v| !v.is_null()) {
            metadata[field] = v.clone();
        }
    }
    // Unset replicas default to 1 (upstream defaulting); Scale's own omits a zero.
    let replicas = parent["spec"]["replicas"].as_i64().unwrap_or(1);
    let mut spec = json!({});
    if replicas != 0 {
        spec["replicas"] = json!(replicas);
    }
    let mut status = json!({"replicas": parent["status"]["replicas"].as_i64().unwrap_or(0)});
    let selector = selector_of(parent);
    if !selector.is_empty() {
        status["selector"] = json!(selector);
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    })
}

/// A custom resource's `Scale`, read at its CRD's `specReplicasPath`, `statusReplicasPath`
/// and `labelSelectorPath` (upstream's `scale.go` of `customresource`).
pub fn custom_scale_of(parent: &Value, rv: i64, paths: &crate::apiextensions::ScalePaths) -> Value {
    let meta = &parent["metadata"];
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    for field in ["name", "namespace", "uid", "creationTimestamp"] {
        if let Some(v) = meta.get(field).filter(|v| !v.is_null()) {
            metadata[field] = v.clone();
        }
    }
    let at = |path: &str| parent.pointer(&pointer(path)).cloned();
    let mut spec = json!({});
    if let Some(r) = at(&paths.spec_replicas).and_then(|v| v.as_i64()) {
        spec["replicas"] = json!(r);
    }
    let mut status =
        json!({"replicas": at(&paths.status_replicas).and_then(|v| v.as_i64()).unwrap_or(0)});
    if !paths.label_selector.is_empty() {
        if let Some(Value::String(s)) = at(&paths.label_selector) {
            status["selector"] = json!(s);
        }
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    })
}

/// A JSON pointer of a simple JSONPath (`.spec.replicas` → `/spec/replicas`).
fn pointer(path: &str) -> String {
    path.split('.')
        .filter(|s| !s.is_empty())
        .map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// Sets `value` at a simple JSONPath, making the objects on the way.
fn set_at(obj: &mut Value, path: &str, value: Value) {
    let mut node = obj;
    let segments: Vec<&str> = path.split('.').filter(|s| !s.is_empty()).collect();
    let Some((last, parents)) = segments.split_last() else {
        return;
    };
    for s in parents {
        if !node.get(*s).is_some_and(Value::is_object) {
            node[*s] = json!({});
        }
        node = &mut node[*s];
    }
    node[*last] = value;
}

/// The parent's selector in string form: a `LabelSelector` for `apps/v1` kinds, a label map for
/// replication controllers.
fn selector_of(parent: &Value) -> String {
    let selector = &parent["spec"]["selector"];
    let parsed = if parent["kind"] == "ReplicationController" {
        selector.as_object().map(Selector::from_labels)
    } else {
        Selector::from_label_selector(selector).ok()
    };
    parsed.map(|s| s.to_string()).unwrap_or_default()
}

#[cfg(test)]
mod tests;
