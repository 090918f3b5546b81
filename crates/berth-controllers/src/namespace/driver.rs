//! The namespace controller's loop: every namespace being deleted that still carries the
//! `kubernetes` finalizer is passed over (its phase set `Terminating`, its pods deleted, then
//! every other namespaced resource the API server discovers, its conditions written), again
//! when upstream's estimate has passed, when one of its pods goes, or after a failure with
//! back-off; once empty it is finalized.

use super::{
    conditions, pods_estimate, remaining, without_own_finalizer, Pass, Remaining, TerminatingPod,
    FINALIZER,
};
use crate::informers::Informers;
use crate::Clock;
use berth_informers::Informer;
use k8s_openapi::api::core::v1::{Namespace, NamespaceStatus, Pod};
use kube::api::{Api, DeleteParams, ListParams, PostParams, PropagationPolicy};
use kube::core::{ApiResource, DynamicObject};
use kube::discovery::{verbs, Discovery, Scope};
use kube::runtime::watcher;
use std::collections::HashMap;
use std::time::Duration;
use tokio::time::Instant;

/// How long a burst of changes may gather into one pass.
const GATHER: Duration = Duration::from_millis(20);
/// The first wait after a failed pass; it doubles with each failure in a row.
const FIRST_RETRY: Duration = Duration::from_millis(500);
/// The longest wait after failures in a row: a namespace that cannot be emptied (an API
/// server refusing) is looked at at least this often.
const MAX_RETRY: Duration = Duration::from_secs(60);

/// How long the discovered resources are reused before the API server is asked again: a
/// burst of namespace deletions (a test suite's teardown) shares one discovery, while a
/// newly served kind (a CRD) is seen within this long.
const DISCOVERY_TTL: Duration = Duration::from_secs(30);

/// The namespaced resources that can be listed and deleted, and when they were discovered.
#[derive(Default)]
struct Discovered {
    at: Option<Instant>,
    resources: Vec<(ApiResource, bool)>,
}

/// When a terminating namespace is next looked at.
struct Due {
    at: Instant,
    /// Its pods when last passed over: one fewer is worth a look at once.
    pods: usize,
    failures: u32,
}

/// How a pass over one namespace ended.
enum Outcome {
    /// Finalized, gone, or not the controller's to finish.
    Done,
    /// Content remains: look again after this many seconds (upstream: half the estimate).
    Wait(i64),
    /// A call failed: retry with back-off.
    Failed,
}

pub async fn run(
    client: kube::Client,
    reads: kube::Client,
    informers: Informers,
    clock: Clock,
    metrics: crate::metrics::ControllerMetrics,
) {
    let queue = metrics.queue("namespace", &clock);
    let namespaces: Informer<Namespace> =
        Informer::start(Api::all(reads), watcher::Config::default());
    if !(namespaces.synced().await && informers.pods.synced().await) {
        return;
    }
    let mut ns_changed = namespaces.changed.clone();
    let mut pods_changed = informers.pods.changed.clone();
    let mut due: HashMap<String, Due> = HashMap::new();
    let mut discovered = Discovered::default();
    loop {
        let terminating: Vec<String> = namespaces
            .store
            .state()
            .iter()
            .filter(|ns| ns.metadata.deletion_timestamp.is_some() && has_own_finalizer(ns))
            .filter_map(|ns| ns.metadata.name.clone())
            .collect();
        due.retain(|name, _| terminating.contains(name));
        let mut pods: HashMap<String, usize> = HashMap::new();
        if !terminating.is_empty() {
            for p in informers.pods.store.state().iter() {
                if let Some(ns) = &p.metadata.namespace {
                    if terminating.contains(ns) {
                        *pods.entry(ns.clone()).or_default() += 1;
                    }
                }
            }
        }
        let now = clock.instant();
        // The namespaces this pass syncs: those due, or whose pods went down meanwhile.
        let ready: Vec<(&String, usize)> = terminating
            .iter()
            .map(|name| (name, pods.get(name).copied().unwrap_or(0)))
            .filter(|(name, count)| {
                due.get(*name)
                    .is_none_or(|d| now >= d.at || *count < d.pods)
            })
            .collect();
        let mut work_pass = queue.pass(ready.len());
        for (name, count) in ready {
            let work = work_pass.take();
            let failures = due.get(name).map_or(0, |d| d.failures);
            let (at, failures) = match pass(&client, &clock, &mut discovered, name).await {
                Outcome::Done => (now + MAX_RETRY, 0),
                Outcome::Wait(seconds) => {
                    let half = u64::try_from(seconds / 2).unwrap_or(0).max(1);
                    (clock.instant() + Duration::from_secs(half), 0)
                }
                Outcome::Failed => {
                    work.retry();
                    let wait = FIRST_RETRY
                        .saturating_mul(1 << failures.min(16))
                        .min(MAX_RETRY);
                    (clock.instant() + wait, failures + 1)
                }
            };
            due.insert(
                name.clone(),
                Due {
                    at,
                    pods: count,
                    failures,
                },
            );
        }
        drop(work_pass);
        let next = due.values().map(|d| d.at).min();
        let timer = async {
            match next {
                Some(at) => tokio::time::sleep_until(at).await,
                None => futures::future::pending().await,
            }
        };
        tokio::select! {
            r = ns_changed.changed() => if r.is_err() { return },
            r = pods_changed.changed() => if r.is_err() { return },
            _ = timer => {}
        }
        tokio::time::sleep(GATHER).await;
        ns_changed.borrow_and_update();
        pods_changed.borrow_and_update();
    }
}

