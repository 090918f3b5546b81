//! The endpoints controllers' loop: after any change to Services, pods, Endpoints or
//! EndpointSlices, recompute every managed Service's Endpoints and slices and write those that
//! differ; remove those whose Service is gone. Level-triggered: a failed write (a conflict means a
//! newer object is on its way) is redone by the next pass.

use super::{
    endpoint_subsets, managed, slice_groups, EndpointPod, SliceContent, HEADLESS_LABEL, MANAGED_BY,
    MANAGED_BY_LABEL, SERVICE_NAME_LABEL,
};
use crate::workqueue::Queue;
use berth_informers::Informer;
use futures::future::{select_all, BoxFuture};
use futures::FutureExt;
use k8s_openapi::api::core::v1::{Endpoints, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::watcher;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;
use tokio::sync::watch;

/// How long a burst of changes may gather into one pass.
const GATHER: Duration = Duration::from_millis(20);
/// When a pass had a failed write and nothing else changes, how soon it is tried again.
const RETRY: Duration = Duration::from_secs(1);

/// The clients the two controllers write through: the endpoint-controller's and the
/// endpointslice-controller's, and the work queues they report their syncs to (upstream's
/// `endpoint` and `endpoint_slice`).
#[derive(Clone)]
pub struct Writers {
    pub endpoints: kube::Client,
    pub slices: kube::Client,
    pub endpoint_queue: Queue,
    pub slice_queue: Queue,
}

/// Watches what the controllers read through `reads` and keeps Endpoints and EndpointSlices
/// current.
pub async fn run(reads: kube::Client, writers: Writers) {
    let all = watcher::Config::default;
    let services: Informer<Service> = Informer::start(Api::all(reads.clone()), all());
    let pods: Informer<EndpointPod> = Informer::start(Api::all(reads.clone()), all());
    let endpoints: Informer<Endpoints> = Informer::start(Api::all(reads.clone()), all());
    let slices: Informer<EndpointSlice> = Informer::start(
        Api::all(reads),
        all().labels(&format!("{MANAGED_BY_LABEL}={MANAGED_BY}")),
    );
    let ready = [
        services.synced().await,
        pods.synced().await,
        endpoints.synced().await,
        slices.synced().await,
    ];
    if ready.contains(&false) {
        return;
    }
    let mut signals = [
        services.changed.clone(),
        pods.changed.clone(),
        endpoints.changed.clone(),
        slices.changed.clone(),
    ];
    loop {
        let failed = sync(&writers, &services, &pods, &endpoints, &slices).await;
        wait(&mut signals, failed.then_some(RETRY)).await;
    }
}

async fn wait(signals: &mut [watch::Receiver<()>], retry: Option<Duration>) {
    {
        let changes: Vec<BoxFuture<'_, ()>> = signals
            .iter_mut()
            .map(|rx| {
                async move {
                    if rx.changed().await.is_err() {
                        futures::future::pending::<()>().await;
                    }
                }
                .boxed()
            })
            .collect();
        let deadline = async {
            match retry {
                Some(d) => tokio::time::sleep(d).await,
                None => futures::future::pending().await,
            }
        };
        tokio::select! {
            _ = select_all(changes) => {}
            _ = deadline => {}
        }
    }
    tokio::time::sleep(GATHER).await;
    for rx in signals.iter_mut() {
        rx.borrow_and_update();
    }
}

/// One pass over every Service; `true` when a write failed.
async fn sync(
    writers: &Writers,
    services: &Informer<Service>,
    pods: &Informer<EndpointPod>,
    endpoints: &Informer<Endpoints>,
    slices: &Informer<EndpointSlice>,
) -> bool {
    let services = services.store.state();
    // Only the namespaces of managed Services need their pods grouped.
    let wanted: HashSet<&str> = services
        .iter()
        .filter(|svc| managed(svc))
        .map(|svc| svc.metadata.namespace.as_deref().unwrap_or(""))
        .collect();
    let pods = if wanted.is_empty() {
        Vec::new()
    } else {
        pods.store.state()
    };
    let mut by_namespace: HashMap<&str, Vec<&EndpointPod>> = HashMap::new();
    for pod in pods
        .iter()
        .filter(|p| wanted.contains(p.namespace.as_deref().unwrap_or("")))
    {
        by_namespace
            .entry(pod.namespace.as_deref().unwrap_or(""))
            .or_default()
            .push(pod);
    }
    let mut failed = false;
    let mut existing_services = HashSet::new();
    let mut managed_services = HashSet::new();
    // Each managed Service is one key of each controller's queue.
    let managed_count = services.iter().filter(|svc| managed(svc)).count();
    let mut endpoint_pass = writers.endpoint_queue.pass(managed_count);
    let mut slice_pass = writers.slice_queue.pass(managed_count);
    for svc in &services {
        let ns = svc.metadata.namespace.clone().unwrap_or_default();
        let name = svc.metadata.name.clone().unwrap_or_default();
        existing_services.insert((ns.clone(), name.clone()));
        if !managed(svc) {
            continue;
        }
        managed_services.insert((ns.clone(), name.clone()));
        let pods = by_namespace.get(ns.as_str()).map_or(&[][..], Vec::as_slice);
        let work = endpoint_pass.take();
        if !sync_endpoints(
            &writers.endpoints,
            svc,
            pods,
            endpoints.store.get(&ns, &name),
        )
        .await
        {
            work.retry();
            failed = true;
        }
        drop(work);
        let mut owned: Vec<_> = slices.store.state_filter(|s| {
            s.metadata.namespace.as_deref() == Some(ns.as_str())
                && label(&s.metadata, SERVICE_NAME_LABEL) == Some(name.as_str())
        });
        owned.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let work = slice_pass.take();
        if !sync_slices(&writers.slices, svc, pods, &owned).await {
            work.retry();
            failed = true;
        }
    }
    drop((endpoint_pass, slice_pass));
    // Endpoints and slices whose Service is gone (upstream's leftover cleanup; slices also
    // carry an owner reference to their Service).
    for ep in endpoints.store.state() {
        let key = (
            ep.metadata.namespace.clone().unwrap_or_default(),
            ep.metadata.name.clone().unwrap_or_default(),
        );
        if !existing_services.contains(&key) {
            let api: Api<Endpoints> = Api::namespaced(writers.endpoints.clone(), &key.0);
            failed |= !deleted(api.delete(&key.1, &DeleteParams::default()).await);
        }
    }
    for slice in slices.store.state() {
        let ns = slice.metadata.namespace.clone().unwrap_or_default();
        let service = label(&slice.metadata, SERVICE_NAME_LABEL)
            .unwrap_or("")
            .to_string();
        if !managed_services.contains(&(ns.clone(), service)) {
            let api: Api<EndpointSlice> = Api::namespaced(writers.slices.clone(), &ns);
            let name = slice.metadata.name.clone().unwrap_or_default();
            failed |= !deleted(api.delete(&name, &DeleteParams::default()).await);
        }
    }
    failed
}

fn label<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.labels.as_ref()?.get(key).map(String::as_str)
}

