//! `berth bench e2e`: pods scheduled per second end to end, as `scheduler_perf` counts them.
//!
//! Starts `berth serve` in process (API server, store, built-in scheduler, simulated kubelets)
//! with `--nodes` nodes of `scheduler_perf`'s `node-default` shape (4 CPU, 32Gi, 110 pods; passed
//! as a `--cluster` file), or uses the cluster a `--kubeconfig` names. Then `--clients`
//! concurrent clients (one HTTPS connection each, warmed up before the clock starts) create
//! `--pods` `pod-default` pods in a fresh namespace. One watch on that namespace, opened before
//! the first create, records when each pod is first seen with `spec.nodeName` set.
//!
//! Throughput is pods / (last pod seen bound − first create sent). Latency per pod is its create
//! request sent → its bound event received at the watcher. The simulated kubelets also write
//! each pod's status as it "starts"; that load is part of the system being measured.

use super::load::*;
use anyhow::Context;
use berth_core::clock::Stopwatch;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{ApiResource, ListParams, WatchEvent, WatchParams};
use kube::core::{NotUsed, Object};
use kube::{Api, Client};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub struct E2eBenchArgs {
    /// How many simulated nodes the in-process server starts (4 CPU / 32Gi / 110 pods each).
    /// With --kubeconfig, the cluster's Ready nodes are used and this is ignored.
    #[arg(long, default_value_t = 1_000)]
    pub nodes: usize,
    /// How many pods to create.
    #[arg(long, default_value_t = 10_000)]
    pub pods: usize,
    /// How many concurrent clients (one connection each).
    #[arg(long, default_value_t = 16)]
    pub clients: usize,
    /// Use the cluster this kubeconfig names instead of starting one in process.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Start the in-process server on the memory backend instead of the embedded (durable) one.
    #[arg(long, conflicts_with = "kubeconfig")]
    pub memory_store: bool,
    /// Start the in-process server on etcd at these client URLs (comma-separated), under a
    /// fresh `--etcd-prefix` of its own.
    #[arg(long, value_delimiter = ',', conflicts_with_all = ["kubeconfig", "memory_store"])]
    pub etcd_servers: Vec<String>,
    /// Print one JSON object instead of the human summary.
    #[arg(long)]
    pub json: bool,
    /// `pods`: bare pods created by the clients. `deployment`: `--pods / --replicas`
    /// Deployments whose controllers create the pods; timed until all are available.
    #[arg(long, default_value = "pods", value_parser = ["pods", "deployment"])]
    pub workload: String,
    /// Replicas per Deployment with `--workload deployment`.
    #[arg(long, default_value_t = 100)]
    pub replicas: usize,
}

/// How long to wait for the remaining pods to be bound after the last create.
const BIND_TIMEOUT: Duration = Duration::from_secs(120);
/// How long to wait for the simulated nodes to report Ready.
const NODES_TIMEOUT: Duration = Duration::from_secs(180);

/// A pod as the watch sees it: only the name and `spec.nodeName` are decoded.
type BoundPod = Object<BoundSpec, NotUsed>;

#[derive(Clone, Debug, k8s_openapi::serde::Deserialize)]
#[serde(crate = "k8s_openapi::serde")]
struct BoundSpec {
    #[serde(rename = "nodeName", default)]
    node_name: Option<String>,
}

