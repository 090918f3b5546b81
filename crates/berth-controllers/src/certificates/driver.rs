//! The signing loop: on every change to CertificateSigningRequests, each request the engine
//! decides on gets its certificate or its `Failed` condition through `status`. A request that
//! cannot be read or signed, or whose status write failed, is tried again with back-off of its
//! own ([`Backoff`]: upstream's certificate work queue's 200 ms doubling to 1000 s), and the
//! failure is logged as upstream logs it (`Sync <name> failed with : <error>`).

use super::{decide, Decision, Signer};
use crate::wait::wait;
use crate::workqueue::Queue;
use crate::Clock;
use base64::Engine;
use berth_informers::Informer;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::{Api, PostParams};
use serde_json::json;
use std::collections::HashMap;
use std::time::Duration;
use tokio::time::Instant;

/// The first wait before a failed request is tried again (upstream's work queue: 200 ms).
const RETRY_INITIAL: Duration = Duration::from_millis(200);

/// The longest wait between tries of a request that keeps failing (upstream's 1000 s).
const RETRY_MAX: Duration = Duration::from_secs(1000);

/// Each failing request's tries: how many failed in a row, when it is due again, and the
/// resourceVersion that failed (a request changed since is tried at once, as upstream's queue
/// takes a changed object at once).
#[derive(Default)]
struct Backoff(HashMap<String, (u32, Instant, String)>);

impl Backoff {
    /// Whether the request `uid` at `version` may be tried at `now`.
    fn due(&self, uid: &str, version: &str, now: Instant) -> bool {
        self.0
            .get(uid)
            .is_none_or(|(_, at, failed)| *at <= now || failed != version)
    }

    /// Records a failure of `uid` at `version` at `now`: due again after 200 ms, doubling per
    /// failure in a row, at most 1000 s.
    fn failed(&mut self, uid: &str, version: &str, now: Instant) {
        let failures = self.0.get(uid).map_or(0, |(n, _, _)| *n);
        let wait = RETRY_INITIAL
            .saturating_mul(2u32.saturating_pow(failures))
            .min(RETRY_MAX);
        self.0.insert(
            uid.to_string(),
            (failures.saturating_add(1), now + wait, version.to_string()),
        );
    }

    fn succeeded(&mut self, uid: &str) {
        self.0.remove(uid);
    }

    /// When the next failed request is due.
    fn next(&self) -> Option<Instant> {
        self.0.values().map(|(_, at, _)| *at).min()
    }
}

pub(crate) async fn run(
    client: kube::Client,
    informers: crate::informers::Informers,
    clock: Clock,
    signer: Signer,
    queue: Queue,
) {
    let mut csrs: Informer<CertificateSigningRequest> = informers.shared();
    if !csrs.synced().await {
        return;
    }
    let api: Api<CertificateSigningRequest> = Api::all(client);
    // The resourceVersion each request was last handled at: handled again only when it moves.
    let mut handled: HashMap<String, String> = HashMap::new();
    let mut backoff = Backoff::default();
    loop {
        let all = csrs.store.state();
        let live = |uid: &String| all.iter().any(|c| c.metadata.uid.as_deref() == Some(uid));
        handled.retain(|uid, _| live(uid));
        backoff.0.retain(|uid, _| live(uid));
        // Each request due (changed since it was last handled, and not waiting out a back-off)
        // is one key (upstream's `certificate` queue is fed by the requests' add and update
        // events).
        let due = |c: &CertificateSigningRequest| {
            let uid = c.metadata.uid.as_deref().unwrap_or_default();
            let version = c.metadata.resource_version.as_deref().unwrap_or_default();
            handled.get(uid).map(String::as_str) != Some(version)
                && backoff.due(uid, version, clock.instant())
        };
        let mut pass = queue.pass(all.iter().filter(|c| due(c)).count());
        for csr in &all {
            let uid = csr.metadata.uid.clone().unwrap_or_default();
            let version = csr.metadata.resource_version.clone().unwrap_or_default();
            if handled.get(&uid) == Some(&version) || !backoff.due(&uid, &version, clock.instant())
            {
                continue;
            }
            let work = pass.take();
            let Ok(value) = serde_json::to_value(csr.as_ref()) else {
                continue;
            };
            let name = csr.metadata.name.clone().unwrap_or_default();
            match sync(&api, &signer, &clock, &value, &name).await {
                Ok(()) => {
                    backoff.succeeded(&uid);
                    handled.insert(uid, version);
                }
                Err(e) => {
                    tracing::warn!(csr = %name, "Sync {name} failed with : {e}");
                    work.retry();
                    backoff.failed(&uid, &version, clock.instant());
                }
            }
        }
        drop(pass);
        wait(&mut [&mut csrs.changed], backoff.next()).await;
    }
}

