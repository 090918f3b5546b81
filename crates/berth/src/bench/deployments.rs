//! `berth bench e2e --workload deployment`: issue 11's workload, `--pods / --replicas`
//! Deployments of `--replicas` `pod-default` pods each, created at once; the clock runs from the
//! first create to the watch seeing every Deployment with all its replicas available. What is
//! measured is the whole control plane: Deployment and ReplicaSet controllers creating the pods
//! through the API, the scheduler binding them, and the simulated kubelets starting them.

use super::load::*;
use anyhow::Context;
use berth_core::clock::Stopwatch;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{ListParams, ObjectMeta, PostParams, WatchEvent, WatchParams};
use kube::{Api, Client};
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// How long to wait for every Deployment to be available after the last create.
const AVAILABLE_TIMEOUT: Duration = Duration::from_secs(300);

/// What one run measured.
pub struct Outcome {
    pub deployments: usize,
    pub pods: usize,
    /// First create sent → last Deployment seen fully available.
    pub seconds: f64,
    /// First create sent → last Deployment create acknowledged.
    pub create_seconds: f64,
}

/// Creates the Deployments with `clients` concurrent clients and waits until all are available.
pub async fn run(
    client: Client,
    namespace: &str,
    pods: usize,
    replicas: usize,
    clients: usize,
) -> anyhow::Result<Outcome> {
    anyhow::ensure!(replicas > 0, "--replicas must be at least 1");
    let count = pods.div_ceil(replicas);
    let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let watcher = watch_available(api.clone(), count).await?;
    let started = Stopwatch::now();
    let per_client = count.div_ceil(clients.max(1));
    let tasks: Vec<_> = (0..count)
        .collect::<Vec<_>>()
        .chunks(per_client)
        .map(|chunk| {
            let (api, chunk) = (api.clone(), chunk.to_vec());
            tokio::spawn(async move {
                for i in chunk {
                    api.create(&PostParams::default(), &deployment(i, replicas))
                        .await
                        .with_context(|| format!("creating deployment {i}"))?;
                }
                anyhow::Ok(())
            })
        })
        .collect();
    for task in tasks {
        task.await.context("a client task panicked")??;
    }
    let create_seconds = started.elapsed().as_secs_f64();
    let available = match tokio::time::timeout(AVAILABLE_TIMEOUT, watcher).await {
        Ok(joined) => joined.context("the watch task panicked")??,
        Err(_) => anyhow::bail!(
            "not all {count} deployments were available within {AVAILABLE_TIMEOUT:?} of the last create"
        ),
    };
    let last = available.values().copied().max().unwrap_or(started);
    Ok(Outcome {
        deployments: count,
        pods: count * replicas,
        seconds: last.saturating_duration_since(started).as_secs_f64(),
        create_seconds,
    })
}

/// Deployment `bench-<i>` of `replicas` `pod-default` pods.
fn deployment(i: usize, replicas: usize) -> Deployment {
    let labels = BTreeMap::from([("app".to_string(), format!("bench-{i}"))]);
    let mut template = pod_default("unused");
    template.metadata = ObjectMeta {
        labels: Some(labels.clone()),
        ..Default::default()
    };
    Deployment {
        metadata: ObjectMeta {
            name: Some(format!("bench-{i}")),
            ..Default::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(i32::try_from(replicas).unwrap_or(i32::MAX)),
            selector: LabelSelector {
                match_labels: Some(labels),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(template.metadata),
                spec: template.spec,
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Watches the namespace's Deployments until `expected` of them report every replica available;
/// returns when each first did.
async fn watch_available(
    api: Api<Deployment>,
    expected: usize,
) -> anyhow::Result<tokio::task::JoinHandle<anyhow::Result<HashMap<String, Instant>>>> {
    let mut version = api
        .list_metadata(&ListParams::default().limit(1))
        .await
        .context("listing deployments before the watch")?
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
        let mut available = HashMap::with_capacity(expected);
        while available.len() < expected {
            let Some(event) = stream.try_next().await.context("reading the watch")? else {
                stream = api
                    .watch(&params, &version)
                    .await
                    .context("reopening the watch")?
                    .boxed();
                continue;
            };
            let now = Stopwatch::now();
            match event {
                WatchEvent::Added(d) | WatchEvent::Modified(d) => {
                    version = d.metadata.resource_version.clone().unwrap_or(version);
                    let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
                    let have = d
                        .status
                        .as_ref()
                        .and_then(|s| s.available_replicas)
                        .unwrap_or(0);
                    if have >= want {
                        if let Some(name) = d.metadata.name {
                            available.entry(name).or_insert(now);
                        }
                    }
                }
                WatchEvent::Deleted(d) => {
                    version = d.metadata.resource_version.unwrap_or(version);
                }
                WatchEvent::Bookmark(b) => version = b.metadata.resource_version,
                WatchEvent::Error(e) => anyhow::bail!("watch error: {} ({})", e.message, e.code),
            }
        }
        Ok(available)
    }))
}
