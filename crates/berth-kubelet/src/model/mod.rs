//! One simulated node's state: its pods and what they use, images and dead containers on
//! disk, the eviction manager; and the pure decisions on it (admission, stats, OOM).
//! The driver (`sim.rs`) feeds it from the pod watch and carries its decisions out.

use crate::admission::{self, HostPort, NodeView};
use crate::config::NodeConfig;
use crate::eviction::{
    self, Amounts, Candidate, Condition, ContainerUsage, EvictionManager, FsStats, NodeStats,
    QosClass, Reclaim, Reclaimable,
};
use crate::oom::{self, OomCandidate};
use crate::usage::{self, Usage, UsageSpec};
use berth_core::quantity::{self, Quantity};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// The size of an image a pod pulls that the node did not list.
pub const DEFAULT_IMAGE_SIZE: i64 = 100 << 20;

/// A pod's lifecycle as the node sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Bound here, not yet admitted.
    Pending,
    /// Admitted and running (usage counts).
    Running,
    /// Being evicted or deleted: still uses resources until gone.
    Terminating,
    /// Failed or Succeeded: its containers are dead; their disk stays until reclaimed.
    Terminated,
}

/// One container's spec as the node needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct ContainerSpec {
    pub name: String,
    pub image: String,
    /// Requests per resource name (limits copied where requests are missing).
    pub requests: BTreeMap<String, Quantity>,
    /// The container's memory limit in bytes: using more gets it OOM-killed.
    pub memory_limit: Option<i64>,
}

/// A pod on this node.
#[derive(Clone, Debug, PartialEq)]
pub struct PodState {
    pub key: String,
    pub uid: String,
    pub qos: QosClass,
    pub priority: i32,
    pub termination_grace_seconds: i64,
    pub restart_policy: String,
    pub containers: Vec<ContainerSpec>,
    pub init_containers: Vec<ContainerSpec>,
    pub usage: Option<UsageSpec>,
    pub tolerates_memory_pressure: bool,
    pub phase: Phase,
    /// When the (first) container last started, for ramps.
    pub started_at: Duration,
    /// When the node first took the pod in (its start time in the summary API).
    pub admitted_at: Duration,
    /// Restarts of the first container (OOM kills, and exits its status reports).
    pub restarts: i32,
    /// Until when (model time) its containers wait out a CrashLoopBackOff after an OOM kill:
    /// they use nothing meanwhile, and the housekeeping pass that finds it passed restarts them.
    pub backoff_until: Option<Duration>,
    /// Back-offs in a row (the next one doubles); a run of 10 minutes starts them over.
    pub backoff_steps: i32,
    /// How the run before the last restart ended, for `kubectl logs --previous`.
    pub last_exit: Option<String>,
    /// Dead containers' disk was deleted by node-level reclaim.
    pub dead_reclaimed: bool,
    /// How the pod ended on this node, for its log (`evicted: ...`, `OOM-killed ...`).
    pub ended: Option<String>,
    /// When a scheduler bound the pod here (its `PodScheduled` condition), for its log.
    pub scheduled_at: Option<chrono::DateTime<chrono::Utc>>,
    /// The host ports its containers ask for.
    pub host_ports: Vec<HostPort>,
}

fn requests_of(c: &Value) -> BTreeMap<String, Quantity> {
    let mut out = BTreeMap::new();
    let res = c.get("resources");
    for part in ["limits", "requests"] {
        if let Some(m) = res.and_then(|r| r.get(part)).and_then(Value::as_object) {
            for (k, v) in m {
                if let Ok(q) = quantity::from_json(v) {
                    out.insert(k.clone(), q);
                }
            }
        }
    }
    out
}

fn containers_of(spec: &Value, key: &str) -> Vec<ContainerSpec> {
    spec.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| ContainerSpec {
            name: c
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            image: c
                .get("image")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            requests: requests_of(c),
            memory_limit: c
                .get("resources")
                .and_then(|r| r.get("limits"))
                .and_then(|l| l.get("memory"))
                .and_then(|q| quantity::from_json(q).ok())
                .map(|q| q.value()),
        })
        .collect()
}

