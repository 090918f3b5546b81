//! The node simulator's driver: feeds each node's [`NodeModel`] from the pod watch, runs the
//! housekeeping pass every interval, and carries the decisions out through the API (node
//! conditions, pod admission and eviction, events). The stats summary and logs are answered on
//! request by [`crate::endpoints`] from the same models.

use crate::eviction::Eviction;
use crate::model::{NodeModel, Phase, PodState, Rejection};
use crate::simulate::{Simulate, SIMULATE_ANNOTATION};
use crate::status::{ConditionWrite, Readiness, Shown, StatusSync, READY_FALSE, READY_TRUE};
use berth_core::clock::Clock;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, Patch, PatchParams};
use kube::ResourceExt;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// All simulated nodes' state.
pub struct Sim {
    clients: crate::clients::Clients,
    clock: Clock,
    origin: Instant,
    interval: Duration,
    nodes: BTreeMap<String, Arc<Mutex<NodeModel>>>,
    /// What the API shows of each node's conditions, from the node watch.
    shown: Mutex<HashMap<String, Shown>>,
    /// How each node behaves (`berth.io/simulate`); absent means running.
    modes: Mutex<HashMap<String, Simulate>>,
    /// What the programs of recognised containers printed, by pod (`kubectl logs` shows it).
    program_output: std::sync::OnceLock<crate::commands::ProgramOutput>,
    /// The nodes whose kubelets run in this process now (all, unless shared among replicas).
    hosted: Arc<crate::share::Hosted>,
    /// Where the kubelets' events go (written off the housekeeping path).
    events: crate::events::Events,
    /// Each node's `spec.unschedulable` as last seen (its change is an event).
    unschedulable: Mutex<HashMap<String, bool>>,
    /// How often the kubelets report their status (the lease renewal interval).
    status_update: Duration,
    /// `berth simulate`'s kubelets: see [`Sim::simulation`].
    simulation: bool,
    /// Each node's wake-up for its housekeeping loop when its pods or the Node change (used by
    /// [`Sim::simulation`]'s loops, which otherwise sleep while nothing changes).
    wakes: BTreeMap<String, Arc<tokio::sync::Notify>>,
}

/// One node's housekeeping memory between passes.
#[derive(Default)]
struct PassState {
    status: StatusSync,
    /// When (cluster time) the node's conditions were last posted (registration: zero).
    reported_at: Duration,
}

impl Sim {
    pub fn new(
        clients: crate::clients::Clients,
        nodes: Vec<NodeModel>,
        interval: Duration,
        clock: Clock,
        hosted: Arc<crate::share::Hosted>,
        events: crate::events::Events,
    ) -> Sim {
        let wakes = nodes
            .iter()
            .map(|n| (n.config.name.clone(), Arc::default()))
            .collect();
        Sim {
            clients,
            origin: clock.instant(),
            clock,
            interval,
            nodes: nodes
                .into_iter()
                .map(|n| (n.config.name.clone(), Arc::new(Mutex::new(n))))
                .collect(),
            shown: Mutex::new(HashMap::new()),
            modes: Mutex::new(HashMap::new()),
            program_output: std::sync::OnceLock::new(),
            hosted,
            events,
            unschedulable: Mutex::new(HashMap::new()),
            status_update: crate::DEFAULT_LEASE_RENEW_INTERVAL,
            simulation: false,
            wakes,
        }
    }

    /// For `berth simulate`, where a kubelet that posts nothing new costs nodes x simulated
    /// time: a node's housekeeping pass runs at its usual ticks only while something can change
    /// (a pod or the Node changed since the last pass, a container waits out a back-off, a
    /// usage ramp climbs, a pressure condition or threshold is live, a write is owed), and
    /// sleeps otherwise; nor is the status re-posted every `nodeStatusReportFrequency` when
    /// nothing changed (the node lifecycle controller of a simulation reads the nodes'
    /// simulated behaviour as their sign of life). Off (`berth serve`): every tick.
    pub fn simulation(mut self, on: bool) -> Sim {
        self.simulation = on;
        self
    }

    /// Something of `node` changed: its housekeeping runs at its next tick.
    fn wake(&self, node: &str) {
        if let Some(w) = self.wakes.get(node) {
            w.notify_one();
        }
    }

    /// How often the kubelets report their status (their `nodeStatusUpdateFrequency`).
    pub fn status_update_every(mut self, every: Duration) -> Sim {
        self.status_update = every;
        self
    }

    /// Where the kubelets' events go.
    pub fn events(&self) -> &crate::events::Events {
        &self.events
    }

    /// The nodes whose kubelets run here now.
    pub fn hosted(&self) -> Arc<crate::share::Hosted> {
        self.hosted.clone()
    }

    /// Whether `node`'s kubelet runs in this process now.
    pub fn runs_here(&self, node: &str) -> bool {
        self.hosted.runs(node)
    }

    /// Starts running `node`'s kubelet here (a shared node this replica took).
    pub fn run_here(&self, node: &str) {
        self.hosted.add(node);
        self.wake(node);
    }

    /// Stops `node`'s kubelet here at once and forgets its pods: should it come back, it
    /// catches up with them from the API.
    pub fn stop_here(&self, node: &str) {
        self.hosted.remove(node);
        self.forget_pods_except(node, &std::collections::HashSet::new());
    }

