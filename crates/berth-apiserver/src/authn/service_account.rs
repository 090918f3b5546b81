//! ServiceAccount tokens as kube-apiserver 1.32 issues and checks them: RS256 JWTs signed with
//! the key `<data-dir>/sa.key`. Bound tokens (TokenRequest) carry upstream's `kubernetes.io`
//! private claims and an audience and expiry; legacy tokens (the token controller's Secrets)
//! carry the `kubernetes.io/serviceaccount/*` claims and no expiry. A token authenticates while
//! its signature, issuer, audience and expiry hold and the ServiceAccount (and the object it is
//! bound to, or its Secret) still exists with the uid it was issued for.
//!
//! The pure part ([`Claims::check`]) takes `now`; the store lookups are [`Verifier`]'s. The
//! signature is checked once per token and the claims cached, so a client that sends the same
//! token on every request pays for RSA once.

use crate::codec::meta_str;
use crate::path;
use crate::user::{UserInfo, SYSTEM_AUTHENTICATED};
use berth_core::clock::Clock;
use berth_store::Store;
use chrono::{DateTime, Utc};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The issuer of bound tokens (upstream's `--service-account-issuer` as clusters set it).
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// The issuer of legacy Secret tokens.
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";
/// The group of every ServiceAccount, and the prefix of each namespace's.
pub const SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";
/// The user-name prefix of ServiceAccounts.
pub const USER_PREFIX: &str = "system:serviceaccount:";
/// The `extra` keys upstream sets on a ServiceAccount's identity.
pub const EXTRA_POD_NAME: &str = "authentication.kubernetes.io/pod-name";
pub const EXTRA_POD_UID: &str = "authentication.kubernetes.io/pod-uid";
pub const EXTRA_NODE_NAME: &str = "authentication.kubernetes.io/node-name";
pub const EXTRA_NODE_UID: &str = "authentication.kubernetes.io/node-uid";
pub const EXTRA_CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";
/// How many verified tokens are remembered.
const CACHE_CAPACITY: usize = 4096;
/// Clock skew tolerated on `nbf`/`iat`, as upstream's validator allows.
const LEEWAY_SECONDS: i64 = 60;

/// Why a service account signing key could not be loaded or made.
#[derive(Debug, thiserror::Error)]
#[error("service account key {path}: {message}")]
pub struct KeyError {
    pub path: String,
    pub message: String,
}

/// The signing key and its public half.
pub struct Keys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    /// The public key as a JSON Web Key, as `/openid/v1/jwks` serves it.
    jwk: Value,
    /// Upstream's key id: the unpadded base64url SHA-256 of the public key's PKIX DER. Tokens
    /// carry it in their `kid` header, so an OIDC validator picks the key from the key set.
    key_id: String,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keys(RS256)")
    }
}

