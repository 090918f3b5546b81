//! `berth bench api`: pod creates per second through HTTPS with concurrent clients, and the
//! latency of the watch events those creates produce.
//!
//! Each client is its own `kube::Client` (its own HTTP/1.1 connection over TLS), creating
//! `scheduler_perf`'s `pod-default` pod in a fresh namespace until `--pods` exist. Connections
//! are warmed up (TLS handshake, one request) before the clock starts. One watch on the
//! namespace's pods, opened before the first create, records when each `ADDED` event arrives.
//!
//! Watch latency is *write to delivery*: the event's arrival at the watcher minus the moment
//! the client sent the create request. It therefore includes the create's own commit (the group
//! fsync on the embedded backend). The create latency (request sent to response received) is
//! reported beside it, so the delivery delay after the commit can be read off the difference.

use super::load::*;
use anyhow::Context;
use berth_core::clock::Stopwatch;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{ListParams, WatchEvent, WatchParams};
use kube::{Api, Client};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub struct ApiBenchArgs {
    /// How many pods to create.
    #[arg(long, default_value_t = 10_000)]
    pub pods: usize,
    /// How many concurrent clients (one connection each).
    #[arg(long, default_value_t = 16)]
    pub clients: usize,
    /// Use the API server this kubeconfig names instead of starting one in process.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Start the in-process server on the memory backend instead of the embedded (durable) one.
    #[arg(long, conflicts_with = "kubeconfig")]
    pub memory_store: bool,
    /// Start the in-process server on etcd at these client URLs (comma-separated), under a
    /// fresh `--etcd-prefix` of its own.
    #[arg(long, value_delimiter = ',', conflicts_with_all = ["kubeconfig", "memory_store"])]
    pub etcd_servers: Vec<String>,
    /// Start only the API server and its store in process, without the controllers that
    /// `berth serve` also runs (they watch every pod and share the CPU with the server).
    #[arg(long, conflicts_with = "kubeconfig")]
    pub api_only: bool,
    /// Print one JSON object instead of the human summary.
    #[arg(long)]
    pub json: bool,
    /// Instead of `--pods` creates: create and delete pods for this long (`10m`) while
    /// `--live` pods exist, printing the process's RSS (the in-process server's) as it goes.
    #[arg(long, value_parser = berth_controllers::parse_duration)]
    pub churn: Option<Duration>,
    /// With --churn: how many pods stay alive.
    #[arg(long, default_value_t = 800)]
    pub live: usize,
    /// With --churn: time between RSS samples.
    #[arg(long, default_value = "30s", value_parser = berth_controllers::parse_duration)]
    pub sample_every: Duration,
}

/// How long to wait for the watch to deliver the remaining events after the last create.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

pub async fn run(args: ApiBenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.pods > 0, "--pods must be at least 1");
    anyhow::ensure!(args.clients > 0, "--clients must be at least 1");
    let _ = rustls::crypto::ring::default_provider().install_default();

    // The in-process server (and its data dir) live until the end of the run.
    let mut _server = None;
    let (kubeconfig, backend) = match &args.kubeconfig {
        Some(path) => (path.clone(), "external".to_string()),
        None => {
            let dir = tempfile::Builder::new()
                .prefix("berth-bench-api-")
                .tempdir()
                .context("creating a temporary data dir")?;
            let path = if args.api_only {
                start_api_server(dir.path(), args.memory_store, &args.etcd_servers).await?
            } else {
                let serve = serve_args(dir.path(), args.memory_store, &args.etcd_servers)?;
                crate::serve::start(&serve).await?.kubeconfig
            };
            _server = Some(dir);
            let backend = if !args.etcd_servers.is_empty() {
                "etcd"
            } else if args.memory_store {
                "memory"
            } else {
                "embedded"
            };
            let backend = if args.api_only {
                format!("{backend}, API server only")
            } else {
                backend.to_string()
            };
            (path, backend)
        }
    };
    let config = client_config(&kubeconfig).await?;
    let client = || Client::try_from(config.clone()).context("building a client");

    let namespace = format!("bench-api-{}", std::process::id());
    create_namespace(&client()?, &namespace).await?;

    // One connection per client, handshaken before the clock starts.
    let mut clients = Vec::with_capacity(args.clients);
    for _ in 0..args.clients {
        let api: Api<Pod> = Api::namespaced(client()?, &namespace);
        api.list(&ListParams::default().limit(1))
            .await
            .context("warming up a client connection")?;
        clients.push(api);
    }

    if let Some(duration) = args.churn {
        anyhow::ensure!(
            args.kubeconfig.is_none(),
            "--churn measures the in-process server's memory: drop --kubeconfig"
        );
        anyhow::ensure!(
            !args.sample_every.is_zero(),
            "--sample-every must be positive"
        );
        let churn = super::churn::Churn {
            live: args.live,
            duration,
            sample_every: args.sample_every,
            json: args.json,
        };
        return super::churn::run(clients, churn).await;
    }
    let watcher = start_watch(Api::namespaced(client()?, &namespace), args.pods).await?;

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
    let elapsed = started.elapsed();
    let cpu = cpu_before.zip(process_cpu_seconds()).map(|(a, b)| b - a);

    let arrivals = tokio::time::timeout(DRAIN_TIMEOUT, watcher)
        .await
        .map_err(|_| anyhow::anyhow!("the watch did not deliver all {} ADDED events within {DRAIN_TIMEOUT:?} of the last create", args.pods))?
        .context("the watch task panicked")??;

    let mut report = Report::new(&args, backend, elapsed, &creates, &arrivals);
    report.cpu_seconds = cpu;
    report.load_average = load;
    if args.json {
        println!("{}", report.json());
    } else {
        report.print();
    }

    // Leave an external server as it was; an in-process one goes away with its data dir.
    if args.kubeconfig.is_some() {
        let _ = Api::<Namespace>::all(client()?)
            .delete(&namespace, &Default::default())
            .await;
    }
    Ok(())
}

