//! The ReplicaSet (and ReplicationController) engine, as upstream's `pkg/controller/replicaset`:
//! which pods a set owns (claim: adopt and release by selector and controller reference), how many
//! to create or delete to match `replicas` (in slow-start batches, at most a burst at a time),
//! which pods to delete first ([`rank`]), and the status to write.
//!
//! Pure: pods and `now` in, a [`Plan`] out. The driver turns the plan into API calls and feeds
//! the engine again when the pods it created or deleted are observed.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

pub(crate) mod driver;
pub mod failure;
pub mod rank;
#[cfg(test)]
mod tests;
pub mod workload;

/// At most this many creates or deletes in one sync (upstream `BurstReplicas`).
pub const BURST_REPLICAS: usize = 500;

/// A pod's phase, as far as the engine distinguishes phases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Pending,
    Running,
    Succeeded,
    Failed,
    Unknown,
}

impl Phase {
    /// The phase of `status.phase` (an empty or unknown string is Pending, as a new pod is).
    pub fn parse(s: &str) -> Phase {
        match s {
            "Running" => Phase::Running,
            "Succeeded" => Phase::Succeeded,
            "Failed" => Phase::Failed,
            "Unknown" => Phase::Unknown,
            _ => Phase::Pending,
        }
    }
}

/// A pod as the engine reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct PodView {
    pub name: String,
    pub uid: String,
    pub labels: BTreeMap<String, String>,
    /// Empty while the pod is unscheduled.
    pub node_name: String,
    pub phase: Phase,
    /// `Ready=True` since this time; `None` when the pod is not ready.
    pub ready_since: Option<DateTime<Utc>>,
    /// The most restarts of any of its containers.
    pub max_restarts: i32,
    pub created: Option<DateTime<Utc>>,
    pub deleting: bool,
    /// `controller.kubernetes.io/pod-deletion-cost` (0 when absent or malformed).
    pub deletion_cost: i32,
    /// The uid of its controller owner reference, if it has one.
    pub controller_uid: Option<String>,
}

impl PodView {
    /// Neither finished nor being deleted (upstream `IsPodActive`).
    pub fn is_active(&self) -> bool {
        !matches!(self.phase, Phase::Succeeded | Phase::Failed) && !self.deleting
    }

    /// Ready now.
    pub fn is_ready(&self) -> bool {
        self.ready_since.is_some()
    }

    /// Ready for at least `min_ready_seconds` (upstream `IsPodAvailable`).
    pub fn is_available(&self, min_ready_seconds: i64, now: DateTime<Utc>) -> bool {
        match self.ready_since {
            None => false,
            Some(_) if min_ready_seconds <= 0 => true,
            Some(since) => since + chrono::Duration::seconds(min_ready_seconds) < now,
        }
    }
}

/// A ReplicaSet or ReplicationController as the engine reads it.
#[derive(Clone, Copy)]
pub struct SetView<'a> {
    pub uid: &'a str,
    pub replicas: i32,
    pub min_ready_seconds: i64,
    pub generation: i64,
    pub deleting: bool,
    /// Whether a pod's labels match the set's selector.
    pub selects: &'a dyn Fn(&BTreeMap<String, String>) -> bool,
    /// The template's labels (for `fullyLabeledReplicas`).
    pub template_labels: &'a BTreeMap<String, String>,
}

/// Which pods a set owns after adoption and release (upstream `ClaimPods`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Claims {
    /// Indexes of the pods the set owns (already, or once adopted).
    pub owned: Vec<usize>,
    /// Orphans that match the selector: the driver adds the controller reference.
    pub adopt: Vec<usize>,
    /// Owned pods that no longer match: the driver removes the controller reference.
    pub release: Vec<usize>,
}

/// Claims `pods` for `set`. A set being deleted adopts and releases nothing; a pod being deleted
/// is not adopted.
pub fn claim(set: &SetView, pods: &[PodView]) -> Claims {
    let mut claims = Claims::default();
    for (i, pod) in pods.iter().enumerate() {
        let matches = (set.selects)(&pod.labels);
        match pod.controller_uid.as_deref() {
            Some(uid) if uid == set.uid => {
                if matches || set.deleting {
                    claims.owned.push(i);
                } else if !pod.deleting {
                    claims.release.push(i);
                }
            }
            Some(_) => {}
            None => {
                if matches && !set.deleting && !pod.deleting {
                    claims.adopt.push(i);
                    claims.owned.push(i);
                }
            }
        }
    }
    claims
}

/// What one sync of a set does.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub adopt: Vec<String>,
    pub release: Vec<String>,
    /// Pods to create, in slow-start batches (1, 2, 4, ...): the driver stops at the first batch
    /// with a failure.
    pub create_batches: Vec<usize>,
    /// Pods to delete, most deletable first.
    pub delete: Vec<String>,
    pub status: Status,
}

/// The set's `status` counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Status {
    pub replicas: i32,
    pub fully_labeled_replicas: i32,
    pub ready_replicas: i32,
    pub available_replicas: i32,
    pub observed_generation: i64,
}

/// Slow-start batch sizes for `n` creations: 1, 2, 4, ... (upstream `slowStartBatch` with an
/// initial batch of 1), the last one what remains.
pub fn slow_start_batches(n: usize) -> Vec<usize> {
    let mut batches = Vec::new();
    let (mut remaining, mut size) = (n, 1usize);
    while remaining > 0 {
        let batch = size.min(remaining);
        batches.push(batch);
        remaining -= batch;
        size = size.saturating_mul(2);
    }
    batches
}

/// One sync of `set` over `pods` (every pod of its namespace that it might claim). `related`
/// are the active pods of sibling sets (the other ReplicaSets of the same Deployment), counted
/// when ranking pods by how many of the family share their node.
pub fn reconcile(
    set: &SetView,
    pods: &[PodView],
    related: &[&PodView],
    now: DateTime<Utc>,
) -> Plan {
    let claims = claim(set, pods);
    let active: Vec<&PodView> = claims
        .owned
        .iter()
        .map(|&i| &pods[i])
        .filter(|p| p.is_active())
        .collect();
    let want = set.replicas.max(0) as usize;
    let (mut create_batches, mut delete) = (Vec::new(), Vec::new());
    if !set.deleting {
        if active.len() < want {
            create_batches = slow_start_batches((want - active.len()).min(BURST_REPLICAS));
        } else if active.len() > want {
            let diff = (active.len() - want).min(BURST_REPLICAS);
            let mut family: Vec<&PodView> = active.clone();
            family.extend(related.iter().copied().filter(|p| p.is_active()));
            delete = rank::pods_to_delete(&active, &family, diff, now)
                .into_iter()
                .map(|p| p.name.clone())
                .collect();
        }
    }
    let fully_labeled = active
        .iter()
        .filter(|p| {
            set.template_labels
                .iter()
                .all(|(k, v)| p.labels.get(k) == Some(v))
        })
        .count();
    let status = Status {
        replicas: active.len() as i32,
        fully_labeled_replicas: fully_labeled as i32,
        ready_replicas: active.iter().filter(|p| p.is_ready()).count() as i32,
        available_replicas: active
            .iter()
            .filter(|p| p.is_available(set.min_ready_seconds, now))
            .count() as i32,
        observed_generation: set.generation,
    };
    Plan {
        adopt: claims.adopt.iter().map(|&i| pods[i].name.clone()).collect(),
        release: claims
            .release
            .iter()
            .map(|&i| pods[i].name.clone())
            .collect(),
        create_batches,
        delete,
        status,
    }
}
