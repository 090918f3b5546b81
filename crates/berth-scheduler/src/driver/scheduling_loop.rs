//! The scheduling loop: the only owner of the cache, the queue and the engine.

use super::informers::{self, Kind, Update, WatchedPod};
use super::ops::{AttemptResult, Ops};
use super::recorder::{PodRef, Recorder};
use super::{DriverConfig, DriverError};
use crate::model::Pod;
use crate::queue::{QueueConfig, QueuedPod, SchedulingQueue};
use crate::{ClusterCache, ClusterEvent, Decision, Scheduler};
use berth_core::clock::Clock;
use berth_informers::Event;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// Longest the loop sleeps without looking at the queue (unschedulable timeouts need a tick).
const MAX_IDLE: Duration = Duration::from_secs(1);

/// What a finished binding reports back to the loop.
struct Bound {
    pod: QueuedPod<String, Pod>,
    node: String,
    result: Result<(), String>,
    /// When the attempt that chose `node` started (for the e2e latency).
    started: Instant,
}

struct Loop {
    name: String,
    cache: ClusterCache,
    queue: SchedulingQueue<String, Pod>,
    scheduler: Scheduler,
    recorder: Recorder,
    preemption: super::preemption::Preemption,
    clock: Clock,
    started: Instant,
    bound_tx: mpsc::UnboundedSender<Bound>,
    ops: Ops,
    /// Kinds whose initial list is complete; nothing is scheduled before all are.
    synced: [bool; informers::KINDS],
    /// With leader election: `true` while this instance holds the lease.
    leading: Option<watch::Receiver<bool>>,
    /// The KubeSchedulerConfiguration profile, if this instance runs one (1.35's messages).
    profile: Option<crate::config::CompiledProfile>,
    /// Scheduling cycles so far: one in ten times its plugins, as upstream samples them.
    cycles: u64,
}

/// The queue's back-off: the configuration's `podInitialBackoffSeconds`/`podMaxBackoffSeconds`
/// for a profile, upstream's defaults otherwise.
fn queue_config(cfg: &DriverConfig) -> QueueConfig {
    let mut q = QueueConfig::default();
    if let Some(p) = &cfg.profile {
        let (initial, max) = p.backoff_seconds;
        q.initial_backoff = Duration::from_secs(initial.max(1) as u64);
        q.max_backoff = Duration::from_secs(max.max(initial).max(1) as u64);
    }
    q
}

/// Runs the scheduler named in `cfg` against `client` until the process ends.
pub async fn run(client: kube::Client, cfg: DriverConfig) -> Result<(), DriverError> {
    run_with(client, cfg, Ops::new(), None).await
}

/// Like [`run`], reporting into `ops`; with `leading`, pods are scheduled only while it reads
/// `true` (the informers and the cache run either way, so a standby takes over warm).
pub async fn run_with(
    client: kube::Client,
    cfg: DriverConfig,
    ops: Ops,
    leading: Option<watch::Receiver<bool>>,
) -> Result<(), DriverError> {
    let scheduler = Scheduler::builder()
        .policy(cfg.policy.clone())
        .seed(cfg.seed)
        .percentage_of_nodes_to_score(cfg.percentage_of_nodes_to_score)
        // A profile's PodTopologySpread args (a Policy has none: only pods' own constraints).
        .topology_spread_args(spread_args(cfg.profile.as_ref()))
        .framework_profile(cfg.profile.is_some())
        .plugin_args(
            cfg.profile
                .as_ref()
                .map(|p| p.plugin_args.clone())
                .unwrap_or_default(),
        )
        .build()
        .map_err(|e| DriverError::Build(e.to_string()))?;
    let (tx, mut updates) = mpsc::unbounded_channel();
    informers::spawn_all(&client, &tx);
    let (bound_tx, mut bound_rx) = mpsc::unbounded_channel();
    let recorder = Recorder::new(client.clone(), &cfg.scheduler_name, cfg.clock.clone());
    let mut l = Loop {
        name: cfg.scheduler_name.clone(),
        cache: ClusterCache::new(),
        queue: SchedulingQueue::new(queue_config(&cfg)),
        scheduler,
        preemption: super::preemption::Preemption::new(
            client.clone(),
            recorder.events().clone(),
            !cfg.disable_preemption,
            cfg.clock.clone(),
        ),
        recorder,
        started: cfg.clock.instant(),
        clock: cfg.clock.clone(),
        bound_tx,
        // Upstream's attempt metrics carry the profile (the scheduler name).
        ops: ops.for_profile(&cfg.scheduler_name),
        synced: [false; informers::KINDS],
        leading,
        profile: cfg.profile.clone(),
        cycles: 0,
    };
    tracing::info!(scheduler = %l.name, "scheduler started");
    loop {
        let (active, backoff, unschedulable) = l.queue.pending_counts();
        l.ops.pending(active, backoff, unschedulable);
        // Everything already known goes into the cache before the next decision.
        while let Ok(u) = updates.try_recv() {
            l.apply(u);
        }
        while let Ok(b) = bound_rx.try_recv() {
            l.finish_binding(b);
        }
        let now = l.now();
        if l.may_schedule() {
            if let Some(pod) = l.queue.pop(now) {
                l.schedule_one(pod);
                continue;
            }
        }
        let wait = l
            .queue
            .next_ready_at(now)
            .map(|at| at.saturating_sub(now))
            .unwrap_or(MAX_IDLE)
            .min(MAX_IDLE);
        tokio::select! {
            u = updates.recv() => match u {
                Some(u) => l.apply(u),
                None => return Ok(()),
            },
            Some(b) = bound_rx.recv() => l.finish_binding(b),
            _ = leadership_changed(&mut l.leading) => {}
            _ = l.clock.sleep(wait) => {}
        }
    }
}

