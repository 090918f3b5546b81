//! The autoscaler loop: every sync period (and at once when an autoscaler's spec changes),
//! each HorizontalPodAutoscaler's target scale and its namespace's pod metrics are read
//! through the API, the engine ([`super::reconcile`]) decides, and the scale, the status and
//! the events are written. What each autoscaler's engine remembers (recent recommendations,
//! recent rescales) lives here, by uid, as upstream's controller keeps it in memory.

use super::behavior::Memory;
use super::reconcile::{reconcile, Inputs, Plan, PodUsage, ScaleView, Settings};
use crate::model::{EventRecord, Involved};
use crate::recorder::Recorder;
use crate::wait::wait;
use crate::Clock;
use berth_informers::Informer;
use chrono::{DateTime, TimeDelta, Utc};
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

/// The component events are recorded as.
const COMPONENT: &str = "horizontal-pod-autoscaler";

/// The loop's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// `--horizontal-pod-autoscaler-sync-period`: how often each autoscaler is reconciled
    /// (15 s).
    pub sync_period: Duration,
    pub settings: Settings,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            sync_period: Duration::from_secs(15),
            settings: Settings::default(),
        }
    }
}

/// When each autoscaler was last reconciled, at which generation.
struct Synced {
    generation: Option<i64>,
    at: tokio::time::Instant,
}

pub(crate) async fn run(
    client: kube::Client,
    informers: crate::informers::Informers,
    clock: Clock,
    config: Config,
    metrics: crate::metrics::ControllerMetrics,
) {
    let queue = metrics.queue("horizontalpodautoscaler", &clock);
    let mut hpas: Informer<HorizontalPodAutoscaler> = informers.shared();
    let pods = informers.pods.clone();
    if !(hpas.synced().await && pods.synced().await) {
        return;
    }
    let recorder = Recorder::new(client.clone(), clock.clone());
    let mut memory: HashMap<String, Memory> = HashMap::new();
    let mut synced: HashMap<String, Synced> = HashMap::new();
    let period = clock
        .tokio_duration(config.sync_period)
        .max(Duration::from_millis(100));
    loop {
        let all: Vec<Arc<HorizontalPodAutoscaler>> = hpas.store.state();
        let uid = |h: &HorizontalPodAutoscaler| h.metadata.uid.clone().unwrap_or_default();
        memory.retain(|u, _| all.iter().any(|h| &uid(h) == u));
        synced.retain(|u, _| all.iter().any(|h| &uid(h) == u));
        let all_pods: Vec<Arc<Pod>> = pods.store.state();
        let mut usage_by_namespace: HashMap<String, Result<BTreeMap<String, PodUsage>, String>> =
            HashMap::new();
        // The autoscalers this pass syncs: changed ones, and those a sync period old.
        let due: Vec<&Arc<HorizontalPodAutoscaler>> = all
            .iter()
            .filter(|hpa| {
                synced.get(&uid(hpa)).is_none_or(|s| {
                    s.generation != hpa.metadata.generation || s.at + period <= clock.instant()
                })
            })
            .collect();
        let mut pass = queue.pass(due.len());
        for hpa in due {
            let work = pass.take();
            let id = uid(hpa);
            let namespace = hpa.metadata.namespace.clone().unwrap_or_default();
            let read = get_scale(&client, hpa).await;
            let scale = read
                .as_ref()
                .map(|(view, _)| view.clone())
                .map_err(Clone::clone);
            if scale.is_ok() && !usage_by_namespace.contains_key(&namespace) {
                let usage = pod_usage(&client, &namespace).await;
                usage_by_namespace.insert(namespace.clone(), usage);
            }
            let usage = match usage_by_namespace.get(&namespace) {
                Some(Ok(u)) => Ok(u),
                Some(Err(e)) => Err(e.clone()),
                None => Err("not read".to_string()),
            };
            let in_namespace: Vec<&Pod> = all_pods
                .iter()
                .map(|p| p.as_ref())
                .filter(|p| p.metadata.namespace.as_deref() == Some(namespace.as_str()))
                .collect();
            let inputs = Inputs {
                hpa,
                scale,
                pods: &in_namespace,
                usage,
            };
            let now = clock.now();
            let mine = memory.entry(id.clone()).or_default();
            let plan = reconcile(&config.settings, mine, &inputs, now);
            let plan = match &read {
                Ok((_, scale)) => carry_out(&client, hpa, scale, plan, mine, now).await,
                Err(_) => plan,
            };
            for &(type_, reason, ref message) in &plan.events {
                recorder.record(
                    COMPONENT,
                    &EventRecord {
                        involved: involved(hpa),
                        type_,
                        reason,
                        message: message.clone(),
                    },
                );
            }
            let written = write_status(&client, hpa, &plan).await;
            if !written {
                work.retry();
            }
            synced.insert(
                id,
                Synced {
                    // A status write that failed is tried again at once.
                    generation: if written {
                        hpa.metadata.generation
                    } else {
                        Some(-1)
                    },
                    at: clock.instant(),
                },
            );
        }
        drop(pass);
        let next = synced.values().map(|s| s.at + period).min();
        wait(&mut [&mut hpas.changed], next).await;
    }
}