/// When the pod's `PodScheduled` condition turned `True`.
fn scheduled_at(pod: &Value) -> Option<chrono::DateTime<chrono::Utc>> {
    let scheduled = pod["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "PodScheduled" && c["status"] == "True")?;
    let at = scheduled["lastTransitionTime"].as_str()?;
    chrono::DateTime::parse_from_rfc3339(at)
        .ok()
        .map(|t| t.to_utc())
}

/// The first container's `restartCount` as the pod's status shows it.
fn restarts_of(pod: &Value) -> i32 {
    pod["status"]["containerStatuses"][0]["restartCount"]
        .as_i64()
        .unwrap_or(0) as i32
}

/// How the first container's previous run ended, as its status shows it (`lastState`).
fn last_exit_of(pod: &Value) -> Option<String> {
    let t = &pod["status"]["containerStatuses"][0]["lastState"]["terminated"];
    let code = t["exitCode"].as_i64()?;
    Some(match t["reason"].as_str() {
        Some("OOMKilled") => format!("was OOM-killed (exit code {code})"),
        Some(reason) => format!("exited with code {code} ({reason})"),
        None => format!("exited with code {code}"),
    })
}

impl PodState {
    /// The CrashLoopBackOff after a crash at `now` (upstream's: 10s doubling to 5m, from 10s
    /// again after a run of 10 minutes), counted.
    pub fn next_backoff(&mut self, now: Duration) -> Duration {
        let ran = now.saturating_sub(self.started_at);
        self.backoff_steps = crate::finish::backoff_restarts(self.backoff_steps, ran);
        let backoff = crate::finish::restart_backoff(self.backoff_steps);
        self.backoff_steps += 1;
        backoff
    }

    /// Whether its containers wait out a back-off at `now` (they do not run).
    pub fn backing_off(&self, now: Duration) -> bool {
        self.backoff_until.is_some_and(|t| now < t)
    }

    /// Reads a pod (as JSON). `usage` errors are returned for the driver to report; the pod
    /// then uses its requests.
    pub fn from_pod(pod: &Value, now: Duration) -> (PodState, Option<String>) {
        let meta = &pod["metadata"];
        let spec = &pod["spec"];
        let key = format!(
            "{}/{}",
            meta["namespace"].as_str().unwrap_or(""),
            meta["name"].as_str().unwrap_or("")
        );
        let (usage, error) = match meta
            .get("annotations")
            .and_then(|a| a.get(usage::USAGE_ANNOTATION))
            .and_then(Value::as_str)
        {
            None => (None, None),
            Some(t) => match usage::parse_usage(t) {
                Ok(u) => (Some(u), None),
                Err(e) => (None, Some(e)),
            },
        };
        let tolerates = spec
            .get("tolerations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|t| {
                let key = t.get("key").and_then(Value::as_str).unwrap_or("");
                let op = t.get("operator").and_then(Value::as_str).unwrap_or("Equal");
                let effect = t.get("effect").and_then(Value::as_str).unwrap_or("");
                (key == "node.kubernetes.io/memory-pressure" || (key.is_empty() && op == "Exists"))
                    && (effect.is_empty() || effect == "NoSchedule")
            });
        let phase = match pod["status"]["phase"].as_str() {
            Some("Failed") | Some("Succeeded") => Phase::Terminated,
            _ if meta.get("deletionTimestamp").is_some_and(|v| !v.is_null()) => Phase::Terminating,
            Some("Running") => Phase::Running,
            _ => Phase::Pending,
        };
        let state = PodState {
            key,
            uid: meta["uid"].as_str().unwrap_or("").to_string(),
            qos: QosClass::from_name(berth_core::qos::qos_class(spec)),
            priority: spec["priority"].as_i64().unwrap_or(0) as i32,
            termination_grace_seconds: spec["terminationGracePeriodSeconds"].as_i64().unwrap_or(30),
            restart_policy: spec["restartPolicy"]
                .as_str()
                .unwrap_or("Always")
                .to_string(),
            containers: containers_of(spec, "containers"),
            init_containers: containers_of(spec, "initContainers"),
            usage,
            tolerates_memory_pressure: tolerates,
            phase,
            started_at: now,
            admitted_at: now,
            restarts: restarts_of(pod),
            backoff_until: None,
            backoff_steps: 0,
            last_exit: last_exit_of(pod),
            dead_reclaimed: false,
            ended: None,
            scheduled_at: scheduled_at(pod),
            host_ports: admission::host_ports(spec),
        };
        (state, error)
    }

    /// The pod's effective request of a resource: max(Σ containers, max init container).
    pub fn request(&self, resource: &str) -> i64 {
        let v = |c: &ContainerSpec| {
            c.requests.get(resource).map_or(0, |q| {
                if resource == "cpu" {
                    q.milli_value()
                } else {
                    q.value()
                }
            })
        };
        let sum: i64 = self.containers.iter().map(v).sum();
        let init = self.init_containers.iter().map(v).max().unwrap_or(0);
        sum.max(init)
    }

    /// Every resource the pod requests.
    fn requested_resources(&self) -> BTreeSet<String> {
        self.containers
            .iter()
            .chain(&self.init_containers)
            .flat_map(|c| c.requests.keys().cloned())
            .collect()
    }

    /// Each container's usage at `now`: the annotation's (on the first container), else requests.
    pub fn container_usage(&self, now: Duration) -> Vec<(String, Usage, Amounts)> {
        let waiting = self.backing_off(now);
        let elapsed = now.saturating_sub(self.started_at);
        self.containers
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let r = |name: &str| c.requests.get(name).map_or(0, Quantity::value);
                let request = Amounts {
                    memory: r("memory"),
                    ephemeral_storage: r("ephemeral-storage"),
                    inodes: 0,
                    pids: 0,
                };
                let from_requests = Usage {
                    cpu_milli: c.requests.get("cpu").map_or(0, Quantity::milli_value),
                    amounts: Amounts { pids: 1, ..request },
                };
                let base = if self.qos == QosClass::BestEffort && i == 0 {
                    usage::BEST_EFFORT_DEFAULT
                } else {
                    from_requests
                };
                let used = match (&self.usage, i) {
                    _ if waiting => Usage::default(),
                    (Some(spec), 0) => spec.at(elapsed, &base),
                    (Some(_), _) => Usage::default(),
                    (None, _) => base,
                };
                (c.name.clone(), used, request)
            })
            .collect()
    }

    /// Total usage at `now`.
    pub fn usage(&self, now: Duration) -> Usage {
        let mut total = Usage::default();
        for (_, u, _) in self.container_usage(now) {
            total.cpu_milli += u.cpu_milli;
            total.amounts.memory += u.amounts.memory;
            total.amounts.ephemeral_storage += u.amounts.ephemeral_storage;
            total.amounts.inodes += u.amounts.inodes;
            total.amounts.pids += u.amounts.pids;
        }
        total
    }

    fn active(&self) -> bool {
        matches!(self.phase, Phase::Running | Phase::Terminating)
    }
}

