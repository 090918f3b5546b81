//! The StatefulSet controller, as upstream's `pkg/controller/statefulset`: pods named `<set>-<ordinal>` with a stable hostname, made from the revision their
//! ordinal should run. `OrderedReady` creates one pod at a time in ordinal order, each after the
//! ones before are Running and Ready, and scales down from the highest ordinal, one at a time;
//! `Parallel` creates and deletes them all at once. `RollingUpdate` replaces pods at or above
//! `partition` whose revision is not the update revision, highest ordinal first, one at a time
//! while every pod is healthy; `OnDelete` leaves that to the user. Each pod's
//! `volumeClaimTemplates` claims and their retention policy: [`claims`]. Pure: [`sync`]; the
//! driver (`driver.rs`) keeps the revisions and claims and carries the decisions out.

pub mod claims;
pub(crate) mod driver;

use crate::controller_revision::REVISION_HASH_LABEL;
use crate::model::{is_deleting, PodRef};
use crate::owned_pods::{is_ready, phase, pod_from_template, Owner};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use serde_json::{json, Value};

/// The label with a StatefulSet pod's name (upstream's, for per-pod Services).
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// The label with a StatefulSet pod's ordinal (upstream 1.28+).
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

/// A revision the set's pods are made from: its name and pod template.
#[derive(Clone, Debug, PartialEq)]
pub struct Revision {
    pub name: String,
    pub template: Value,
}

/// What one sync of a StatefulSet decided.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SetSync {
    pub create: Vec<Value>,
    pub delete: Vec<PodRef>,
    /// The new `status`, when it differs from the stored one.
    pub status: Option<Value>,
}

/// The ordinal of a pod of set `set`, from its name.
pub fn ordinal(set: &str, pod: &Pod) -> Option<i32> {
    let name = pod.metadata.name.as_deref()?;
    let n = name.strip_prefix(set)?.strip_prefix('-')?;
    n.parse::<i32>()
        .ok()
        .filter(|i| *i >= 0 && i.to_string() == n)
}

fn healthy(pod: &Pod) -> bool {
    !is_deleting(pod) && phase(pod) == "Running" && is_ready(pod)
}

fn revision_of(pod: &Pod) -> Option<&str> {
    pod.metadata
        .labels
        .as_ref()?
        .get(REVISION_HASH_LABEL)
        .map(String::as_str)
}

/// The pod of `ordinal` made from `revision`.
pub fn new_pod(set: &StatefulSet, ordinal: i32, revision: &Revision) -> Value {
    let set_name = set.metadata.name.clone().unwrap_or_default();
    let uid = set.metadata.uid.clone().unwrap_or_default();
    let ns = set.metadata.namespace.clone().unwrap_or_default();
    let name = format!("{set_name}-{ordinal}");
    let owner = Owner {
        api_version: "apps/v1",
        kind: "StatefulSet",
        name: &set_name,
        uid: &uid,
    };
    let mut pod = pod_from_template(&revision.template, &ns, &owner, Some(&name));
    if !pod["metadata"]["labels"].is_object() {
        pod["metadata"]["labels"] = json!({});
    }
    let labels = &mut pod["metadata"]["labels"];
    labels[REVISION_HASH_LABEL] = json!(revision.name);
    labels[POD_NAME_LABEL] = json!(name);
    labels[POD_INDEX_LABEL] = json!(ordinal.to_string());
    claims::add_volumes(&mut pod, set, ordinal);
    pod["spec"]["hostname"] = json!(name);
    if let Some(service) = set
        .spec
        .as_ref()
        .and_then(|s| s.service_name.clone())
        .filter(|s| !s.is_empty())
    {
        pod["spec"]["subdomain"] = json!(service);
    }
    pod
}