impl Loop {
    /// Cluster time since the loop started: the queue's back-offs are in cluster time.
    fn now(&self) -> Duration {
        self.started.elapsed().saturating_mul(self.clock.speed())
    }

    /// Whether pods may be popped now: every informer has listed, and we lead (if electing).
    fn may_schedule(&self) -> bool {
        self.synced.iter().all(|s| *s) && self.leading.as_ref().is_none_or(|r| *r.borrow())
    }

    fn synced(&mut self, kind: Kind) {
        self.synced[kind as usize] = true;
        if self.synced.iter().all(|s| *s) && !self.ops.synced() {
            tracing::info!(scheduler = %self.name, "informers synced");
            self.ops.set_synced();
        }
    }

    fn apply(&mut self, u: Update) {
        if let Some(kind) = u.synced() {
            return self.synced(kind);
        }
        let cache = &mut self.cache;
        let event = match u {
            Update::Pod(e) => return self.apply_pod(e),
            Update::Node(Event::Deleted(n)) => cache.remove_node(n.name()),
            Update::Node(e) => e.applied().map(|n| cache.upsert_node(&n.value)),
            Update::Service(Event::Deleted(s)) => Some(cache.remove_service(&s.key())),
            Update::Service(e) => e.applied().map(|s| cache.upsert_service(&s.value)),
            Update::ReplicationController(Event::Deleted(o)) => {
                Some(cache.remove_controller("ReplicationController", &o.key()))
            }
            Update::ReplicationController(e) => e
                .applied()
                .map(|o| cache.upsert_replication_controller(&o.value)),
            Update::ReplicaSet(Event::Deleted(o)) => {
                Some(cache.remove_controller("ReplicaSet", &o.key()))
            }
            Update::ReplicaSet(e) => e
                .applied()
                .map(|o| cache.upsert_selector_workload("ReplicaSet", &o.value)),
            Update::StatefulSet(Event::Deleted(o)) => {
                Some(cache.remove_controller("StatefulSet", &o.key()))
            }
            Update::StatefulSet(e) => e
                .applied()
                .map(|o| cache.upsert_selector_workload("StatefulSet", &o.value)),
            Update::PersistentVolume(Event::Deleted(o)) => {
                Some(cache.remove_persistent_volume(o.name()))
            }
            Update::PersistentVolume(e) => e
                .applied()
                .map(|o| cache.upsert_persistent_volume(o.value.clone())),
            Update::PersistentVolumeClaim(Event::Deleted(o)) => {
                Some(cache.remove_persistent_volume_claim(&o.key()))
            }
            Update::PersistentVolumeClaim(e) => e
                .applied()
                .map(|o| cache.upsert_persistent_volume_claim(o.value.clone())),
            Update::StorageClass(Event::Deleted(o)) => Some(cache.remove_storage_class(o.name())),
            Update::StorageClass(e) => e
                .applied()
                .map(|o| cache.upsert_storage_class(o.value.clone())),
        };
        if let Some(ev) = event {
            self.cluster_changed(&ev);
        }
    }