fn has_own_finalizer(ns: &Namespace) -> bool {
    ns.spec
        .as_ref()
        .and_then(|s| s.finalizers.as_ref())
        .is_some_and(|f| f.iter().any(|f| f == FINALIZER))
}

/// Upstream's `namespacedResourcesDeleter.Delete` for one namespace.
async fn pass(
    client: &kube::Client,
    clock: &Clock,
    discovered: &mut Discovered,
    name: &str,
) -> Outcome {
    let api: Api<Namespace> = Api::all(client.clone());
    let mut ns = match api.get_opt(name).await {
        Ok(Some(ns)) => ns,
        Ok(None) => return Outcome::Done,
        Err(e) => return failed(name, "reading the namespace", e),
    };
    let Some(deleted_at) = ns.metadata.deletion_timestamp.clone() else {
        return Outcome::Done;
    };
    let phase = ns.status.as_ref().and_then(|s| s.phase.as_deref());
    if phase != Some("Terminating") {
        ns.status.get_or_insert_with(NamespaceStatus::default).phase = Some("Terminating".into());
        ns = match replace_status(&api, &ns).await {
            Ok(ns) => ns,
            Err(kube::Error::Api(e)) if e.code == 404 => return Outcome::Done,
            Err(e) => return failed(name, "marking the namespace Terminating", e),
        };
    }
    if !has_own_finalizer(&ns) {
        return Outcome::Done;
    }
    let terminating_for = (clock.now() - crate::model::to_chrono(&deleted_at)).num_seconds();
    let pass = delete_content(client, clock, discovered, name, terminating_for).await;
    let current = ns
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default();
    if let Some(updated) = conditions(&current, &pass, crate::model::to_time(clock.now())) {
        ns.status
            .get_or_insert_with(NamespaceStatus::default)
            .conditions = Some(updated);
        match replace_status(&api, &ns).await {
            Ok(written) => ns = written,
            Err(kube::Error::Api(e)) if e.code == 404 => return Outcome::Done,
            Err(e) => return failed(name, "writing the namespace's conditions", e),
        }
    }
    if pass.discovery_error.is_some() || !pass.errors.is_empty() {
        return Outcome::Failed;
    }
    if !pass.done() {
        return Outcome::Wait(pass.estimate());
    }
    finalize(&api, &ns).await
}

async fn replace_status(api: &Api<Namespace>, ns: &Namespace) -> Result<Namespace, kube::Error> {
    let name = ns.metadata.name.clone().unwrap_or_default();
    api.replace_status(&name, &PostParams::default(), ns).await
}

/// Removes the `kubernetes` finalizer through the `finalize` subresource.
async fn finalize(api: &Api<Namespace>, ns: &Namespace) -> Outcome {
    let name = ns.metadata.name.clone().unwrap_or_default();
    let mut finalized = ns.clone();
    let rest = without_own_finalizer(
        ns.spec
            .as_ref()
            .and_then(|s| s.finalizers.as_deref())
            .unwrap_or_default(),
    );
    finalized
        .spec
        .get_or_insert_with(Default::default)
        .finalizers = Some(rest);
    match api
        .replace_subresource("finalize", &name, &PostParams::default(), &finalized)
        .await
    {
        Ok(_) => {
            tracing::info!(namespace = %name, "namespace finalized");
            Outcome::Done
        }
        Err(kube::Error::Api(e)) if e.code == 404 => Outcome::Done,
        Err(e) => failed(&name, "finalizing", e),
    }
}

fn failed(namespace: &str, what: &str, e: kube::Error) -> Outcome {
    tracing::warn!(namespace, error = %e, "namespace controller: {what} failed");
    Outcome::Failed
}

