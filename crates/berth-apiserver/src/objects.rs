//! CRUD on objects: get, list, create, update, patch, delete.

use crate::codec::{self, decode, meta_mut, meta_str, stamped_json};
use crate::context::{read, Ctx};
use crate::deletion::{delete_object, DeleteOptions};
use crate::error::{from_store, ApiError, ApiResult, Cause};
use crate::patch::{apply_patch, check_patched, touched_fields};
use crate::path::{self, Target};
use crate::request::{Answer, ApiRequest};
use crate::response::{
    answer_list, include_object, json_response, respond, respond_written, with_warnings,
};
use crate::selectors::{self, Selectors};
use crate::strategy::{self, Strategy};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use berth_api::registry::ResourceType;
use berth_api::tables;
use berth_core::clock::Stopwatch;
use serde_json::{json, Value};

pub async fn get(ctx: &Ctx, req: &ApiRequest) -> ApiResult<Response> {
    match req.target.subresource.as_deref() {
        None | Some("status" | "approval") => {
            let (v, _) = read(ctx, req)?;
            Ok(respond(ctx, req, StatusCode::OK, v))
        }
        Some(_) => Err(ApiError::MethodNotAllowed(
            "the server does not allow this method on the requested resource".into(),
        )),
    }
}

/// The revision of a `continue` token that resumes at the latest revision (upstream's -1,
/// handed out with a 410 when the token's own revision was compacted).
const LATEST_REVISION: i64 = -1;

/// Where a paged list continues: the revision of its first page and the last key returned.
struct Continue {
    rv: i64,
    start: String,
}

fn encode_continue(rv: i64, last_key: &str) -> String {
    let token = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": format!("{last_key}\u{0}")});
    base64::engine::general_purpose::STANDARD.encode(token.to_string())
}

fn decode_continue(token: &str) -> ApiResult<Continue> {
    let bad = || ApiError::BadRequest(format!("continue key is not valid: {token}"));
    let raw = base64::engine::general_purpose::STANDARD
        .decode(token)
        .map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    let rv = v["rv"].as_i64().filter(|rv| *rv != 0).ok_or_else(bad)?;
    let start = v["start"]
        .as_str()
        .ok_or_else(bad)?
        .trim_end_matches('\u{0}')
        .to_string();
    Ok(Continue { rv, start })
}