fn involved(hpa: &HorizontalPodAutoscaler) -> Involved {
    Involved::Workload {
        api_version: "autoscaling/v2",
        kind: "HorizontalPodAutoscaler",
        namespace: hpa.metadata.namespace.clone().unwrap_or_default(),
        name: hpa.metadata.name.clone().unwrap_or_default(),
        uid: hpa.metadata.uid.clone().unwrap_or_default(),
        resource_version: crate::model::version_of(&hpa.metadata),
    }
}

/// The target's API resource: the workload kinds berth serves by name, others (custom
/// resources with a scale subresource) through discovery.
async fn target_resource(
    client: &kube::Client,
    api_version: &str,
    kind: &str,
) -> Result<ApiResource, String> {
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let plural = match (group, kind) {
        ("apps", "Deployment") => Some("deployments"),
        ("apps", "ReplicaSet") => Some("replicasets"),
        ("apps", "StatefulSet") => Some("statefulsets"),
        ("", "ReplicationController") => Some("replicationcontrollers"),
        _ => None,
    };
    if let Some(plural) = plural {
        return Ok(ApiResource::from_gvk_with_plural(&gvk, plural));
    }
    kube::discovery::pinned_kind(client, &gvk)
        .await
        .map(|(resource, _)| resource)
        .map_err(|_| format!("unable to determine resource for scale target reference: no matches for kind {kind:?} in version {api_version:?}"))
}

fn target_api(
    client: &kube::Client,
    hpa: &HorizontalPodAutoscaler,
    resource: &ApiResource,
) -> Api<DynamicObject> {
    let namespace = hpa.metadata.namespace.clone().unwrap_or_default();
    Api::namespaced_with(client.clone(), &namespace, resource)
}

/// Reads the target's scale subresource: as the engine sees it, and as read (to write back).
async fn get_scale(
    client: &kube::Client,
    hpa: &HorizontalPodAutoscaler,
) -> Result<(ScaleView, Scale), String> {
    let target = hpa
        .spec
        .as_ref()
        .map(|s| s.scale_target_ref.clone())
        .unwrap_or_default();
    let resource = target_resource(
        client,
        target.api_version.as_deref().unwrap_or(""),
        &target.kind,
    )
    .await?;
    let scale = target_api(client, hpa, &resource)
        .get_scale(&target.name)
        .await
        .map_err(|e| error_text(&e))?;
    let view = ScaleView {
        replicas: scale.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0),
        selector: scale.status.as_ref().and_then(|s| s.selector.clone()),
    };
    Ok((view, scale))
}