/// Upstream's `deleteAllContent`: pods first; while some remain, nothing else is deleted.
async fn delete_content(
    client: &kube::Client,
    clock: &Clock,
    discovered: &mut Discovered,
    namespace: &str,
    terminating_for: i64,
) -> Pass {
    let mut pass = Pass::default();
    let fresh = discovered
        .at
        .is_some_and(|at| clock.instant() < at + DISCOVERY_TTL);
    if !fresh {
        match deletable_resources(client).await {
            Ok(resources) => {
                discovered.resources = resources;
                discovered.at = Some(clock.instant());
            }
            Err(e) => {
                discovered.at = None;
                pass.discovery_error = Some(e.to_string());
                return pass;
            }
        }
    }
    let resources = discovered.resources.clone();
    let (pods, rest): (Vec<_>, Vec<_>) = resources
        .into_iter()
        .partition(|(r, _)| r.group.is_empty() && r.plural == "pods");
    for (resource, deletecollection) in pods {
        let estimate = match pods_left(client, namespace).await {
            Ok(pods) => pods_estimate(&pods, terminating_for),
            Err(e) => {
                pass.errors.push(e.to_string());
                0
            }
        };
        delete_resource(
            client,
            namespace,
            &resource,
            deletecollection,
            estimate,
            &mut pass,
        )
        .await;
    }
    if !pass.done() {
        return pass;
    }
    for (resource, deletecollection) in rest {
        delete_resource(client, namespace, &resource, deletecollection, 0, &mut pass).await;
    }
    pass
}

/// The namespaced resources that can be listed and deleted, in their preferred versions, and
/// whether each supports `deletecollection`.
async fn deletable_resources(
    client: &kube::Client,
) -> Result<Vec<(ApiResource, bool)>, kube::Error> {
    let discovery = Discovery::new(client.clone()).run().await?;
    let mut out = Vec::new();
    for group in discovery.groups() {
        for (resource, caps) in group.recommended_resources() {
            if caps.scope == Scope::Namespaced
                && caps.supports_operation(verbs::LIST)
                && caps.supports_operation(verbs::DELETE)
            {
                out.push((resource, caps.supports_operation(verbs::DELETE_COLLECTION)));
            }
        }
    }
    Ok(out)
}

async fn pods_left(
    client: &kube::Client,
    namespace: &str,
) -> Result<Vec<TerminatingPod>, kube::Error> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    Ok(pods
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(|p| TerminatingPod {
            phase: p.status.and_then(|s| s.phase).unwrap_or_default(),
            grace_period_seconds: p.spec.and_then(|s| s.termination_grace_period_seconds),
        })
        .collect())
}

/// Upstream's `deleteAllContentForGroupVersionResource`: delete the collection (or each
/// object), then list what is left and record it in `pass`.
async fn delete_resource(
    client: &kube::Client,
    namespace: &str,
    resource: &ApiResource,
    deletecollection: bool,
    estimate: i64,
    pass: &mut Pass,
) {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, resource);
    let background = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Background),
        ..DeleteParams::default()
    };
    let gvr = format!(
        "{}, Resource={}",
        if resource.group.is_empty() {
            format!("/{}", resource.version)
        } else {
            resource.api_version.clone()
        },
        resource.plural
    );
    let deleted = if deletecollection {
        match api
            .delete_collection(&background, &ListParams::default())
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 405 => Ok(false),
            Err(e) => Err(e),
        }
    } else {
        Ok(false)
    };
    match deleted {
        Ok(true) => {}
        Ok(false) => {
            // One by one, as upstream falls back to.
            match api.list_metadata(&ListParams::default()).await {
                Ok(list) => {
                    for item in list.items {
                        let name = item.metadata.name.unwrap_or_default();
                        match api.delete(&name, &background).await {
                            Ok(_) => {}
                            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 405 => {}
                            Err(e) => {
                                pass.errors.push(e.to_string());
                                return;
                            }
                        }
                    }
                }
                Err(kube::Error::Api(e)) if e.code == 404 || e.code == 405 => return,
                Err(e) => {
                    pass.errors.push(e.to_string());
                    return;
                }
            }
        }
        Err(e) => {
            pass.errors.push(e.to_string());
            return;
        }
    }
    let left = match api.list_metadata(&ListParams::default()).await {
        Ok(list) => list,
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 405 => return,
        Err(e) => {
            pass.errors.push(e.to_string());
            return;
        }
    };
    let items: Vec<Vec<String>> = left
        .items
        .iter()
        .map(|o| o.metadata.finalizers.clone().unwrap_or_default())
        .collect();
    let key = format!("{}.{}", resource.plural, resource.group);
    match remaining(namespace, &gvr, estimate, &items) {
        Ok(r) if r == Remaining::default() => {}
        Ok(r) => {
            pass.remaining.insert(key, r);
        }
        Err((r, e)) => {
            pass.remaining.insert(key, r);
            pass.errors.push(e);
        }
    }
}
