//! The tokens controller's loop: after any change to Secrets or ServiceAccounts, fill the token
//! Secrets that need it and delete those whose account is gone.

use super::{decide, Decision, Signer, TokenSecret, ANNOTATION_NAME, ANNOTATION_UID, SECRET_TYPE};
use crate::workqueue::Queue;
use berth_informers::Informer;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use kube::api::{Api, DeleteParams};
use kube::runtime::watcher;
use std::collections::HashMap;
use std::time::Duration;

const GATHER: Duration = Duration::from_millis(20);
const RETRY: Duration = Duration::from_secs(1);

/// The controller's work queues, as upstream names them: ServiceAccounts are the keys of
/// `serviceaccount_tokens_service`, token Secrets those of `serviceaccount_tokens_secret`.
#[derive(Clone)]
pub struct Queues {
    pub accounts: Queue,
    pub secrets: Queue,
}

/// Watches Secrets and ServiceAccounts; `ca` is the cluster CA (PEM) each token Secret carries.
pub async fn run(client: kube::Client, signer: Signer, ca: String, queues: Queues) {
    let all = watcher::Config::default;
    let secrets: Informer<Secret> = Informer::start(Api::all(client.clone()), all());
    let accounts: Informer<ServiceAccount> = Informer::start(Api::all(client.clone()), all());
    if !(secrets.synced().await && accounts.synced().await) {
        return;
    }
    let mut secret_changed = secrets.changed.clone();
    let mut sa_changed = accounts.changed.clone();
    loop {
        let failed = sync(&client, &secrets, &accounts, &signer, &ca, &queues).await;
        let retry = async {
            match failed {
                true => tokio::time::sleep(RETRY).await,
                false => futures::future::pending().await,
            }
        };
        tokio::select! {
            r = secret_changed.changed() => if r.is_err() { return },
            r = sa_changed.changed() => if r.is_err() { return },
            _ = retry => {}
        }
        tokio::time::sleep(GATHER).await;
        secret_changed.borrow_and_update();
        sa_changed.borrow_and_update();
    }
}

fn token_secret(s: &Secret) -> Option<TokenSecret> {
    if s.type_.as_deref() != Some(SECRET_TYPE) || s.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let annotations = s.metadata.annotations.as_ref()?;
    let data = s.data.as_ref();
    let has = |k: &str| data.is_some_and(|d| d.get(k).is_some_and(|v| !v.0.is_empty()));
    Some(TokenSecret {
        namespace: s.metadata.namespace.clone()?,
        name: s.metadata.name.clone()?,
        account: annotations.get(ANNOTATION_NAME)?.clone(),
        account_uid: annotations.get(ANNOTATION_UID).cloned(),
        filled: has("token") && has("ca.crt") && has("namespace"),
    })
}

/// One pass; `true` when a write failed.
async fn sync(
    client: &kube::Client,
    secrets: &Informer<Secret>,
    accounts: &Informer<ServiceAccount>,
    signer: &Signer,
    ca: &str,
    queues: &Queues,
) -> bool {
    use base64::Engine;
    let secrets: Vec<TokenSecret> = secrets
        .store
        .state()
        .iter()
        .filter_map(|s| token_secret(s))
        .collect();
    let accounts: HashMap<(String, String), String> = accounts
        .store
        .state()
        .iter()
        .filter_map(|sa| {
            let m = &sa.metadata;
            Some(((m.namespace.clone()?, m.name.clone()?), m.uid.clone()?))
        })
        .collect();
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    // An account's sync is the check of its Secrets, which `decide` makes without I/O.
    queues.accounts.pass(accounts.len()).skip(accounts.len());
    let mut secret_pass = queues.secrets.pass(secrets.len());
    let decisions = decide(&secrets, &accounts);
    // The Secrets that need nothing are synced at once; each of the others is one write.
    secret_pass.skip(secrets.len().saturating_sub(decisions.len()));
    let mut failed = false;
    for (s, decision) in decisions {
        let work = secret_pass.take();
        let api: Api<Secret> = Api::namespaced(client.clone(), &s.namespace);
        let result = match decision {
            Decision::Delete => api
                .delete(&s.name, &DeleteParams::default())
                .await
                .map(|_| ()),
            Decision::Fill { account_uid } => {
                match signer(&s.namespace, &s.account, &account_uid, &s.name) {
                    Err(e) => {
                        tracing::warn!(secret = %s.name, error = %e, "signing a legacy token failed");
                        work.retry();
                        failed = true;
                        continue;
                    }
                    Ok(token) => {
                        let patch = serde_json::json!({
                            "metadata": {"annotations": {ANNOTATION_UID: account_uid}},
                            "data": {"token": b64(&token), "ca.crt": b64(ca), "namespace": b64(&s.namespace)},
                        });
                        // `update`, as upstream's tokens controller and its role.
                        crate::update::update(&api, &s.name, &patch).await
                    }
                }
            }
        };
        match result {
            Ok(()) => {}
            Err(kube::Error::Api(e)) if [404, 409].contains(&e.code) => {}
            Err(e) => {
                tracing::debug!(secret = %s.name, error = %e, "updating a token secret failed");
                work.retry();
                failed = true;
            }
        }
    }
    failed
}