/// Lists the namespace's `PodMetrics` from `metrics.k8s.io`.
async fn pod_usage(
    client: &kube::Client,
    namespace: &str,
) -> Result<BTreeMap<String, PodUsage>, String> {
    let gvk = GroupVersionKind::gvk("metrics.k8s.io", "v1beta1", "PodMetrics");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "pods");
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
    let list = api.list(&ListParams::default()).await.map_err(|e| {
        format!(
            "unable to fetch metrics from resource metrics API: {}",
            error_text(&e)
        )
    })?;
    let mut out = BTreeMap::new();
    for item in &list.items {
        let Some(name) = item.metadata.name.clone() else {
            continue;
        };
        if let Some(u) = parse_pod_metrics(&item.data) {
            out.insert(name, u);
        }
    }
    Ok(out)
}

/// A `PodMetrics` object's samples; `None` when it has no timestamp.
pub(crate) fn parse_pod_metrics(data: &Value) -> Option<PodUsage> {
    let timestamp: DateTime<Utc> = data["timestamp"].as_str()?.parse().ok()?;
    let window = data["window"]
        .as_str()
        .and_then(|w| crate::parse_duration(w).ok())
        .and_then(|d| TimeDelta::from_std(d).ok())
        .unwrap_or_default();
    let containers = data["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            c["usage"]
                .as_object()
                .into_iter()
                .flatten()
                .filter_map(|(resource, q)| {
                    let q = berth_core::quantity::from_json(q).ok()?;
                    Some((resource.clone(), q.milli_value()))
                })
                .collect()
        })
        .collect();
    Some(PodUsage {
        timestamp,
        window,
        containers,
    })
}

/// Writes the decided scale as an update of the scale read (a conflict fails the rescale,
/// as upstream's), and finishes the plan with the outcome.
async fn carry_out(
    client: &kube::Client,
    hpa: &HorizontalPodAutoscaler,
    scale: &Scale,
    plan: Plan,
    memory: &mut Memory,
    now: DateTime<Utc>,
) -> Plan {
    let Some(rescale) = plan.rescale.clone() else {
        return plan;
    };
    let target = hpa
        .spec
        .as_ref()
        .map(|s| s.scale_target_ref.clone())
        .unwrap_or_default();
    let written = match target_resource(
        client,
        target.api_version.as_deref().unwrap_or(""),
        &target.kind,
    )
    .await
    {
        Ok(resource) => target_api(client, hpa, &resource)
            .replace_scale(&target.name, &PostParams::default(), &{
                let mut s = scale.clone();
                s.spec.get_or_insert_with(Default::default).replicas = Some(rescale.to);
                s
            })
            .await
            .map(|_| ())
            .map_err(|e| error_text(&e)),
        Err(e) => Err(e),
    };
    match written {
        Ok(()) => plan.rescaled(memory, now),
        Err(e) => {
            tracing::debug!(hpa = ?hpa.metadata.name, error = %e, "updating a target's scale failed");
            plan.rescale_failed(&e, now)
        }
    }
}

/// Writes the plan's status when it differs from the stored one; `false` when the write
/// failed (a conflict means a newer autoscaler, reconciled on the next pass).
async fn write_status(client: &kube::Client, hpa: &HorizontalPodAutoscaler, plan: &Plan) -> bool {
    if hpa.status.as_ref() == Some(&plan.status) {
        return true;
    }
    let namespace = hpa.metadata.namespace.clone().unwrap_or_default();
    let name = hpa.metadata.name.clone().unwrap_or_default();
    let mut updated = hpa.clone();
    updated.status = Some(plan.status.clone());
    let api: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), &namespace);
    match api
        .replace_status(&name, &PostParams::default(), &updated)
        .await
    {
        Ok(_) => true,
        Err(kube::Error::Api(s)) if s.code == 404 => true,
        Err(e) => {
            tracing::debug!(hpa = %name, namespace = %namespace, error = %e, "writing an autoscaler's status failed");
            false
        }
    }
}

/// An API error as upstream's client prints it: the Status message.
fn error_text(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message.clone(),
        e => e.to_string(),
    }
}
