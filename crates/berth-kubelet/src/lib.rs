//! berth's simulated nodes.
//!
//! Each simulated node registers a `Node`, renews its `Lease` in `kube-node-lease`, runs the pods
//! bound to it (they become Running with conditions, IPs and container statuses) and finishes
//! their graceful deletion. It is a Kubernetes client like any other component: it talks to the
//! API server only through a `kube::Client`, in process or over HTTPS.
//!
//! Nodes come from node pools ([`config::parse_cluster`], `examples/cluster.yaml`) or the quick
//! form ([`NodeConfig::quick`]). Each node reports capacity and allocatable (seed 004), simulates
//! its pods' usage (`berth.io/usage`), and every housekeeping interval runs the eviction manager
//! (seed 001): pressure conditions, node-level reclaim, one eviction per pass, admission under
//! pressure, and a simulated OOM killer. The nodes answer like kubelets on one HTTP listener
//! ([`endpoints`]: `/stats/summary`, `/metrics/resource`, `/configz`, `/containerLogs`, `/healthz`),
//! published in each Node's `status.daemonEndpoints` and `status.addresses` for the API
//! server's node proxy and pod log routes.
//! Each pass also puts its node's conditions right if the API shows otherwise (for instance
//! `Unknown`, written by the node lifecycle controller while the node was silent).
//! The kubelets record upstream's events ([`events`]: `Pulling`, `Pulled`, `Created`, `Started`,
//! `Killing`, `BackOff`, `Evicted`, the node's `Starting`, `NodeReady`, ...) through a bounded,
//! paced queue off the pod path; answer `/configz` ([`configz`]); and mirror their pool's static
//! pods in the API ([`static_pods`]).
//! With [`Kubelet::machine_config_daemon`], each node also runs OpenShift's machine config
//! daemon ([`machine_config_daemon`]): the kubelet settings of the MachineConfig its pool
//! points it at replace the node's own (allocatable, eviction thresholds, max pods).
//! The decisions are pure ([`eviction`], [`model`], [`status`]); the driver only carries them out.
//! Condition taints are the node lifecycle controller's, not the kubelet's.
//!
//! ```no_run
//! # async fn demo(client: kube::Client) {
//! let nodes = berth_kubelet::NodeConfig::quick(3);
//! berth_kubelet::Kubelet::new(client, nodes).spawn();
//! # }
//! ```

pub mod admission;
pub mod allocatable;
pub mod clients;
pub mod commands;
pub mod config;
pub mod configz;
pub mod container_exit;
pub mod deadline;
pub mod endpoints;
pub mod events;
pub mod eviction;
pub mod failures;
pub mod finish;
pub mod logs;
pub mod machine_config_daemon;
pub mod model;
mod node;
pub mod observed;
pub mod oom;
pub mod pod_token;
mod pods;
pub mod probes;
pub mod running;
pub mod share;
pub mod sim;
pub mod simulate;
pub mod static_pod_files;
pub mod static_pods;
pub mod status;
pub mod summary;
pub mod usage;

pub use berth_core::clock::Clock;
pub use config::NodeConfig;
/// The former name of [`NodeConfig`].
pub use config::NodeConfig as NodeSpec;

use berth_core::loop_health::LoopHealth;
use berth_core::supervisor::Supervisor;
use berth_informers::{Event, Informer, Keep};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::Api;
use kube::runtime::watcher;
use kube::ResourceExt;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often each node renews its lease (upstream: a quarter of the 40s lease).
pub const DEFAULT_LEASE_RENEW_INTERVAL: Duration = Duration::from_secs(10);

/// Errors of the simulated nodes.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("registering node {node}: {source}")]
    Register { node: String, source: kube::Error },
    #[error("listening for the kubelet endpoints on {host}: {source}")]
    Listen {
        host: String,
        source: std::io::Error,
    },
}

/// A set of simulated nodes: their shared watches read through one client; each node writes
/// through its own ([`Kubelet::node_credentials`]).
pub struct Kubelet {
    client: kube::Client,
    node_credentials: Option<clients::NodeCredentials>,
    nodes: Vec<NodeConfig>,
    housekeeping_interval: Duration,
    clock: Clock,
    endpoint_host: String,
    commands: commands::Commands,
    lease_renew_interval: Duration,
    sharing: Option<share::Sharing>,
    supervisor: Option<Supervisor>,
    /// The machine config daemons' client, when they run.
    machine_config_daemon: Option<kube::Client>,
    simulation: bool,
}