/// `berth serve --port 0 --nodes 0 --disable-scheduler` on loopback with a fresh data dir; the
/// other flags keep their defaults. Only the API server and the store are measured: with a
/// scheduler and no nodes, every pod would also cost a failed-scheduling status write.
fn serve_args(
    data_dir: &std::path::Path,
    memory_store: bool,
    etcd_servers: &[String],
) -> anyhow::Result<crate::serve::ServeArgs> {
    use clap::{Args, FromArgMatches};
    let mut argv: Vec<std::ffi::OsString> = [
        "serve",
        "--bind-address",
        "127.0.0.1",
        "--port",
        "0",
        "--nodes",
        "0",
    ]
    .into_iter()
    .map(Into::into)
    .collect();
    argv.extend([
        "--disable-scheduler".into(),
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

/// The API server alone over HTTPS on a free loopback port (what `berth serve` starts first,
/// without kubelets, controllers or scheduler); returns its kubeconfig.
async fn start_api_server(
    data_dir: &std::path::Path,
    memory_store: bool,
    etcd_servers: &[String],
) -> anyhow::Result<PathBuf> {
    use berth_apiserver::{tls, ApiServer, Clock};
    let store = if !etcd_servers.is_empty() {
        let config = berth_store::EtcdConfig {
            prefix: super::etcd_prefix(),
            ..berth_store::EtcdConfig::new(etcd_servers.to_vec())
        };
        tokio::task::spawn_blocking(move || berth_store::Store::etcd(&config))
            .await?
            .context("opening the etcd store")?
    } else if memory_store {
        berth_store::Store::memory()
    } else {
        berth_store::Store::open(&data_dir.join("store")).context("opening the store")?
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
    let address = format!("127.0.0.1:{}", listener.local_addr()?.port());
    let server = ApiServer::new(store, Clock::system(), address.clone());
    server
        .bootstrap()
        .await
        .map_err(|e| anyhow::anyhow!("bootstrapping the API server: {}", e.message()))?;
    server.spawn_compactor(None);
    let creds = tls::load_or_create(data_dir, &["127.0.0.1".to_string()])?;
    let kubeconfig = tls::write_kubeconfig(data_dir, &format!("https://{address}"), &creds)?;
    let config = tls::server_config(&creds)?;
    tokio::spawn(tls::serve(
        listener,
        server.authenticated_router(creds.token.clone()),
        config,
    ));
    Ok(kubeconfig)
}

/// Opens the watch (returning once the server has accepted it) and collects the arrival time
/// of each pod's `ADDED` event until `expected` have arrived.
async fn start_watch(
    api: Api<Pod>,
    expected: usize,
) -> anyhow::Result<tokio::task::JoinHandle<anyhow::Result<HashMap<String, Instant>>>> {
    let mut version = api
        .list(&ListParams::default().limit(1))
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
        let mut arrivals = HashMap::with_capacity(expected);
        while arrivals.len() < expected {
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
                WatchEvent::Added(pod) => {
                    version = pod.metadata.resource_version.clone().unwrap_or(version);
                    if let Some(name) = pod.metadata.name {
                        arrivals.entry(name).or_insert(now);
                    }
                }
                WatchEvent::Modified(pod) | WatchEvent::Deleted(pod) => {
                    version = pod.metadata.resource_version.unwrap_or(version);
                }
                WatchEvent::Bookmark(b) => version = b.metadata.resource_version,
                WatchEvent::Error(e) => anyhow::bail!("watch error: {} ({})", e.message, e.code),
            }
        }
        Ok(arrivals)
    }))
}