/// One sync of `set` over the pods it controls. `current` is the revision of
/// `status.currentRevision` (the update revision for a new set), `update` the revision of the
/// template now.
pub fn sync(set: &StatefulSet, pods: &[&Pod], current: &Revision, update: &Revision) -> SetSync {
    let name = set.metadata.name.clone().unwrap_or_default();
    let spec = set.spec.clone().unwrap_or_default();
    let replicas = spec.replicas.unwrap_or(1).max(0);
    let ordered = spec.pod_management_policy.as_deref() != Some("Parallel");
    let strategy = spec.update_strategy.clone().unwrap_or_default();
    let rolling = strategy.type_.as_deref() != Some("OnDelete");
    let partition = if rolling {
        strategy
            .rolling_update
            .as_ref()
            .and_then(|r| r.partition)
            .unwrap_or(0)
    } else {
        0
    };
    let mut by_ordinal: std::collections::BTreeMap<i32, &Pod> = std::collections::BTreeMap::new();
    for p in pods {
        if let Some(i) = ordinal(&name, p) {
            by_ordinal.insert(i, p);
        }
    }
    let mut out = SetSync::default();
    let mut blocked = false;
    for i in 0..replicas {
        match by_ordinal.get(&i) {
            None => {
                // Below the partition, pods stay at the current revision.
                let revision = if rolling && i < partition {
                    current
                } else {
                    update
                };
                out.create.push(new_pod(set, i, revision));
                blocked = ordered;
            }
            Some(p) if !is_deleting(p) && matches!(phase(p), "Failed" | "Succeeded") => {
                out.delete.push(PodRef::of(p));
                blocked = ordered;
            }
            Some(p) if !healthy(p) => blocked = ordered,
            Some(_) => {}
        }
        if blocked {
            break;
        }
    }
    let condemned: Vec<&Pod> = by_ordinal
        .range(replicas..)
        .rev()
        .map(|(_, p)| *p)
        .collect();
    if !blocked {
        if ordered {
            if !condemned.iter().any(|p| is_deleting(p)) {
                out.delete.extend(condemned.first().map(|p| PodRef::of(p)));
            }
        } else {
            out.delete.extend(
                condemned
                    .iter()
                    .filter(|p| !is_deleting(p))
                    .map(|p| PodRef::of(p)),
            );
        }
    }
    let settled = out.create.is_empty() && out.delete.is_empty() && condemned.is_empty();
    let all_healthy = (0..replicas).all(|i| by_ordinal.get(&i).is_some_and(|p| healthy(p)));
    if rolling && settled && all_healthy {
        let stale = (partition..replicas)
            .rev()
            .filter_map(|i| by_ordinal.get(&i))
            .find(|p| revision_of(p) != Some(update.name.as_str()));
        out.delete.extend(stale.map(|p| PodRef::of(p)));
    }
    out.status = status(set, pods, current, update, replicas, rolling);
    out
}

fn status(
    set: &StatefulSet,
    pods: &[&Pod],
    current: &Revision,
    update: &Revision,
    replicas: i32,
    rolling: bool,
) -> Option<Value> {
    let live: Vec<&&Pod> = pods.iter().filter(|p| !is_deleting(p)).collect();
    let count = |f: &dyn Fn(&Pod) -> bool| live.iter().filter(|p| f(p)).count() as i32;
    let ready = count(&|p| phase(p) == "Running" && is_ready(p));
    let updated = count(&|p| revision_of(p) == Some(update.name.as_str()));
    let mut current_name = current.name.clone();
    let mut current_replicas = count(&|p| revision_of(p) == Some(current.name.as_str()));
    // A finished rolling update makes the update revision current.
    if rolling && updated == replicas && ready == replicas {
        current_name = update.name.clone();
        current_replicas = updated;
    }
    let next = json!({
        "observedGeneration": set.metadata.generation.unwrap_or(1),
        "replicas": live.len(),
        "readyReplicas": ready,
        "availableReplicas": ready,
        "currentReplicas": current_replicas,
        "updatedReplicas": updated,
        "currentRevision": current_name,
        "updateRevision": update.name,
        "collisionCount": 0,
    });
    let stored = set
        .status
        .as_ref()
        .and_then(|s| serde_json::to_value(s).ok())
        .unwrap_or_else(|| json!({}));
    let same = next
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| stored.get(k).unwrap_or(&json!(0)) == v);
    (!same).then_some(next)
}

#[cfg(test)]
mod tests;