/// Upstream's housekeeping interval.
pub const DEFAULT_HOUSEKEEPING_INTERVAL: Duration = Duration::from_secs(10);

impl Kubelet {
    pub fn new(client: kube::Client, nodes: Vec<NodeConfig>) -> Kubelet {
        Kubelet {
            client,
            node_credentials: None,
            nodes,
            housekeeping_interval: DEFAULT_HOUSEKEEPING_INTERVAL,
            clock: Clock::system(),
            endpoint_host: "127.0.0.1".into(),
            commands: commands::Commands::default(),
            lease_renew_interval: DEFAULT_LEASE_RENEW_INTERVAL,
            sharing: None,
            supervisor: None,
            machine_config_daemon: None,
            simulation: false,
        }
    }

    /// For `berth simulate`, whose cost would otherwise grow with nodes x simulated time: the
    /// nodes renew no lease (the node lifecycle controller of a simulation takes each node's
    /// simulated behaviour, `berth.io/simulate`, as its sign of life), re-post no unchanged
    /// status, and run a housekeeping pass only while something can change ([`sim::Sim::simulation`]).
    /// What they decide, and when, is otherwise `serve`'s. Off by default.
    pub fn simulation(mut self, on: bool) -> Kubelet {
        self.simulation = on;
        self
    }

    /// The supervisor the nodes' long-running loops run under (lease renewal, housekeeping,
    /// the node and pod watches, the sharing among replicas, the failure schedule): each is
    /// logged, counted and restarted when it panics. Without one, a supervisor of their own
    /// on the kubelets' clock, whose health nobody reads.
    pub fn supervisor(mut self, supervisor: Supervisor) -> Kubelet {
        self.supervisor = Some(supervisor);
        self
    }

    /// Shares the nodes with the other replicas on the same etcd ([`share`]): each node's
    /// kubelet runs here only while this replica holds the node's Lease. Without it, every
    /// node runs here (the embedded shape).
    pub fn shared(mut self, sharing: share::Sharing) -> Kubelet {
        self.sharing = Some(sharing);
        self
    }

    /// How often each node renews its lease (upstream: 10s, a quarter of the lease; the
    /// kubelet's `--node-status-update-frequency` in berth). Shorter with a shorter
    /// `--node-monitor-grace-period`, so that healthy nodes never look silent.
    pub fn lease_renew_interval(mut self, every: Duration) -> Kubelet {
        self.lease_renew_interval = every.max(Duration::from_millis(100));
        self
    }

    /// How each node gets its own client (`system:node:<name>`, as a kubelet's credentials);
    /// without it the nodes write through the shared client.
    pub fn node_credentials(mut self, credentials: clients::NodeCredentials) -> Kubelet {
        self.node_credentials = Some(credentials);
        self
    }

    /// Runs each node's machine config daemon ([`machine_config_daemon`]) through `client`,
    /// the daemon's own identity: the nodes then take the kubelet settings of the machine
    /// configs that OpenShift's machine config controller points them at.
    pub fn machine_config_daemon(mut self, client: kube::Client) -> Kubelet {
        self.machine_config_daemon = Some(client);
        self
    }

    /// Programs that containers naming them run in process ([`commands`]).
    pub fn commands(mut self, commands: commands::Commands) -> Kubelet {
        self.commands = commands;
        self
    }

    /// The clock the nodes read time from (the process's shared clock; a paused one in tests).
    pub fn clock(mut self, clock: Clock) -> Kubelet {
        self.clock = clock;
        self
    }

    /// How often the eviction manager runs (upstream: 10s, fixed; shorter for tests).
    pub fn housekeeping_interval(mut self, every: Duration) -> Kubelet {
        self.housekeeping_interval = every.max(Duration::from_millis(100));
        self
    }

    /// The address the kubelet endpoints listen on (a free port is picked), and that the Nodes
    /// publish for the API server to reach them; loopback by default.
    pub fn endpoint_host(mut self, host: &str) -> Kubelet {
        self.endpoint_host = host.to_string();
        self
    }