impl Keys {
    /// Reads the RSA key at `path` (PKCS#8 or PKCS#1 PEM), creating a 2048-bit one readable by
    /// its owner only when there is none, so tokens stay valid across restarts.
    pub fn load_or_create(path: &Path) -> Result<Keys, KeyError> {
        use rsa::pkcs1::DecodeRsaPrivateKey;
        use rsa::pkcs8::{DecodePrivateKey, EncodePrivateKey, LineEnding};
        let err = |message: String| KeyError {
            path: path.display().to_string(),
            message,
        };
        let key = match std::fs::read_to_string(path) {
            Ok(pem) => rsa::RsaPrivateKey::from_pkcs8_pem(&pem)
                .or_else(|_| rsa::RsaPrivateKey::from_pkcs1_pem(&pem))
                .map_err(|e| err(format!("not an RSA private key in PEM: {e}")))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = Self::generate().map_err(err)?;
                let pem = key
                    .to_pkcs8_pem(LineEnding::LF)
                    .map_err(|e| err(e.to_string()))?;
                write_private(path, pem.as_bytes()).map_err(|e| err(e.to_string()))?;
                key
            }
            Err(e) => return Err(err(e.to_string())),
        };
        Self::from_rsa(&key).map_err(err)
    }

    /// A fresh key that lives in memory only (tests, and servers without a data dir).
    pub fn generate_in_memory() -> Result<Keys, String> {
        Self::from_rsa(&Self::generate()?)
    }

    fn generate() -> Result<rsa::RsaPrivateKey, String> {
        rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).map_err(|e| e.to_string())
    }

    fn from_rsa(key: &rsa::RsaPrivateKey) -> Result<Keys, String> {
        use base64::Engine;
        use rsa::pkcs1::{EncodeRsaPrivateKey, EncodeRsaPublicKey};
        use rsa::pkcs8::EncodePublicKey;
        use rsa::traits::PublicKeyParts;
        let private = key.to_pkcs1_der().map_err(|e| e.to_string())?;
        let public_key = key.to_public_key();
        let public = public_key.to_pkcs1_der().map_err(|e| e.to_string())?;
        let pkix = public_key.to_public_key_der().map_err(|e| e.to_string())?;
        let url = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let key_id = url.encode(ring::digest::digest(&ring::digest::SHA256, pkix.as_bytes()));
        let jwk = serde_json::json!({
            "use": "sig",
            "kty": "RSA",
            "kid": key_id,
            "alg": "RS256",
            "n": url.encode(public_key.n().to_bytes_be()),
            "e": url.encode(public_key.e().to_bytes_be()),
        });
        Ok(Keys {
            encoding: EncodingKey::from_rsa_der(private.as_bytes()),
            decoding: DecodingKey::from_rsa_der(public.as_bytes()),
            jwk,
            key_id,
        })
    }

    /// The public key as a JSON Web Key (`use`, `kty`, `kid`, `alg`, `n`, `e`).
    pub fn jwk(&self) -> &Value {
        &self.jwk
    }

    /// Signs `claims` into a compact JWT whose header names the key.
    pub fn sign(&self, claims: &Claims) -> Result<String, String> {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(self.key_id.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).map_err(|e| e.to_string())
    }

    /// The claims of `token` if this key signed it (nothing else is checked here).
    fn verify_signature(&self, token: &str) -> Option<Claims> {
        let mut validation = Validation::new(Algorithm::RS256);
        // Time and audience are checked against berth's clock by `Claims::check`.
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        validation.required_spec_claims.clear();
        jsonwebtoken::decode::<Claims>(token, &self.decoding, &validation)
            .ok()
            .map(|d| d.claims)
    }
}

/// Writes a new file readable by its owner only (created 0600, never loosened).
fn write_private(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(contents)?;
    file.sync_all()
}

/// A name and uid, as the `kubernetes.io` claims refer to objects.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ref {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
}

/// Upstream's `kubernetes.io` private claims of a bound token.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KubernetesClaims {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(default)]
    pub serviceaccount: Ref,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<Ref>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<Ref>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<Ref>,
    /// When a kubelet's token, extended to a year, stops being fresh: the end of the hour it
    /// asked for (upstream's `warnafter`). Used after that it still authenticates, but counts
    /// as stale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warnafter: Option<i64>,
}

/// `aud` is a string or a list of strings in a JWT.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Audience {
    One(String),
    Many(Vec<String>),
}

impl Audience {
    fn contains(&self, audience: &str) -> bool {
        match self {
            Audience::One(a) => a == audience,
            Audience::Many(v) => v.iter().any(|a| a == audience),
        }
    }

    fn to_vec(&self) -> Vec<String> {
        match self {
            Audience::One(a) => vec![a.clone()],
            Audience::Many(v) => v.clone(),
        }
    }
}

/// The audiences of `ours` that `theirs` also names, in `ours`' order (upstream
/// `authenticator.Audiences.Intersect`).
pub fn intersect(ours: &[String], theirs: &[String]) -> Vec<String> {
    ours.iter()
        .filter(|a| theirs.contains(a))
        .cloned()
        .collect()
}