/// Upstream's checks of a list's `resourceVersion` and `resourceVersionMatch` (its
/// `ValidateListOptions`, 422, and the storage's parse of the version, 400).
fn validate_list_options(query: &crate::request::Query) -> ApiResult<()> {
    let rv = query.get("resourceVersion").unwrap_or("");
    let rv_match = query.get("resourceVersionMatch").unwrap_or("");
    let continuing = query.get("continue").is_some_and(|c| !c.is_empty());
    let field = "resourceVersionMatch";
    let mut causes = Vec::new();
    let mut forbidden = |message: &str| {
        causes.push(Cause {
            reason: "FieldValueForbidden".into(),
            message: format!("Forbidden: {message}"),
            field: field.into(),
        })
    };
    if !rv_match.is_empty() {
        if rv.is_empty() {
            forbidden("resourceVersionMatch is forbidden unless resourceVersion is provided");
        }
        if continuing {
            forbidden("resourceVersionMatch is forbidden when continue is provided");
        }
        if rv_match == "Exact" && rv == "0" {
            forbidden("resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"");
        }
        if rv_match != "Exact" && rv_match != "NotOlderThan" {
            causes.push(Cause {
                reason: "FieldValueNotSupported".into(),
                message: format!(
                    "Unsupported value: {rv_match:?}: supported values: \"Exact\", \"NotOlderThan\", \"\""
                ),
                field: field.into(),
            });
        }
    }
    if !causes.is_empty() {
        return Err(ApiError::Invalid {
            kind: "ListOptions.meta.k8s.io".into(),
            name: String::new(),
            causes,
        });
    }
    if !rv.is_empty() && rv.parse::<u64>().is_err() {
        return Err(ApiError::BadRequest(format!(
            "resourceVersion: Invalid value: {rv:?}: strconv.ParseUint: parsing {rv:?}: invalid syntax"
        )));
    }
    Ok(())
}

pub async fn list(ctx: &Ctx, req: &ApiRequest) -> ApiResult<Response> {
    let rt = req.target.rt;
    validate_list_options(&req.query)?;
    let selectors = Selectors::from_query(rt, &req.query)?;
    let limit = req.query.int("limit")?.unwrap_or(0).max(0) as usize;
    let prefix = path::collection_prefix(rt, req.target.namespace.as_deref());
    let (mut start_after, mut at) = (None, None);
    // The key a `continue` token resumes after, for the token of a 410 if its revision is gone.
    let mut continued = None;
    if let Some(token) = req.query.get("continue").filter(|t| !t.is_empty()) {
        let c = decode_continue(token)?;
        // A token handed out with a 410 (revision -1) resumes at the latest revision.
        at = (c.rv > 0).then_some(c.rv);
        start_after = Some(c.start.clone());
        continued = Some(c.start);
    } else if let Some(rv) = req
        .query
        .get("resourceVersion")
        .filter(|r| !r.is_empty() && *r != "0")
    {
        if req.query.get("resourceVersionMatch") == Some("Exact") {
            at =
                Some(rv.parse().map_err(|_| {
                    ApiError::BadRequest(format!("invalid resource version: {rv}"))
                })?);
        }
    }
    let resource = req.resource();
    // A plain JSON list is written from each object's stored bytes, stamped as a watch sends
    // them; only Tables and protobuf decode every object into a tree.
    let from_bytes = req.answer == Answer::Json;
    let mut items = Vec::new();
    let mut item_bytes: Vec<Vec<u8>> = Vec::new();
    let mut revision;
    let mut next = None;
    loop {
        let page = if limit == 0 {
            0
        } else {
            (limit - items.len() - item_bytes.len()).max(64)
        };
        let started = Stopwatch::now();
        let r = ctx.store.range(&prefix, start_after.as_deref(), page, at);
        ctx.metrics.storage_request("list", rt, started.elapsed());
        let r = r.map_err(|e| match (e, &continued) {
            (berth_store::Error::Compacted { .. }, Some(start)) => ApiError::InconsistentContinue {
                continue_token: encode_continue(LATEST_REVISION, start),
            },
            (e, _) => from_store(e, &resource, ""),
        })?;
        revision = r.revision;
        at = Some(r.revision);
        let mut taken = 0;
        let mut full = false;
        for kv in &r.kvs {
            taken += 1;
            start_after = Some(kv.key.clone());
            let matched = match from_bytes.then(|| stamped_json(kv, &req.target)).flatten() {
                Some(json) => {
                    let matches = selectors.is_empty()
                        || match selectors::selectable(rt.kind, &json) {
                            Some(members) => selectors.matches(&members),
                            None => selectors.matches(&decode(kv, &req.target)?),
                        };
                    if matches {
                        item_bytes.push(json);
                    }
                    matches
                }
                None => {
                    let obj = decode(kv, &req.target)?;
                    let matches = selectors.matches(&obj);
                    if matches && from_bytes {
                        item_bytes.push(serde_json::to_vec(&obj).unwrap_or_default());
                    } else if matches {
                        items.push(obj);
                    }
                    matches
                }
            };
            if matched && limit > 0 && items.len() + item_bytes.len() >= limit {
                full = true;
                break;
            }
        }
        if full {
            // Keys remain past the last one taken: in this page, or in the store.
            if taken < r.kvs.len() || r.more {
                next = start_after.clone();
            }
            break;
        }
        if !r.more {
            break;
        }
    }
    let mut meta = json!({"resourceVersion": revision.to_string()});
    if let Some(last) = next {
        meta["continue"] = json!(encode_continue(revision, &last));
        // Counted only without selectors: the store cannot tell how many of the remaining
        // objects a selector would take (upstream leaves it out too).
        if selectors.is_empty() {
            let remaining = ctx
                .store
                .count(&prefix, Some(last.as_str()), Some(revision))
                .map_err(|e| from_store(e, &resource, ""))?;
            meta["remainingItemCount"] = json!(remaining);
        }
    }
    if req.answer == Answer::Table {
        let t = tables::table(
            rt,
            &items,
            meta,
            include_object(&req.query),
            ctx.clock.now(),
            true,
        );
        return Ok(json_response(StatusCode::OK, &t));
    }
    if from_bytes {
        return Ok(json_list(rt, &meta, &item_bytes));
    }
    let list = json!({
        "kind": rt.list_kind(),
        "apiVersion": rt.api_version(),
        "metadata": meta,
        "items": items,
    });
    Ok(answer_list(req.answer, rt.kind, &list))
}

/// A JSON list of objects already encoded: `{"kind":..,"apiVersion":..,"metadata":..,
/// "items":[..]}` written once into one buffer.
fn json_list(rt: &ResourceType, meta: &Value, items: &[Vec<u8>]) -> Response {
    let head = format!(
        "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{meta},\"items\":[",
        Value::from(rt.list_kind()),
        Value::from(rt.api_version()),
    );
    let size = head.len() + items.iter().map(|i| i.len() + 1).sum::<usize>() + 2;
    let mut body = Vec::with_capacity(size);
    body.extend_from_slice(head.as_bytes());
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(item);
    }
    body.extend_from_slice(b"]}");
    (
        StatusCode::OK,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

/// Decodes the body of a create/update for the target's kind.
pub fn body_object(req: &ApiRequest) -> ApiResult<(Value, Vec<String>)> {
    let rt = req.target.rt;
    let (obj, warnings) = codec::decode_body(
        &req.body,
        &req.headers,
        req.query.field_validation()?,
        rt.group,
        rt.kind,
        rt.version,
    )?;
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or(rt.kind);
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if kind != rt.kind
        || (!api_version.is_empty()
            && api_version != rt.api_version()
            && berth_api::registry::find_kind(api_version, kind).map(|t| t.plural)
                != Some(rt.plural))
    {
        return Err(ApiError::BadRequest(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({})",
            rt.api_version()
        )));
    }
    Ok((obj, warnings))
}

pub async fn create(ctx: &Ctx, req: &ApiRequest) -> ApiResult<Response> {
    if req.target.name.is_some() {
        return Err(ApiError::MethodNotAllowed(
            "the server does not allow this method on the requested resource".into(),
        ));
    }
    let rt = req.target.rt;
    let (mut obj, warnings) = body_object(req)?;
    let ns = req.target.namespace.clone();
    {
        let meta = meta_mut(&mut obj);
        if rt.namespaced {
            match (meta.get("namespace").and_then(Value::as_str), ns.as_deref()) {
                (Some(a), Some(b)) if !a.is_empty() && a != b => {
                    return Err(ApiError::BadRequest(
                        "the namespace of the provided object does not match the namespace sent on the request".into(),
                    ))
                }
                (_, Some(b)) => {
                    meta.insert("namespace".into(), json!(b));
                }
                (_, None) => {}
            }
        } else {
            meta.remove("namespace");
        }
        let name = meta.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            if let Some(prefix) = meta
                .get("generateName")
                .and_then(Value::as_str)
                .filter(|g| !g.is_empty())
            {
                let generated = format!("{prefix}{}", random_suffix());
                meta.insert("name".into(), json!(generated));
            }
        }
        meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
        meta.insert("creationTimestamp".into(), json!(ctx.clock.timestamp()));
        meta.insert("generation".into(), json!(1));
        for field in [
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
        ] {
            meta.remove(field);
        }
    }
    let strategy = strategy::for_request(ctx, rt);
    let warnings = custom_fields(ctx, req, &strategy, &mut obj, warnings)?;
    crate::managed::on_create(&mut obj);
    crate::rbac::escalation::check(ctx, &req.user, rt, "", &obj, None)?;
    let mut warnings = warnings;
    warnings.extend(strategy::admit_create(ctx, req, &*strategy, rt, &mut obj).await?);
    // Last, as upstream runs ResourceQuota: the object is charged to its quotas.
    ctx.admission
        .charge_create(rt, &obj, req.query.dry_run()?)
        .await?;
    // Held until the object is stored: what it allocated stays reserved until then.
    let _allocation = strategy::service::allocate(&ctx.services, &ctx.store, rt, &mut obj, None)?;
    let name = meta_str(&obj, "name").to_string();
    let key = path::key(rt, ns.as_deref(), &name);
    let mut target = req.target.clone();
    target.name = Some(name.clone());
    if req.query.dry_run()? {
        return Ok(with_warnings(
            respond(ctx, req, StatusCode::CREATED, obj),
            &warnings,
        ));
    }
    let started = Stopwatch::now();
    let bytes = stored_bytes(&obj, rt)?;
    let created = ctx.store.create(&key, bytes).await;
    ctx.metrics.storage_request("create", rt, started.elapsed());
    let kv = created.map_err(|e| from_store(e, &req.resource(), &name))?;
    Ok(with_warnings(
        respond_written(ctx, req, StatusCode::CREATED, &kv, &target, obj),
        &warnings,
    ))
}

