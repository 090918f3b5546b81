//! One simulation run: starts `berth serve`'s control plane on the paused clock, waits for the
//! nodes, carries out the timeline, samples the cluster, and builds the report.

use super::live::Snapshot;
use super::observer::Observer;
use super::report::{self, Millis, Report};
use super::timeline::Timeline;
use super::{RunArgs, SchedulerChoice};
use anyhow::Context;
use berth_core::clock::{Clock, Stopwatch};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::watcher;
use kube::Api;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Where every simulation's clock starts: a fixed time, so that timestamps (and everything
/// derived from them) are the same in every run.
const EPOCH_SECONDS: i64 = 1_767_225_600; // 2026-01-01T00:00:00Z

/// How long (cluster time) the nodes may take to register and report Ready.
const NODES_READY_LIMIT: Duration = Duration::from_secs(300);

/// How often, in wall time, the progress line is redrawn.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// The `berth serve` flags of a simulation: memory store, a private data dir, no listener
/// anyone uses (port 0), the run's scheduler, descheduler and master configuration.
fn serve_args(
    run: &RunArgs,
    choice: &SchedulerChoice,
    data_dir: &std::path::Path,
    live: Option<&Snapshot>,
) -> anyhow::Result<crate::serve::ServeArgs> {
    #[derive(clap::Parser)]
    struct Serve {
        #[command(flatten)]
        args: crate::serve::ServeArgs,
    }
    let dir = data_dir.display().to_string();
    let mut args = <Serve as clap::Parser>::try_parse_from([
        "serve",
        "--memory-store",
        "--port",
        "0",
        "--data-dir",
        dir.as_str(),
    ])?
    .args;
    args.cluster = run.cluster.clone();
    args.nodes = run.nodes;
    args.policy_config_file = choice.policy.clone();
    args.scheduler_config = choice.config.clone();
    // The simulation runs its own descheduler, with the preview (`deschedule`).
    args.descheduler_policy = None;
    args.master_config = run.master_config.clone();
    args.scheduler_seed = run.seed;
    args.simulation = true;
    args.imported_nodes = live.map(|l| l.nodes.clone());
    Ok(args)
}

/// Milliseconds of cluster time since `start`.
fn since(clock: &Clock, start: Instant) -> Millis {
    let elapsed = clock.instant().saturating_duration_since(start);
    u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
}