/// The claims of a ServiceAccount token, bound or legacy.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    pub iss: String,
    pub sub: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aud: Option<Audience>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exp: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jti: Option<String>,
    #[serde(
        rename = "kubernetes.io",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub kubernetes: Option<KubernetesClaims>,
    #[serde(
        rename = "kubernetes.io/serviceaccount/namespace",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub legacy_namespace: Option<String>,
    #[serde(
        rename = "kubernetes.io/serviceaccount/secret.name",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub legacy_secret_name: Option<String>,
    #[serde(
        rename = "kubernetes.io/serviceaccount/service-account.name",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub legacy_service_account_name: Option<String>,
    #[serde(
        rename = "kubernetes.io/serviceaccount/service-account.uid",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub legacy_service_account_uid: Option<String>,
}

/// What a bound token is bound to, besides its ServiceAccount.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BoundObject {
    Pod { name: String, uid: String },
    Secret { name: String, uid: String },
    Node { name: String, uid: String },
}

/// What a token names: a ServiceAccount, and the object it is bound to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub bound: Option<BoundObject>,
    /// The node of a pod-bound token (upstream adds it since 1.30).
    pub node: Option<Ref>,
    /// A legacy token: its Secret's name (the token must still be that Secret's).
    pub legacy_secret: Option<String>,
    pub jti: Option<String>,
}

/// Why claims were refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    #[error("token has expired")]
    Expired,
    #[error("token is not valid yet")]
    NotYetValid,
    #[error("token audiences {0:?} is invalid for the target audiences")]
    Audience(Vec<String>),
    #[error("token is not a service account token of this issuer")]
    Issuer,
    #[error("token lacks the service account claims")]
    Incomplete,
}

/// The parameters of a bound token.
#[derive(Clone, Debug)]
pub struct BoundToken<'a> {
    pub namespace: &'a str,
    pub service_account: Ref,
    pub audiences: Vec<String>,
    pub now: DateTime<Utc>,
    pub expiration_seconds: i64,
    /// Seconds after `now` past which the token is stale (an extended kubelet token).
    pub warn_after_seconds: Option<i64>,
    pub bound: Option<BoundObject>,
    pub node: Option<Ref>,
    pub jti: String,
}

impl Claims {
    /// The claims upstream puts in a TokenRequest's token.
    pub fn bound(t: BoundToken<'_>) -> Claims {
        let now = t.now.timestamp();
        let (mut pod, mut secret, mut node) = (None, None, t.node.clone());
        match t.bound {
            Some(BoundObject::Pod { name, uid }) => pod = Some(Ref { name, uid }),
            Some(BoundObject::Secret { name, uid }) => secret = Some(Ref { name, uid }),
            Some(BoundObject::Node { name, uid }) => node = Some(Ref { name, uid }),
            None => {}
        }
        Claims {
            iss: ISSUER.into(),
            sub: format!("{USER_PREFIX}{}:{}", t.namespace, t.service_account.name),
            aud: Some(Audience::Many(t.audiences)),
            exp: Some(now + t.expiration_seconds),
            iat: Some(now),
            nbf: Some(now),
            jti: Some(t.jti),
            kubernetes: Some(KubernetesClaims {
                namespace: t.namespace.into(),
                serviceaccount: t.service_account,
                pod,
                secret,
                node,
                warnafter: t.warn_after_seconds.map(|w| now + w),
            }),
            ..Claims::default()
        }
    }

    /// The claims of a legacy token kept in Secret `secret` for ServiceAccount `sa`.
    pub fn legacy(namespace: &str, sa: &Ref, secret: &str) -> Claims {
        Claims {
            iss: LEGACY_ISSUER.into(),
            sub: format!("{USER_PREFIX}{namespace}:{}", sa.name),
            legacy_namespace: Some(namespace.into()),
            legacy_secret_name: Some(secret.into()),
            legacy_service_account_name: Some(sa.name.clone()),
            legacy_service_account_uid: Some(sa.uid.clone()),
            ..Claims::default()
        }
    }