    /// Registers the nodes, then runs leases, pods and the endpoints in background tasks.
    pub async fn start(self) -> Result<(), Error> {
        let sup = self
            .supervisor
            .clone()
            .unwrap_or_else(|| Supervisor::new(LoopHealth::new(), self.clock.clone()));
        let listener = tokio::net::TcpListener::bind((self.endpoint_host.as_str(), 0))
            .await
            .and_then(|l| l.local_addr().map(|a| (l, a.port())))
            .map_err(|source| Error::Listen {
                host: self.endpoint_host.clone(),
                source,
            });
        let (listener, port) = listener?;
        let endpoint = node::Endpoint {
            host: &self.endpoint_host,
            port,
        };
        let clients = clients::Clients::new(self.client.clone(), self.node_credentials);
        let hosted = Arc::new(match self.sharing {
            Some(_) => share::Hosted::none(),
            None => share::Hosted::every(),
        });
        // Shared nodes register as this replica takes them, and the failure schedule runs in
        // one replica (see `berth serve`).
        let registered = if hosted.shared() {
            &[][..]
        } else {
            &self.nodes[..]
        };
        for (i, config) in registered.iter().enumerate() {
            let spec = node::NodeSpec {
                config,
                index: i + 1,
                endpoint: &endpoint,
                replica: None,
            };
            node::register(
                &clients.shared(),
                &clients.node(&config.name),
                &spec,
                &self.clock,
            )
            .await
            .map_err(|source| Error::Register {
                node: config.name.clone(),
                source,
            })?;
        }
        let schedule = failures::timeline(
            registered
                .iter()
                .map(|n| (n.name.as_str(), n.failures.as_slice())),
        );
        if !schedule.is_empty() {
            failures::supervise(
                &sup,
                failures::LOOP_NAME,
                self.client.clone(),
                self.clock.clone(),
                schedule,
            );
        }
        let configs = self.nodes.clone();
        let models = self.nodes.into_iter().map(model::NodeModel::new).collect();
        let writer_clients = clients.clone();
        let events =
            events::QueuedWriter::start(move |host| writer_clients.node(host), self.clock.clone());
        let sim = Arc::new(
            sim::Sim::new(
                clients.clone(),
                models,
                self.housekeeping_interval,
                self.clock,
                hosted.clone(),
                events,
            )
            .status_update_every(self.lease_renew_interval)
            .simulation(self.simulation),
        );
        // The nodes registered above (shared ones start as this replica takes them).
        let started = if hosted.shared() { 0 } else { configs.len() };
        for config in &configs[..started] {
            let at = sim.clock().timestamp();
            sim.events()
                .record(events::node_starting(&config.name, &at));
            if !config.static_pods.is_empty() {
                tokio::spawn(create_mirror_pods(
                    clients.node(&config.name),
                    config.clone(),
                    sim.clock().clone(),
                ));
            }
            if let Some(dir) = config.static_pod_path() {
                tokio::spawn(static_pod_files::run(
                    clients.node(&config.name),
                    config.name.clone(),
                    dir.to_string(),
                    config.static_pods.clone(),
                    sim.clock().clone(),
                    self.housekeeping_interval,
                ));
            }
        }
        let leases = Arc::new(share::NodeLeases::default());
        let holder = self.sharing.as_ref().map(|s| s.replica.clone());
        let renewing = (
            clients.clone(),
            sim.clone(),
            self.lease_renew_interval,
            holder.map(|h| (h, leases.clone(), self.commands.clone())),
        );
        if !self.simulation {
            sup.spawn("kubelet-lease-renewal", move || {
                let (clients, sim, every, shared) = renewing.clone();
                renew_leases(clients, sim, every, shared)
            });
        }
        sim.show_program_output(self.commands.output());
        if let Some(client) = self.machine_config_daemon.clone() {
            let daemons = Arc::new(machine_config_daemon::Daemons::new(
                client,
                clients.clone(),
                sim.clone(),
                configs.clone(),
            ));
            sup.spawn(machine_config_daemon::LOOP_NAME, move || {
                daemons.clone().run()
            });
        }
        let housekept = sim.clone();
        sup.spawn("kubelet-housekeeping", move || {
            housekept.clone().housekeeping()
        });
        // An HTTP server: a handler that panics ends its request, not the server.
        tokio::spawn(endpoints::serve(listener, sim.clone()));
        let pods = PodRunner {
            clients,
            sim,
            commands: self.commands,
            runs: Arc::default(),
            starting: Arc::default(),
            deadlines: Arc::default(),
            housekeeping_interval: self.housekeeping_interval,
        };
        let (watching, client) = (pods.clone(), self.client.clone());
        sup.spawn("kubelet-node-watch", move || {
            watch_nodes(client.clone(), watching.clone())
        });
        let running = pods.clone();
        sup.spawn("kubelet-pod-watch", move || run_pods(running.clone()));
        if let Some(sharing) = self.sharing {
            let names: Vec<String> = configs.iter().map(|c| c.name.clone()).collect();
            let clock = pods.sim.clock().clone();
            let host = Arc::new(Homes {
                pods,
                configs,
                endpoint_host: self.endpoint_host,
                port,
                replica: sharing.replica.clone(),
            });
            let client = self.client.clone();
            let host: Arc<dyn share::Host> = host;
            sup.spawn("kubelet-sharing", move || {
                share::run(
                    sharing.clone(),
                    client.clone(),
                    names.clone(),
                    hosted.clone(),
                    leases.clone(),
                    host.clone(),
                    clock.clone(),
                )
            });
        }
        Ok(())
    }

