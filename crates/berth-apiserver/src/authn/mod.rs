//! Who is asking: upstream's union of authenticators, each in its own module. A client
//! certificate signed by berth's CA ([`x509`]) comes first, then the bearer token (the admin
//! token, then `--token-auth-file` [`token_file`], then ServiceAccount tokens
//! [`service_account`]); a request without credentials is `system:anonymous` in
//! `system:unauthenticated`, whom RBAC authorizes (upstream's anonymous authenticator, on by
//! default: a 403 names the user, and `system:public-info-viewer` opens the health and version
//! paths to it), or refused (401) with `--anonymous-auth=false`; one with a token nobody knows,
//! or credentials of a scheme berth does not take, is refused (401).

pub mod impersonation;
pub mod service_account;
pub mod token_file;
pub mod x509;

use crate::error::ApiError;
use crate::user::{UserInfo, SYSTEM_AUTHENTICATED};
use axum::http::{header, HeaderMap};
use std::collections::HashMap;

/// The anonymous user and its group.
pub const ANONYMOUS: &str = "system:anonymous";
pub const UNAUTHENTICATED: &str = "system:unauthenticated";

/// The identity of a verified client certificate, put on the request by the TLS listener.
#[derive(Clone, Debug)]
pub struct CertificateUser(pub UserInfo);

/// The authenticators of the network listener.
#[derive(Clone, Debug, Default)]
pub struct Authenticator {
    /// The admin bearer token (`<data-dir>/token`): `system:admin` in `system:masters`.
    pub admin_token: String,
    /// Whether a request without credentials is `system:anonymous` (else 401).
    pub anonymous: bool,
    /// `--token-auth-file`: token → user.
    pub tokens: HashMap<String, UserInfo>,
    /// ServiceAccount tokens (bound and legacy), when the server has a signing key.
    pub service_accounts: Option<std::sync::Arc<service_account::Verifier>>,
}

/// The anonymous identity upstream gives a request without credentials.
pub fn anonymous() -> UserInfo {
    UserInfo {
        name: ANONYMOUS.into(),
        groups: vec![UNAUTHENTICATED.into()],
        ..UserInfo::default()
    }
}

/// Every authenticated user is in `system:authenticated` (upstream's group adder).
pub fn authenticated(mut user: UserInfo) -> UserInfo {
    if !user.in_group(SYSTEM_AUTHENTICATED) {
        user.groups.push(SYSTEM_AUTHENTICATED.into());
    }
    user
}

/// The bearer token of `Authorization: Bearer <token>`, if the header is one.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

impl Authenticator {
    /// The user a request is from: its certificate's, its token's, or anonymous. A token that
    /// no authenticator knows is 401, as upstream answers it.
    pub fn authenticate(
        &self,
        headers: &HeaderMap,
        certificate: Option<&CertificateUser>,
    ) -> Result<UserInfo, ApiError> {
        if let Some(CertificateUser(user)) = certificate {
            return Ok(authenticated(user.clone()));
        }
        let Some(token) = bearer_token(headers) else {
            if headers.contains_key(header::AUTHORIZATION) || !self.anonymous {
                return Err(ApiError::Unauthorized);
            }
            return Ok(anonymous());
        };
        if self.is_admin_token(token) {
            return Ok(UserInfo::admin());
        }
        if let Some(user) = self.tokens.get(token) {
            return Ok(authenticated(user.clone()));
        }
        self.service_accounts
            .as_ref()
            .and_then(|v| v.authenticate(token))
            .ok_or(ApiError::Unauthorized)
    }

    /// A TokenReview's answer for `token`: its user and the audiences it is valid for, the
    /// intersection of `requested` (or `api_audiences` when none) with the token's own
    /// audiences; tokens that name none (the admin's, `--token-auth-file`'s) are valid for
    /// the API server's (upstream `WrapAudienceAgnosticToken`). None when not authenticated.
    pub fn review(
        &self,
        token: &str,
        requested: &[String],
        api_audiences: &[String],
    ) -> Option<(UserInfo, Vec<String>)> {
        if token.is_empty() {
            return None;
        }
        let targets = if requested.is_empty() {
            api_audiences
        } else {
            requested
        };
        let agnostic = if self.is_admin_token(token) {
            Some(UserInfo::admin())
        } else {
            self.tokens.get(token).map(|u| authenticated(u.clone()))
        };
        if let Some(user) = agnostic {
            let audiences = service_account::intersect(api_audiences, targets);
            return (!audiences.is_empty() || api_audiences.is_empty())
                .then_some((user, audiences));
        }
        self.service_accounts.as_ref()?.review(token, targets)
    }

    fn is_admin_token(&self, token: &str) -> bool {
        use subtle::ConstantTimeEq;
        !self.admin_token.is_empty() && token.as_bytes().ct_eq(self.admin_token.as_bytes()).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(auth: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(a) = auth {
            h.insert(header::AUTHORIZATION, HeaderValue::from_str(a).unwrap());
        }
        h
    }

    fn authenticator() -> Authenticator {
        let tokens = token_file::parse("t", "devtoken,dev,42,\"dev,qa\"\n").unwrap();
        Authenticator {
            admin_token: "admintoken".into(),
            anonymous: true,
            tokens,
            service_accounts: None,
        }
    }

    #[test]
    fn tokens_certificates_and_anonymous() {
        let a = authenticator();
        assert_eq!(
            a.authenticate(&headers(Some("Bearer admintoken")), None)
                .unwrap(),
            UserInfo::admin()
        );
        let dev = a
            .authenticate(&headers(Some("Bearer devtoken")), None)
            .unwrap();
        assert_eq!(dev.name, "dev");
        assert_eq!(dev.groups, vec!["dev", "qa", SYSTEM_AUTHENTICATED]);
        let anon = a.authenticate(&headers(None), None).unwrap();
        assert_eq!(anon.name, ANONYMOUS);
        assert_eq!(anon.groups, vec![UNAUTHENTICATED]);
        // Everywhere: RBAC, not authentication, decides what anonymous may do (issue 30).
        assert_eq!(
            a.authenticate(&headers(None), None).unwrap().name,
            ANONYMOUS
        );
        // Unless anonymous requests are off (`--anonymous-auth=false`).
        let closed = Authenticator {
            anonymous: false,
            ..authenticator()
        };
        assert!(matches!(
            closed.authenticate(&headers(None), None),
            Err(ApiError::Unauthorized)
        ));
        let cert = CertificateUser(UserInfo {
            name: "alice".into(),
            groups: vec!["dev".into()],
            ..UserInfo::default()
        });
        // A certificate wins over a token, as upstream's x509 authenticator runs first.
        let alice = a
            .authenticate(&headers(Some("Bearer nonsense")), Some(&cert))
            .unwrap();
        assert_eq!(alice.name, "alice");
        assert!(alice.in_group(SYSTEM_AUTHENTICATED));
    }

    #[test]
    fn an_unknown_or_malformed_token_is_unauthorized() {
        let a = authenticator();
        for bad in [
            "Bearer nope",
            "Bearer ",
            "Basic Zm9vOmJhcg==",
            "Bearer admintoken2",
        ] {
            assert!(
                matches!(
                    a.authenticate(&headers(Some(bad)), None),
                    Err(ApiError::Unauthorized)
                ),
                "{bad}"
            );
        }
    }
}