/// Largest object the store takes, as its JSON (etcd's default `--max-request-bytes`, 1.5 MiB,
/// which kube-apiserver's objects meet in etcd): the 3 MiB body limit alone let a 2.5 MB Pod
/// be stored, and every watcher and list then carries it.
pub const MAX_OBJECT_BYTES: usize = 3 * 512 * 1024;

/// The bytes stored for `obj`, refused with 413 when they are over [`MAX_OBJECT_BYTES`].
/// (Upstream passes etcd's `etcdserver: request is too large` through as a 500; the request is
/// the client's fault, so berth answers 413 with etcd's words.)
fn stored_bytes(obj: &Value, rt: &ResourceType) -> ApiResult<bytes::Bytes> {
    let bytes = codec::encode_for(obj, rt);
    if bytes.len() > MAX_OBJECT_BYTES {
        return Err(ApiError::RequestEntityTooLarge(format!(
            "etcdserver: request is too large: the object is {} bytes, over the limit of {MAX_OBJECT_BYTES}",
            bytes.len()
        )));
    }
    Ok(bytes)
}

fn random_suffix() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    (0..5)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// A custom resource's body: refused while its CRD is being deleted (a create), and its
/// unknown fields settled as `fieldValidation` asks; other kinds' bodies pass unchanged.
fn custom_fields(
    ctx: &Ctx,
    req: &ApiRequest,
    strategy: &strategy::Chosen,
    obj: &mut Value,
    mut warnings: Vec<String>,
) -> ApiResult<Vec<String>> {
    let strategy::Chosen::Custom(custom) = strategy else {
        return Ok(warnings);
    };
    if req.target.name.is_none() {
        crate::strategy::custom_resource::check_create(&custom.0)?;
    }
    let _ = ctx;
    warnings.extend(crate::strategy::custom_resource::settle_unknown_fields(
        &custom.0,
        req.query.field_validation()?,
        obj,
    )?);
    Ok(warnings)
}

