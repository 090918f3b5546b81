//! The eviction manager: one housekeeping pass as a pure function of the node's stats, its pods
//! and `now` (control-loops spec §2.3–§2.7; seed "Eviction Policy").

use super::ranking::{self, Candidate};
use super::signals::{self, NodeStats, Observation};
use super::thresholds::{Condition, Resource, Signal, Threshold};
use berth_core::quantity::Quantity;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// The eviction settings of one node.
#[derive(Clone, Debug, PartialEq)]
pub struct EvictionConfig {
    pub thresholds: Vec<Threshold>,
    /// `eviction-max-pod-grace-period` in seconds (upstream default 0).
    pub max_pod_grace_period: i64,
    /// `eviction-pressure-transition-period` (upstream default 5m).
    pub pressure_transition_period: Duration,
    /// Whether pod priority ranks pods for eviction (upstream's feature gate `PodPriority`,
    /// on by default since 1.11; off: the seed's QoS-only order).
    pub pod_priority: bool,
}

impl Default for EvictionConfig {
    fn default() -> Self {
        EvictionConfig {
            thresholds: Vec::new(),
            max_pod_grace_period: 0,
            pressure_transition_period: Duration::from_secs(300),
            pod_priority: true,
        }
    }
}

/// Disk the node itself can free before evicting pods.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reclaimable {
    /// Dead containers' writable layers and logs (on nodefs).
    pub dead_containers_bytes: i64,
    pub dead_containers_inodes: i64,
    /// Images no running pod uses (on imagefs, or nodefs without one).
    pub unused_images_bytes: i64,
    pub unused_images_inodes: i64,
}

/// Node-level reclaim steps, in the order performed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reclaim {
    DeleteDeadContainers,
    DeleteUnusedImages,
}

/// A pod to evict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Eviction {
    /// `namespace/name`.
    pub pod: String,
    /// Grace: 0 for hard thresholds; min(pod's, eviction-max-pod-grace-period) for soft.
    pub grace_period_seconds: i64,
    pub signal: Signal,
    pub resource: Resource,
    /// Upstream's status/event message.
    pub message: String,
    /// Containers whose usage exceeds their request, with their usage (for event annotations).
    pub offending_containers: Vec<(String, String)>,
}

/// What one pass decided.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decisions {
    /// Pressure conditions to report True (others False).
    pub conditions: BTreeSet<Condition>,
    /// The resource being reclaimed (for the node's `EvictionThresholdMet` event).
    pub reclaiming: Option<Resource>,
    /// Node-level reclaim to perform now.
    pub reclaim: Vec<Reclaim>,
    /// At most one pod per pass.
    pub eviction: Option<Eviction>,
    /// Signals whose thresholds are met this pass (grace ignored), for logs and tests.
    pub met: Vec<Signal>,
}

/// What a pass looks at.
#[derive(Clone, Debug)]
pub struct Inputs<'a> {
    pub stats: &'a NodeStats,
    /// Active pods on the node (not terminating).
    pub pods: &'a [Candidate],
    pub reclaimable: Reclaimable,
    /// System daemons use more memory than kube-reserved + system-reserved.
    pub system_over_reserved: bool,
    /// An evicted pod is still terminating: evict nobody else until it is gone.
    pub eviction_in_flight: bool,
}

/// The manager's memory between passes.
#[derive(Clone, Debug, Default)]
pub struct EvictionManager {
    config: EvictionConfig,
    first_observed: BTreeMap<usize, Duration>,
    condition_last_observed: BTreeMap<Condition, Duration>,
    thresholds_met: BTreeSet<usize>,
}

/// Whether `t` is met by `obs`; with `min_reclaim`, the bar is raised by the minimum reclaim.
fn is_met(t: &Threshold, obs: &BTreeMap<Signal, Observation>, min_reclaim: bool) -> bool {
    let Some(o) = obs.get(&t.signal) else {
        return false;
    };
    let mut bar = t.value.quantity(o.capacity);
    if min_reclaim {
        if let Some(r) = t.min_reclaim {
            bar += r.quantity(o.capacity);
        }
    }
    o.available < bar
}

impl EvictionManager {
    pub fn new(config: EvictionConfig) -> EvictionManager {
        EvictionManager {
            config,
            ..Default::default()
        }
    }

    pub fn config(&self) -> &EvictionConfig {
        &self.config
    }