    /// How `node` behaves now (`berth.io/simulate`).
    pub fn mode(&self, node: &str) -> Simulate {
        self.modes
            .lock()
            .expect("node modes")
            .get(node)
            .copied()
            .unwrap_or_default()
    }

    /// Restarts `node`'s kubelet with `config` ([`NodeModel::reconfigure`]); whether it
    /// changed anything (false for a node not of this process).
    pub fn reconfigure(&self, node: &str, config: crate::NodeConfig) -> bool {
        self.nodes
            .get(node)
            .is_some_and(|m| m.lock().expect("node model").reconfigure(config))
    }

    /// The configuration `node`'s kubelet runs with now.
    pub fn config(&self, node: &str) -> Option<crate::NodeConfig> {
        Some(
            self.nodes
                .get(node)?
                .lock()
                .expect("node model")
                .config
                .clone(),
        )
    }

    /// The nodes of this process.
    pub fn node_names(&self) -> impl Iterator<Item = &String> {
        self.nodes.keys()
    }

    /// The clock the nodes read time from.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Takes in a node from the node watch: remembers what the API shows of its conditions and
    /// how the node is to behave. Returns the node's name when it just got back in touch with
    /// the API (it was stopped or partitioned), so that the driver catches up with its pods.
    pub fn observe_node(&self, node: &Node) -> Option<String> {
        let name = node
            .metadata
            .name
            .as_ref()
            .filter(|n| self.nodes.contains_key(*n))?;
        let wanted = node
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(SIMULATE_ANNOTATION))
            .map_or(Ok(Simulate::Running), |v| Simulate::parse(v))
            .unwrap_or_else(|e| {
                tracing::warn!(node = %name, error = %e, "ignoring the annotation");
                self.mode(name)
            });
        let before = self
            .modes
            .lock()
            .expect("node modes")
            .insert(name.clone(), wanted)
            .unwrap_or_default();
        if before != wanted {
            tracing::info!(node = %name, from = %before, to = %wanted, "simulated node behaviour changed");
        }
        let cordoned = node
            .spec
            .as_ref()
            .and_then(|s| s.unschedulable)
            .unwrap_or(false);
        let was = self
            .unschedulable
            .lock()
            .expect("unschedulable nodes")
            .insert(name.clone(), cordoned);
        if was.is_some_and(|w| w != cordoned) && self.runs_here(name) {
            let at = self.clock.timestamp();
            self.events
                .one(crate::events::schedulable(name, cordoned, &at));
        }
        let shown = Shown {
            resource_version: node
                .metadata
                .resource_version
                .as_deref()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0),
            statuses: node
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .into_iter()
                .flatten()
                .map(|c| (c.type_.clone(), c.status.clone()))
                .collect(),
        };
        self.shown
            .lock()
            .expect("shown nodes")
            .insert(name.clone(), shown);
        if let Some(model) = self.nodes.get(name) {
            let mut m = model.lock().expect("node model");
            m.view = node_view(node);
            m.extended = extended_capacity(node);
        }
        self.wake(name);
        (!before.reaches_api() && wanted.reaches_api()).then(|| name.clone())
    }

    /// The status patch (merge) that makes the node's extended resources allocatable as its
    /// capacity shows them (upstream's MachineInfo setter: allocatable follows capacity, an
    /// extended resource gone from capacity leaves allocatable), if one of ours needs it.
    pub fn allocatable_patch(&self, node: &Node) -> Option<Value> {
        let name = node.metadata.name.as_ref()?;
        if !self.has_node(name) || !self.mode(name).reaches_api() {
            return None;
        }
        let status = node.status.as_ref()?;
        let empty = BTreeMap::new();
        let capacity = status.capacity.as_ref().unwrap_or(&empty);
        let allocatable = status.allocatable.as_ref().unwrap_or(&empty);
        let mut patch = serde_json::Map::new();
        for (k, v) in capacity {
            if crate::admission::is_extended_resource(k) && allocatable.get(k) != Some(v) {
                patch.insert(k.clone(), json!(v));
            }
        }
        for k in allocatable.keys() {
            if crate::admission::is_extended_resource(k) && !capacity.contains_key(k) {
                patch.insert(k.clone(), Value::Null);
            }
        }
        (!patch.is_empty()).then(|| json!({"status": {"allocatable": patch}}))
    }

    /// Reads the node from the API again (admission is about to refuse a pod on what the
    /// watch showed, which may lag behind: upstream's kubelet fetches its node then too).
    async fn refresh_node(&self, node: &str) {
        let api: Api<Node> = Api::all(self.clients.node(node));
        if let Ok(n) = api.get(node).await {
            self.observe_node(&n);
        }
    }

    /// Cluster time since the simulation started (pressure transition periods are in it).
    fn now(&self) -> Duration {
        let elapsed = self.clock.instant().saturating_duration_since(self.origin);
        elapsed.saturating_mul(self.clock.speed())
    }

    /// Whether `node` is one of ours, its kubelet running here.
    pub fn has_node(&self, node: &str) -> bool {
        self.nodes.contains_key(node) && self.runs_here(node)
    }

    /// The node's stats summary now (`/stats/summary`).
    pub fn summary(&self, node: &str) -> Option<Value> {
        let now = self.now();
        let m = self.nodes.get(node)?.lock().expect("node model");
        Some(crate::summary::summary(&m, now, self.clock.now()))
    }

    /// The node's kubelet configuration (`/configz`).
    pub fn configz(&self, node: &str) -> Option<Value> {
        let m = self.nodes.get(node)?.lock().expect("node model");
        Some(crate::configz::configz(
            &m.config,
            self.interval,
            self.status_update,
        ))
    }

    /// A container's log now (`/containerLogs`); `pod` is `namespace/name`.
    pub fn container_log(
        &self,
        node: &str,
        pod: &str,
        container: &str,
        options: &crate::logs::Options,
    ) -> Result<String, crate::logs::LogError> {
        let now = self.now();
        let no_pod = || crate::logs::LogError::NoPod(pod.to_string());
        let m = self
            .nodes
            .get(node)
            .ok_or_else(no_pod)?
            .lock()
            .expect("node model");
        let p = m.pods.get(pod).ok_or_else(no_pod)?;
        let mut log = crate::logs::log(p, node, container, now, self.clock.now(), options)?;
        // A program's own lines follow the node's (tailLines counts them all).
        if let Some(program) = self.program_output.get().and_then(|o| o.get(pod)) {
            let lines = if options.previous {
                program.previous().unwrap_or_default()
            } else {
                program.lines()
            };
            for line in lines {
                if options.timestamps {
                    log.push_str(&line.at);
                    log.push(' ');
                }
                log.push_str(&line.text);
                log.push('\n');
            }
            if let Some(n) = options.tail_lines {
                let total = log.lines().count();
                if total > n {
                    let skip = total - n;
                    log = log.lines().skip(skip).map(|l| format!("{l}\n")).collect();
                }
            }
        }
        Ok(log)
    }

    /// Where the programs of recognised containers leave what they printed.
    pub fn show_program_output(&self, output: crate::commands::ProgramOutput) {
        let _ = self.program_output.set(output);
    }

    /// Whether the pod (`namespace/name`) is gone from the node or has ended there.
    pub fn pod_ended(&self, node: &str, pod: &str) -> bool {
        self.nodes.get(node).is_none_or(|m| {
            m.lock()
                .expect("node model")
                .pods
                .get(pod)
                .is_none_or(|p| p.phase == Phase::Terminated)
        })
    }

    /// Whether a node of ours, its kubelet running here, runs this pod.
    pub fn owns(&self, pod: &Pod) -> bool {
        pod.spec
            .as_ref()
            .and_then(|s| s.node_name.as_ref())
            .is_some_and(|n| self.has_node(n))
    }

    /// Takes in a pod event; admits new pods. Returns whether the pod lifecycle should proceed
    /// (start it, or finish its deletion).
    pub async fn on_pod(&self, pod: &Pod) -> bool {
        let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.clone()) else {
            return false;
        };
        let Some(model) = self.nodes.get(&node) else {
            return false;
        };
        let Ok(value) = serde_json::to_value(pod) else {
            return false;
        };
        let now = self.now();
        let (mut st, error) = PodState::from_pod(&value, now);
        if let Some(e) = error {
            tracing::warn!(pod = %st.key, error = %e, "ignoring invalid berth.io/usage annotation");
        }
        let deleting = pod.metadata.deletion_timestamp.is_some();
        // Admission of a pod first seen here; a refusal is checked again against the Node as
        // the API shows it now.
        let verdict = {
            let m = model.lock().expect("node model");
            let first = st.phase == Phase::Pending
                && !matches!(m.pods.get(&st.key), Some(old) if old.uid == st.uid);
            first.then(|| admit(&m, &st, &value))
        };
        let verdict = match verdict {
            Some(Err(_)) => {
                self.refresh_node(&node).await;
                let m = model.lock().expect("node model");
                Some(admit(&m, &st, &value))
            }
            v => v,
        };
        let rejection = {
            let mut m = model.lock().expect("node model");
            let mut rejection = None;
            match m.pods.get(&st.key) {
                Some(old) if old.uid == st.uid => {
                    // A restart the status reports (a run that exited and started again)
                    // starts a new run; otherwise the run goes on.
                    if st.restarts <= old.restarts {
                        st.started_at = old.started_at;
                        st.restarts = old.restarts;
                        st.last_exit = old.last_exit.clone();
                    }
                    st.backoff_until = old.backoff_until;
                    st.backoff_steps = old.backoff_steps;
                    st.admitted_at = old.admitted_at;
                    st.dead_reclaimed = old.dead_reclaimed;
                    st.ended = old.ended.clone();
                    // As the pod first arrived: bound by a scheduler, or placed by its
                    // nodeName (PodScheduled then comes from this kubelet, not a scheduler).
                    st.scheduled_at = old.scheduled_at;
                    st.phase = match (old.phase, st.phase) {
                        (Phase::Terminated, _) | (_, Phase::Terminated) => Phase::Terminated,
                        (Phase::Terminating, _) | (_, Phase::Terminating) => Phase::Terminating,
                        (Phase::Running, _) => Phase::Running,
                        (_, p) => p,
                    };
                }
                _ => match verdict {
                    Some(Ok(())) => st.phase = Phase::Running,
                    Some(Err(r)) => {
                        st.phase = Phase::Terminated;
                        rejection = Some(r);
                    }
                    None => {}
                },
            }
            let proceed = st.phase != Phase::Terminated || deleting;
            let key = st.key.clone();
            let was = m
                .pods
                .get(&key)
                .filter(|old| old.uid == st.uid)
                .map(|old| old.phase);
            // A pod that started before (the node caught up with it) has had its events.
            let was = match was {
                None if !value["status"]["startTime"].is_null() => Some(st.phase),
                was => was,
            };
            let events = lifecycle_events(&m, was, &st, &node, &self.clock.timestamp());
            self.events.record(events);
            m.pods.insert(key.clone(), st);
            m.pull_images(&key);
            self.wake(&node);
            match rejection {
                Some(r) => Some(r),
                None if proceed => None,
                None => return false,
            }
        };
        if let Some(r) = rejection {
            self.reject(pod, &node, r).await;
            return deleting;
        }
        true
    }

    /// Forgets the pods of `node` that are no longer in the API (their uids are not in `live`):
    /// those deleted while the node was out of touch.
    pub fn forget_pods_except(&self, node: &str, live: &std::collections::HashSet<String>) {
        if let Some(m) = self.nodes.get(node) {
            m.lock()
                .expect("node model")
                .pods
                .retain(|_, p| live.contains(&p.uid));
        }
        self.wake(node);
    }

    /// A pod is gone from the API.
    pub fn on_delete(&self, pod: &Pod) {
        let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.as_ref()) else {
            return;
        };
        if let Some(m) = self.nodes.get(node) {
            let key = format!("{}/{}", pod.namespace().unwrap_or_default(), pod.name_any());
            let mut m = m.lock().expect("node model");
            if m.pods
                .get(&key)
                .is_some_and(|p| Some(&p.uid) == pod.uid().as_ref())
            {
                m.pods.remove(&key);
            }
            drop(m);
            self.wake(node);
        }
    }

    async fn reject(&self, pod: &Pod, node: &str, r: Rejection) {
        let api: Api<Pod> = Api::namespaced(
            self.clients.node(node),
            &pod.namespace().unwrap_or_default(),
        );
        let mut status = json!({"status": {"phase": "Failed", "reason": r.reason, "message": r.message, "startTime": self.clock.timestamp()}});
        crate::observed::stamp(pod.metadata.generation, &mut status);
        if let Err(e) = api
            .patch_status(
                &pod.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&status),
            )
            .await
        {
            tracing::debug!(pod = %pod.name_any(), error = %e, "rejecting pod failed");
        }
        // The kubelet's line (`message_`: tracing keeps `message` for the line's own).
        tracing::info!(
            podUID = %pod.uid().unwrap_or_default(),
            pod = %format!("{}/{}", pod.namespace().unwrap_or_default(), pod.name_any()),
            reason = %r.reason,
            message_ = %r.message,
            "Pod admission denied"
        );
        self.pod_event(pod, node, &r.reason, &r.message, BTreeMap::new());
    }

    fn pod_event(
        &self,
        pod: &Pod,
        node: &str,
        reason: &str,
        message: &str,
        annotations: BTreeMap<String, String>,
    ) {
        let ns = pod.namespace().unwrap_or_default();
        let involved = json!({"kind": "Pod", "apiVersion": "v1", "namespace": ns, "name": pod.name_any(), "uid": pod.uid()});
        post_event(
            &self.events,
            &self.clock,
            &ns,
            involved,
            "Warning",
            reason,
            message,
            node,
            annotations,
        );
    }

    /// Runs every node's housekeeping loop until one stops (a panic is carried on), then
    /// stops the others: one loop for a supervisor to restart, rather than one per node.
    pub async fn housekeeping(self: Arc<Self>) {
        let mut loops = tokio::task::JoinSet::new();
        for name in self.nodes.keys() {
            loops.spawn(self.clone().housekeeping_loop(name.clone()));
        }
        if let Some(Err(e)) = loops.join_next().await {
            if e.is_panic() {
                std::panic::resume_unwind(e.into_panic());
            }
        }
    }

    async fn housekeeping_loop(self: Arc<Self>, node: String) {
        if self.simulation {
            return self.simulated_housekeeping_loop(node).await;
        }
        let mut tick = self.clock.interval(self.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut state = PassState::default();
        loop {
            tick.tick().await;
            let _ = self.pass(&node, &mut state).await;
        }
    }

    /// [`Sim::simulation`]'s loop: passes at the ticks of `serve`'s, but after a quiet pass
    /// none until the node is woken; the next then runs at the next tick (so a burst of pod
    /// changes makes one pass, as in `serve`).
    async fn simulated_housekeeping_loop(self: Arc<Self>, node: String) {
        let period = self
            .clock
            .tokio_duration(self.interval)
            .max(Duration::from_millis(1));
        let origin = self.clock.instant();
        let wake = self.wakes.get(&node).cloned().unwrap_or_default();
        let mut state = PassState::default();
        loop {
            if self.pass(&node, &mut state).await {
                wake.notified().await;
            }
            let now = self.clock.instant();
            let ticks = now.saturating_duration_since(origin).as_nanos() / period.as_nanos();
            let next = u32::try_from(ticks + 1)
                .ok()
                .and_then(|n| period.checked_mul(n))
                .and_then(|d| origin.checked_add(d))
                .unwrap_or(now + period);
            tokio::time::sleep_until(next).await;
        }
    }

    /// One housekeeping pass; returns whether it was quiet: it decided and wrote nothing, and
    /// nothing on the node changes with time alone, so that the next pass would decide the
    /// same until the node is woken.
    async fn pass(&self, node: &str, state: &mut PassState) -> bool {
        let mode = self.mode(node);
        // A node that cannot reach the API neither reports nor evicts; a stopped one runs
        // nothing at all; one whose kubelet runs in another replica is that replica's.
        if !mode.reaches_api() || !self.runs_here(node) {
            return true;
        }
        let ready: Readiness = match mode {
            Simulate::NotReady => READY_FALSE,
            _ => READY_TRUE,
        };
        let now = self.now();
        let model = &self.nodes[node];
        let (d, deleted, changes, images, steady) = {
            let mut m = model.lock().expect("node model");
            // Containers over their own limit first (their cgroup's OOM killer), else the
            // node's OOM killer if the node as a whole is out of memory.
            let mut victims = m.over_limit(now);
            if victims.is_empty() {
                victims.extend(m.oom_victim(now));
            }
            // Containers whose back-off passed start again.
            let mut changes: Vec<ContainerChange> = m
                .pods
                .values_mut()
                .filter(|p| p.phase == Phase::Running)
                .filter(|p| p.backoff_until.is_some_and(|t| t <= now))
                .map(|p| {
                    p.backoff_until = None;
                    p.started_at = now;
                    let container = p.containers.first().map(|c| c.name.clone());
                    ContainerChange::Restarted {
                        key: p.key.clone(),
                        container: container.unwrap_or_default(),
                    }
                })
                .collect();
            changes.extend(victims.into_iter().filter_map(|(key, container)| {
                let p = m.pods.get_mut(&key)?;
                // Waiting out its back-off, or started again on this pass: not running yet.
                if p.backing_off(now) || p.started_at == now {
                    return None;
                }
                // Exit code 137 is a failure: restarted unless the policy is Never, after
                // upstream's CrashLoopBackOff.
                let fails = p.restart_policy == "Never";
                let backoff = p.next_backoff(now);
                p.restarts += 1;
                p.started_at = now;
                p.last_exit = Some("was OOM-killed (exit code 137)".into());
                if fails {
                    p.phase = Phase::Terminated;
                    p.ended = Some(format!(
                        "container {container} was OOM-killed (exit code 137)"
                    ));
                } else {
                    p.backoff_until = Some(now + backoff);
                }
                Some(ContainerChange::OomKilled {
                    key,
                    container,
                    restarts: p.restarts,
                    backoff: (!fails).then_some(backoff),
                })
            }));
            let (d, deleted) = m.housekeeping(now);
            if let Some(e) = &d.eviction {
                if let Some(p) = m.pods.get_mut(&e.pod) {
                    p.phase = Phase::Terminating;
                }
            }
            let steady = m.steady(now);
            (
                d,
                deleted,
                changes,
                crate::node::images_status(&m.images),
                steady,
            )
        };
        let shown = self.shown.lock().expect("shown nodes").get(node).cloned();
        let writes = state.status.writes(&d.conditions, ready, shown.as_ref());
        // Upstream posts the status on a change, and at least every
        // nodeStatusReportFrequency otherwise: every condition's heartbeat is refreshed.
        let due = !self.simulation
            && now.saturating_sub(state.reported_at)
                >= crate::configz::NODE_STATUS_REPORT_FREQUENCY;
        let quiet = steady
            && writes.is_empty()
            && deleted.is_empty()
            && changes.is_empty()
            && d == crate::eviction::Decisions::default();
        if !writes.is_empty() || due {
            if let Some(version) = self.publish_conditions(node, &writes).await {
                state.reported_at = now;
                if !writes.is_empty() {
                    state.status.written(&d.conditions, ready, version);
                    tracing::info!(node, conditions = ?d.conditions, "node conditions posted");
                }
            }
        }
        if !deleted.is_empty() {
            tracing::info!(node, images = ?deleted, "deleted unused images");
            let api: Api<Node> = Api::all(self.clients.node(node));
            let patch = json!({"status": {"images": images}});
            let _ = api
                .patch_status(node, &PatchParams::default(), &Patch::Merge(&patch))
                .await;
        }
        if let Some(resource) = d.reclaiming {
            // The eviction manager's lines; `node` says which of berth's kubelets speaks.
            tracing::info!(node, resourceName = %resource.name(), "Eviction manager: attempting to reclaim");
            if d.eviction.is_some() {
                tracing::info!(node, resourceName = %resource.name(), "Eviction manager: must evict pod(s) to reclaim");
            }
            if !d.reclaim.is_empty() || d.eviction.is_some() {
                let involved = json!({"kind": "Node", "name": node, "uid": node});
                let msg = format!("Attempting to reclaim {}", resource.name());
                post_event(
                    &self.events,
                    &self.clock,
                    "default",
                    involved,
                    "Warning",
                    "EvictionThresholdMet",
                    &msg,
                    node,
                    BTreeMap::new(),
                );
            }
        }
        for change in changes {
            self.container_change(node, change).await;
        }
        if let Some(e) = d.eviction {
            tokio::spawn(evict(
                self.clients.node(node),
                self.events.clone(),
                self.clock.clone(),
                model.clone(),
                node.to_string(),
                e,
            ));
        }
        quiet
    }

    /// Writes the conditions that changed, refreshes every condition's heartbeat, and posts
    /// the changes' events; returns the node's new resourceVersion.
    async fn publish_conditions(&self, node: &str, writes: &[ConditionWrite]) -> Option<u64> {
        let ts = self.clock.timestamp();
        let conds = condition_patch(writes, &ts);
        let api: Api<Node> = Api::all(self.clients.node(node));
        let patch = json!({"status": {"conditions": conds}});
        let written = match api
            .patch_status(node, &PatchParams::default(), &Patch::Strategic(&patch))
            .await
        {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!(node, error = %e, "publishing node conditions failed");
                return None;
            }
        };
        for w in writes {
            if let Some((type_, reason)) = w.event {
                let involved = json!({"kind": "Node", "name": node, "uid": node});
                let msg = format!("Node {node} status is now: {reason}");
                post_event(
                    &self.events,
                    &self.clock,
                    "default",
                    involved,
                    type_,
                    reason,
                    &msg,
                    node,
                    BTreeMap::new(),
                );
            }
        }
        Some(
            written
                .metadata
                .resource_version
                .as_deref()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0),
        )
    }

    /// Writes a container's OOM kill (and its back-off), or its restart after the back-off.
    async fn container_change(&self, node: &str, change: ContainerChange) {
        let (key, container) = match &change {
            ContainerChange::OomKilled { key, container, .. }
            | ContainerChange::Restarted { key, container } => (key.clone(), container.clone()),
        };
        let Some((ns, name)) = key.split_once('/') else {
            return;
        };
        let api: Api<Pod> = Api::namespaced(self.clients.node(node), ns);
        let Ok(pod) = api.get(name).await else {
            return;
        };
        let ts = self.clock.timestamp();
        let Ok(v) = serde_json::to_value(&pod) else {
            return;
        };
        let mut status = json!({"status": container_change_status(&v, &change, &ts)});
        crate::observed::stamp(pod.metadata.generation, &mut status);
        let _ = api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
            .await;
        let ContainerChange::OomKilled { backoff, .. } = change else {
            return;
        };
        let uid = pod.uid().unwrap_or_default();
        if backoff.is_some() {
            self.events.one(crate::events::KubeletEvent::pod(
                node,
                (ns, name, &uid),
                Some(container.as_str()),
                "Warning",
                "BackOff",
                crate::finish::backoff_message(&container, name, ns, &uid),
                ts.clone(),
            ));
        }
        let key = key.as_str();
        let container = container.as_str();
        tracing::info!(node, pod = key, container, "simulated OOM kill");
        let involved = json!({"kind": "Node", "name": node, "uid": node});
        let msg = format!(
            "Memory cgroup out of memory: Killed process of container {container} in pod {key}"
        );
        post_event(
            &self.events,
            &self.clock,
            "default",
            involved,
            "Warning",
            "OOMKilling",
            &msg,
            node,
            BTreeMap::new(),
        );
    }
}