pub async fn update(ctx: &Ctx, req: &ApiRequest) -> ApiResult<Response> {
    let (mut new, warnings) = body_object(req)?;
    let warnings = custom_fields(
        ctx,
        req,
        &strategy::for_request(ctx, req.target.rt),
        &mut new,
        warnings,
    )?;
    let name = meta_str(&new, "name");
    if !name.is_empty() && name != req.name() {
        return Err(ApiError::BadRequest(format!(
            "the name of the object ({name}) does not match the name on the URL ({})",
            req.name()
        )));
    }
    let (old, old_rv) = read(ctx, req)?;
    // A uid in the body is a precondition (upstream's update takes it from the object).
    let uid = meta_str(&new, "uid");
    if !uid.is_empty() && uid != meta_str(&old, "uid") {
        let resource = req.resource();
        return Err(ApiError::Conflict {
            message: format!(
                "Operation cannot be fulfilled on {resource} \"{}\": Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                req.name(),
                meta_str(&old, "uid")
            ),
            resource,
            name: req.name().into(),
        });
    }
    // Upstream updates unconditionally when the object's resourceVersion is empty or "0".
    let expected = match meta_str(&new, "resourceVersion") {
        "" | "0" => None,
        rv => Some(
            rv.parse::<i64>()
                .map_err(|_| ApiError::BadRequest(format!("invalid resourceVersion: {rv}")))?,
        ),
    };
    if let Some(e) = expected {
        if e != old_rv {
            return Err(from_store(
                berth_store::Error::Conflict {
                    key: req.key(),
                    expected: e,
                    actual: old_rv,
                },
                &req.resource(),
                req.name(),
            ));
        }
    }
    let resp = write_update(ctx, req, &old, new, Some(old_rv), Tracking::Update).await?;
    Ok(with_warnings(resp, &warnings))
}

/// Who records the write in `managedFields`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tracking {
    /// [`write_update`], as an Update of the request's field manager.
    Update,
    /// The caller did (server-side apply).
    Done,
}