pub async fn run(args: E2eBenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.pods > 0, "--pods must be at least 1");
    anyhow::ensure!(args.clients > 0, "--clients must be at least 1");
    let _ = rustls::crypto::ring::default_provider().install_default();

    // The in-process server (and its data dir) live until the end of the run.
    let mut _server = None;
    let (kubeconfig, backend) = match &args.kubeconfig {
        Some(path) => (path.clone(), "external".to_string()),
        None => {
            anyhow::ensure!(args.nodes > 0, "--nodes must be at least 1");
            let dir = tempfile::Builder::new()
                .prefix("berth-bench-e2e-")
                .tempdir()
                .context("creating a temporary data dir")?;
            let serve = serve_args(
                dir.path(),
                args.nodes,
                args.memory_store,
                &args.etcd_servers,
            )?;
            let running = crate::serve::start(&serve).await?;
            let path = running.kubeconfig.clone();
            _server = Some((running, dir));
            let backend = if !args.etcd_servers.is_empty() {
                "etcd"
            } else if args.memory_store {
                "memory"
            } else {
                "embedded"
            };
            (path, backend.to_string())
        }
    };
    let config = client_config(&kubeconfig).await?;
    let client = || Client::try_from(config.clone()).context("building a client");

    let want_nodes = args.kubeconfig.is_none().then_some(args.nodes);
    let setup = Stopwatch::now();
    let nodes = wait_for_ready_nodes(&client()?, want_nodes).await?;
    let nodes_ready_seconds = setup.elapsed().as_secs_f64();
    if nodes * 32 < args.pods && !args.json {
        eprintln!(
            "warning: {nodes} nodes hold about {} pod-default pods by memory; some of {} pods may stay Pending",
            nodes * 32,
            args.pods
        );
    }

    let namespace = format!("bench-e2e-{}", std::process::id());
    create_namespace(&client()?, &namespace).await?;
    if args.workload == "deployment" {
        let cpu_before = process_cpu_seconds();
        let out = super::deployments::run(
            client()?,
            &namespace,
            args.pods,
            args.replicas,
            args.clients,
        )
        .await?;
        let cpu = cpu_before.zip(process_cpu_seconds()).map(|(a, b)| b - a);
        let pods_per_second = out.pods as f64 / out.seconds;
        if args.json {
            println!(
                "{}",
                serde_json::json!({
                    "workload": "deployment", "nodes": nodes, "backend": backend,
                    "deployments": out.deployments, "pods": out.pods,
                    "seconds": round(out.seconds, 3),
                    "pods_per_second": round(pods_per_second, 1),
                    "create_seconds": round(out.create_seconds, 3),
                    "cpu_seconds": cpu.map(|c| round(c, 3)),
                })
            );
        } else {
            println!(
                "{} deployments x {} replicas on {nodes} nodes, {backend} backend: {pods_per_second:.0} pods/s available ({:.2} s, first create → last deployment available)",
                out.deployments, args.replicas, out.seconds
            );
            println!(
                "  deployment creates acknowledged after {:.2} s; cpu {} s in this process",
                out.create_seconds,
                cpu.map_or("unknown".into(), |c| format!("{c:.2}"))
            );
        }
        if args.kubeconfig.is_some() {
            let _ = Api::<Namespace>::all(client()?)
                .delete(&namespace, &Default::default())
                .await;
        }
        return Ok(());
    }

    // One connection per client, handshaken before the clock starts.
    let mut clients = Vec::with_capacity(args.clients);
    for _ in 0..args.clients {
        let api: Api<Pod> = Api::namespaced(client()?, &namespace);
        api.list(&ListParams::default().limit(1))
            .await
            .context("warming up a client connection")?;
        clients.push(api);
    }

    let ar = ApiResource::erase::<Pod>(&());
    let watcher = start_watch(Api::namespaced_with(client()?, &namespace, &ar), args.pods).await?;

    let next = Arc::new(AtomicUsize::new(0));
    let load = load_average();
    let cpu_before = process_cpu_seconds();
    let started = Stopwatch::now();
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|api| tokio::spawn(create_pods(api, next.clone(), args.pods)))
        .collect();
    let mut creates = Vec::with_capacity(args.pods);
    for task in tasks {
        creates.extend(task.await.context("a client task panicked")??);
    }
    let created = started.elapsed();

    let bound = match tokio::time::timeout(BIND_TIMEOUT, watcher).await {
        Ok(joined) => joined.context("the watch task panicked")??,
        Err(_) => anyhow::bail!(
            "not all {} pods were bound within {BIND_TIMEOUT:?} of the last create",
            args.pods
        ),
    };
    let cpu = cpu_before.zip(process_cpu_seconds()).map(|(a, b)| b - a);
    let load_after = load_average();

    let mut report = Report::new(&args, nodes, backend, started, created, &creates, &bound);
    report.cpu_seconds = cpu;
    report.load_average = load;
    report.load_average_after = load_after;
    report.nodes_ready_seconds = nodes_ready_seconds;
    if args.json {
        println!("{}", report.json());
    } else {
        report.print();
    }

    // Leave an external cluster as it was; an in-process one goes away with its data dir.
    if args.kubeconfig.is_some() {
        let _ = Api::<Namespace>::all(client()?)
            .delete(&namespace, &Default::default())
            .await;
    }
    Ok(())
}

