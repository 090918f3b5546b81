//! The tokens of `berth controllers --use-service-account-credentials`, kept fresh as
//! kube-controller-manager's dynamic client builder keeps them
//! (`controller-manager/pkg/clientbuilder/client_builder_dynamic.go`): each controller's
//! ServiceAccount token is asked for with upstream's [`EXPIRATION_SECONDS`] (an hour) and
//! renewed when [`LEEWAY_PERCENT`] of its lifetime is left, so a controllers process that runs
//! for days keeps acting as its controllers. A renewal that fails is logged and tried again
//! with back-off ([`RETRY_INITIAL`] doubling up to [`RETRY_MAX`]) while the current token
//! still serves.
//!
//! The schedule ([`renew_at`]) is pure; [`keep_renewed`] is the loop, on the injected clock,
//! around whatever issues tokens (the TokenRequest API in the binary, a fake in tests).
//! Upstream renews lazily, on the first request after the renewal time; berth renews on time
//! in the background, so no request waits for a token.

use crate::Clock;
use chrono::{DateTime, TimeDelta, Utc};
use futures::future::BoxFuture;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// How long a controller's token is asked for (upstream's `defaultExpirationSeconds`).
pub const EXPIRATION_SECONDS: i64 = 3600;

/// The share of a token's lifetime left when it is renewed (upstream's `defaultLeewayPercent`).
pub const LEEWAY_PERCENT: i32 = 20;

/// The shortest lifetime the schedule assumes: an expiry closer than this is taken for clock
/// skew between the API server and this process (upstream's 10 minutes).
const MIN_LIFETIME: TimeDelta = TimeDelta::minutes(10);

/// The first wait after a failed renewal (upstream's token source backs off from 500 ms).
pub const RETRY_INITIAL: Duration = Duration::from_millis(500);

/// The longest wait between attempts of a renewal that keeps failing.
pub const RETRY_MAX: Duration = Duration::from_secs(60);

/// A token as issued: the bearer token and when it expires (`status.expirationTimestamp`;
/// `None` when the API server did not say).
#[derive(Clone)]
pub struct Issued {
    pub token: String,
    pub expires: Option<DateTime<Utc>>,
}

/// Issues a new token for one ServiceAccount; `Err` says why it could not.
pub type Issue = Arc<dyn Fn() -> BoxFuture<'static, Result<Issued, String>> + Send + Sync>;

/// When to renew a token issued at `now` that expires at `expires`: with [`LEEWAY_PERCENT`]
/// of its lifetime left, the lifetime taken as at least [`MIN_LIFETIME`] (and as
/// [`EXPIRATION_SECONDS`] when the expiry is unknown).
pub fn renew_at(now: DateTime<Utc>, expires: Option<DateTime<Utc>>) -> DateTime<Utc> {
    let lifetime = expires
        .map(|e| e - now)
        .unwrap_or(TimeDelta::seconds(EXPIRATION_SECONDS))
        .max(MIN_LIFETIME);
    let leeway = lifetime * LEEWAY_PERCENT / 100;
    now + (lifetime - leeway)
}

/// The token a client sends, replaced in place when it is renewed. Cheap to clone; clones
/// share the token. (No `Debug`: a token is not for logs.)
#[derive(Clone, Default)]
pub struct SharedToken(Arc<RwLock<String>>);

impl SharedToken {
    /// A shared token holding `token`.
    pub fn new(token: String) -> SharedToken {
        SharedToken(Arc::new(RwLock::new(token)))
    }

    /// The current token.
    pub fn get(&self) -> String {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn set(&self, token: String) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = token;
    }
}