/// Handles one request: signs it, marks it failed, or leaves it; `Err` to try it again later.
async fn sync(
    api: &Api<CertificateSigningRequest>,
    signer: &Signer,
    clock: &Clock,
    value: &serde_json::Value,
    name: &str,
) -> Result<(), String> {
    let (status, failing) = match decide(value) {
        Decision::Skip => return Ok(()),
        Decision::Retry(error) => return Err(error),
        Decision::Fail(message) => (failed_status(value, &message, clock), true),
        Decision::Sign {
            request_pem,
            usages,
            expiration_seconds,
        } => {
            let pem = signer
                .sign(&request_pem, &usages, expiration_seconds, clock.now())
                .map_err(|e| format!("error auto signing csr: {e}"))?;
            let mut status = value["status"].clone();
            status["certificate"] = json!(base64::engine::general_purpose::STANDARD.encode(pem));
            (status, false)
        }
    };
    // Upstream's words for a failed write of each.
    let writing = if failing {
        "error adding failure condition for csr"
    } else {
        "error updating signature for csr"
    };
    let mut updated = value.clone();
    updated["status"] = status;
    let updated = serde_json::from_value::<CertificateSigningRequest>(updated)
        .map_err(|e| format!("{writing}: {e}"))?;
    api.replace_status(name, &PostParams::default(), &updated)
        .await
        .map_err(|e| format!("{writing}: {e}"))?;
    Ok(())
}

/// The status with the `Failed` condition upstream's signer adds.
fn failed_status(csr: &serde_json::Value, message: &str, clock: &Clock) -> serde_json::Value {
    let mut status = csr["status"].clone();
    if !status.is_object() {
        status = json!({});
    }
    let now = clock.timestamp();
    let condition = json!({"type": "Failed", "status": "True", "reason": "SignerValidationFailure",
        "message": message, "lastUpdateTime": now, "lastTransitionTime": now});
    match status["conditions"].as_array_mut() {
        Some(cs) => cs.push(condition),
        None => status["conditions"] = json!([condition]),
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_failing_request_waits_longer_each_time_unless_it_changes() {
        let clock = Clock::starting_at(chrono::DateTime::UNIX_EPOCH);
        let t0 = clock.instant();
        let mut b = Backoff::default();
        assert!(b.due("a", "1", t0));
        b.failed("a", "1", t0);
        assert!(!b.due("a", "1", t0 + Duration::from_millis(199)));
        assert!(b.due("a", "1", t0 + Duration::from_millis(200)));
        assert!(b.due("a", "2", t0), "a changed request is tried at once");
        let t1 = t0 + Duration::from_millis(200);
        b.failed("a", "1", t1);
        assert_eq!(b.next(), Some(t1 + Duration::from_millis(400)));
        for _ in 0..20 {
            b.failed("a", "1", t1);
        }
        assert_eq!(b.next(), Some(t1 + RETRY_MAX));
        b.succeeded("a");
        assert_eq!(b.next(), None);
    }
}