/// `berth serve --port 0 --cluster <nodes.yaml>` on loopback with a fresh data dir, the built-in
/// scheduler on; the other flags keep their defaults. The cluster file holds one pool of `nodes`
/// nodes shaped like `scheduler_perf`'s `node-default` (4 CPU, 32Gi, 110 pods).
fn serve_args(
    data_dir: &Path,
    nodes: usize,
    memory_store: bool,
    etcd_servers: &[String],
) -> anyhow::Result<crate::serve::ServeArgs> {
    use clap::{Args, FromArgMatches};
    let cluster = data_dir.join("cluster.yaml");
    std::fs::write(
        &cluster,
        format!(
            "pools:\n  - name: node\n    namePrefix: node-\n    count: {nodes}\n    capacity:\n      cpu: \"4\"\n      memory: 32Gi\n      pods: \"110\"\n"
        ),
    )
    .context("writing the cluster file")?;
    let mut argv: Vec<std::ffi::OsString> = ["serve", "--bind-address", "127.0.0.1", "--port", "0"]
        .into_iter()
        .map(Into::into)
        .collect();
    argv.extend([
        "--cluster".into(),
        cluster.into_os_string(),
        "--data-dir".into(),
        data_dir.as_os_str().to_owned(),
    ]);
    if memory_store {
        argv.push("--memory-store".into());
    }
    if !etcd_servers.is_empty() {
        argv.extend([
            "--etcd-servers".into(),
            etcd_servers.join(",").into(),
            "--etcd-prefix".into(),
            super::etcd_prefix().into(),
        ]);
    }
    let command = crate::serve::ServeArgs::augment_args(clap::Command::new("serve"));
    let matches = command
        .try_get_matches_from(argv)
        .context("building the serve arguments")?;
    Ok(crate::serve::ServeArgs::from_arg_matches(&matches)?)
}