/// Merges what an update may change into `old`, validates and stores it (CAS on `expected`).
pub async fn write_update(
    ctx: &Ctx,
    req: &ApiRequest,
    old: &Value,
    mut new: Value,
    expected: Option<i64>,
    tracking: Tracking,
) -> ApiResult<Response> {
    let rt = req.target.rt;
    // `approval` (CertificateSigningRequests) is a status write too: it changes conditions.
    let status_only = matches!(
        req.target.subresource.as_deref(),
        Some("status" | "approval")
    );
    if req.target.subresource.as_deref() == Some("finalize") {
        // A namespace's finalize subresource changes its `spec.finalizers` (and nothing else).
        new = strategy::namespace::finalized(old, &new);
    }
    if status_only {
        // The status subresource changes status and metadata, as the kind's upstream status
        // strategy lets it (server-managed metadata is kept below).
        keep_all_but(old, &mut new, &["status", "metadata"]);
        crate::status_write::keep_reset_metadata(rt, old, &mut new);
    } else if rt.subresources.iter().any(|s| s.name == "status") {
        // The main resource cannot change status where a status subresource exists.
        match old.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                if let Some(o) = new.as_object_mut() {
                    o.remove("status");
                }
            }
        }
    }
    {
        let old_meta = old.get("metadata").cloned().unwrap_or_default();
        let meta = meta_mut(&mut new);
        for field in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "namespace",
            "name",
        ] {
            match old_meta.get(field) {
                Some(v) => meta.insert(field.into(), v.clone()),
                None => meta.remove(field),
            };
        }
    }
    if tracking == Tracking::Update {
        let subresource = if status_only { "status" } else { "" };
        crate::managed::on_update(ctx, req, old, &mut new, subresource);
    }
    crate::rbac::escalation::check(ctx, &req.user, rt, req.name(), &new, Some(old))?;
    let strategy = strategy::for_request(ctx, rt);
    let warnings = strategy::admit_update(ctx, req, &*strategy, rt, old, &mut new).await?;
    // The generation moves on when the spec changed, compared once defaults and admission have
    // had their say (a replace with the manifest as first written changes nothing; a client's
    // own `generation` is ignored).
    let mut generation = old["metadata"]["generation"].as_i64().unwrap_or(1);
    if !status_only && old.get("spec") != new.get("spec") {
        generation += 1;
    }
    meta_mut(&mut new).insert("generation".into(), json!(generation));
    let _allocation =
        strategy::service::allocate(&ctx.services, &ctx.store, rt, &mut new, Some(old))?;
    codec::stamp(&mut new, expected.unwrap_or(0), &req.target);
    // An update that changes nothing writes nothing: the resourceVersion stays, no event is sent
    // (upstream; `kubectl patch` then says "(no change)").
    if req.query.dry_run()? || (expected.is_some() && new == *old) {
        return Ok(with_warnings(
            respond(ctx, req, StatusCode::OK, new),
            &warnings,
        ));
    }
    // Removing the last finalizer of an object being deleted completes its deletion.
    let finalizers_done = new["metadata"].get("deletionTimestamp").is_some()
        && new["metadata"]["finalizers"]
            .as_array()
            .is_none_or(|f| f.is_empty())
        && strategy.removed_with_last_finalizer(&new);
    if finalizers_done {
        let kv = ctx
            .store
            .delete(&req.key(), expected)
            .await
            .map_err(|e| from_store(e, &req.resource(), req.name()))?;
        codec::stamp(&mut new, kv.mod_revision, &req.target);
        return Ok(with_warnings(
            respond(ctx, req, StatusCode::OK, new),
            &warnings,
        ));
    }
    let bytes = stored_bytes(&new, rt)?;
    let started = Stopwatch::now();
    let updated = ctx.store.update(&req.key(), bytes, expected).await;
    ctx.metrics.storage_request("update", rt, started.elapsed());
    let kv = updated.map_err(|e| from_store(e, &req.resource(), req.name()))?;
    Ok(with_warnings(
        respond_written(ctx, req, StatusCode::OK, &kv, &req.target, new),
        &warnings,
    ))
}

/// Makes `new` what `old` is but for its members named in `taken`. Members that did not
/// change are left in place (a status write usually changes nothing else), so the object is
/// not copied whole.
fn keep_all_but(old: &Value, new: &mut Value, taken: &[&str]) {
    let (Some(before), Some(after)) = (old.as_object(), new.as_object_mut()) else {
        // Stored objects are objects; anything else has no status to take.
        *new = old.clone();
        return;
    };
    after.retain(|key, _| taken.contains(&key.as_str()) || before.contains_key(key));
    for (key, value) in before {
        if !taken.contains(&key.as_str()) && after.get(key) != Some(value) {
            after.insert(key.clone(), value.clone());
        }
    }
}

