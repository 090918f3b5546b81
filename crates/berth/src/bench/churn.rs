//! `berth bench api --churn 10m`: pods created and deleted as fast as the clients go while
//! `--live` pods exist, with the process's resident memory sampled every `--sample-every`. Under
//! churn the API server's memory must stay flat: the store's history is compacted and the watch
//! cache is bounded, so RSS at the end should be close to RSS after the first minute.

use super::load::*;
use anyhow::Context;
use berth_core::clock::Stopwatch;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, PostParams};
use kube::Api;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How churn is run.
pub struct Churn {
    pub live: usize,
    pub duration: Duration,
    pub sample_every: Duration,
    pub json: bool,
}

/// One memory sample.
struct Sample {
    at: Duration,
    rss_mib: f64,
    writes_per_second: f64,
}

pub async fn run(clients: Vec<Api<Pod>>, churn: Churn) -> anyhow::Result<()> {
    // The standing population first.
    let next = Arc::new(AtomicUsize::new(0));
    let creators: Vec<_> = clients
        .iter()
        .map(|api| tokio::spawn(create_pods(api.clone(), next.clone(), churn.live)))
        .collect();
    for task in creators {
        task.await.context("a client task panicked")??;
    }
    let next = Arc::new(AtomicUsize::new(churn.live));
    let writes = Arc::new(AtomicUsize::new(0));
    let started = Stopwatch::start();
    let workers: Vec<_> = clients
        .into_iter()
        .map(|api| {
            let (next, writes, live, duration) =
                (next.clone(), writes.clone(), churn.live, churn.duration);
            tokio::spawn(async move {
                while started.elapsed() < duration {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    create_and_retire(&api, i, live).await?;
                    writes.fetch_add(2, Ordering::Relaxed);
                }
                anyhow::Ok(())
            })
        })
        .collect();
    let mut samples = Vec::new();
    let mut last_writes = 0;
    let mut last_at = Duration::ZERO;
    while started.elapsed() < churn.duration {
        let wait = churn
            .sample_every
            .min(churn.duration.saturating_sub(started.elapsed()));
        tokio::time::sleep(wait).await;
        let at = started.elapsed();
        let total = writes.load(Ordering::Relaxed);
        let sample = Sample {
            at,
            rss_mib: rss_mib().unwrap_or(0.0),
            writes_per_second: (total - last_writes) as f64 / (at - last_at).as_secs_f64(),
        };
        if !churn.json {
            println!(
                "  {:>5.0} s: RSS {:.1} MiB, {:.0} writes/s",
                sample.at.as_secs_f64(),
                sample.rss_mib,
                sample.writes_per_second
            );
        }
        (last_writes, last_at) = (total, at);
        samples.push(sample);
    }
    for w in workers {
        w.await.context("a client task panicked")??;
    }
    report(&samples, &churn, writes.load(Ordering::Relaxed));
    Ok(())
}

/// Creates `pod-<i>` and deletes the pod created `live` before it.
async fn create_and_retire(api: &Api<Pod>, i: usize, live: usize) -> anyhow::Result<()> {
    let name = format!("pod-{i:06}");
    api.create(&PostParams::default(), &pod_default(&name))
        .await
        .with_context(|| format!("creating pod {name}"))?;
    let old = format!("pod-{:06}", i - live);
    match api
        .delete(&old, &DeleteParams::default().grace_period(0))
        .await
    {
        Ok(_) => Ok(()),
        // Another client's create of it may still be in flight: it is retired later.
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e).with_context(|| format!("deleting pod {old}")),
    }
}

fn report(samples: &[Sample], churn: &Churn, writes: usize) {
    let first_minute = samples
        .iter()
        .find(|s| s.at >= Duration::from_secs(60))
        .or(samples.first());
    let last = samples.last();
    let growth = first_minute
        .zip(last)
        .map(|(a, b)| (b.rss_mib / a.rss_mib.max(f64::MIN_POSITIVE) - 1.0) * 100.0);
    let rate = writes as f64 / churn.duration.as_secs_f64();
    if churn.json {
        let json = serde_json::json!({
            "live_pods": churn.live,
            "seconds": churn.duration.as_secs_f64(),
            "writes_per_second": round(rate, 1),
            "rss_mib": samples.iter().map(|s| round(s.rss_mib, 1)).collect::<Vec<_>>(),
            "rss_after_first_minute_mib": first_minute.map(|s| round(s.rss_mib, 1)),
            "rss_at_end_mib": last.map(|s| round(s.rss_mib, 1)),
            "growth_percent": growth.map(|g| round(g, 1)),
        });
        println!("{json}");
        return;
    }
    println!(
        "churn: {} live pods, {:.0} writes/s (creates + deletes) for {:.0} s",
        churn.live,
        rate,
        churn.duration.as_secs_f64()
    );
    if let (Some(a), Some(b), Some(g)) = (first_minute, last, growth) {
        println!(
            "  RSS {:.1} MiB after {:.0} s, {:.1} MiB at the end ({g:+.1}%)",
            a.rss_mib,
            a.at.as_secs_f64(),
            b.rss_mib
        );
    }
}

/// This process's resident set (Linux; `None` elsewhere).
fn rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}