pub use crate::admission::Rejection;

/// An image on the node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageState {
    pub size_bytes: i64,
    pub inodes: i64,
}

/// One simulated node.
#[derive(Clone, Debug)]
pub struct NodeModel {
    pub config: NodeConfig,
    pub pods: BTreeMap<String, PodState>,
    pub images: BTreeMap<String, ImageState>,
    pub manager: EvictionManager,
    /// Pressure conditions last reported.
    pub conditions: BTreeSet<Condition>,
    /// The Node object's name, labels and taints as the API shows them (from the config until
    /// the node watch reports it).
    pub view: NodeView,
    /// The extended resources the Node's `status.capacity` shows (patched in by an
    /// administrator or a device plugin), which the kubelet makes allocatable.
    pub extended: crate::allocatable::ResourceList,
}

impl NodeModel {
    pub fn new(config: NodeConfig) -> NodeModel {
        let images = config
            .images
            .iter()
            .map(|i| {
                (
                    i.name.clone(),
                    ImageState {
                        size_bytes: i.size_bytes,
                        inodes: i.inodes,
                    },
                )
            })
            .collect();
        let view = NodeView {
            name: config.name.clone(),
            labels: config.labels.clone(),
            taints: config
                .taints
                .iter()
                .map(|t| (t.key.clone(), t.value.clone(), t.effect.clone()))
                .collect(),
        };
        NodeModel {
            view,
            extended: Default::default(),
            manager: EvictionManager::new(config.eviction.clone()),
            config,
            pods: BTreeMap::new(),
            images,
            conditions: BTreeSet::new(),
        }
    }

