//! The resource quota controller's loop: after a change to quotas or pods (and at least every
//! [`RESYNC`], for the other kinds a quota counts), recompute every quota's status and write
//! those that changed.

use super::{resources_counted, status, Counted};
use crate::workqueue::Queue;
use berth_informers::Informer;
use k8s_openapi::api::core::v1::{Pod, ResourceQuota};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use kube::runtime::watcher;
use serde_json::Value;
use std::collections::HashMap;
use std::time::Duration;

/// How long a burst of changes may gather into one pass.
const GATHER: Duration = Duration::from_millis(20);

/// How often quotas are recounted without a change to quotas or pods: what catches a change
/// in the other kinds counted (secrets, services, `count/...`), which the loop does not watch.
/// Upstream's `--resource-quota-sync-period` is 5 minutes, with watches on every kind; 10 s
/// keeps `kubectl describe quota` current at the cost of a list per quota and kind.
pub const RESYNC: Duration = Duration::from_secs(10);

/// When a status write failed, how soon the pass is tried again.
const RETRY: Duration = Duration::from_secs(1);

/// The controller's work queues, as upstream names them: a quota whose status lacks the usage
/// of a resource it limits is a key of `resourcequota_priority` (upstream's missing-usage
/// queue), every other quota one of `resourcequota_primary`.
#[derive(Clone)]
pub struct Queues {
    pub primary: Queue,
    pub priority: Queue,
}

/// Watches quotas and pods through `reads` and writes each quota's status through `client`.
pub async fn run(reads: kube::Client, client: kube::Client, pods: Informer<Pod>, queues: Queues) {
    let quotas: Informer<ResourceQuota> =
        Informer::start(Api::all(reads.clone()), watcher::Config::default());
    if !(quotas.synced().await && pods.synced().await) {
        return;
    }
    let mut quota_changed = quotas.changed.clone();
    let mut pod_changed = pods.changed.clone();
    let mut versions: HashMap<String, String> = HashMap::new();
    loop {
        let failed = sync(&reads, &client, &quotas, &pods, &mut versions, &queues).await;
        let wait = if failed { RETRY } else { RESYNC };
        tokio::select! {
            r = quota_changed.changed() => if r.is_err() { return },
            r = pod_changed.changed() => if r.is_err() { return },
            _ = tokio::time::sleep(wait) => {}
        }
        tokio::time::sleep(GATHER).await;
        quota_changed.borrow_and_update();
        pod_changed.borrow_and_update();
    }
}

/// One pass over every quota; `true` when a write or a list failed.
async fn sync(
    reads: &kube::Client,
    client: &kube::Client,
    quotas: &Informer<ResourceQuota>,
    pods: &Informer<Pod>,
    versions: &mut HashMap<String, String>,
    queues: &Queues,
) -> bool {
    let mut failed = false;
    let all = quotas.store.state();
    let urgent: Vec<bool> = all.iter().map(|q| missing_usage(q)).collect();
    let urgent_count = urgent.iter().filter(|u| **u).count();
    let mut primary = queues.primary.pass(all.len() - urgent_count);
    let mut priority = queues.priority.pass(urgent_count);
    for (q, urgent) in all.iter().zip(urgent) {
        let work = match urgent {
            true => priority.take(),
            false => primary.take(),
        };
        let Ok(quota) = serde_json::to_value(q.as_ref()) else {
            continue;
        };
        let namespace = q.metadata.namespace.clone().unwrap_or_default();
        let name = q.metadata.name.clone().unwrap_or_default();
        let Some(hard) = quota["spec"]["hard"].as_object() else {
            continue;
        };
        let mut objects = Vec::new();
        let mut retried = false;
        for kind in resources_counted(hard) {
            let list = if kind.group.is_empty() && kind.plural == "pods" {
                pods.store
                    .state()
                    .iter()
                    .filter(|p| p.metadata.namespace.as_deref() == Some(namespace.as_str()))
                    .filter_map(|p| serde_json::to_value(p.as_ref()).ok())
                    .collect()
            } else {
                match list(reads, &kind, &namespace, versions).await {
                    Ok(items) => items,
                    Err(e) => {
                        tracing::debug!(quota = %name, namespace = %namespace, error = %e, "listing what a quota counts failed");
                        if !retried {
                            work.retry();
                            retried = true;
                        }
                        failed = true;
                        continue;
                    }
                }
            };
            objects.push((kind, list));
        }
        let want = status(&quota, &objects);
        if quota["status"] == want {
            continue;
        }
        let mut updated = q.as_ref().clone();
        updated.status = serde_json::from_value(want).ok();
        // An update of what was read: a conflict means a newer quota, and the next pass.
        let api: Api<ResourceQuota> = Api::namespaced(client.clone(), &namespace);
        if let Err(e) = api
            .replace_status(&name, &PostParams::default(), &updated)
            .await
        {
            match e {
                kube::Error::Api(ref s) if s.code == 404 || s.code == 409 => {}
                e => {
                    tracing::debug!(quota = %name, namespace = %namespace, error = %e, "writing a quota's status failed");
                    if !retried {
                        work.retry();
                    }
                    failed = true;
                }
            }
        }
    }
    failed
}