    /// [`Kubelet::start`] in a background task, logging a failure.
    pub fn spawn(self) {
        tokio::spawn(async move {
            if let Err(e) = self.start().await {
                tracing::error!(error = %e, "simulated nodes failed to start");
            }
        });
    }
}

/// Starting and stopping the kubelets of shared nodes in this replica.
struct Homes {
    pods: PodRunner,
    configs: Vec<NodeConfig>,
    endpoint_host: String,
    port: u16,
    replica: String,
}

impl share::Host for Homes {
    fn start(&self, name: String) -> futures::future::BoxFuture<'static, bool> {
        let found = self
            .configs
            .iter()
            .enumerate()
            .find(|(_, c)| c.name == name);
        let Some((i, config)) = found.map(|(i, c)| (i, c.clone())) else {
            return Box::pin(std::future::ready(false));
        };
        let (pods, host, port, replica) = (
            self.pods.clone(),
            self.endpoint_host.clone(),
            self.port,
            self.replica.clone(),
        );
        Box::pin(async move {
            let endpoint = node::Endpoint { host: &host, port };
            let spec = node::NodeSpec {
                config: &config,
                index: i + 1,
                endpoint: &endpoint,
                replica: Some(&replica),
            };
            let clients = &pods.clients;
            let clock = pods.sim.clock().clone();
            if let Err(e) =
                node::register(&clients.shared(), &clients.node(&name), &spec, &clock).await
            {
                tracing::warn!(node = %name, error = %e, "starting the kubelet of a node taken over failed");
                return false;
            }
            pods.sim.run_here(&name);
            let at = clock.timestamp();
            pods.sim.events().record(events::node_starting(&name, &at));
            if !config.static_pods.is_empty() {
                tokio::spawn(create_mirror_pods(
                    clients.node(&name),
                    config.clone(),
                    clock.clone(),
                ));
            }
            if let Some(dir) = config.static_pod_path() {
                tokio::spawn(static_pod_files::run(
                    clients.node(&name),
                    name.clone(),
                    dir.to_string(),
                    config.static_pods.clone(),
                    clock.clone(),
                    pods.housekeeping_interval,
                ));
            }
            pods.catch_up(name).await;
            true
        })
    }

    fn stop(&self, node: &str, grace: Duration) -> futures::future::BoxFuture<'static, ()> {
        self.pods.sim.stop_here(node);
        self.pods.commands.stop_node(node, grace)
    }

    fn client(&self, node: &str) -> kube::Client {
        self.pods.clients.node(node)
    }
}

/// Creates the mirror pods of the node's static pods ([`static_pods`]) with the node's own
/// client; one that exists already (a restart) is left as it is.
async fn create_mirror_pods(client: kube::Client, config: NodeConfig, clock: Clock) {
    let nodes: Api<Node> = Api::all(client.clone());
    let uid = match nodes.get(&config.name).await {
        Ok(n) => n.metadata.uid.unwrap_or_default(),
        Err(e) => {
            tracing::warn!(node = %config.name, error = %e, "reading the node for its mirror pods failed");
            return;
        }
    };
    for manifest in &config.static_pods {
        let mirror = static_pods::mirror_pod(manifest, &config.name, &uid, &clock.timestamp());
        let ns = mirror["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default");
        let pod: Pod = match serde_json::from_value(mirror.clone()) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(node = %config.name, error = %e, "a static pod manifest is not a pod");
                continue;
            }
        };
        let api: Api<Pod> = Api::namespaced(client.clone(), ns);
        match api.create(&kube::api::PostParams::default(), &pod).await {
            Ok(_) => {
                tracing::info!(node = %config.name, pod = ?pod.metadata.name, "mirror pod created")
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => {
                tracing::warn!(node = %config.name, pod = ?pod.metadata.name, error = %e, "creating a mirror pod failed")
            }
        }
    }
}