    /// The kubelet restarts with `config` (its machine config changed): allocatable and the
    /// eviction thresholds are the new ones, and the eviction manager starts afresh, as a
    /// restarted kubelet's does. Returns whether anything changed.
    pub fn reconfigure(&mut self, config: NodeConfig) -> bool {
        if self.config == config {
            return false;
        }
        self.manager = EvictionManager::new(config.eviction.clone());
        self.config = config;
        true
    }

    /// Kubelet admission of a bound pod: pressure conditions, then fit in allocatable.
    pub fn admit(&self, pod: &PodState) -> Result<(), Rejection> {
        if !self.conditions.is_empty() && pod.priority < 2_000_000_000 {
            let only_memory = self
                .conditions
                .iter()
                .all(|c| *c == Condition::MemoryPressure);
            let ok =
                only_memory && (pod.qos != QosClass::BestEffort || pod.tolerates_memory_pressure);
            if !ok {
                let names: Vec<&str> = self.conditions.iter().map(|c| c.name()).collect();
                return Err(Rejection {
                    reason: "Evicted".into(),
                    message: format!("The node had condition: [{}]. ", names.join(" ")),
                });
            }
        }
        let admitted: Vec<&PodState> = self
            .pods
            .values()
            .filter(|p| p.active() && p.key != pod.key)
            .collect();
        let pods_cap = self
            .config
            .allocatable
            .get("pods")
            .map_or(0, Quantity::value);
        if admitted.len() as i64 + 1 > pods_cap {
            return Err(Rejection {
                reason: "OutOfpods".into(),
                message: format!(
                    "Node didn't have enough resource: pods, requested: 1, used: {}, capacity: {}",
                    admitted.len(),
                    pods_cap
                ),
            });
        }
        for r in pod.requested_resources() {
            let want = pod.request(&r);
            if want == 0 || r == "pods" {
                continue;
            }
            let allocatable = self.extended.get(&r).or(self.config.allocatable.get(&r));
            // Upstream's removeMissingExtendedResources: an extended resource the node does
            // not know is a cluster-level one, not the kubelet's to check.
            if allocatable.is_none() && admission::is_extended_resource(&r) {
                continue;
            }
            let cap = allocatable.map_or(0, |q| {
                if r == "cpu" {
                    q.milli_value()
                } else {
                    q.value()
                }
            });
            let used: i64 = admitted.iter().map(|p| p.request(&r)).sum();
            if used + want > cap {
                return Err(Rejection {
                    reason: format!("OutOf{r}"),
                    message: format!(
                        "Node didn't have enough resource: {r}, requested: {want}, used: {used}, capacity: {cap}"
                    ),
                });
            }
        }
        Ok(())
    }

    /// Kubelet admission's placement checks: node affinity, host ports against the admitted
    /// pods', `NoExecute` taints ([`admission`]).
    pub fn admit_placement(&self, pod: &PodState, spec: &Value) -> Result<(), Rejection> {
        let in_use = self
            .pods
            .values()
            .filter(|p| p.active() && p.key != pod.key)
            .flat_map(|p| &p.host_ports);
        admission::admit(spec, &pod.host_ports, in_use, &self.view)
    }

    /// Images some active or pending pod uses.
    fn images_in_use(&self) -> BTreeSet<&str> {
        self.pods
            .values()
            .filter(|p| p.phase != Phase::Terminated)
            .flat_map(|p| p.containers.iter().chain(&p.init_containers))
            .map(|c| c.image.as_str())
            .collect()
    }

