//! Writes of CustomResourceDefinitions, next to the router that sends them here: the
//! generic handlers, then the served custom kinds read again and a deletion finished
//! ([`cleanup`]: deleting a CRD deletes its objects, then it).

pub mod cleanup;

use crate::apiextensions::CRD_PREFIX;
use crate::follow::StoreFollower;

/// A write of CRDs: the generic handlers, then the served kinds read again and a deletion
/// finished (see [`cleanup`]).
pub async fn handle_definition_write(
    ctx: &crate::context::Ctx,
    req: &crate::request::ApiRequest,
    method: &axum::http::Method,
) -> crate::error::ApiResult<axum::response::Response> {
    use crate::objects;
    use axum::http::Method;
    let answer = match *method {
        Method::POST => objects::create(ctx, req).await,
        Method::PUT | Method::PATCH if req.target.name.is_none() => {
            Err(crate::error::ApiError::MethodNotAllowed(
                "the server does not allow this method on the requested resource".to_string(),
            ))
        }
        Method::PUT => objects::update(ctx, req).await,
        Method::PATCH => objects::patch(ctx, req).await,
        Method::DELETE if req.target.name.is_some() => objects::delete(ctx, req).await,
        Method::DELETE => objects::delete_collection(ctx, req).await,
        _ => Err(crate::error::ApiError::MethodNotAllowed(
            "the server does not allow this method on the requested resource".to_string(),
        )),
    };
    if answer.is_ok() && !req.query.dry_run().unwrap_or(false) {
        match req.target.name.as_deref() {
            Some(name) => cleanup::after_crd_write(ctx, name).await,
            None => {
                // A create (named by its body) or a collection delete: finish every marked one.
                let names: Vec<String> = ctx
                    .store
                    .range(CRD_PREFIX, None, 0, None)
                    .map(|r| {
                        r.kvs
                            .iter()
                            .filter_map(|kv| kv.key.strip_prefix(CRD_PREFIX).map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
                ctx.custom.reload(&ctx.store);
                for name in names {
                    cleanup::after_crd_write(ctx, &name).await;
                }
            }
        }
    }
    answer
}
