//! `GET /`: the paths the server serves, as upstream's index (`metav1.RootPaths`) lists them,
//! for a client allowed to read `/` (the non-resource URL `*`, cluster-admin).

use crate::context::Ctx;
use crate::health;
use berth_api::registry;
use serde_json::{json, Value};

/// The endpoints served besides discovery and health, as the index names them.
const FIXED: &[&str] = &[
    "/metrics",
    "/openapi/v2",
    "/openapi/v3",
    "/openapi/v3/",
    "/version",
];

/// `{"paths": [...]}`, sorted as upstream sorts them.
pub fn index(ctx: &Ctx) -> Value {
    let mut paths: Vec<String> = vec![
        "/api".into(),
        "/api/v1".into(),
        "/apis".into(),
        "/apis/".into(),
    ];
    for group in registry::groups().into_iter().filter(|g| !g.is_empty()) {
        paths.push(format!("/apis/{group}"));
        for version in registry::versions(group) {
            paths.push(format!("/apis/{group}/{version}"));
        }
    }
    for endpoint in ["healthz", "livez", "readyz"] {
        paths.push(format!("/{endpoint}"));
        for (name, _) in health::checks(ctx, endpoint) {
            paths.push(format!("/{endpoint}/{name}"));
        }
    }
    paths.extend(FIXED.iter().map(|p| p.to_string()));
    if ctx.service_account_keys.is_some() {
        paths.push(crate::oidc::CONFIGURATION_PATH.into());
        paths.push(crate::oidc::JWKS_PATH.into());
    }
    paths.sort();
    paths.dedup();
    json!({ "paths": paths })
}