/// Whether the quota's status lacks the usage of a resource its spec limits (upstream's test
/// for the missing-usage queue, which it works first).
fn missing_usage(quota: &ResourceQuota) -> bool {
    let hard = quota.spec.as_ref().and_then(|s| s.hard.as_ref());
    let status = quota.status.as_ref();
    let used = status.and_then(|s| s.used.as_ref());
    let status_hard = status.and_then(|s| s.hard.as_ref());
    match hard {
        None => false,
        Some(hard) => {
            status_hard != Some(hard)
                || hard.keys().any(|k| used.is_none_or(|u| !u.contains_key(k)))
        }
    }
}

/// The objects of `kind` in `namespace`, through the group's preferred version (found once).
async fn list(
    client: &kube::Client,
    kind: &Counted,
    namespace: &str,
    versions: &mut HashMap<String, String>,
) -> Result<Vec<Value>, kube::Error> {
    let version = if kind.group.is_empty() {
        "v1".to_string()
    } else if let Some(v) = versions.get(&kind.group) {
        v.clone()
    } else {
        let group = kube::discovery::group(client, &kind.group).await?;
        let v = group.preferred_version_or_latest().to_string();
        versions.insert(kind.group.clone(), v.clone());
        v
    };
    // Only the URL matters: the kind is not known from a quota's resource name.
    let gvk = GroupVersionKind::gvk(&kind.group, &version, "");
    let resource = ApiResource::from_gvk_with_plural(&gvk, &kind.plural);
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
    let list = api.list(&ListParams::default()).await?;
    Ok(list
        .items
        .iter()
        .filter_map(|o| serde_json::to_value(o).ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resource names and quantities.
    type Pairs<'a> = &'a [(&'a str, &'a str)];

    fn quota(spec_hard: &[(&str, &str)], status: Option<(Pairs, Pairs)>) -> ResourceQuota {
        let map = |kv: &[(&str, &str)]| -> serde_json::Map<String, Value> {
            kv.iter()
                .map(|(k, v)| (k.to_string(), Value::from(*v)))
                .collect()
        };
        let mut q =
            serde_json::json!({"metadata": {"name": "q"}, "spec": {"hard": map(spec_hard)}});
        if let Some((hard, used)) = status {
            q["status"] = serde_json::json!({"hard": map(hard), "used": map(used)});
        }
        serde_json::from_value(q).unwrap()
    }

    #[test]
    fn a_quota_without_the_usage_of_what_it_limits_goes_to_the_priority_queue() {
        // New: no status at all.
        assert!(missing_usage(&quota(&[("pods", "5")], None)));
        // Its spec changed: the status still shows the old limits.
        assert!(missing_usage(&quota(
            &[("pods", "5"), ("cpu", "2")],
            Some((&[("pods", "5")], &[("pods", "1")]))
        )));
        // Counted: the primary queue.
        assert!(!missing_usage(&quota(
            &[("pods", "5")],
            Some((&[("pods", "5")], &[("pods", "1")]))
        )));
    }
}