    /// Checks issuer, time and audience (bound tokens only: legacy ones have neither) and
    /// says which ServiceAccount the token names.
    pub fn check(&self, now: DateTime<Utc>, audiences: &[String]) -> Result<Subject, Rejected> {
        if self.iss == LEGACY_ISSUER {
            return self.legacy_subject();
        }
        if self.iss != ISSUER {
            return Err(Rejected::Issuer);
        }
        let now = now.timestamp();
        match self.exp {
            Some(exp) if exp > now => {}
            _ => return Err(Rejected::Expired),
        }
        if self.nbf.is_some_and(|nbf| nbf > now + LEEWAY_SECONDS) {
            return Err(Rejected::NotYetValid);
        }
        let aud = self.aud.clone().unwrap_or(Audience::Many(Vec::new()));
        if !audiences.iter().any(|a| aud.contains(a)) {
            return Err(Rejected::Audience(match aud {
                Audience::One(a) => vec![a],
                Audience::Many(v) => v,
            }));
        }
        let k = self.kubernetes.as_ref().ok_or(Rejected::Incomplete)?;
        if k.namespace.is_empty() || k.serviceaccount.name.is_empty() {
            return Err(Rejected::Incomplete);
        }
        let bound = if let Some(p) = &k.pod {
            Some(BoundObject::Pod {
                name: p.name.clone(),
                uid: p.uid.clone(),
            })
        } else if let Some(s) = &k.secret {
            Some(BoundObject::Secret {
                name: s.name.clone(),
                uid: s.uid.clone(),
            })
        } else {
            k.node.as_ref().map(|n| BoundObject::Node {
                name: n.name.clone(),
                uid: n.uid.clone(),
            })
        };
        let node = match bound {
            Some(BoundObject::Pod { .. }) => k.node.clone(),
            _ => None,
        };
        Ok(Subject {
            namespace: k.namespace.clone(),
            name: k.serviceaccount.name.clone(),
            uid: k.serviceaccount.uid.clone(),
            bound,
            node,
            legacy_secret: None,
            jti: self.jti.clone(),
        })
    }

    fn legacy_subject(&self) -> Result<Subject, Rejected> {
        match (
            &self.legacy_namespace,
            &self.legacy_service_account_name,
            &self.legacy_service_account_uid,
            &self.legacy_secret_name,
        ) {
            (Some(ns), Some(name), Some(uid), Some(secret))
                if !ns.is_empty() && !name.is_empty() && !secret.is_empty() =>
            {
                Ok(Subject {
                    namespace: ns.clone(),
                    name: name.clone(),
                    uid: uid.clone(),
                    bound: None,
                    node: None,
                    legacy_secret: Some(secret.clone()),
                    jti: None,
                })
            }
            _ => Err(Rejected::Incomplete),
        }
    }
}

impl Subject {
    /// The user a token of this subject is (upstream's `serviceaccount.UserInfo`).
    pub fn user(&self) -> UserInfo {
        let mut extra = std::collections::BTreeMap::new();
        if let Some(BoundObject::Pod { name, uid }) = &self.bound {
            extra.insert(EXTRA_POD_NAME.to_string(), vec![name.clone()]);
            extra.insert(EXTRA_POD_UID.to_string(), vec![uid.clone()]);
        }
        if let Some(node) = &self.node {
            extra.insert(EXTRA_NODE_NAME.to_string(), vec![node.name.clone()]);
            if !node.uid.is_empty() {
                extra.insert(EXTRA_NODE_UID.to_string(), vec![node.uid.clone()]);
            }
        }
        if let Some(BoundObject::Node { name, uid }) = &self.bound {
            extra.insert(EXTRA_NODE_NAME.to_string(), vec![name.clone()]);
            extra.insert(EXTRA_NODE_UID.to_string(), vec![uid.clone()]);
        }
        if let Some(jti) = &self.jti {
            extra.insert(EXTRA_CREDENTIAL_ID.to_string(), vec![format!("JTI={jti}")]);
        }
        UserInfo {
            name: format!("{USER_PREFIX}{}:{}", self.namespace, self.name),
            uid: self.uid.clone(),
            groups: vec![
                SERVICE_ACCOUNTS_GROUP.into(),
                format!("{SERVICE_ACCOUNTS_GROUP}:{}", self.namespace),
                SYSTEM_AUTHENTICATED.into(),
            ],
            extra,
        }
    }
}

