//! Carrying out preemption (scheduler.md §7.7): after an unschedulable decision, run the engine
//! ([`Scheduler::preempt`]); nominate the preemptor (`status.nominatedNodeName`), delete the
//! victims gracefully with their own grace period (each first marked `DisruptionTarget`, reason
//! `PreemptionByScheduler`) and a `Preempted` event each, and clear the
//! nominations of lower-priority pods nominated to that node.
//!
//! Also keeps what preemption and the two-pass filter read: the pending pods nominated to nodes
//! (fed from pod updates, and recorded at once when this scheduler nominates) and the
//! PodDisruptionBudgets (policy/v1, watched by a task of its own).
//!
//! The engine reads `preemptionPolicy: Never` from the compiled preemptor and the victims'
//! `status.startTime` from the cache, so both come with the pods the informers deliver.
//!
//! Not done: refreshing the preemptor from the API before preempting (the queued copy is used).

use super::ops::Ops;
use crate::model::Pod;
use crate::preemption::{Pdb, PreemptionInput, PreemptionOutcome};
use crate::{ClusterCache, FitError, Nominated, PodInfo, Scheduler};
use berth_core::clock::Clock;
use berth_core::pod_conditions;
use berth_informers::{Event as InformerEvent, Informer};
use k8s_openapi::api::core::v1::{ObjectReference, Pod as KPod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::watcher;
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Preemption state owned by the scheduling loop.
pub(super) struct Preemption {
    enabled: bool,
    client: kube::Client,
    clock: Clock,
    component: String,
    /// Where `Preempted` events go (the scheduler's recorder).
    events: berth_events::Recorder,
    /// Pending pods with a nominated node: key → (compiled pod, node).
    nominated: HashMap<String, (PodInfo, String)>,
    /// Budgets by `namespace/name`.
    pdbs: Arc<Mutex<HashMap<String, Pdb>>>,
}

impl Preemption {
    /// Starts the budget watch when `enabled`.
    pub(super) fn new(
        client: kube::Client,
        events: berth_events::Recorder,
        enabled: bool,
        clock: Clock,
    ) -> Preemption {
        let pdbs: Arc<Mutex<HashMap<String, Pdb>>> = Default::default();
        if enabled {
            crate::driver::spawn(watch_pdbs(client.clone(), pdbs.clone()));
        }
        Preemption {
            enabled,
            client,
            clock,
            component: events.component().to_string(),
            events,
            nominated: HashMap::new(),
            pdbs,
        }
    }

    /// Tracks nominations from a pod watch change.
    pub(super) fn pod_changed(&mut self, cache: &mut ClusterCache, pod: &Pod, deleted: bool) {
        let key = format!("{}/{}", pod.metadata.namespace, pod.metadata.name);
        let node = &pod.status.nominated_node_name;
        if deleted
            || node.is_empty()
            || !pod.spec.node_name.is_empty()
            || pod.metadata.deletion_timestamp.is_some()
        {
            self.nominated.remove(&key);
        } else {
            let info = cache.compile_pod(pod);
            self.nominated.insert(key, (info, node.clone()));
        }
    }

    /// The nominated pods, for the two-pass filter.
    pub(super) fn nominated(&self) -> Vec<Nominated<'_>> {
        self.nominated
            .values()
            .map(|(pod, node)| Nominated { pod, node })
            .collect()
    }

    /// Runs preemption for an unschedulable pod and carries the result out in the background.
    pub(super) fn on_unschedulable(
        &mut self,
        scheduler: &mut Scheduler,
        cache: &mut ClusterCache,
        info: &PodInfo,
        fit: &FitError,
        ops: &Ops,
    ) -> bool {
        if !self.enabled {
            return false;
        }
        ops.preemption_attempt();
        let mut info = info.clone();
        if let Some((_, node)) = self.nominated.get(&info.key) {
            info.nominated_node = node.clone();
        }
        let pdbs: Vec<Pdb> = self
            .pdbs
            .lock()
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default();
        let outcome = {
            let nominated = self.nominated();
            scheduler.preempt(
                cache,
                &info,
                fit,
                PreemptionInput {
                    nominated: &nominated,
                    pdbs: &pdbs,
                },
            )
        };
        let api: Api<KPod> = Api::namespaced(self.client.clone(), &info.namespace);
        let mut preempted = false;
        match outcome {
            PreemptionOutcome::Preempt(p) => {
                preempted = true;
                tracing::info!(pod = %info.key, node = %p.node, victims = ?p.victims, "preempting");
                for k in &p.lower_nominated {
                    self.nominated.remove(k);
                }
                self.nominated
                    .insert(info.key.clone(), (info.clone(), p.node.clone()));
                let client = self.client.clone();
                let clock = self.clock.clone();
                let component = self.component.clone();
                let events = self.events.clone();
                let name = info.name.clone();
                crate::driver::spawn(async move {
                    set_nominated(&api, &name, Some(&p.node)).await;
                    let by = format!("by {}/{} on node {}", info.namespace, name, p.node);
                    for v in &p.victims {
                        let Some((ns, vname)) = v.split_once('/') else {
                            continue;
                        };
                        let vapi: Api<KPod> = Api::namespaced(client.clone(), ns);
                        let victim = vapi.get_opt(vname).await.ok().flatten();
                        if let Some(victim) = &victim {
                            if !mark_disruption_target(&vapi, victim, &component, &clock).await {
                                continue;
                            }
                        }
                        match vapi.delete(vname, &DeleteParams::default()).await {
                            Ok(_) => {
                                if let Some(victim) = victim {
                                    let preemptor =
                                        pod_reference(&info.namespace, &name, &info.uid);
                                    preempted_event(&events, &victim, preemptor, &by);
                                }
                            }
                            Err(e) => tracing::warn!(victim = %v, error = %e, "preempting failed"),
                        }
                    }
                    for k in &p.lower_nominated {
                        if let Some((ns, n)) = k.split_once('/') {
                            let lapi: Api<KPod> = Api::namespaced(client.clone(), ns);
                            set_nominated(&lapi, n, None).await;
                        }
                    }
                });
            }
            PreemptionOutcome::NoCandidates if !info.nominated_node.is_empty() => {
                self.nominated.remove(&info.key);
                let name = info.name.clone();
                crate::driver::spawn(async move { set_nominated(&api, &name, None).await });
            }
            _ => {}
        }
        preempted
    }
}

