//! The projected ServiceAccount token a kubelet gives a pod's program, kept fresh as upstream's
//! kubelet token manager keeps it: asked for with `expirationSeconds: 3607`, bound to the pod,
//! and asked for again once 80% of its lifetime has passed (or 24 hours, for a long-lived one).
//! The old token is not revoked: it stays valid until it expires (or its pod is deleted).
//!
//! [`refresh_at`] is the rule, a pure function of the token's expiry and the pod's [`jitter`]; [`mount`] asks for the
//! first token and starts the task that replaces it on the injected clock. The program reads
//! the current token from a [`TokenSource`] on each request, so a refresh is what it presents
//! next.

use berth_core::clock::Clock;
use chrono::{DateTime, Duration, Utc};
use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use kube::api::{Api, PostParams};
use kube::ResourceExt;

/// The lifetime a kubelet asks for (upstream's `WarnOnlyBoundTokenExpirationSeconds`: an hour
/// and seven seconds, so that the API server can tell a kubelet's request apart).
pub const EXPIRATION_SECONDS: i64 = 3607;
/// The longest a token is kept before it is refreshed, however long it lasts (upstream's
/// `maxTTL`).
const MAX_TTL: Duration = Duration::hours(24);
/// The share of a token's lifetime left when it is refreshed (upstream: 20%).
const REFRESH_WHEN_LEFT_PERCENT: i64 = 20;
/// The most a refresh is moved earlier, so that tokens issued together are not asked for again
/// in the same second (upstream's `maxJitter`).
const MAX_JITTER_SECONDS: u64 = 10;
/// How long after a failed refresh it is tried again (cluster time).
const RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(10);
/// How many times the first token is asked for an account that does not exist (yet).
const FIRST_ATTEMPTS: usize = 10;

/// Where a program reads its current token: replaced in place at each refresh.
pub type TokenSource = tokio::sync::watch::Receiver<String>;

/// A token as the API server issued it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issued {
    /// The JWT.
    pub token: String,
    /// `status.expirationTimestamp`.
    pub expires: DateTime<Utc>,
    /// The lifetime asked for (`spec.expirationSeconds`).
    pub expiration_seconds: i64,
}

/// When `token` must be replaced: once 80% of its lifetime has passed, or 24 hours after it
/// was issued, whichever comes first, `jitter` earlier (upstream's `requiresRefresh`).
pub fn refresh_at(token: &Issued, jitter: Duration) -> DateTime<Utc> {
    let lifetime = Duration::seconds(token.expiration_seconds);
    let issued = token.expires - lifetime;
    let left = Duration::seconds(token.expiration_seconds * REFRESH_WHEN_LEFT_PERCENT / 100);
    (token.expires - left).min(issued + MAX_TTL) - jitter
}

/// A pod's refresh jitter: whole seconds under 10, as upstream draws it, but derived from the
/// pod's uid instead of a random source, so a run is repeatable and pods still spread out.
pub fn jitter(pod_uid: &str) -> Duration {
    // FNV-1a: stable across runs and platforms, unlike std's hasher.
    let hash = pod_uid.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    Duration::seconds((hash % MAX_JITTER_SECONDS) as i64)
}

/// Asks for the pod's first token and starts refreshing it; the task ends when the returned
/// handle is aborted (the pod's program ended or the pod was deleted) or nobody reads the
/// source any more.
pub async fn mount(
    client: &kube::Client,
    pod: &Pod,
    clock: &Clock,
) -> Result<(TokenSource, tokio::task::JoinHandle<()>), String> {
    let first = request(client, pod, FIRST_ATTEMPTS).await?;
    let (send, source) = tokio::sync::watch::channel(first.token.clone());
    let (client, pod, clock) = (client.clone(), pod.clone(), clock.clone());
    let jitter = jitter(pod.metadata.uid.as_deref().unwrap_or_default());
    let refreshing = tokio::spawn(async move {
        let mut current = first;
        loop {
            let wait = (refresh_at(&current, jitter) - clock.now())
                .to_std()
                .unwrap_or_default();
            clock.sleep(wait).await;
            match request(&client, &pod, 1).await {
                Ok(next) => {
                    tracing::debug!(pod = %pod.name_any(), "service account token refreshed");
                    if send.send(next.token.clone()).is_err() {
                        return;
                    }
                    current = next;
                }
                Err(e) => {
                    tracing::warn!(pod = %pod.name_any(), error = %e, "refreshing the service account token failed");
                    clock.sleep(RETRY_AFTER).await;
                }
            }
        }
    });
    Ok((source, refreshing))
}