/// Whether `token` looks like a JWT at all (three base64url parts), so that other tokens are
/// turned away before any parsing.
fn looks_like_jwt(token: &str) -> bool {
    token.len() < 16 * 1024
        && token.split('.').count() == 3
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Checks ServiceAccount tokens on requests: signature (cached), claims, and that what the
/// token names still exists in the store.
pub struct Verifier {
    keys: Arc<Keys>,
    store: Store,
    clock: Clock,
    audiences: Vec<String>,
    cache: Mutex<HashMap<String, Arc<Claims>>>,
    /// Where the use of extended (kubelet) tokens is counted, fresh or stale.
    metrics: Option<Arc<crate::metrics::ApiMetrics>>,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("audiences", &self.audiences)
            .finish_non_exhaustive()
    }
}

impl Verifier {
    pub fn new(keys: Arc<Keys>, store: Store, clock: Clock, audiences: Vec<String>) -> Verifier {
        Verifier {
            keys,
            store,
            clock,
            audiences,
            cache: Mutex::new(HashMap::new()),
            metrics: None,
        }
    }

    /// The same verifier counting each use of an extended token in `metrics`
    /// (`serviceaccount_valid_tokens_total`, `serviceaccount_stale_tokens_total`).
    pub fn counting(mut self, metrics: Arc<crate::metrics::ApiMetrics>) -> Verifier {
        self.metrics = Some(metrics);
        self
    }

    /// The user of `token` and the audiences it is valid for among `requested` (the API
    /// server's when empty), as upstream's TokenReview answers: the token's audiences (the
    /// API server's for a legacy token, which names none) that were requested. None when the
    /// token is not valid for any of them.
    pub fn review(&self, token: &str, requested: &[String]) -> Option<(UserInfo, Vec<String>)> {
        let requested = if requested.is_empty() {
            &self.audiences
        } else {
            requested
        };
        let claims = self.claims(token)?;
        let subject = claims.check(self.clock.now(), requested).ok()?;
        let token_audiences = match &claims.aud {
            Some(aud) if claims.iss != LEGACY_ISSUER => aud.to_vec(),
            _ => self.audiences.clone(),
        };
        let audiences = intersect(&token_audiences, requested);
        if audiences.is_empty() || !self.still_valid(&subject, token) {
            return None;
        }
        Some((subject.user(), audiences))
    }