/// `true` when the delete went through or there was nothing to delete.
fn deleted<T>(r: Result<T, kube::Error>) -> bool {
    match r {
        Ok(_) => true,
        Err(kube::Error::Api(e)) if e.code == 404 => true,
        Err(e) => {
            tracing::debug!(error = %e, "endpoints cleanup failed");
            false
        }
    }
}

/// The Service's labels, plus the headless mark, as upstream copies them to its endpoints.
fn service_labels(svc: &Service) -> BTreeMap<String, String> {
    let mut labels = svc.metadata.labels.clone().unwrap_or_default();
    labels.remove(MANAGED_BY_LABEL);
    labels.remove(SERVICE_NAME_LABEL);
    if svc.spec.as_ref().and_then(|s| s.cluster_ip.as_deref()) == Some("None") {
        labels.insert(HEADLESS_LABEL.into(), String::new());
    }
    labels
}

/// Writes the Service's Endpoints if they differ; `false` when the write failed.
async fn sync_endpoints(
    client: &kube::Client,
    svc: &Service,
    pods: &[&EndpointPod],
    existing: Option<std::sync::Arc<Endpoints>>,
) -> bool {
    let subsets = endpoint_subsets(svc, pods);
    let labels = service_labels(svc);
    if let Some(e) = &existing {
        let same_labels = e.metadata.labels.clone().unwrap_or_default() == labels;
        if same_labels && e.subsets.clone().unwrap_or_default() == subsets {
            return true;
        }
    }
    let ns = svc.metadata.namespace.clone().unwrap_or_default();
    let name = svc.metadata.name.clone().unwrap_or_default();
    let api: Api<Endpoints> = Api::namespaced(client.clone(), &ns);
    let object = Endpoints {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(ns),
            labels: Some(labels),
            resource_version: existing
                .as_ref()
                .and_then(|e| e.metadata.resource_version.clone()),
            ..ObjectMeta::default()
        },
        subsets: (!subsets.is_empty()).then_some(subsets),
    };
    let result = match existing {
        Some(_) => api.replace(&name, &PostParams::default(), &object).await,
        None => api.create(&PostParams::default(), &object).await,
    };
    result
        .map_err(|e| tracing::debug!(service = %name, error = %e, "writing endpoints failed"))
        .is_ok()
}