    /// Records that a pod started: its images are now on the node.
    pub fn pull_images(&mut self, key: &str) {
        let Some(pod) = self.pods.get(key) else {
            return;
        };
        let images: Vec<String> = pod
            .containers
            .iter()
            .chain(&pod.init_containers)
            .map(|c| c.image.clone())
            .filter(|i| !i.is_empty())
            .collect();
        for i in images {
            self.images.entry(i).or_insert(ImageState {
                size_bytes: DEFAULT_IMAGE_SIZE,
                inodes: 1000,
            });
        }
    }

    /// What node-level reclaim can free now.
    pub fn reclaimable(&self, now: Duration) -> Reclaimable {
        let mut r = Reclaimable::default();
        for p in self.pods.values() {
            if p.phase == Phase::Terminated && !p.dead_reclaimed {
                let u = p.usage(now);
                r.dead_containers_bytes += u.amounts.ephemeral_storage;
                r.dead_containers_inodes += u.amounts.inodes;
            }
        }
        let used = self.images_in_use();
        for (name, im) in &self.images {
            if !used.contains(name.as_str()) {
                r.unused_images_bytes += im.size_bytes;
                r.unused_images_inodes += im.inodes;
            }
        }
        r
    }

    /// Performs node-level reclaim; returns the deleted images' names.
    pub fn reclaim(&mut self, steps: &[Reclaim]) -> Vec<String> {
        let mut deleted = Vec::new();
        for step in steps {
            match step {
                Reclaim::DeleteDeadContainers => {
                    for p in self.pods.values_mut() {
                        if p.phase == Phase::Terminated {
                            p.dead_reclaimed = true;
                        }
                    }
                }
                Reclaim::DeleteUnusedImages => {
                    let used: BTreeSet<String> =
                        self.images_in_use().into_iter().map(String::from).collect();
                    self.images.retain(|name, _| {
                        let keep = used.contains(name);
                        if !keep {
                            deleted.push(name.clone());
                        }
                        keep
                    });
                }
            }
        }
        deleted
    }

    /// The node's stats at `now` (what the summary API reports and the signals read).
    pub fn stats(&self, now: Duration) -> NodeStats {
        let sys = self.config.system_usage;
        let mut pods_ws = 0;
        let mut nodefs_used = sys.ephemeral_storage;
        let mut nodefs_inodes_used = 0;
        let mut pids = sys.pids;
        for p in self.pods.values() {
            let u = p.usage(now);
            if p.active() {
                pods_ws += u.amounts.memory;
                pids += u.amounts.pids;
            }
            if p.active() || (p.phase == Phase::Terminated && !p.dead_reclaimed) {
                nodefs_used += u.amounts.ephemeral_storage;
                nodefs_inodes_used += u.amounts.inodes;
            }
        }
        let image_bytes: i64 = self.images.values().map(|i| i.size_bytes).sum();
        let image_inodes: i64 = self.images.values().map(|i| i.inodes).sum();
        let mut nodefs = FsStats {
            capacity_bytes: self.config.nodefs_bytes(),
            used_bytes: nodefs_used,
            inodes: self.config.nodefs_inodes,
            inodes_used: nodefs_inodes_used,
        };
        let imagefs = match self.config.imagefs {
            Some(fs) => Some(FsStats {
                capacity_bytes: fs.bytes,
                used_bytes: image_bytes,
                inodes: fs.inodes,
                inodes_used: image_inodes,
            }),
            None => {
                nodefs.used_bytes += image_bytes;
                nodefs.inodes_used += image_inodes;
                None
            }
        };
        let mem = |l: &crate::allocatable::ResourceList| l.get("memory").map_or(0, Quantity::value);
        NodeStats {
            memory_capacity: self.config.memory_capacity(),
            memory_working_set: pods_ws + sys.memory,
            pods_memory_working_set: pods_ws,
            pods_memory_limit: self.config.memory_capacity()
                - mem(&self.config.kube_reserved)
                - mem(&self.config.system_reserved),
            nodefs,
            imagefs,
            pid_max: self.config.max_pids,
            pids,
        }
    }