    /// The user of `token`, if it is a valid ServiceAccount token of this server.
    pub fn authenticate(&self, token: &str) -> Option<UserInfo> {
        let claims = self.claims(token)?;
        let subject = match claims.check(self.clock.now(), &self.audiences) {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!(reason = %e, "service account token refused");
                return None;
            }
        };
        if !self.still_valid(&subject, token) {
            return None;
        }
        self.count_extended(&claims, &subject);
        Some(subject.user())
    }

    /// Counts a use of a legacy or an extended token, and says when it is used past the hour it was
    /// asked for (upstream's `authentication.k8s.io/stale-token` audit annotation).
    fn count_extended(&self, claims: &Claims, subject: &Subject) {
        if claims.iss == LEGACY_ISSUER {
            if let Some(m) = &self.metrics {
                m.legacy_service_account_token_used();
            }
            return;
        }
        let Some(warnafter) = claims.kubernetes.as_ref().and_then(|k| k.warnafter) else {
            return;
        };
        let late = self.clock.now().timestamp() - warnafter;
        if late > 0 {
            tracing::debug!(
                "authentication.k8s.io/stale-token: subject: system:serviceaccount:{}:{}, seconds after warning threshold: {late}",
                subject.namespace,
                subject.name
            );
        }
        if let Some(m) = &self.metrics {
            m.service_account_token_used(late > 0);
        }
    }

    /// The signature-checked claims of `token`, from the cache when it was seen before.
    fn claims(&self, token: &str) -> Option<Arc<Claims>> {
        if !looks_like_jwt(token) {
            return None;
        }
        if let Some(c) = self.cache.lock().ok()?.get(token) {
            return Some(c.clone());
        }
        let claims = Arc::new(self.keys.verify_signature(token)?);
        let mut cache = self.cache.lock().ok()?;
        if cache.len() >= CACHE_CAPACITY {
            let now = self.clock.now().timestamp();
            cache.retain(|_, c| c.exp.is_none_or(|exp| exp > now));
            if cache.len() >= CACHE_CAPACITY {
                cache.clear();
            }
        }
        cache.insert(token.to_string(), claims.clone());
        Some(claims)
    }

    /// Whether the ServiceAccount (and the bound object, or the legacy Secret holding the
    /// token) still exists with the uid the token was issued for.
    fn still_valid(&self, s: &Subject, token: &str) -> bool {
        let Some(sa) = self.object("serviceaccounts", Some(&s.namespace), &s.name) else {
            return false;
        };
        if meta_str(&sa, "uid") != s.uid {
            return false;
        }
        let now = self.clock.now();
        let same = |plural: &str, ns: Option<&str>, name: &str, uid: &str| {
            self.object(plural, ns, name)
                .is_some_and(|o| meta_str(&o, "uid") == uid && !deleted_long_ago(&o, now))
        };
        let bound_ok = match &s.bound {
            None => true,
            Some(BoundObject::Pod { name, uid }) => same("pods", Some(&s.namespace), name, uid),
            Some(BoundObject::Secret { name, uid }) => {
                same("secrets", Some(&s.namespace), name, uid)
            }
            Some(BoundObject::Node { name, uid }) => same("nodes", None, name, uid),
        };
        if !bound_ok {
            return false;
        }
        match &s.legacy_secret {
            None => true,
            Some(secret) => self
                .object("secrets", Some(&s.namespace), secret)
                .is_some_and(|o| legacy_secret_holds(&o, s, token)),
        }
    }

    fn object(&self, plural: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        let rt = berth_api::registry::find("", "v1", plural)?;
        let kv = self.store.get(&path::key(rt, namespace, name)).ok()??;
        serde_json::from_slice(&kv.value).ok()
    }
}

/// Whether `o` was due to be deleted more than the leeway ago: upstream keeps a bound token
/// working through the object's graceful deletion (its `deletionTimestamp` is when the grace
/// period ends) and for the leeway after.
fn deleted_long_ago(o: &Value, now: DateTime<Utc>) -> bool {
    o["metadata"]["deletionTimestamp"]
        .as_str()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .is_some_and(|t| t.with_timezone(&Utc) < now - chrono::Duration::seconds(LEEWAY_SECONDS))
}

/// Whether the legacy Secret `o` is still the token's: its annotations name the
/// ServiceAccount and its uid, and its `data.token` is this token.
fn legacy_secret_holds(o: &Value, s: &Subject, token: &str) -> bool {
    use base64::Engine;
    let annotations = &o["metadata"]["annotations"];
    if annotations[ANNOTATION_SA_NAME].as_str() != Some(s.name.as_str()) {
        return false;
    }
    if let Some(uid) = annotations[ANNOTATION_SA_UID].as_str() {
        if uid != s.uid {
            return false;
        }
    }
    o["data"]["token"]
        .as_str()
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .is_some_and(|stored| stored == token.as_bytes())
}

/// The annotations of a legacy token Secret.
pub const ANNOTATION_SA_NAME: &str = "kubernetes.io/service-account.name";
pub const ANNOTATION_SA_UID: &str = "kubernetes.io/service-account.uid";

#[cfg(test)]
mod tests;