pub async fn patch(ctx: &Ctx, req: &ApiRequest) -> ApiResult<Response> {
    let ctype = crate::request::content_type(&req.headers);
    let patch_doc: Value = match ctype.as_str() {
        "application/apply-patch+yaml" => crate::strict::parse_yaml(&req.body)
            .map_err(|e| ApiError::BadRequest(format!("error decoding YAML: {e}")))?,
        "application/json-patch+json" | "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
            serde_json::from_slice(&req.body)
                .map_err(|e| ApiError::BadRequest(format!("error decoding patch: {e}")))?
        }
        other => {
            return Err(ApiError::UnsupportedMediaType(format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {other:?})"
            )))
        }
    };
    // Custom resources have no strategic merge patch (upstream: 415).
    if let berth_api::registry::TableKind::Custom(_) = req.target.rt.table {
        if ctype == "application/strategic-merge-patch+json" {
            return Err(ApiError::UnsupportedMediaType(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml".into(),
            ));
        }
    }
    let applier = match ctype.as_str() {
        "application/apply-patch+yaml" => Some(crate::managed::apply_manager(req)?),
        _ => None,
    };
    let mut patch_doc = patch_doc;
    if applier.is_some() {
        apply_config(req, &mut patch_doc);
    }
    // Server-side apply of an object that does not exist yet creates it.
    if let (Some(manager), None) = (&applier, &req.target.subresource) {
        if let Err(ApiError::NotFound { .. }) = read(ctx, req) {
            let mut body = patch_doc.clone();
            crate::managed::on_apply_create(ctx, req, manager, &mut body);
            let create_req = ApiRequest {
                target: Target {
                    name: None,
                    ..req.target.clone()
                },
                query: req.query.clone(),
                headers: json_headers(),
                body: bytes::Bytes::from(body.to_string()),
                answer: req.answer,
                user: req.user.clone(),
            };
            return create(ctx, &create_req).await;
        }
    }
    let touched = touched_fields(&ctype, &patch_doc);
    for _ in 0..16 {
        let (old, rv) = read(ctx, req)?;
        let rt = req.target.rt;
        let mut patched = apply_patch(&ctype, &old, &patch_doc, rt.kind)?;
        if applier.is_some() {
            if let Some(schema) = ctx.custom.of(rt).and_then(|s| s.schema.clone()) {
                crate::strategy::custom_resource::merge_listed_items(
                    &schema,
                    &old,
                    &patch_doc,
                    &mut patched,
                );
            }
        }
        let unknown = check_patched(rt.group, rt.kind, &old, &patched, touched.as_deref())?;
        let warnings = crate::strict::settle_unknown(
            rt,
            req.query.field_validation()?,
            &mut patched,
            &unknown,
        )?;
        strip_server_fields(&mut patched, &old);
        let tracking = match &applier {
            Some(manager) => {
                patched = crate::managed::on_apply(ctx, req, manager, &old, &patch_doc, patched)?;
                Tracking::Done
            }
            None => Tracking::Update,
        };
        // A resourceVersion inside the patch is a precondition.
        let expected = match patched["metadata"]["resourceVersion"].as_str() {
            Some(p) if !p.is_empty() && p != "0" && p != rv.to_string() => {
                return Err(from_store(
                    berth_store::Error::Conflict {
                        key: req.key(),
                        expected: 0,
                        actual: rv,
                    },
                    &req.resource(),
                    req.name(),
                ))
            }
            _ => Some(rv),
        };
        match write_update(ctx, req, &old, patched, expected, tracking).await {
            Err(ApiError::Conflict { .. }) => continue,
            other => return other.map(|response| with_warnings(response, &warnings)),
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

/// What an applied configuration may own: not `managedFields` (upstream refuses them in a
/// configuration; berth ignores them), and not `status` where a status subresource exists
/// (upstream resets it on the main resource).
fn apply_config(req: &ApiRequest, config: &mut Value) {
    let Some(o) = config.as_object_mut() else {
        return;
    };
    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    let rt = req.target.rt;
    if req.target.subresource.is_none() && rt.subresources.iter().any(|s| s.name == "status") {
        o.remove("status");
    }
}

fn json_headers() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    h
}

/// Fields a patch may not set: identity and server-managed metadata come from the stored object.
fn strip_server_fields(patched: &mut Value, old: &Value) {
    if let Some(m) = patched.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
        if let Some(uid) = old["metadata"].get("uid") {
            m.insert("uid".into(), uid.clone());
        }
    }
}

/// How many times a DELETE without a resourceVersion precondition reads the object again when
/// a concurrent write (the scheduler binding the pod, a kubelet's status) changed it between
/// the read and the delete. Upstream retries until it wins; a bound keeps a hot object from
/// holding the handler, and each retry needs another write to lose to.
const DELETE_CONFLICT_RETRIES: usize = 16;