/// Writes the Service's slices: the i-th existing one (by name) holds the i-th desired
/// content; missing ones are created, surplus ones deleted. `false` when a write failed.
async fn sync_slices(
    client: &kube::Client,
    svc: &Service,
    pods: &[&EndpointPod],
    existing: &[std::sync::Arc<EndpointSlice>],
) -> bool {
    let mut desired = slice_groups(svc, pods);
    if desired.is_empty() {
        // A Service without endpoints keeps one empty slice (upstream's placeholder).
        desired.push(SliceContent {
            ports: Vec::new(),
            endpoints: Vec::new(),
        });
    }
    let ns = svc.metadata.namespace.clone().unwrap_or_default();
    let name = svc.metadata.name.clone().unwrap_or_default();
    let api: Api<EndpointSlice> = Api::namespaced(client.clone(), &ns);
    let mut labels = service_labels(svc);
    labels.insert(SERVICE_NAME_LABEL.into(), name.clone());
    labels.insert(MANAGED_BY_LABEL.into(), MANAGED_BY.into());
    let owner = OwnerReference {
        api_version: "v1".into(),
        kind: "Service".into(),
        name: name.clone(),
        uid: svc.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    let mut ok = true;
    for surplus in existing.iter().skip(desired.len()) {
        let slice_name = surplus.metadata.name.clone().unwrap_or_default();
        ok &= deleted(api.delete(&slice_name, &DeleteParams::default()).await);
    }
    for (i, content) in desired.into_iter().enumerate() {
        let current = existing.get(i);
        if let Some(c) = current {
            let same = c.metadata.labels.as_ref() == Some(&labels)
                && c.ports.clone().unwrap_or_default() == content.ports
                && c.endpoints == content.endpoints;
            if same {
                continue;
            }
        }
        let slice = EndpointSlice {
            metadata: ObjectMeta {
                name: current.and_then(|c| c.metadata.name.clone()),
                generate_name: Some(format!("{name}-")),
                namespace: Some(ns.clone()),
                labels: Some(labels.clone()),
                owner_references: Some(vec![owner.clone()]),
                resource_version: current.and_then(|c| c.metadata.resource_version.clone()),
                ..ObjectMeta::default()
            },
            address_type: "IPv4".into(),
            endpoints: content.endpoints,
            ports: (!content.ports.is_empty()).then_some(content.ports),
        };
        let result = match current.and_then(|c| c.metadata.name.clone()) {
            Some(slice_name) => {
                api.replace(&slice_name, &PostParams::default(), &slice)
                    .await
            }
            None => api.create(&PostParams::default(), &slice).await,
        };
        if let Err(e) = result {
            tracing::debug!(service = %name, error = %e, "writing an endpoint slice failed");
            ok = false;
        }
    }
    ok
}