/// How many nodes the run expects: the live cluster's, the cluster file's, or `--nodes`.
fn expected_nodes(run: &RunArgs, live: Option<&Snapshot>) -> anyhow::Result<usize> {
    if let Some(live) = live {
        return Ok(live.nodes.len());
    }
    let Some(path) = &run.cluster else {
        return Ok(run.nodes);
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the cluster file {}", path.display()))?;
    let cluster = berth_kubelet::config::parse_cluster(&text)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Ok(cluster.nodes.len())
}

fn ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Runs one simulation and builds its report.
pub async fn simulate(
    run: &RunArgs,
    choice: &SchedulerChoice,
    timeline: &Timeline,
    live: Option<&Snapshot>,
) -> anyhow::Result<Report> {
    let nodes = expected_nodes(run, live)?;
    let dir = tempfile::Builder::new()
        .prefix("berth-simulate-")
        .tempdir()
        .context("creating a temporary data dir")?;
    let args = serve_args(run, choice, dir.path(), live)?;
    // A bad descheduler policy stops the run before anything starts.
    let descheduler = match &run.descheduler_policy {
        Some(path) => Some((
            crate::descheduler::load_policy(path)?,
            super::capacity::scheduler(
                choice.policy.as_deref(),
                choice.config.as_deref(),
                run.seed,
            )?,
        )),
        None => None,
    };
    let epoch = chrono::DateTime::from_timestamp(EPOCH_SECONDS, 0).unwrap_or_default();
    let clock = Clock::starting_at(epoch);
    let running = crate::serve::start_on(&args, clock.clone()).await?;
    let client = kube::Client::new(running.server.in_process_router(), "default");

    // Time 0 is when every node is Ready: the timeline starts on a cluster that is up.
    let node_api: Api<Node> = Api::all(client.clone());
    let waited = clock.instant();
    loop {
        let list = node_api.list(&Default::default()).await?;
        if list.items.iter().filter(|n| ready(n)).count() >= nodes {
            break;
        }
        anyhow::ensure!(
            clock.instant().saturating_duration_since(waited) < NODES_READY_LIMIT,
            "the simulated nodes did not all become Ready within {NODES_READY_LIMIT:?} of cluster time"
        );
        clock.sleep(Duration::from_millis(100)).await;
    }
    let actor = super::actions::Actor::new(client.clone()).await?;

    let start = clock.instant();
    let observer = Arc::new(Mutex::new(Observer::default()));
    let why = (!run.explain.is_empty()).then(|| super::why::Why {
        client: client.clone(),
        policy: choice.policy.clone(),
        config: choice.config.clone(),
        seed: run.seed,
        pods: run.explain.clone(),
    });
    watch(&client, &observer, &clock, start, why);
    // The live cluster's objects exist from time 0, before the timeline's first entry.
    if let Some(live) = live {
        for line in actor.import(live).await {
            lock(&observer).action(0, line);
        }
    }
    if let Some((policy, scheduler)) = descheduler {
        super::deschedule::spawn(
            client.clone(),
            policy,
            run.descheduling_interval,
            clock.clone(),
            scheduler,
            observer.clone(),
            start,
        );
    }

    // The timeline, in order of time.
    let timeline_task = {
        let observer = observer.clone();
        let entries = timeline.entries.clone();
        let clock = clock.clone();
        let until = run.until;
        tokio::spawn(async move {
            for entry in entries {
                if entry.at > until {
                    break;
                }
                tokio::time::sleep_until(start + entry.at).await;
                for action in &entry.actions {
                    for line in actor.run(action).await {
                        tracing::info!(at = ?entry.at, "{line}");
                        lock(&observer).action(since(&clock, start), line);
                    }
                }
            }
        })
    };

    // Samples at a fixed interval; the progress line is redrawn from here (wall time).
    let stopwatch = Stopwatch::start();
    let mut last_drawn = Duration::ZERO;
    let mut tick = tokio::time::interval(run.sample_interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let end = start + run.until;
    loop {
        tokio::select! {
            biased;
            _ = tokio::time::sleep_until(end) => break,
            _ = tick.tick() => {
                let at = since(&clock, start);
                let scheduled = {
                    let mut o = lock(&observer);
                    o.sample(at);
                    o.records.iter().filter(|r| matches!(r, report::Record::Scheduled { .. })).count()
                };
                if !run.quiet && stopwatch.elapsed() >= last_drawn + PROGRESS_EVERY {
                    last_drawn = stopwatch.elapsed();
                    progress(at, run.until, scheduled, stopwatch.elapsed());
                }
            }
        }
    }
    timeline_task.abort();
    let at = since(&clock, start);
    let records = {
        let mut o = lock(&observer);
        o.sample(at);
        std::mem::take(&mut o.records)
    };
    if !run.quiet {
        let scheduled = records
            .iter()
            .filter(|r| matches!(r, report::Record::Scheduled { .. }))
            .count();
        progress(at, run.until, scheduled, stopwatch.elapsed());
        eprintln!();
    }
    let settings = report::Settings {
        until_seconds: run.until.as_secs(),
        seed: run.seed,
        sample_interval_seconds: run.sample_interval.as_secs(),
        scheduler: choice.label(),
        nodes,
    };
    drop(running);
    Ok(report::build(settings, &records))
}

fn lock(observer: &Mutex<Observer>) -> std::sync::MutexGuard<'_, Observer> {
    observer
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `simulated 03:20:00 / 24:00:00   1234 pods scheduled   456 pods/s`, redrawn in place.
fn progress(at: Millis, until: Duration, scheduled: usize, wall: Duration) {
    let rate = scheduled as f64 / wall.as_secs_f64().max(0.001);
    let line = format!(
        "simulated {} / {}   {scheduled} pods scheduled   {rate:.0} pods/s   {:.1}s",
        clock_text(at / 1000),
        clock_text(until.as_secs()),
        wall.as_secs_f64()
    );
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        eprint!("\r{line}");
    } else {
        eprintln!("{line}");
    }
}

/// `HH:MM:SS` of cluster time.
pub fn clock_text(secs: u64) -> String {
    format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
}

/// Watches pods, nodes and events into the observer, stamping each with the virtual time.
fn watch(
    client: &kube::Client,
    observer: &Arc<Mutex<Observer>>,
    clock: &Clock,
    start: Instant,
    why: Option<super::why::Why>,
) {
    use watcher::Event as W;
    // Pods and events are watched untyped: the observer reads them as JSON, and a typed Pod
    // would be decoded field by field only to be encoded again (a tenth of a large run's CPU).
    let pods: Api<DynamicObject> = Api::all_with(client.clone(), &ApiResource::erase::<Pod>(&()));
    let obs = observer.clone();
    let pod_clock = clock.clone();
    let pod_why = why.clone();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(watcher(pods, watcher::Config::default()));
        while let Some(event) = stream.next().await {
            let Ok(event) = event else { continue };
            let at = since(&pod_clock, start);
            let mut o = lock(&obs);
            match event {
                W::Apply(p) | W::InitApply(p) => {
                    if let Ok(v) = serde_json::to_value(&p) {
                        let before = o.records.len();
                        o.pod(at, &v);
                        // A chosen pod just bound: explain the decision.
                        if let (Some(why), Some(report::Record::Scheduled { pod, .. })) =
                            (&pod_why, o.records.get(before))
                        {
                            if why.wanted(&o, pod) {
                                let real = format!(
                                    "{}/{}",
                                    p.metadata.namespace.as_deref().unwrap_or("default"),
                                    p.metadata.name.as_deref().unwrap_or("")
                                );
                                why.spawn(real, pod.clone(), at, obs.clone());
                            }
                        }
                    }
                }
                W::Delete(p) => {
                    if let Ok(v) = serde_json::to_value(&p) {
                        o.pod_deleted(&v);
                    }
                }
                W::Init | W::InitDone => {}
            }
        }
    });
    let nodes: Api<Node> = Api::all(client.clone());
    let obs = observer.clone();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(watcher(nodes, watcher::Config::default()));
        while let Some(event) = stream.next().await {
            let Ok(event) = event else { continue };
            let mut o = lock(&obs);
            match event {
                W::Apply(n) | W::InitApply(n) => {
                    if let Ok(v) = serde_json::to_value(&n) {
                        o.node(&v);
                    }
                }
                W::Delete(n) => {
                    if let Ok(v) = serde_json::to_value(&n) {
                        o.node_deleted(&v);
                    }
                }
                W::Init | W::InitDone => {}
            }
        }
    });
    let events: Api<DynamicObject> =
        Api::all_with(client.clone(), &ApiResource::erase::<Event>(&()));
    let obs = observer.clone();
    let clock = clock.clone();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(watcher(events, watcher::Config::default()));
        while let Some(event) = stream.next().await {
            let Ok(event) = event else { continue };
            let at = since(&clock, start);
            if let W::Apply(e) | W::InitApply(e) = event {
                if let Ok(v) = serde_json::to_value(&e) {
                    let mut o = lock(&obs);
                    let before = o.records.len();
                    o.event(at, &v);
                    // A chosen pod failed to schedule: explain the attempt.
                    if let (Some(why), Some(report::Record::FailedScheduling { pod, .. })) =
                        (&why, o.records.get(before))
                    {
                        if why.wanted(&o, pod) {
                            let involved = |field: &str| {
                                v.pointer(&format!("/involvedObject/{field}"))
                                    .and_then(serde_json::Value::as_str)
                                    .map(str::to_string)
                            };
                            let real = format!(
                                "{}/{}",
                                involved("namespace").unwrap_or_else(|| "default".into()),
                                involved("name").unwrap_or_default()
                            );
                            why.spawn(real, pod.clone(), at, obs.clone());
                        }
                    }
                }
            }
        }
    });
}