pub async fn delete(ctx: &Ctx, req: &ApiRequest) -> ApiResult<Response> {
    let options = DeleteOptions::from_request(req)?;
    let strategy = strategy::for_request(ctx, req.target.rt);
    let mut retries = 0;
    loop {
        let (current, rv) = read(ctx, req)?;
        if let Some(uid) = &options.precondition_uid {
            if uid != meta_str(&current, "uid") {
                return Err(ApiError::Conflict {
                    resource: req.resource(),
                    name: req.name().to_string(),
                    message: format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                        meta_str(&current, "uid")
                    ),
                });
            }
        }
        ctx.admission
            .admit_delete(&req.user, req.target.rt, &current)?;
        let warnings = strategy::admit_delete(ctx, req, &current, options.dry_run).await?;
        if options.dry_run {
            return Ok(with_warnings(
                respond(ctx, req, StatusCode::OK, current),
                &warnings,
            ));
        }
        match delete_object(ctx, req, &*strategy, current, rv, &options).await {
            // Only the caller's own precondition makes a concurrent write a conflict.
            Err(ApiError::Conflict { .. })
                if options.precondition_rv.is_none() && retries < DELETE_CONFLICT_RETRIES =>
            {
                retries += 1;
            }
            answer => return answer,
        }
    }
}

pub async fn delete_collection(ctx: &Ctx, req: &ApiRequest) -> ApiResult<Response> {
    let rt = req.target.rt;
    let selectors = Selectors::from_query(rt, &req.query)?;
    let options = DeleteOptions::from_request(req)?;
    let chosen = strategy::for_request(ctx, rt);
    let strategy: &dyn Strategy = &*chosen;
    let prefix = path::collection_prefix(rt, req.target.namespace.as_deref());
    let r = ctx
        .store
        .range(&prefix, None, 0, None)
        .map_err(|e| from_store(e, &req.resource(), ""))?;
    let mut chosen = Vec::new();
    for kv in &r.kvs {
        let obj = decode(kv, &req.target)?;
        if selectors.matches(&obj) {
            // Each deletion is admitted as a DELETE of its own would be; one refusal refuses
            // them all, before any is deleted.
            ctx.admission.admit_delete(&req.user, rt, &obj)?;
            strategy::admit_delete(ctx, req, &obj, options.dry_run).await?;
            chosen.push((obj, kv.mod_revision));
        }
    }
    let mut items = Vec::new();
    for (obj, mod_revision) in chosen {
        if options.dry_run {
            items.push(obj);
            continue;
        }
        let mut target = req.target.clone();
        target.name = Some(meta_str(&obj, "name").to_string());
        target.namespace = obj["metadata"]["namespace"].as_str().map(str::to_string);
        let one = ApiRequest {
            target,
            query: req.query.clone(),
            headers: req.headers.clone(),
            body: bytes::Bytes::new(),
            answer: Answer::Json,
            user: req.user.clone(),
        };
        if delete_object(ctx, &one, strategy, obj.clone(), mod_revision, &options)
            .await
            .is_ok()
        {
            items.push(obj);
        }
    }
    let list = json!({"kind": rt.list_kind(), "apiVersion": rt.api_version(), "metadata": {"resourceVersion": ctx.store.current_revision().to_string()}, "items": items});
    Ok(answer_list(req.answer, rt.kind, &list))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::{any, prop_assert_eq, prop_oneof, proptest, Just};
    use proptest::strategy::Strategy as _;

    fn object() -> impl proptest::strategy::Strategy<Value = Value> {
        let leaf = prop_oneof![Just(Value::Null), any::<i64>().prop_map(Value::from)];
        let keys = prop_oneof![
            Just("status".to_string()),
            Just("spec".to_string()),
            Just("metadata".to_string()),
            "[a-c]{1,2}",
        ];
        crate::testing::json_tree(leaf.boxed(), keys.boxed(), 3)
            .prop_filter("an object", Value::is_object)
    }

    proptest! {
        /// A status write keeps everything but the status as it was: what copying the old
        /// object and setting (or removing) the new status gives.
        #[test]
        fn a_status_write_changes_only_the_status(old in object(), new in object()) {
            let mut expected = old.clone();
            match new.get("status") {
                Some(s) => expected["status"] = s.clone(),
                None => drop(expected.as_object_mut().unwrap().remove("status")),
            }
            let mut kept = new;
            keep_all_but(&old, &mut kept, &["status"]);
            prop_assert_eq!(kept, expected);
        }
    }
}

#[cfg(test)]
mod list_tests {
    use crate::testing::TestServer;
    use axum::http::Method;
    use serde_json::{json, Value};