async fn set_nominated(api: &Api<KPod>, name: &str, node: Option<&str>) {
    let patch = json!({"status": {"nominatedNodeName": node}});
    if let Err(e) = api
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        tracing::debug!(pod = %name, error = %e, "setting nominatedNodeName failed");
    }
}

/// Writes upstream's `DisruptionTarget` condition (`PreemptionByScheduler`) into the victim's
/// status before it is deleted, as upstream's `prepareCandidate` does; false when that write
/// failed, in which case the victim is left alone (as upstream, which gives up on the candidate).
async fn mark_disruption_target(
    api: &Api<KPod>,
    victim: &KPod,
    scheduler_name: &str,
    clock: &Clock,
) -> bool {
    let conditions = victim
        .status
        .as_ref()
        .and_then(|s| serde_json::to_value(&s.conditions).ok())
        .unwrap_or_default();
    let wanted = pod_conditions::disruption_target(
        pod_conditions::PREEMPTION_BY_SCHEDULER,
        &pod_conditions::preemption_message(scheduler_name),
    );
    let Some(condition) = pod_conditions::update(&conditions, &wanted, &clock.timestamp()) else {
        return true;
    };
    let name = victim.metadata.name.as_deref().unwrap_or("");
    let patch = json!({"status": {"conditions": [condition]}});
    match api
        .patch_status(name, &PatchParams::default(), &Patch::Strategic(&patch))
        .await
    {
        Ok(_) => true,
        Err(e) => {
            tracing::warn!(victim = %name, error = %e, "marking the victim DisruptionTarget failed");
            false
        }
    }
}

/// A reference to the preemptor, the `related` object of its victims' events.
fn pod_reference(namespace: &str, name: &str, uid: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: Some(name.to_string()),
        namespace: Some(namespace.to_string()),
        uid: (!uid.is_empty()).then(|| uid.to_string()),
        ..Default::default()
    }
}

/// A Normal `Preempted` event on the victim, related to its preemptor (action `Preempting`).
fn preempted_event(
    events: &berth_events::Recorder,
    victim: &KPod,
    preemptor: ObjectReference,
    message: &str,
) {
    let reference = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: victim.metadata.name.clone(),
        namespace: victim.metadata.namespace.clone(),
        uid: victim.metadata.uid.clone(),
        resource_version: victim.metadata.resource_version.clone(),
        ..Default::default()
    };
    events.event_about(
        reference,
        Some(preemptor),
        berth_events::EventType::Normal,
        "Preempted",
        "Preempting",
        message,
    );
}

/// Keeps `pdbs` equal to the cluster's PodDisruptionBudgets.
async fn watch_pdbs(client: kube::Client, pdbs: Arc<Mutex<HashMap<String, Pdb>>>) {
    let budgets: Informer<PodDisruptionBudget> =
        Informer::start(Api::all(client), watcher::Config::default());
    let mut events = budgets.subscribe();
    let key = |b: &PodDisruptionBudget| {
        format!(
            "{}/{}",
            b.metadata.namespace.as_deref().unwrap_or(""),
            b.metadata.name.as_deref().unwrap_or("")
        )
    };
    while let Some(event) = events.recv().await {
        match event {
            InformerEvent::Added(b) | InformerEvent::Updated { new: b, .. } => {
                let pdb = Pdb {
                    namespace: b.metadata.namespace.clone().unwrap_or_default(),
                    selector: b
                        .spec
                        .as_ref()
                        .and_then(|s| s.selector.as_ref())
                        .and_then(|s| serde_json::to_value(s).ok())
                        .and_then(|v| serde_json::from_value(v).ok()),
                    disruptions_allowed: b.status.as_ref().map_or(0, |s| s.disruptions_allowed),
                };
                if let Ok(mut m) = pdbs.lock() {
                    m.insert(key(&b), pdb);
                }
            }
            InformerEvent::Deleted(b) => {
                if let Ok(mut m) = pdbs.lock() {
                    m.remove(&key(&b));
                }
            }
            InformerEvent::Synced => {}
        }
    }
}