/// Makes a deleted mirror pod of a node running here again (its static pod never stopped).
fn recreate_mirror(runner: &PodRunner, pod: &Pod) {
    let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) else {
        return;
    };
    if !runner.sim.runs_here(node) {
        return;
    }
    let Some(config) = runner.sim.config(node) else {
        return;
    };
    let ns = pod.namespace().unwrap_or_default();
    if static_pods::is_mirror_of(&config.static_pods, node, &ns, &pod.name_any()) {
        tokio::spawn(create_mirror_pods(
            runner.clients.node(node),
            config,
            runner.sim.clock().clone(),
        ));
    }
}

/// Watches the nodes, so that each kubelet sees what the API shows of its node (conditions,
/// `berth.io/simulate`); a node back in touch with the API catches up with its pods.
async fn watch_nodes(client: kube::Client, pods: PodRunner) {
    let nodes: Informer<Node> = Informer::start_keeping::<Node>(
        Api::all(client),
        watcher::Config::default(),
        Keep::Identity(node_identity),
    );
    let mut events = nodes.subscribe();
    while let Some(event) = events.recv().await {
        if let Some(node) = event.applied() {
            if let Some(back) = pods.sim.observe_node(node) {
                tokio::spawn(pods.clone().catch_up(back));
            }
            if let Some(patch) = pods.sim.allocatable_patch(node) {
                let name = node.metadata.name.clone().unwrap_or_default();
                let api: Api<Node> = Api::all(pods.clients.node(&name));
                tokio::spawn(async move {
                    let params = kube::api::PatchParams::default();
                    if let Err(e) = api
                        .patch_status(&name, &params, &kube::api::Patch::Merge(&patch))
                        .await
                    {
                        tracing::debug!(node = %name, error = %e, "making extended resources allocatable failed");
                    }
                });
            }
        }
    }
}

/// What runs the pods bound to our nodes, shared by the pod watch and the catch-up of a node
/// that was out of touch with the API.
#[derive(Clone)]
struct PodRunner {
    clients: clients::Clients,
    sim: Arc<sim::Sim>,
    commands: commands::Commands,
    /// Pods whose containers finish by themselves (`berth.io/run-seconds`) and are running
    /// now: one run per pod uid.
    runs: Arc<Mutex<HashSet<String>>>,
    /// Pods whose start is under way (their init containers run): one start per pod uid.
    starting: pods::Starting,
    /// The `activeDeadlineSeconds` timers armed, by pod uid.
    deadlines: pods::Deadlines,
    /// How often the kubelet syncs: its static pod directory is read again as often.
    housekeeping_interval: Duration,
}

impl PodRunner {
    /// Takes in an added or updated pod; a node out of touch with the API sees nothing.
    async fn on_pod(&self, pod: Arc<Pod>) {
        if !self.sim.owns(&pod) || !self.node_reaches_api(&pod) {
            return;
        }
        let node = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .unwrap_or_default();
        let client = self.clients.node(node);
        if let Some(patch) = observed::catch_up(&pod) {
            tokio::spawn(write_observed(client.clone(), Arc::clone(&pod), patch));
        }
        self.commands.observe(&client, &pod, self.sim.clock());
        if self.sim.on_pod(&pod).await {
            pods::start_run(
                &client,
                &pod,
                self.sim.clock(),
                &self.runs,
                self.sim.hosted(),
                self.sim.events().clone(),
            );
            pods::arm_deadline(&client, &pod, self.sim.clock(), &self.deadlines);
            tokio::spawn(pods::reconcile(
                client,
                pod,
                self.sim.clock().clone(),
                self.starting.clone(),
            ));
        }
    }

    fn node_reaches_api(&self, pod: &Pod) -> bool {
        pod.spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|n| self.sim.mode(n).reaches_api())
    }

    /// A node back in touch: reads its pods again and forgets those deleted meanwhile.
    async fn catch_up(self, node: String) {
        let api: Api<Pod> = Api::all(self.clients.shared());
        let params = kube::api::ListParams::default().fields(&format!("spec.nodeName={node}"));
        let listed = match api.list(&params).await {
            Ok(l) => l.items,
            Err(e) => {
                tracing::warn!(node = %node, error = %e, "listing the pods of a node back in touch failed");
                return;
            }
        };
        let live: HashSet<String> = listed
            .iter()
            .filter_map(|p| p.metadata.uid.clone())
            .collect();
        self.sim.forget_pods_except(&node, &live);
        tracing::info!(node = %node, pods = listed.len(), "node back in touch with the API; catching up with its pods");
        for pod in listed {
            self.on_pod(Arc::new(pod)).await;
        }
    }
}

