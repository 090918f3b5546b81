//! The signing loop: on every change to CertificateSigningRequests, each request the engine
//! decides on gets its certificate or its `Failed` condition through `status`.

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

/// When a status write failed, how soon the request is tried again.
const RETRY: std::time::Duration = std::time::Duration::from_secs(1);

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
    loop {
        let all = csrs.store.state();
        handled.retain(|uid, _| all.iter().any(|c| c.metadata.uid.as_deref() == Some(uid)));
        let mut failed = false;
        // Each request changed since it was last handled is one key (upstream's `certificate`
        // queue is fed by the requests' add and update events).
        let changed = |c: &CertificateSigningRequest| {
            let uid = c.metadata.uid.as_deref().unwrap_or_default();
            let version = c.metadata.resource_version.as_deref().unwrap_or_default();
            handled.get(uid).map(String::as_str) != Some(version)
        };
        let mut pass = queue.pass(all.iter().filter(|c| changed(c)).count());
        for csr in &all {
            let uid = csr.metadata.uid.clone().unwrap_or_default();
            let version = csr.metadata.resource_version.clone().unwrap_or_default();
            if handled.get(&uid) == Some(&version) {
                continue;
            }
            let work = pass.take();
            let Ok(value) = serde_json::to_value(csr.as_ref()) else {
                continue;
            };
            let now = clock.now();
            let status = match decide(&value) {
                Decision::Skip => None,
                Decision::Fail(message) => Some(failed_status(&value, &message, &clock)),
                Decision::Sign {
                    request_pem,
                    usages,
                    expiration_seconds,
                } => match signer.sign(&request_pem, &usages, expiration_seconds, now) {
                    Ok(pem) => {
                        let mut status = value["status"].clone();
                        status["certificate"] =
                            json!(base64::engine::general_purpose::STANDARD.encode(pem));
                        Some(status)
                    }
                    Err(message) => Some(failed_status(&value, &message, &clock)),
                },
            };
            if let Some(status) = status {
                let mut updated = value.clone();
                updated["status"] = status;
                let name = csr.metadata.name.clone().unwrap_or_default();
                let written = match serde_json::from_value::<CertificateSigningRequest>(updated) {
                    Ok(u) => api.replace_status(&name, &PostParams::default(), &u).await,
                    Err(_) => continue,
                };
                if let Err(e) = written {
                    tracing::debug!(csr = %name, error = %e, "writing a certificate signing request's status failed");
                    work.retry();
                    failed = true;
                    continue;
                }
            }
            handled.insert(uid, version);
        }
        drop(pass);
        let until = failed.then(|| clock.instant_after(RETRY));
        wait(&mut [&mut csrs.changed], until).await;
    }
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