    /// The running pods as eviction candidates.
    pub fn candidates(&self, now: Duration) -> Vec<Candidate> {
        self.pods
            .values()
            .filter(|p| p.phase == Phase::Running)
            .map(|p| Candidate {
                key: p.key.clone(),
                qos: p.qos,
                priority: p.priority,
                termination_grace_seconds: p.termination_grace_seconds,
                containers: p
                    .container_usage(now)
                    .into_iter()
                    .map(|(name, u, request)| ContainerUsage {
                        name,
                        usage: u.amounts,
                        request,
                    })
                    .collect(),
            })
            .collect()
    }

    /// One housekeeping pass: the manager's decisions, with node-level reclaim applied and the
    /// reported conditions remembered (the driver publishes them and evicts).
    pub fn housekeeping(&mut self, now: Duration) -> (eviction::Decisions, Vec<String>) {
        let stats = self.stats(now);
        let pods = self.candidates(now);
        let reserved = |r: &str| {
            [&self.config.kube_reserved, &self.config.system_reserved]
                .iter()
                .filter_map(|l| l.get(r))
                .map(Quantity::value)
                .sum::<i64>()
        };
        let input = eviction::Inputs {
            stats: &stats,
            pods: &pods,
            reclaimable: self.reclaimable(now),
            system_over_reserved: reserved("memory") > 0
                && self.config.system_usage.memory > reserved("memory"),
            eviction_in_flight: self.pods.values().any(|p| p.phase == Phase::Terminating),
        };
        let d = self.manager.housekeeping(&input, now);
        self.conditions = d.conditions.clone();
        let deleted = self.reclaim(&d.reclaim);
        (d, deleted)
    }

    /// Whether nothing on the node changes with time alone from `now` on: no container waits
    /// out a back-off and no usage ramp is still climbing. A housekeeping pass then decides
    /// what the one before it did until a pod or the node changes (`berth simulate` skips
    /// such passes).
    pub fn steady(&self, now: Duration) -> bool {
        self.pods
            .values()
            .filter(|p| p.phase != Phase::Terminated)
            .all(|p| {
                p.backoff_until.is_none()
                    && p.usage
                        .is_none_or(|u| !u.ramping(now.saturating_sub(p.started_at)))
            })
    }

    /// Containers of running pods using more memory than their own limit: the kernel kills
    /// them within their cgroup whatever the node's state. Returns (pod key, container name).
    pub fn over_limit(&self, now: Duration) -> Vec<(String, String)> {
        self.pods
            .values()
            .filter(|p| p.phase == Phase::Running)
            .flat_map(|p| {
                p.container_usage(now)
                    .into_iter()
                    .zip(&p.containers)
                    .filter(|((_, u, _), spec)| {
                        spec.memory_limit
                            .is_some_and(|limit| u.amounts.memory > limit)
                    })
                    .map(|((name, _, _), _)| (p.key.clone(), name))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// The simulated OOM killer: when memory in use passes capacity, the container with the
    /// highest oom_score. Returns (pod key, container name).
    pub fn oom_victim(&self, now: Duration) -> Option<(String, String)> {
        let stats = self.stats(now);
        if stats.memory_working_set <= stats.memory_capacity {
            return None;
        }
        let machine = stats.memory_capacity;
        let candidates: Vec<OomCandidate> = self
            .pods
            .values()
            .filter(|p| p.phase == Phase::Running)
            .flat_map(|p| {
                p.container_usage(now)
                    .into_iter()
                    .map(move |(name, u, req)| OomCandidate {
                        pod: p.key.clone(),
                        container: name,
                        usage: u.amounts.memory,
                        adj: oom::oom_score_adj(p.qos, req.memory, machine),
                    })
            })
            .collect();
        oom::oom_victim(&candidates, machine).map(|c| (c.pod.clone(), c.container.clone()))
    }
}

#[cfg(test)]
mod tests;