    /// One housekeeping pass at `now` (any monotonic origin).
    pub fn housekeeping(&mut self, input: &Inputs<'_>, now: Duration) -> Decisions {
        let mut d = Decisions::default();
        let thresholds = &self.config.thresholds;
        if thresholds.is_empty() {
            return d;
        }
        let obs = signals::observe(input.stats);
        // Met now, plus last pass's met thresholds not yet past their minimum reclaim.
        let mut met: BTreeSet<usize> = (0..thresholds.len())
            .filter(|&i| is_met(&thresholds[i], &obs, false))
            .collect();
        for &i in &self.thresholds_met {
            if is_met(&thresholds[i], &obs, true) {
                met.insert(i);
            }
        }
        self.first_observed = met
            .iter()
            .map(|&i| (i, *self.first_observed.get(&i).unwrap_or(&now)))
            .collect();
        for &i in &met {
            self.condition_last_observed
                .insert(thresholds[i].signal.condition(), now);
        }
        let transition = self.config.pressure_transition_period;
        d.conditions = self
            .condition_last_observed
            .iter()
            .filter(|(_, &at)| now.saturating_sub(at) < transition)
            .map(|(&c, _)| c)
            .collect();
        d.met = met.iter().map(|&i| thresholds[i].signal).collect();
        let actionable: BTreeSet<usize> = met
            .iter()
            .copied()
            .filter(|i| now.saturating_sub(self.first_observed[i]) >= thresholds[*i].grace_period)
            .collect();
        self.thresholds_met = actionable.clone();
        // Memory first, then the configured order.
        let Some(&chosen) = actionable
            .iter()
            .min_by_key(|&&i| (thresholds[i].signal.resource() != Resource::Memory, i))
        else {
            return d;
        };
        let threshold = &thresholds[chosen];
        let resource = threshold.signal.resource();
        d.reclaiming = Some(resource);

        d.reclaim = node_reclaim(threshold.signal, input.stats.imagefs.is_some());
        if !d.reclaim.is_empty() {
            let after = after_reclaim(input.stats, &input.reclaimable, &d.reclaim);
            let obs = signals::observe(&after);
            if !thresholds.iter().any(|t| is_met(t, &obs, false)) {
                return d;
            }
        }
        if input.eviction_in_flight {
            return d;
        }
        let order = ranking::rank_for(
            input.pods,
            resource,
            input.system_over_reserved,
            self.config.pod_priority,
        );
        if let Some(&first) = order.first() {
            let pod = &input.pods[first];
            let grace = if threshold.hard {
                0
            } else {
                pod.termination_grace_seconds
                    .min(self.config.max_pod_grace_period)
                    .max(0)
            };
            let met = obs
                .get(&threshold.signal)
                .map(|o| (threshold.value.quantity(o.capacity), o.available));
            let (message, offending) = eviction_message(pod, resource, met);
            d.eviction = Some(Eviction {
                pod: pod.key.clone(),
                grace_period_seconds: grace,
                signal: threshold.signal,
                resource,
                message,
                offending_containers: offending,
            });
        }
        d
    }
}

/// The node-level reclaim steps for a signal (the seed's "Reclaiming Node-level Resources").
pub fn node_reclaim(signal: Signal, dedicated_imagefs: bool) -> Vec<Reclaim> {
    use Reclaim::*;
    match (signal, dedicated_imagefs) {
        (Signal::NodeFsAvailable | Signal::NodeFsInodesFree, true) => vec![DeleteDeadContainers],
        (Signal::ImageFsAvailable | Signal::ImageFsInodesFree, true) => vec![DeleteUnusedImages],
        (
            Signal::NodeFsAvailable
            | Signal::NodeFsInodesFree
            | Signal::ImageFsAvailable
            | Signal::ImageFsInodesFree,
            false,
        ) => vec![DeleteDeadContainers, DeleteUnusedImages],
        _ => vec![],
    }
}

/// The stats after the given reclaim steps free what they can.
pub fn after_reclaim(stats: &NodeStats, r: &Reclaimable, steps: &[Reclaim]) -> NodeStats {
    let mut s = stats.clone();
    for step in steps {
        match step {
            Reclaim::DeleteDeadContainers => {
                s.nodefs.used_bytes -= r.dead_containers_bytes;
                s.nodefs.inodes_used -= r.dead_containers_inodes;
            }
            Reclaim::DeleteUnusedImages => {
                let fs = s.imagefs.as_mut().unwrap_or(&mut s.nodefs);
                fs.used_bytes -= r.unused_images_bytes;
                fs.inodes_used -= r.unused_images_inodes;
            }
        }
    }
    s
}

/// How a usage or request of `resource` prints in messages.
fn print(resource: Resource, v: i64) -> String {
    match resource {
        Resource::Memory | Resource::EphemeralStorage => Quantity::from_bytes(v).to_string(),
        Resource::Inodes | Resource::Pids => Quantity::from_int(v).to_string(),
    }
}

/// Upstream's eviction message: `The node was low on resource: memory. `, then the threshold
/// met (`Threshold quantity: 100Mi, available: 50Mi. `, from `met`: the threshold's quantity and
/// what was available), then `Container c was using 1Gi, request is 0, has larger consumption
/// of memory. ` for each container using more than it requests.
pub fn eviction_message(
    pod: &Candidate,
    resource: Resource,
    met: Option<(i64, i64)>,
) -> (String, Vec<(String, String)>) {
    let mut msg = format!("The node was low on resource: {}. ", resource.name());
    if let Some((quantity, available)) = met {
        msg.push_str(&format!(
            "Threshold quantity: {}, available: {}. ",
            print(resource, quantity),
            print(resource, available)
        ));
    }
    let mut offending = Vec::new();
    for c in &pod.containers {
        let usage = c.usage.get(resource);
        let request = match resource {
            Resource::Inodes | Resource::Pids => 0,
            _ => c.request.get(resource),
        };
        if usage > request {
            let u = print(resource, usage);
            msg.push_str(&format!(
                "Container {} was using {}, request is {}, has larger consumption of {}. ",
                c.name,
                u,
                print(resource, request),
                resource.name()
            ));
            offending.push((c.name.clone(), u));
        }
    }
    (msg, offending)
}

#[cfg(test)]
mod tests;