/// Renews `token` (of ServiceAccount `account`, first due at `due`) through `issue` for as
/// long as the task runs: each new token is due again per [`renew_at`]; a failed renewal is
/// logged and retried with back-off.
pub async fn keep_renewed(
    clock: Clock,
    account: String,
    token: SharedToken,
    mut due: DateTime<Utc>,
    issue: Issue,
) {
    let mut retry = RETRY_INITIAL;
    loop {
        tokio::time::sleep_until(clock.instant_at(due)).await;
        match issue().await {
            Ok(issued) => {
                token.set(issued.token);
                due = renew_at(clock.now(), issued.expires);
                retry = RETRY_INITIAL;
                tracing::debug!(account = %account, next = %due, "renewed a controller's ServiceAccount token");
            }
            Err(error) => {
                tracing::warn!(account = %account, error = %error, retry_in = ?retry,
                    "renewing a controller's ServiceAccount token failed; the current token is kept until it expires");
                due = clock.now() + TimeDelta::from_std(retry).unwrap_or(TimeDelta::seconds(60));
                retry = (retry * 2).min(RETRY_MAX);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn t0() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn a_token_is_renewed_at_four_fifths_of_its_lifetime() {
        let hour = t0() + TimeDelta::hours(1);
        assert_eq!(renew_at(t0(), Some(hour)), t0() + TimeDelta::minutes(48));
        // Unknown expiry: upstream's hour.
        assert_eq!(renew_at(t0(), None), t0() + TimeDelta::minutes(48));
        // An expiry already past or close is taken for skew: ten minutes, renewed at eight.
        let past = t0() - TimeDelta::minutes(5);
        assert_eq!(renew_at(t0(), Some(past)), t0() + TimeDelta::minutes(8));
    }

    /// An issuer whose first `failures` calls fail; the n-th success issues `t<n>` for an hour.
    fn issuer(clock: &Clock, failures: usize) -> (Issue, Arc<AtomicUsize>) {
        let calls = Arc::new(AtomicUsize::new(0));
        let (counted, clock) = (calls.clone(), clock.clone());
        let issue: Issue = Arc::new(move || -> BoxFuture<'static, Result<Issued, String>> {
            let n = counted.fetch_add(1, Ordering::SeqCst);
            let expires = clock.now() + TimeDelta::seconds(EXPIRATION_SECONDS);
            Box::pin(async move {
                if n < failures {
                    return Err(format!("connection refused ({n})"));
                }
                Ok(Issued {
                    token: format!("t{}", n + 1 - failures),
                    expires: Some(expires),
                })
            })
        });
        (issue, calls)
    }

    #[tokio::test(start_paused = true)]
    async fn a_long_running_process_keeps_a_fresh_token() {
        let clock = Clock::starting_at(t0());
        let token = SharedToken::new("t0".into());
        let (issue, calls) = issuer(&clock, 0);
        let due = renew_at(clock.now(), Some(clock.now() + TimeDelta::hours(1)));
        tokio::spawn(keep_renewed(
            clock.clone(),
            "deployment-controller".into(),
            token.clone(),
            due,
            issue,
        ));
        tokio::time::sleep(Duration::from_secs(48 * 60 - 1)).await;
        assert_eq!(token.get(), "t0");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(token.get(), "t1");
        // Almost a day later (48 min + 1 s + 23 h 59 min): renewed every 48 minutes, the
        // 30th renewal due at 30 x 48 min = 24 h, the 31st not yet.
        tokio::time::sleep(Duration::from_secs(24 * 3600 - 60)).await;
        assert_eq!(calls.load(Ordering::SeqCst), 30);
        assert_eq!(token.get(), "t30");
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_renewal_is_retried_with_back_off() {
        let clock = Clock::starting_at(t0());
        let token = SharedToken::new("t0".into());
        let (issue, calls) = issuer(&clock, 3);
        tokio::spawn(keep_renewed(
            clock.clone(),
            "job-controller".into(),
            token.clone(),
            clock.now(),
            issue,
        ));
        // Tried at once, then after 0.5 s, 1 s and 2 s: the fourth attempt succeeds.
        tokio::time::sleep(Duration::from_millis(3400)).await;
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert_eq!(token.get(), "t0");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(calls.load(Ordering::SeqCst), 4);
        assert_eq!(token.get(), "t1");
    }
}
