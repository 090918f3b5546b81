//! The shell around [`plan`](crate::plan): list the cluster through the API, run the engine,
//! carry out its evictions through `pods/eviction`, record an Event on each evicted pod.
//!
//! Only API calls a ClusterRole like the seed's (16.3.2) allows are made: nodes list, pods list,
//! pods/eviction create; plus events create, which upstream's descheduler also needs for its
//! `Descheduled` events (a refused event is logged, never fatal). Events go through the shared
//! recorder of `berth-events` as `events.k8s.io/v1` events reported by
//! `sigs.k8s.io.descheduler`, as upstream's descheduler records them (off the eviction path,
//! retried while the server cannot be reached).

use crate::engine::{Options, Plan};
use crate::model::{NodeState, PodState};
use crate::policy::Policy;
use crate::report::{Outcome, Report};
use crate::strategies::plan;
use berth_scheduler::driver::outstanding::Outstanding;
use k8s_openapi::api::core::v1::{Node, ObjectReference, Pod};
use kube::api::{Api, EvictParams, ListParams};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// What one run needs besides a client.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The compiled policy.
    pub policy: Policy,
    /// The command line's additions.
    pub options: Options,
    /// Decide and report, change nothing.
    pub dry_run: bool,
    /// Where the Events' timestamps come from.
    pub clock: berth_core::clock::Clock,
    /// Set when the process is told to stop: no further eviction starts.
    pub stop: Stop,
    /// Records the `Descheduled` events.
    pub events: Events,
}

/// The descheduler's event recorder (one per process, as upstream's broadcaster).
#[derive(Clone)]
pub struct Events(berth_events::Recorder);

/// The reporting controller of upstream's descheduler events.
pub const REPORTING_CONTROLLER: &str = "sigs.k8s.io.descheduler";

impl Events {
    /// Starts the recorder (on the current runtime), reporting from `<controller>-<hostname>`.
    pub fn start(client: kube::Client, clock: berth_core::clock::Clock) -> Events {
        let instance = format!("{REPORTING_CONTROLLER}-{}", berth_events::host_name());
        Events(berth_events::Recorder::start_events_v1(
            client,
            REPORTING_CONTROLLER,
            &instance,
            clock,
        ))
    }
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Events")
    }
}

/// The descheduler's stop request (SIGTERM). A run in progress carries out no further
/// eviction once it is set; the eviction in flight finishes and its `Descheduled` event is
/// written (each holds a ticket of the process's outstanding work, which
/// `berth_scheduler::driver::flush_events` waits for), so no pod is evicted without its event.
/// Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<StopInner>);

#[derive(Debug, Default)]
struct StopInner {
    set: std::sync::atomic::AtomicBool,
    changed: tokio::sync::Notify,
}

static PROCESS_STOP: std::sync::LazyLock<Stop> = std::sync::LazyLock::new(Stop::default);

impl Stop {
    /// The process's stop request, which its signal handler sets.
    pub fn process() -> Stop {
        PROCESS_STOP.clone()
    }

    /// Asks the runs to stop.
    pub fn set(&self) {
        self.0.set.store(true, std::sync::atomic::Ordering::SeqCst);
        self.0.changed.notify_waiters();
    }

