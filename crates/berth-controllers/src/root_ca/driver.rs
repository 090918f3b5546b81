//! The publisher's loop: after any change to namespaces or to a `kube-root-ca.crt`
//! ConfigMap, create or restore the missing and changed ones.

use super::{decide, Published, Write, DESCRIPTION, DESCRIPTION_KEY, KEY, NAME};
use crate::workqueue::Queue;
use berth_informers::Informer;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};
use kube::runtime::watcher;
use std::collections::HashMap;
use std::time::Duration;

/// How long a burst of changes may gather into one pass.
const GATHER: Duration = Duration::from_millis(20);
/// The first wait after a failed write; it doubles with each failed pass in a row.
const FIRST_RETRY: Duration = Duration::from_millis(500);
/// The longest wait between retries.
const MAX_RETRY: Duration = Duration::from_secs(60);

/// Publishes `ca` (PEM) as `kube-root-ca.crt` in every namespace, reading through `reads`
/// and writing through `client`; each namespace a pass checks is one key of `queue`
/// (upstream's `root_ca_cert_publisher`).
pub async fn run(reads: kube::Client, client: kube::Client, ca: String, queue: Queue) {
    let namespaces: Informer<Namespace> =
        Informer::start(Api::all(reads.clone()), watcher::Config::default());
    let maps: Informer<ConfigMap> = Informer::start(
        Api::all(reads),
        watcher::Config::default().fields(&format!("metadata.name={NAME}")),
    );
    if !(namespaces.synced().await && maps.synced().await) {
        return;
    }
    let mut ns_changed = namespaces.changed.clone();
    let mut maps_changed = maps.changed.clone();
    let mut failures = 0u32;
    loop {
        let failed = sync(&client, &namespaces, &maps, &ca, &queue).await;
        failures = if failed { failures + 1 } else { 0 };
        let retry = async {
            if failures == 0 {
                futures::future::pending::<()>().await;
            }
            let wait = FIRST_RETRY
                .saturating_mul(1 << failures.min(16))
                .min(MAX_RETRY);
            tokio::time::sleep(wait).await;
        };
        tokio::select! {
            r = ns_changed.changed() => if r.is_err() { return },
            r = maps_changed.changed() => if r.is_err() { return },
            _ = retry => {}
        }
        tokio::time::sleep(GATHER).await;
        ns_changed.borrow_and_update();
        maps_changed.borrow_and_update();
    }
}

/// One pass; `true` when a write failed.
async fn sync(
    client: &kube::Client,
    namespaces: &Informer<Namespace>,
    maps: &Informer<ConfigMap>,
    ca: &str,
    queue: &Queue,
) -> bool {
    let found: HashMap<String, std::sync::Arc<ConfigMap>> = maps
        .store
        .state()
        .into_iter()
        .filter(|m| m.metadata.name.as_deref() == Some(NAME))
        .filter_map(|m| Some((m.metadata.namespace.clone()?, m)))
        .collect();
    let mut failed = false;
    let namespaces = namespaces.store.state();
    let mut pass = queue.pass(namespaces.len());
    for ns in namespaces.iter() {
        let work = pass.take();
        let Some(name) = ns.metadata.name.clone() else {
            continue;
        };
        let active = ns.metadata.deletion_timestamp.is_none()
            && ns.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Terminating");
        let current = found.get(&name);
        let published = current.map(|m| Published {
            data: m.data.clone().unwrap_or_default().into_iter().collect(),
            description: m
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(DESCRIPTION_KEY).cloned()),
        });
        let Some(write) = decide(active, published.as_ref(), ca) else {
            continue;
        };
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &name);
        let mut map = current.map(|m| (**m).clone()).unwrap_or_else(|| ConfigMap {
            metadata: ObjectMeta {
                name: Some(NAME.into()),
                namespace: Some(name.clone()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        });
        map.data = Some([(KEY.to_string(), ca.to_string())].into());
        map.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(DESCRIPTION_KEY.into(), DESCRIPTION.into());
        let result = match write {
            Write::Create => api.create(&PostParams::default(), &map).await,
            Write::Update => api.replace(NAME, &PostParams::default(), &map).await,
        };
        match result {
            Ok(_) => tracing::debug!(namespace = %name, "published {NAME}"),
            // Already there (the watch brings it), or the namespace went away or is ending.
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
            Err(kube::Error::Api(e)) if e.code == 403 && !active => {}
            Err(e) => {
                tracing::warn!(namespace = %name, error = %e, "publishing {NAME} failed");
                work.retry();
                failed = true;
            }
        }
    }
    failed
}