/// Waits until `want` nodes (or, without a target, at least one) report Ready and are
/// schedulable; returns how many do.
async fn wait_for_ready_nodes(client: &Client, want: Option<usize>) -> anyhow::Result<usize> {
    let api: Api<Node> = Api::all(client.clone());
    let deadline = Stopwatch::now() + NODES_TIMEOUT;
    loop {
        let ready = api
            .list(&ListParams::default())
            .await
            .context("listing nodes")?
            .items
            .iter()
            .filter(|n| is_ready_and_schedulable(n))
            .count();
        if ready >= want.unwrap_or(1) {
            return Ok(ready);
        }
        anyhow::ensure!(
            Stopwatch::now() < deadline,
            "only {ready} of {} nodes became Ready within {NODES_TIMEOUT:?}",
            want.unwrap_or(1)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn is_ready_and_schedulable(node: &Node) -> bool {
    let unschedulable = node
        .spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false);
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    ready && !unschedulable
}

/// Opens the watch (returning once the server has accepted it) and collects, for each pod, the
/// arrival time of the first event showing `spec.nodeName` set, until `expected` pods are bound.
async fn start_watch(
    api: Api<BoundPod>,
    expected: usize,
) -> anyhow::Result<tokio::task::JoinHandle<anyhow::Result<HashMap<String, Instant>>>> {
    let mut version = api
        .list_metadata(&ListParams::default().limit(1))
        .await
        .context("listing pods before the watch")?
        .metadata
        .resource_version
        .unwrap_or_else(|| "0".into());
    let params = WatchParams::default().timeout(290);
    let mut stream = api
        .watch(&params, &version)
        .await
        .context("opening the watch")?
        .boxed();
    Ok(tokio::spawn(async move {
        let mut bound = HashMap::with_capacity(expected);
        while bound.len() < expected {
            let event = match stream.try_next().await.context("reading the watch")? {
                Some(event) => event,
                None => {
                    // The server closed the watch (timeout); resume where it left off.
                    stream = api
                        .watch(&params, &version)
                        .await
                        .context("reopening the watch")?
                        .boxed();
                    continue;
                }
            };
            let now = Stopwatch::now();
            match event {
                // A bind is a MODIFIED event; an ADDED one with a node only after a re-list.
                WatchEvent::Added(pod) | WatchEvent::Modified(pod) => {
                    version = pod.metadata.resource_version.clone().unwrap_or(version);
                    if pod.spec.node_name.is_some() {
                        if let Some(name) = pod.metadata.name {
                            bound.entry(name).or_insert(now);
                        }
                    }
                }
                WatchEvent::Deleted(pod) => {
                    version = pod.metadata.resource_version.unwrap_or(version);
                }
                WatchEvent::Bookmark(b) => version = b.metadata.resource_version,
                WatchEvent::Error(e) => anyhow::bail!("watch error: {} ({})", e.message, e.code),
            }
        }
        Ok(bound)
    }))
}

/// The figures of one run.
struct Report {
    nodes: usize,
    pods: usize,
    clients: usize,
    backend: String,
    /// First create sent → last pod seen bound.
    seconds: f64,
    pods_per_second: f64,
    /// First create sent → last create acknowledged.
    create_seconds: f64,
    creates_per_second: f64,
    /// Create request sent → bound event received, milliseconds, sorted.
    bound_ms: Vec<f64>,
    /// Create request sent → response received, milliseconds, sorted.
    create_ms: Vec<f64>,
    cpu_seconds: Option<f64>,
    load_average: Option<f64>,
    load_average_after: Option<f64>,
    nodes_ready_seconds: f64,
}

impl Report {
    fn new(
        args: &E2eBenchArgs,
        nodes: usize,
        backend: String,
        started: Instant,
        created: Duration,
        creates: &[Create],
        bound: &HashMap<String, Instant>,
    ) -> Report {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let mut create_ms: Vec<f64> = creates.iter().map(|c| ms(c.acked - c.sent)).collect();
        let mut bound_ms: Vec<f64> = creates
            .iter()
            .filter_map(|c| {
                bound
                    .get(&c.name)
                    .map(|at| ms(at.saturating_duration_since(c.sent)))
            })
            .collect();
        create_ms.sort_by(f64::total_cmp);
        bound_ms.sort_by(f64::total_cmp);
        let first_sent = creates.iter().map(|c| c.sent).min().unwrap_or(started);
        let last_bound = bound.values().copied().max().unwrap_or(first_sent);
        let seconds = last_bound
            .saturating_duration_since(first_sent)
            .as_secs_f64();
        let create_seconds = created.as_secs_f64();
        Report {
            nodes,
            pods: bound.len(),
            clients: args.clients,
            backend,
            seconds,
            pods_per_second: bound.len() as f64 / seconds,
            create_seconds,
            creates_per_second: creates.len() as f64 / create_seconds,
            bound_ms,
            create_ms,
            cpu_seconds: None,
            load_average: None,
            load_average_after: None,
            nodes_ready_seconds: 0.0,
        }
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "nodes": self.nodes,
            "pods": self.pods,
            "clients": self.clients,
            "backend": self.backend,
            "node_shape": "4 cpu / 32Gi / 110 pods (scheduler_perf node-default)",
            "seconds": round(self.seconds, 3),
            "pods_per_second": round(self.pods_per_second, 1),
            "p50_ms": round(percentile(&self.bound_ms, 50.0), 3),
            "p99_ms": round(percentile(&self.bound_ms, 99.0), 3),
            "latency": "create request sent to watch event with spec.nodeName set received",
            "create_seconds": round(self.create_seconds, 3),
            "creates_per_second": round(self.creates_per_second, 1),
            "create_p50_ms": round(percentile(&self.create_ms, 50.0), 3),
            "create_p99_ms": round(percentile(&self.create_ms, 99.0), 3),
            "cpu_seconds": self.cpu_seconds.map(|c| round(c, 3)),
            "cpu_ms_per_pod": self.cpu_seconds.map(|c| round(c * 1e3 / self.pods as f64, 4)),
            "nodes_ready_seconds": round(self.nodes_ready_seconds, 3),
            "load_average_1m": self.load_average,
            "load_average_1m_after": self.load_average_after,
        })
    }

    fn print(&self) {
        println!(
            "{} pods on {} nodes, {} clients, {} backend: {:.0} pods/s scheduled ({:.2} s, first create → last bound)",
            self.pods, self.nodes, self.clients, self.backend, self.pods_per_second, self.seconds
        );
        println!(
            "  create → bound (watch): p50 {:.2} ms, p99 {:.2} ms",
            percentile(&self.bound_ms, 50.0),
            percentile(&self.bound_ms, 99.0)
        );
        println!(
            "  creates: {:.0}/s ({:.2} s), create → response p50 {:.2} ms, p99 {:.2} ms",
            self.creates_per_second,
            self.create_seconds,
            percentile(&self.create_ms, 50.0),
            percentile(&self.create_ms, 99.0)
        );
        if let Some(cpu) = self.cpu_seconds {
            println!(
                "  cpu: {cpu:.2} s in this process ({:.0} µs per pod), host load average {} → {}",
                cpu * 1e6 / self.pods as f64,
                self.load_average
                    .map_or("unknown".into(), |l| format!("{l:.2}")),
                self.load_average_after
                    .map_or("unknown".into(), |l| format!("{l:.2}"))
            );
        }
        println!("  nodes Ready after {:.2} s", self.nodes_ready_seconds);
    }
}