    /// True once [`Stop::set`] was called.
    pub fn is_set(&self) -> bool {
        self.0.set.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Resolves once [`Stop::set`] is called (at once if it was).
    pub async fn stopped(&self) {
        loop {
            let notified = self.0.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_set() {
                return;
            }
            notified.await;
        }
    }
}

/// A run that could not read the cluster (nothing was evicted).
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// Listing nodes failed.
    #[error("listing nodes: {0}")]
    ListNodes(#[source] kube::Error),
    /// Listing pods failed.
    #[error("listing pods: {0}")]
    ListPods(#[source] kube::Error),
}

/// `descheduler_pods_evicted` counts accumulated over the runs of a process.
#[derive(Debug, Clone, Default)]
pub struct Metrics(Arc<Mutex<BTreeMap<[String; 4], u64>>>);

impl Metrics {
    /// Adds one run's counts.
    pub fn add(&self, report: &Report) {
        if let Ok(mut m) = self.0.lock() {
            for (k, n) in report.metric_counts() {
                *m.entry(k).or_insert(0) += n;
            }
        }
    }

    /// Prometheus text.
    pub fn text(&self) -> String {
        match self.0.lock() {
            Ok(m) => crate::report::metrics_text(&m),
            Err(_) => String::new(),
        }
    }
}

/// Reads the cluster: every node and every pod bound to a node, compiled for the engine.
/// Objects the engine cannot read are skipped with a warning.
pub async fn snapshot(
    client: &kube::Client,
) -> Result<(Vec<NodeState>, Vec<PodState>, Vec<String>), DriverError> {
    let (nodes, pods, warnings, _) = read_cluster(client).await?;
    Ok((nodes, pods, warnings))
}

/// Each listed pod's resourceVersion by (namespace, name): its events name the version the
/// descheduler decided on, as upstream's references do.
type Versions = BTreeMap<(String, String), String>;

async fn read_cluster(
    client: &kube::Client,
) -> Result<(Vec<NodeState>, Vec<PodState>, Vec<String>, Versions), DriverError> {
    let mut warnings = Vec::new();
    let nodes = Api::<Node>::all(client.clone())
        .list(&ListParams::default())
        .await
        .map_err(DriverError::ListNodes)?;
    let pods = Api::<Pod>::all(client.clone())
        .list(&ListParams::default().fields("spec.nodeName!="))
        .await
        .map_err(DriverError::ListPods)?;
    let mut node_states = Vec::with_capacity(nodes.items.len());
    for n in &nodes.items {
        match serde_json::to_value(n).map(|v| NodeState::from_json(&v)) {
            Ok(Ok(s)) => node_states.push(s),
            Ok(Err(e)) => warnings.push(format!("skipped {e}")),
            Err(e) => warnings.push(format!("skipped a node: {e}")),
        }
    }
    let mut pod_states = Vec::with_capacity(pods.items.len());
    let mut versions = Versions::new();
    for p in &pods.items {
        if let (Some(name), Some(rv)) = (&p.metadata.name, &p.metadata.resource_version) {
            let ns = p.metadata.namespace.clone().unwrap_or_default();
            versions.insert((ns, name.clone()), rv.clone());
        }
        match serde_json::to_value(p).map(|v| PodState::from_json(&v)) {
            Ok(Ok(s)) => pod_states.push(s),
            Ok(Err(e)) => warnings.push(format!("skipped {e}")),
            Err(e) => warnings.push(format!("skipped a pod: {e}")),
        }
    }
    Ok((node_states, pod_states, warnings, versions))
}

/// One descheduling run: read, decide, evict (unless dry run), report.
pub async fn run_once(client: &kube::Client, cfg: &RunConfig) -> Result<Report, DriverError> {
    run_once_vetted(client, cfg, |_, _, plan| vec![None; plan.evictions.len()]).await
}

/// [`run_once`] whose chosen evictions are vetted before any is carried out: `vet` gets the
/// run's nodes, pods and plan and answers, per eviction in order, `None` to carry it out or
/// the [`Outcome`] to report instead (`berth simulate` leaves a pod that fits nowhere, see
/// [`crate::preview`]). A missing answer counts as `None`.
pub async fn run_once_vetted(
    client: &kube::Client,
    cfg: &RunConfig,
    vet: impl FnOnce(&[NodeState], &[PodState], &Plan) -> Vec<Option<Outcome>>,
) -> Result<Report, DriverError> {
    let (nodes, pods, mut warnings, versions) = read_cluster(client).await?;
    // Ages (PodLifeTime, minPodAge, minPodLifetimeSeconds) are measured at the run's start.
    let options = Options {
        now: Some(cfg.clock.now().timestamp()),
        ..cfg.options.clone()
    };
    let mut plan: Plan = plan(&nodes, &pods, &cfg.policy, &options);
    let mut vetted = vet(&nodes, &pods, &plan).into_iter();
    let mut outcomes = Vec::with_capacity(plan.evictions.len());
    for e in &plan.evictions {
        // Taken before the stop check: a stopping process either sees this eviction pending
        // (and waits for it and its event) or it is never started.
        let _pending = Outstanding::process().start();
        if cfg.stop.is_set() {
            break;
        }
        if let Some(instead) = vetted.next().flatten() {
            outcomes.push(instead);
            continue;
        }
        if cfg.dry_run {
            outcomes.push(Outcome::WouldEvict);
            continue;
        }
        let api: Api<Pod> = Api::namespaced(client.clone(), &e.namespace);
        let outcome = match api.evict(&e.name, &EvictParams::default()).await {
            Ok(_) => Outcome::Evicted,
            Err(kube::Error::Api(s)) if s.code == 429 => {
                Outcome::BlockedByDisruptionBudget(s.message.clone())
            }
            Err(kube::Error::Api(s)) if s.code == 404 => Outcome::NotFound,
            Err(err) => Outcome::Failed(err.to_string()),
        };
        if outcome == Outcome::Evicted {
            let pod = pods
                .iter()
                .find(|p| p.namespace == e.namespace && p.name == e.name);
            let uid = pod.map(|p| p.pod.metadata.uid.clone());
            let message = format!(
                "pod evicted by sigs.k8s.io/descheduler: {}: {}",
                e.strategy, e.reason
            );
            let resource_version = versions
                .get(&(e.namespace.clone(), e.name.clone()))
                .cloned();
            cfg.events.0.event_about(
                pod_reference(&e.namespace, &e.name, uid, resource_version),
                None,
                berth_events::EventType::Normal,
                "Descheduled",
                "Descheduled",
                message,
            );
        }
        outcomes.push(outcome);
    }
    let left = plan.evictions.len() - outcomes.len();
    if left > 0 {
        plan.evictions.truncate(outcomes.len());
        plan.notes.push(crate::engine::Note {
            strategy: None,
            message: format!("stopping: {left} chosen evictions were not attempted"),
        });
    }
    warnings.extend(cfg.policy.warnings.iter().cloned());
    Ok(Report::new(plan, outcomes, cfg.dry_run, warnings))
}

/// The evicted pod, as upstream's references name it.
fn pod_reference(
    namespace: &str,
    name: &str,
    uid: Option<String>,
    resource_version: Option<String>,
) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: Some(name.to_string()),
        namespace: Some(namespace.to_string()),
        uid: uid.filter(|u| !u.is_empty()),
        resource_version,
        ..ObjectReference::default()
    }
}
