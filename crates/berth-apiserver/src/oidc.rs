//! OIDC discovery of the service-account token issuer, as kube-apiserver serves it
//! (`ServiceAccountIssuerDiscovery`): `/.well-known/openid-configuration` names the issuer and
//! where its keys are, `/openid/v1/jwks` is the public half of the key berth signs tokens
//! with. Readable by every service account (`system:service-account-issuer-discovery`), so
//! one workload can validate another's token.

use crate::authn::service_account::ISSUER;
use crate::context::Ctx;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// Where the key set is served.
pub const JWKS_PATH: &str = "/openid/v1/jwks";
/// Where the discovery document is served.
pub const CONFIGURATION_PATH: &str = "/.well-known/openid-configuration";

/// How long clients may cache either document (upstream's `max-age`).
const CACHE_CONTROL: &str = "public, max-age=3600";

/// The discovery document or the key set at `path`; `None` for other paths, or when berth signs
/// no service-account tokens (no key: nothing to discover).
pub fn respond(ctx: &Ctx, path: &str) -> Option<Response> {
    let keys = ctx.service_account_keys.as_ref()?;
    let (content_type, body) = match path {
        CONFIGURATION_PATH => (
            "application/json",
            json!({
                "issuer": ISSUER,
                "jwks_uri": format!("https://{}{JWKS_PATH}", ctx.address),
                "response_types_supported": ["id_token"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256"],
            }),
        ),
        JWKS_PATH => ("application/jwk-set+json", json!({ "keys": [keys.jwk()] })),
        _ => return None,
    };
    Some(
        (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, content_type),
                (header::CACHE_CONTROL, CACHE_CONTROL),
            ],
            body.to_string(),
        )
            .into_response(),
    )
}