/// A token for the pod's ServiceAccount, bound to the pod, asked for up to `attempts` times
/// while the account or the pod's binding is not visible yet.
async fn request(client: &kube::Client, pod: &Pod, attempts: usize) -> Result<Issued, String> {
    let ns = pod.namespace().unwrap_or_else(|| "default".into());
    let account = pod
        .spec
        .as_ref()
        .and_then(|s| s.service_account_name.clone())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "default".into());
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: Vec::new(),
            expiration_seconds: Some(EXPIRATION_SECONDS),
            bound_object_ref: Some(BoundObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                name: pod.metadata.name.clone(),
                uid: pod.metadata.uid.clone(),
            }),
        },
        ..TokenRequest::default()
    };
    let api = Api::<ServiceAccount>::namespaced(client.clone(), &ns);
    let mut tried = 1;
    let answer = loop {
        match api
            .create_token_request(&account, &PostParams::default(), &request)
            .await
        {
            // A namespace's `default` account may not be made yet: its controller is on it.
            // A 403: the Node authorizer has not yet seen the pod bound to this node.
            Err(kube::Error::Api(e)) if (e.code == 404 || e.code == 403) && tried < attempts => {
                tried += 1;
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            }
            other => break other,
        }
    };
    let answer = answer
        .map_err(|e| format!("requesting a token for service account {ns}/{account}: {e}"))?;
    let expiration_seconds = answer.spec.expiration_seconds.unwrap_or(EXPIRATION_SECONDS);
    let status = answer.status.ok_or_else(|| {
        format!("the token request for service account {ns}/{account} returned no token")
    })?;
    let expires = DateTime::from_timestamp(status.expiration_timestamp.0.as_second(), 0)
        .ok_or_else(|| {
            format!("the token for service account {ns}/{account} has no valid expiry")
        })?;
    Ok(Issued {
        token: status.token,
        expires,
        expiration_seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issued(expires: &str, expiration_seconds: i64) -> Issued {
        Issued {
            token: "t".into(),
            expires: expires.parse().unwrap(),
            expiration_seconds,
        }
    }

    #[test]
    fn a_kubelets_token_is_refreshed_when_80_percent_of_its_lifetime_has_passed() {
        // Issued 10:00:00, lasting 3607 s: 20% (721 s, rounded down) before its expiry.
        let t = issued("2026-11-25T11:00:07Z", 3607);
        assert_eq!(
            refresh_at(&t, Duration::zero()),
            "2026-11-25T10:48:06Z".parse::<DateTime<Utc>>().unwrap()
        );
    }

    #[test]
    fn a_token_lasting_more_than_30_hours_is_refreshed_after_24_hours() {
        let t = issued("2026-11-27T10:00:00Z", 48 * 3600);
        assert_eq!(
            refresh_at(&t, Duration::zero()),
            "2026-11-26T10:00:00Z".parse::<DateTime<Utc>>().unwrap()
        );
        // 30 hours: 80% is exactly 24 hours.
        let t = issued("2026-11-26T16:00:00Z", 30 * 3600);
        assert_eq!(
            refresh_at(&t, Duration::zero()),
            "2026-11-26T10:00:00Z".parse::<DateTime<Utc>>().unwrap()
        );
    }

    #[test]
    fn the_jitter_moves_a_refresh_up_to_ten_seconds_earlier_the_same_for_a_pod() {
        let t = issued("2026-11-25T11:00:07Z", 3607);
        let j = jitter("0b6c3a52-5f0e-4a8e-9d7e-2f4c7d1e9a10");
        assert_eq!(j, jitter("0b6c3a52-5f0e-4a8e-9d7e-2f4c7d1e9a10"));
        assert!(j >= Duration::zero() && j < Duration::seconds(10));
        assert_eq!(refresh_at(&t, j), refresh_at(&t, Duration::zero()) - j);
        // Pods spread over the window.
        let seen: std::collections::BTreeSet<i64> = (0..200)
            .map(|i| jitter(&format!("pod-uid-{i}")).num_seconds())
            .collect();
        assert_eq!(seen.len(), 10);
    }

    #[test]
    fn an_expired_token_is_due_at_once() {
        let t = issued("2026-11-25T11:00:07Z", 3607);
        let later: DateTime<Utc> = "2026-11-25T12:00:00Z".parse().unwrap();
        assert!(refresh_at(&t, jitter("p")) < later);
    }
}