    fn apply_pod(&mut self, event: Event<WatchedPod>) {
        let (pod, deleted) = match &event {
            Event::Added(p) | Event::Updated { new: p, .. } => (&p.value, false),
            Event::Deleted(p) => (&p.value, true),
            Event::Synced => return,
        };
        // Nominations change only with a pod that carries one, or while some pod has one.
        if !pod.status.nominated_node_name.is_empty() || !self.preemption.nominated().is_empty() {
            self.preemption.pod_changed(&mut self.cache, pod, deleted);
        }
        let event = if deleted {
            self.pod_deleted(pod)
        } else {
            self.pod_changed(pod)
        };
        if let Some(ev) = event {
            self.cluster_changed(&ev);
        }
    }

    fn cluster_changed(&mut self, ev: &ClusterEvent) {
        let now = self.now();
        self.queue.move_on_event(|pod| ev.may_help(pod), now);
    }

    fn pod_changed(&mut self, pod: &Pod) -> Option<ClusterEvent> {
        let key = format!("{}/{}", pod.metadata.namespace, pod.metadata.name);
        if !pod.spec.node_name.is_empty() {
            // Bound (by us or anyone): the cache owns it; it leaves the queue.
            self.queue.delete(&key);
            return self.cache.upsert_pod(pod);
        }
        if self.cache.is_assumed(&key) {
            return None; // our binding is in flight; its result decides
        }
        let ours = pod.spec.scheduler_name == self.name;
        let terminating = pod.metadata.deletion_timestamp.is_some();
        let done = matches!(pod.status.phase.as_str(), "Succeeded" | "Failed");
        // A gated pod waits outside the queue, with no attempt and no event (upstream's
        // SchedulingGates PreEnqueue); the update removing its last gate queues it.
        let gated = !pod.spec.scheduling_gates.is_empty();
        if !ours || terminating || done || gated {
            self.queue.delete(&key);
            return None;
        }
        let priority = pod.spec.priority.unwrap_or(0);
        let now = self.now();
        if self.queue.contains(&key) {
            // Status-only changes (our own condition updates) do not reset the pod's backoff.
            if self.queue.get(&key).is_some_and(|old| {
                old.spec != pod.spec || old.metadata.labels != pod.metadata.labels
            }) {
                self.queue.update(key, pod.clone(), priority, now);
            }
        } else {
            self.queue.add(key, pod.clone(), priority, now);
        }
        None
    }

    fn pod_deleted(&mut self, pod: &Pod) -> Option<ClusterEvent> {
        let key = format!("{}/{}", pod.metadata.namespace, pod.metadata.name);
        self.queue.delete(&key);
        if self.cache.is_assumed(&key) {
            let _ = self.cache.forget(&key);
        }
        self.cache.remove_pod(&key)
    }