/// Tells the API the kubelet has seen a pod's new spec (see [`observed::catch_up`]).
async fn write_observed(client: kube::Client, pod: Arc<Pod>, patch: serde_json::Value) {
    let api: Api<Pod> = Api::namespaced(client, &pod.namespace().unwrap_or_default());
    let params = kube::api::PatchParams::default();
    if let Err(e) = api
        .patch_status(
            &pod.name_any(),
            &params,
            &kube::api::Patch::Strategic(&patch),
        )
        .await
    {
        tracing::debug!(pod = %pod.name_any(), error = %e, "recording the observed generation failed");
    }
}

/// Watches pods bound to any node and runs those on ours.
async fn run_pods(runner: PodRunner) {
    let config = watcher::Config::default().fields("spec.nodeName!=");
    let pods: Informer<Pod> = Informer::start_keeping::<Pod>(
        Api::all(runner.clients.shared()),
        config,
        Keep::Identity(pod_identity),
    );
    let mut events = pods.subscribe();
    while let Some(event) = events.recv().await {
        match event {
            Event::Added(pod) | Event::Updated { new: pod, .. } => runner.on_pod(pod).await,
            Event::Deleted(pod) => {
                runner.sim.on_delete(&pod);
                recreate_mirror(&runner, &pod);
            }
            Event::Synced => {}
        }
    }
}

// Leases.

/// Renews the lease of every node that reaches the API and runs here, each `every`; shared
/// nodes name the replica as holder, and a lease taken by another replica stops the kubelet.
async fn renew_leases(
    clients: clients::Clients,
    sim: Arc<sim::Sim>,
    every: Duration,
    shared: Option<(String, Arc<share::NodeLeases>, commands::Commands)>,
) {
    let mut tick = sim.clock().interval(every);
    loop {
        tick.tick().await;
        let renew = sim.clock().micro_timestamp();
        for node in sim.node_names() {
            // A stopped or partitioned node's renewals never arrive.
            if !sim.mode(node).reaches_api() || !sim.runs_here(node) {
                continue;
            }
            if let Some((replica, leases, commands)) = &shared {
                match leases
                    .renew(&clients.node(node), node, replica, &renew)
                    .await
                {
                    Ok(share::Renewed::Yes) => {}
                    Ok(share::Renewed::Lost(holder)) => {
                        tracing::warn!(node = %node, holder = %holder, "leaderelection lost: the node Lease was taken by another replica; stopped its kubelet here");
                        sim.stop_here(node);
                        // The new owner may run them already: drop ours at once.
                        commands.stop_node(node, Duration::ZERO).await;
                    }
                    Err(e) => tracing::debug!(node = %node, error = %e, "lease renewal failed"),
                }
                continue;
            }
            let lease = serde_json::json!({
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": node, "namespace": "kube-node-lease"},
                "spec": {"holderIdentity": node, "leaseDurationSeconds": 40, "renewTime": renew},
            });
            let api: Api<k8s_openapi::api::coordination::v1::Lease> =
                Api::namespaced(clients.node(node), "kube-node-lease");
            let result = api
                .patch(
                    node,
                    &kube::api::PatchParams::apply("berth-kubelet").force(),
                    &kube::api::Patch::Apply(&lease),
                )
                .await;
            if let Err(e) = result {
                tracing::debug!(node = %node, error = %e, "lease renewal failed");
            }
        }
    }
}

// The simulation keeps its own state of nodes and pods; its informers keep only what a relist
// needs to report an object gone.

fn node_identity(node: &Node) -> Node {
    Node {
        metadata: identity_meta(&node.metadata),
        ..Default::default()
    }
}

fn pod_identity(pod: &Pod) -> Pod {
    Pod {
        metadata: identity_meta(&pod.metadata),
        spec: Some(k8s_openapi::api::core::v1::PodSpec {
            node_name: pod.spec.as_ref().and_then(|s| s.node_name.clone()),
            ..Default::default()
        }),
        status: None,
    }
}

fn identity_meta(meta: &kube::api::ObjectMeta) -> kube::api::ObjectMeta {
    kube::api::ObjectMeta {
        name: meta.name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        ..Default::default()
    }
}
