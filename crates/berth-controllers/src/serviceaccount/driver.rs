//! The ServiceAccount controller's loop: after any change to namespaces or ServiceAccounts,
//! create the missing `default` accounts.

use super::{missing, Namespace, DEFAULT};
use crate::workqueue::Queue;
use berth_informers::Informer;
use k8s_openapi::api::core::v1::{Namespace as NamespaceObject, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};
use kube::runtime::watcher;
use std::collections::HashSet;
use std::time::Duration;

/// How long a burst of changes may gather into one pass.
const GATHER: Duration = Duration::from_millis(20);
/// When a create failed and nothing else changes, how soon it is tried again.
const RETRY: Duration = Duration::from_secs(1);

/// Watches namespaces and ServiceAccounts through `reads` and keeps a `default` account in
/// each namespace, creating it through `client`; each namespace a pass checks is one key of
/// `queue` (upstream's `serviceaccount`, keyed by namespace).
pub async fn run(reads: kube::Client, client: kube::Client, queue: Queue) {
    let all = watcher::Config::default;
    let namespaces: Informer<NamespaceObject> = Informer::start(Api::all(reads.clone()), all());
    let accounts: Informer<ServiceAccount> = Informer::start(Api::all(reads), all());
    if !(namespaces.synced().await && accounts.synced().await) {
        return;
    }
    let mut ns_changed = namespaces.changed.clone();
    let mut sa_changed = accounts.changed.clone();
    loop {
        let failed = sync(&client, &namespaces, &accounts, &queue).await;
        let retry = async {
            match failed {
                true => tokio::time::sleep(RETRY).await,
                false => futures::future::pending().await,
            }
        };
        tokio::select! {
            r = ns_changed.changed() => if r.is_err() { return },
            r = sa_changed.changed() => if r.is_err() { return },
            _ = retry => {}
        }
        tokio::time::sleep(GATHER).await;
        ns_changed.borrow_and_update();
        sa_changed.borrow_and_update();
    }
}

/// One pass; `true` when a create failed.
async fn sync(
    client: &kube::Client,
    namespaces: &Informer<NamespaceObject>,
    accounts: &Informer<ServiceAccount>,
    queue: &Queue,
) -> bool {
    let namespaces: Vec<Namespace> = namespaces
        .store
        .state()
        .iter()
        .map(|ns| Namespace {
            name: ns.metadata.name.clone().unwrap_or_default(),
            active: ns.metadata.deletion_timestamp.is_none()
                && ns
                    .status
                    .as_ref()
                    .and_then(|s| s.phase.as_deref())
                    .unwrap_or("Active")
                    == "Active",
        })
        .collect();
    let accounts: HashSet<(String, String)> = accounts
        .store
        .state()
        .iter()
        .map(|sa| {
            (
                sa.metadata.namespace.clone().unwrap_or_default(),
                sa.metadata.name.clone().unwrap_or_default(),
            )
        })
        .collect();
    let mut failed = false;
    let to_create: HashSet<String> = missing(&namespaces, &accounts).into_iter().collect();
    let mut pass = queue.pass(namespaces.len());
    for ns in namespaces.iter().map(|n| &n.name) {
        let work = pass.take();
        if !to_create.contains(ns) {
            continue;
        }
        let api: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
        let account = ServiceAccount {
            metadata: ObjectMeta {
                name: Some(DEFAULT.into()),
                namespace: Some(ns.clone()),
                ..ObjectMeta::default()
            },
            ..ServiceAccount::default()
        };
        match api.create(&PostParams::default(), &account).await {
            Ok(_) => tracing::debug!(namespace = %ns, "created the default service account"),
            // Already there, or the namespace went away or is ending: the watch says so next.
            Err(kube::Error::Api(e)) if [403, 404, 409].contains(&e.code) => {}
            Err(e) => {
                tracing::debug!(namespace = %ns, error = %e, "creating the default service account failed");
                work.retry();
                failed = true;
            }
        }
    }
    failed
}