    fn schedule_one(&mut self, queued: QueuedPod<String, Pod>) {
        let started = self.clock.instant();
        // The profile's addedAffinity and ignored resources apply to the pod itself.
        let info = self
            .scheduler
            .plugin_args()
            .compile_pod(&mut self.cache, &queued.payload);
        let pod = pod_ref(&queued.payload);
        let decision = {
            let nominated = self.preemption.nominated();
            self.scheduler
                .schedule_with_nominated(&self.cache, &info, &nominated)
        };
        let result = match &decision {
            Decision::Scheduled { .. } => AttemptResult::Scheduled,
            Decision::Unschedulable(_) => AttemptResult::Unschedulable,
            Decision::Error(_) => AttemptResult::Error,
        };
        self.ops.attempt(result, started.elapsed());
        self.cycles = self.cycles.wrapping_add(1);
        if self
            .cycles
            .is_multiple_of(100 / super::ops::PLUGIN_METRICS_SAMPLE_PERCENT)
        {
            // After the decision and its timing: the sample is not part of the attempt.
            let clock = &self.clock;
            let elapsed = || clock.instant().saturating_duration_since(started);
            let samples = self.scheduler.sample_plugins(&self.cache, &info, &elapsed);
            self.ops.plugin_samples(&samples);
        }
        if result == AttemptResult::Scheduled {
            self.ops
                .scheduled_at_attempt(queued.attempts.saturating_add(1));
        }
        match decision {
            Decision::Scheduled {
                node,
                evaluated_nodes,
                feasible_nodes,
                ..
            } => {
                if let Err(e) = self.cache.assume(info, &node) {
                    tracing::warn!(pod = %queued.key, error = %e, "assume failed");
                    let now = self.now();
                    self.queue.add_backoff(queued, now);
                    return;
                }
                let recorder = self.recorder.clone();
                let tx = self.bound_tx.clone();
                // Outstanding until the `Scheduled` event is queued: a stopping scheduler waits.
                let pending = recorder.pending_work();
                crate::driver::spawn(async move {
                    let _pending = pending;
                    let result = recorder.bind(&pod, &node).await.map_err(|e| e.to_string());
                    if result.is_ok() {
                        // kube-scheduler's line, at its verbosity (2).
                        tracing::info!(
                            v = 2,
                            pod = %queued.key,
                            node = %node,
                            evaluatedNodes = evaluated_nodes,
                            feasibleNodes = feasible_nodes,
                            "Successfully bound pod to node"
                        );
                        recorder.scheduled(&pod, &node);
                    }
                    let _ = tx.send(Bound {
                        pod: queued,
                        node,
                        result,
                        started,
                    });
                });
            }
            Decision::Unschedulable(fit) => {
                if let Some(profile) = &self.profile {
                    // 1.35: the message carries what preemption (a postFilter plugin) found.
                    let preempted = self.preemption.on_unschedulable(
                        &mut self.scheduler,
                        &mut self.cache,
                        &info,
                        &fit,
                        &self.ops,
                    );
                    let post = crate::config::messages::PostFilter {
                        dynamic_resources: profile.dynamic_resources,
                        preemption_failed: profile.preemption && !preempted,
                    };
                    let message = crate::config::messages::fit_message(&fit, post);
                    tracing::info!(v = 2, pod = %queued.key, err = %message, "{NO_FIT}");
                    self.recorder.failed(&pod, &message, "Unschedulable");
                } else {
                    let message = fit.message();
                    tracing::info!(v = 2, pod = %queued.key, err = %message, "{NO_FIT}");
                    self.recorder.failed(&pod, &message, "Unschedulable");
                    self.preemption.on_unschedulable(
                        &mut self.scheduler,
                        &mut self.cache,
                        &info,
                        &fit,
                        &self.ops,
                    );
                }
                let now = self.now();
                self.queue.add_unschedulable(queued, now);
            }
            Decision::Error(message) => {
                if message == crate::engine::NO_NODES_AVAILABLE {
                    tracing::info!(
                        v = 2,
                        pod = %queued.key,
                        "Unable to schedule pod; no nodes are registered to the cluster; waiting"
                    );
                } else {
                    // klog's error lines put `err` first.
                    tracing::error!(err = %message, pod = %queued.key, "Error scheduling pod; retrying");
                }
                self.recorder.failed(&pod, &message, "SchedulerError");
                let now = self.now();
                self.queue.add_backoff(queued, now);
            }
        }
    }

    fn finish_binding(&mut self, b: Bound) {
        match b.result {
            Ok(()) => {
                self.ops.scheduled_e2e(b.started.elapsed());
                self.queue.done(&b.pod.key);
            }
            Err(e) => {
                tracing::info!(pod = %b.pod.key, node = %b.node, error = %e, "binding failed; retrying");
                let _ = self.cache.forget(&b.pod.key);
                let now = self.now();
                self.queue.add_backoff(b.pod, now);
            }
        }
    }
}

/// kube-scheduler's per-pod line for a pod no node fits (`err` is the event's message).
const NO_FIT: &str = "Unable to schedule pod; no fit; waiting";

/// Resolves when leadership flips (never without leader election, or once the sender is gone).
async fn leadership_changed(leading: &mut Option<watch::Receiver<bool>>) {
    match leading {
        Some(rx) => {
            if rx.changed().await.is_err() {
                std::future::pending::<()>().await
            }
        }
        None => std::future::pending().await,
    }
}

fn pod_ref(pod: &Pod) -> PodRef {
    PodRef {
        namespace: pod.metadata.namespace.clone(),
        name: pod.metadata.name.clone(),
        uid: pod.metadata.uid.clone(),
        generation: pod.metadata.generation,
    }
}

/// The PodTopologySpread arguments of a KubeSchedulerConfiguration profile (upstream's
/// `System` defaults unless it says `List`), or none under a Policy file.
fn spread_args(
    profile: Option<&crate::config::CompiledProfile>,
) -> crate::topology_spread::TopologySpreadArgs {
    profile.map_or_else(
        crate::topology_spread::TopologySpreadArgs::none,
        crate::config::CompiledProfile::topology_spread_args,
    )
}