/// The node's conditions as a strategic merge patch (merged by `type`): those in `writes` whole,
/// the others' `lastHeartbeatTime` only, their status and transition time untouched.
fn condition_patch(writes: &[ConditionWrite], ts: &str) -> Vec<Value> {
    let mut conds: Vec<Value> = writes
        .iter()
        .map(|w| {
            json!({"type": w.type_, "status": w.status, "reason": w.reason, "message": w.message,
                   "lastHeartbeatTime": ts, "lastTransitionTime": ts})
        })
        .collect();
    for type_ in crate::status::CONDITION_TYPES {
        if !writes.iter().any(|w| w.type_ == type_) {
            conds.push(json!({"type": type_, "lastHeartbeatTime": ts}));
        }
    }
    conds
}

/// A container's change the housekeeping pass makes.
#[derive(Clone, Debug, PartialEq)]
enum ContainerChange {
    /// OOM-killed for the `restarts`-th time; restarted after `backoff` (none: the pod fails).
    OomKilled {
        key: String,
        container: String,
        restarts: i32,
        backoff: Option<Duration>,
    },
    /// Started again, its back-off over.
    Restarted { key: String, container: String },
}

/// The status (merge) of the pod (as JSON) after `change` at `now`: an OOM kill leaves the
/// container waiting in `CrashLoopBackOff` (upstream's message) with the kill in `lastState`,
/// or terminated when the pod fails; a restart runs it again.
fn container_change_status(pod: &Value, change: &ContainerChange, now: &str) -> Value {
    let (container, killed) = match change {
        ContainerChange::OomKilled {
            container,
            restarts,
            backoff,
            ..
        } => (container, Some((*restarts, *backoff))),
        ContainerChange::Restarted { container, .. } => (container, None),
    };
    let meta = &pod["metadata"];
    let text = |v: &Value| v.as_str().unwrap_or("").to_string();
    let mut statuses = pod["status"]["containerStatuses"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for s in statuses
        .iter_mut()
        .filter(|s| s["name"] == container.as_str())
    {
        match killed {
            Some((restarts, backoff)) => {
                let started = s["state"]["running"]["startedAt"].clone();
                let exit = json!({"exitCode": 137, "reason": "OOMKilled", "startedAt": started,
                                  "finishedAt": now, "containerID": s["containerID"]});
                s["ready"] = json!(false);
                s["started"] = json!(false);
                match backoff {
                    None => {
                        s["restartCount"] = json!(restarts - 1);
                        s["state"] = json!({"terminated": exit});
                    }
                    Some(backoff) => {
                        let message = format!(
                            "back-off {} restarting failed container={} pod={}_{}({})",
                            crate::finish::human(backoff),
                            container,
                            text(&meta["name"]),
                            text(&meta["namespace"]),
                            text(&meta["uid"]),
                        );
                        s["restartCount"] = json!(restarts);
                        s["lastState"] = json!({"terminated": exit});
                        s["state"] =
                            json!({"waiting": {"reason": "CrashLoopBackOff", "message": message}});
                    }
                }
            }
            None => {
                s["ready"] = json!(true);
                s["started"] = json!(true);
                s["state"] = json!({"running": {"startedAt": now}});
            }
        }
    }
    let mut status = json!({"containerStatuses": statuses});
    if matches!(killed, Some((_, None))) {
        status["phase"] = json!("Failed");
    }
    status
}

/// The events of a pod's lifecycle step on its node: its containers starting as it is
/// admitted (the images pulled or present, created, started), or stopping as its deletion
/// begins (`Killing`).
fn lifecycle_events(
    m: &NodeModel,
    was: Option<Phase>,
    now: &PodState,
    node: &str,
    at: &str,
) -> Vec<crate::events::KubeletEvent> {
    let Some((ns, name)) = now.key.split_once('/') else {
        return Vec::new();
    };
    let pod = (ns, name, now.uid.as_str());
    match (was, now.phase) {
        (None | Some(Phase::Pending), Phase::Running) => {
            let containers: Vec<(String, String)> = now
                .init_containers
                .iter()
                .chain(&now.containers)
                .map(|c| (c.name.clone(), c.image.clone()))
                .collect();
            let present = |image: &str| m.images.contains_key(image);
            crate::events::container_start(node, pod, &containers, &present, at)
        }
        (Some(Phase::Running), Phase::Terminating) if now.ended.is_none() => {
            let names: Vec<String> = now.containers.iter().map(|c| c.name.clone()).collect();
            crate::events::killing(node, pod, &names, at)
        }
        _ => Vec::new(),
    }
}

/// Kubelet admission: pressure and resources, then node affinity, host ports and taints.
fn admit(m: &NodeModel, pod: &PodState, value: &Value) -> Result<(), Rejection> {
    m.admit(pod)
        .and_then(|()| m.admit_placement(pod, &value["spec"]))
}

/// The labels and taints the API shows of a node.
fn node_view(node: &Node) -> crate::admission::NodeView {
    crate::admission::NodeView {
        name: node.metadata.name.clone().unwrap_or_default(),
        labels: node.metadata.labels.clone().unwrap_or_default(),
        taints: node
            .spec
            .as_ref()
            .and_then(|s| s.taints.as_ref())
            .into_iter()
            .flatten()
            .map(|t| {
                (
                    t.key.clone(),
                    t.value.clone().unwrap_or_default(),
                    t.effect.clone(),
                )
            })
            .collect(),
    }
}

/// The extended resources of the node's `status.capacity`.
fn extended_capacity(node: &Node) -> crate::allocatable::ResourceList {
    node.status
        .as_ref()
        .and_then(|s| s.capacity.as_ref())
        .into_iter()
        .flatten()
        .filter(|(k, _)| crate::admission::is_extended_resource(k))
        .filter_map(|(k, v)| {
            berth_core::quantity::Quantity::parse(&v.0)
                .ok()
                .map(|q| (k.clone(), q))
        })
        .collect()
}

/// Evicts one pod: after its grace (capped by `berth.io/termination-seconds`), the pod becomes
/// Failed/Evicted with upstream's message, and a Warning `Evicted` event is posted.
async fn evict(
    client: kube::Client,
    events: crate::events::Events,
    clock: Clock,
    model: Arc<Mutex<NodeModel>>,
    node: String,
    e: Eviction,
) {
    let Some((ns, name)) = e.pod.split_once('/') else {
        return;
    };
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    tracing::debug!(node = %node, pod = %e.pod, signal = %e.signal, grace = e.grace_period_seconds, "evicting pod");
    if let Ok(pod) = api.get(name).await {
        let takes = pod
            .annotations()
            .get("berth.io/termination-seconds")
            .and_then(|s| s.parse::<i64>().ok())
            .unwrap_or(0)
            .min(e.grace_period_seconds)
            .max(0) as u64;
        if takes > 0 {
            clock.sleep(Duration::from_secs(takes)).await;
        }
        let ts = clock.timestamp();
        let v = serde_json::to_value(&pod).unwrap_or_default();
        let statuses: Vec<Value> = v["status"]["containerStatuses"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|mut s| {
                let started = s["state"]["running"]["startedAt"].clone();
                // Killed, as upstream's eviction manager kills them: the container is
                // terminated (kubectl then shows its reason, `Error`, as upstream's does).
                if s["state"].get("running").is_some() {
                    s["state"] = json!({"terminated": {"exitCode": 137, "reason": "Error", "startedAt": started, "finishedAt": ts, "containerID": s["containerID"]}});
                }
                s["ready"] = json!(false);
                s["started"] = json!(false);
                s
            })
            .collect();
        let cond = |t: &str| json!({"type": t, "status": "False", "lastProbeTime": null, "lastTransitionTime": ts, "reason": "PodFailed"});
        // As upstream's eviction manager: a Job's podFailurePolicy can tell a disruption from a
        // failure by this condition.
        let disruption = json!({"type": "DisruptionTarget", "status": "True", "lastProbeTime": null,
                                "lastTransitionTime": ts, "reason": "TerminationByKubelet",
                                "message": e.message});
        let mut status = json!({"status": {
            "phase": "Failed", "reason": "Evicted", "message": e.message,
            "containerStatuses": statuses,
            "conditions": [disruption, cond("Ready"), cond("ContainersReady")],
        }});
        crate::observed::stamp(pod.metadata.generation, &mut status);
        match api
            .patch_status(name, &PatchParams::default(), &Patch::Strategic(&status))
            .await
        {
            Ok(_) => tracing::info!(pod = %e.pod, "Eviction manager: pod is evicted successfully"),
            Err(err) => {
                tracing::error!(error = %err, pod = %e.pod, "Eviction manager: pod failed to evict")
            }
        }
        let names: Vec<&str> = e
            .offending_containers
            .iter()
            .map(|(c, _)| c.as_str())
            .collect();
        let usages: Vec<&str> = e
            .offending_containers
            .iter()
            .map(|(_, u)| u.as_str())
            .collect();
        let annotations = BTreeMap::from([
            ("offending_containers".to_string(), names.join(",")),
            ("offending_containers_usage".to_string(), usages.join(",")),
            (
                "starved_resource".to_string(),
                e.resource.name().to_string(),
            ),
        ]);
        let involved = json!({"kind": "Pod", "apiVersion": "v1", "namespace": ns, "name": name, "uid": pod.uid()});
        post_event(
            &events,
            &clock,
            ns,
            involved,
            "Warning",
            "Evicted",
            &e.message,
            &node,
            annotations,
        );
    }
    let mut m = model.lock().expect("node model");
    if let Some(p) = m.pods.get_mut(&e.pod) {
        p.phase = Phase::Terminated;
        p.ended = Some(format!("evicted: {}", e.message.trim_end()));
    }
}

/// Records a core/v1 event from the kubelet of `host` (written off this path, [`crate::events`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn post_event(
    events: &crate::events::Events,
    clock: &Clock,
    ns: &str,
    involved: Value,
    type_: &'static str,
    reason: &str,
    message: &str,
    host: &str,
    annotations: BTreeMap<String, String>,
) {
    events.one(crate::events::KubeletEvent {
        host: host.to_string(),
        namespace: ns.to_string(),
        involved,
        type_,
        reason: reason.to_string(),
        message: message.to_string(),
        annotations,
        at: clock.timestamp(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod() -> Value {
        json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u"},
               "status": {"containerStatuses": [{"name": "c", "restartCount": 0, "containerID": "id",
                          "state": {"running": {"startedAt": "t0"}}}]}})
    }

    #[test]
    fn an_oom_kill_waits_in_crash_loop_back_off_then_runs_again() {
        let killed = ContainerChange::OomKilled {
            key: "ns/p".into(),
            container: "c".into(),
            restarts: 2,
            backoff: Some(Duration::from_secs(20)),
        };
        let s = &container_change_status(&pod(), &killed, "t1")["containerStatuses"][0];
        assert_eq!(s["restartCount"], 2);
        assert_eq!(s["state"]["waiting"]["reason"], "CrashLoopBackOff");
        assert_eq!(
            s["state"]["waiting"]["message"],
            "back-off 20s restarting failed container=c pod=p_ns(u)"
        );
        assert_eq!(s["lastState"]["terminated"]["reason"], "OOMKilled");
        assert_eq!(s["lastState"]["terminated"]["exitCode"], 137);
        assert_eq!(s["lastState"]["terminated"]["startedAt"], "t0");
        let restarted = ContainerChange::Restarted {
            key: "ns/p".into(),
            container: "c".into(),
        };
        let s = &container_change_status(&pod(), &restarted, "t2")["containerStatuses"][0];
        assert_eq!(s["state"], json!({"running": {"startedAt": "t2"}}));
        let never = ContainerChange::OomKilled {
            key: "ns/p".into(),
            container: "c".into(),
            restarts: 1,
            backoff: None,
        };
        let status = container_change_status(&pod(), &never, "t1");
        assert_eq!(status["phase"], "Failed");
        assert_eq!(status["containerStatuses"][0]["restartCount"], 0);
        assert!(status["containerStatuses"][0]["state"]["terminated"].is_object());
    }

    #[test]
    fn a_heartbeat_refreshes_every_condition_and_keeps_transitions() {
        let patch = condition_patch(&[], "t");
        assert_eq!(patch.len(), 4);
        assert!(patch
            .iter()
            .all(|c| c["lastHeartbeatTime"] == "t" && c.get("lastTransitionTime").is_none()));
        let write = ConditionWrite {
            type_: "MemoryPressure",
            status: "True",
            reason: "KubeletHasInsufficientMemory",
            message: "kubelet has insufficient memory available",
            event: None,
        };
        let patch = condition_patch(&[write], "t");
        assert_eq!(patch.len(), 4);
        assert_eq!(patch[0]["lastTransitionTime"], "t");
        assert_eq!(patch[0]["status"], "True");
    }
}