    /// A JSON list is written from the stored bytes: each item must be what a GET of it says,
    /// with selectors and pages applied as before.
    #[tokio::test]
    async fn a_json_list_carries_each_object_as_a_get_shows_it() {
        let api = TestServer::new().await;
        let base = "/api/v1/namespaces/default/configmaps";
        for i in 0..7 {
            let cm = json!({"metadata": {"name": format!("cm{i}"),
                "labels": {"parity": if i % 2 == 0 { "even" } else { "odd" }}},
                "data": {"i": i.to_string()}});
            let (code, body) = api.json(Method::POST, base, cm).await;
            assert_eq!(code, 201, "{body}");
        }
        let names = |list: &Value| -> Vec<String> {
            list["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
                .collect()
        };
        let (_, list) = api
            .json(
                Method::GET,
                &format!("{base}?labelSelector=parity%3Deven"),
                Value::Null,
            )
            .await;
        assert_eq!(list["kind"], "ConfigMapList");
        assert_eq!(list["apiVersion"], "v1");
        assert_eq!(names(&list), ["cm0", "cm2", "cm4", "cm6"]);
        for item in list["items"].as_array().unwrap() {
            let name = item["metadata"]["name"].as_str().unwrap();
            let (_, one) = api
                .json(Method::GET, &format!("{base}/{name}"), Value::Null)
                .await;
            assert_eq!(*item, one);
        }
        let (_, page) = api
            .json(
                Method::GET,
                &format!("{base}?fieldSelector=metadata.name!%3Dcm0&limit=2"),
                Value::Null,
            )
            .await;
        assert_eq!(names(&page), ["cm1", "cm2"]);
        let token: String = form_urlencoded::byte_serialize(
            page["metadata"]["continue"].as_str().unwrap().as_bytes(),
        )
        .collect();
        let (_, rest) = api
            .json(
                Method::GET,
                &format!("{base}?fieldSelector=metadata.name!%3Dcm0&limit=10&continue={token}"),
                Value::Null,
            )
            .await;
        assert_eq!(names(&rest), ["cm3", "cm4", "cm5", "cm6"]);
        assert!(rest["metadata"].get("continue").is_none());
    }

    fn url_token(list: &Value) -> String {
        form_urlencoded::byte_serialize(list["metadata"]["continue"].as_str().unwrap().as_bytes())
            .collect()
    }

    /// Upstream's chunking: `remainingItemCount` counts what the pages after this one hold
    /// (left out with selectors and on the last page); a token whose revision was compacted
    /// answers 410 with a token that lists the rest at the latest revision.
    #[tokio::test]
    async fn pages_count_what_remains_and_outlive_compaction_inconsistently() {
        let store = berth_store::Store::memory();
        let api = TestServer::with_store(store.clone()).await;
        let base = "/api/v1/namespaces/default/configmaps";
        for i in 0..5 {
            let cm = json!({"metadata": {"name": format!("cm{i}")}});
            let (code, body) = api.json(Method::POST, base, cm).await;
            assert_eq!(code, 201, "{body}");
        }
        let (_, first) = api
            .json(Method::GET, &format!("{base}?limit=2"), Value::Null)
            .await;
        assert_eq!(first["metadata"]["remainingItemCount"], 3);
        let (_, selected) = api
            .json(
                Method::GET,
                &format!("{base}?limit=2&labelSelector=!x"),
                Value::Null,
            )
            .await;
        assert!(selected["metadata"].get("remainingItemCount").is_none());
        let token = url_token(&first);
        let (_, last) = api
            .json(
                Method::GET,
                &format!("{base}?limit=3&continue={token}"),
                Value::Null,
            )
            .await;
        assert!(last["metadata"].get("continue").is_none());
        assert!(last["metadata"].get("remainingItemCount").is_none());

        let (code, _) = api
            .json(Method::POST, base, json!({"metadata": {"name": "cm5"}}))
            .await;
        assert_eq!(code, 201);
        store.compact(store.current_revision()).unwrap();
        let (code, status) = api
            .json(
                Method::GET,
                &format!("{base}?limit=2&continue={token}"),
                Value::Null,
            )
            .await;
        assert_eq!(code, 410, "{status}");
        assert_eq!(status["reason"], "Expired");
        assert!(status["message"]
            .as_str()
            .unwrap()
            .starts_with("The provided continue parameter is too old"));
        let (code, rest) = api
            .json(
                Method::GET,
                &format!("{base}?limit=2&continue={}", url_token(&status)),
                Value::Null,
            )
            .await;
        assert_eq!(code, 200, "{rest}");
        let names: Vec<&str> = rest["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["cm2", "cm3"]);
        assert_eq!(rest["metadata"]["remainingItemCount"], 2);
    }
}