/// The figures of one run.
struct Report {
    pods: usize,
    clients: usize,
    backend: String,
    seconds: f64,
    creates_per_second: f64,
    /// Create request sent → response received, milliseconds, sorted.
    create_ms: Vec<f64>,
    /// Create request sent → watch event received, milliseconds, sorted.
    watch_ms: Vec<f64>,
    /// CPU time of this process (server and clients when in process) while creating.
    cpu_seconds: Option<f64>,
    /// The host's 1-minute load average when the creates began (other work competing for CPU).
    load_average: Option<f64>,
}

impl Report {
    fn new(
        args: &ApiBenchArgs,
        backend: String,
        elapsed: Duration,
        creates: &[Create],
        arrivals: &HashMap<String, Instant>,
    ) -> Report {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let mut create_ms: Vec<f64> = creates.iter().map(|c| ms(c.acked - c.sent)).collect();
        let mut watch_ms: Vec<f64> = creates
            .iter()
            .filter_map(|c| {
                arrivals
                    .get(&c.name)
                    .map(|at| ms(at.saturating_duration_since(c.sent)))
            })
            .collect();
        create_ms.sort_by(f64::total_cmp);
        watch_ms.sort_by(f64::total_cmp);
        let seconds = elapsed.as_secs_f64();
        Report {
            pods: creates.len(),
            clients: args.clients,
            backend,
            seconds,
            creates_per_second: creates.len() as f64 / seconds,
            create_ms,
            watch_ms,
            cpu_seconds: None,
            load_average: None,
        }
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "pods": self.pods,
            "clients": self.clients,
            "backend": self.backend,
            "seconds": round(self.seconds, 3),
            "creates_per_second": round(self.creates_per_second, 1),
            "create_p50_ms": round(percentile(&self.create_ms, 50.0), 3),
            "create_p99_ms": round(percentile(&self.create_ms, 99.0), 3),
            "watch_p50_ms": round(percentile(&self.watch_ms, 50.0), 3),
            "watch_p99_ms": round(percentile(&self.watch_ms, 99.0), 3),
            "watch_latency": "create request sent to ADDED event received",
            "cpu_seconds": self.cpu_seconds.map(|c| round(c, 3)),
            "cpu_ms_per_create": self.cpu_seconds.map(|c| round(c * 1e3 / self.pods as f64, 4)),
            "load_average_1m": self.load_average,
        })
    }

    fn print(&self) {
        println!(
            "{} pods, {} clients, {} backend: {:.0} creates/s ({:.2} s)",
            self.pods, self.clients, self.backend, self.creates_per_second, self.seconds
        );
        println!(
            "  create (sent → response):    p50 {:.2} ms, p99 {:.2} ms",
            percentile(&self.create_ms, 50.0),
            percentile(&self.create_ms, 99.0)
        );
        println!(
            "  watch  (sent → ADDED event): p50 {:.2} ms, p99 {:.2} ms",
            percentile(&self.watch_ms, 50.0),
            percentile(&self.watch_ms, 99.0)
        );
        if let Some(cpu) = self.cpu_seconds {
            println!(
                "  cpu: {cpu:.2} s in this process ({:.0} µs per create), host load average {}",
                cpu * 1e6 / self.pods as f64,
                self.load_average
                    .map_or("unknown".into(), |l| format!("{l:.2}"))
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn nearest_rank_percentiles() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&values, 50.0), 50.0);
        assert_eq!(percentile(&values, 99.0), 99.0);
        assert_eq!(percentile(&values, 100.0), 100.0);
        assert_eq!(percentile(&[7.0], 99.0), 7.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }
}
