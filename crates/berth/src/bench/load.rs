//! What the API benchmarks share: clients, the `pod-default` pod, concurrent creators, and
//! the figures' arithmetic.

use anyhow::Context;
use berth_core::clock::Stopwatch;
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, Namespace, Pod, PodSpec, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// One create as a client saw it.
pub struct Create {
    pub name: String,
    pub sent: Instant,
    pub acked: Instant,
}

pub async fn client_config(path: &PathBuf) -> anyhow::Result<kube::Config> {
    let kubeconfig = kube::config::Kubeconfig::read_from(path)
        .with_context(|| format!("reading kubeconfig {}", path.display()))?;
    kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .with_context(|| format!("loading kubeconfig {}", path.display()))
}

pub async fn create_namespace(client: &Client, name: &str) -> anyhow::Result<()> {
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .with_context(|| format!("creating namespace {name}"))?;
    Ok(())
}

/// One client: creates pods `pod-<i>` for the indices it claims until `total` are claimed.
pub async fn create_pods(
    api: Api<Pod>,
    next: Arc<AtomicUsize>,
    total: usize,
) -> anyhow::Result<Vec<Create>> {
    let mut done = Vec::with_capacity(total / 8 + 1);
    let params = PostParams::default();
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= total {
            return Ok(done);
        }
        let name = format!("pod-{i:06}");
        let pod = pod_default(&name);
        let sent = Stopwatch::now();
        api.create(&params, &pod)
            .await
            .with_context(|| format!("creating pod {name}"))?;
        done.push(Create {
            name,
            sent,
            acked: Stopwatch::now(),
        });
    }
}

/// `scheduler_perf`'s `config/templates/pod-default.yaml`, named.
pub fn pod_default(name: &str) -> Pod {
    let quantities = BTreeMap::from([
        ("cpu".to_string(), Quantity("100m".into())),
        ("memory".to_string(), Quantity("500Mi".into())),
    ]);
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "pause".into(),
                image: Some("registry.k8s.io/pause:3.10".into()),
                ports: Some(vec![ContainerPort {
                    container_port: 80,
                    ..Default::default()
                }]),
                resources: Some(ResourceRequirements {
                    requests: Some(quantities.clone()),
                    limits: Some(quantities),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// User + system CPU seconds this process has used (Linux; `None` elsewhere).
pub fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command: state is 3rd overall, utime 14th, stime 15th.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0) // USER_HZ
}

/// The host's 1-minute load average (Linux; `None` elsewhere).
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Nearest-rank percentile of sorted values (0 when there are none).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub fn round(x: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (x * scale).round() / scale
}
