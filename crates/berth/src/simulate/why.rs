//! `--explain POD`: each scheduling decision of a chosen pod, node by node, in the report's
//! "why here" table: each node's filter result (the failed predicates' reasons) or each
//! priority's score and the weighted total, as `berth explain` shows it.
//!
//! At the instant the simulation sees the decision (the binding, or a failed attempt), the
//! cluster is read through the API into a fresh cache and the pod is explained as if it were
//! pending, with the run's scheduler policy: the same machinery as `berth explain`.

use super::observer::Observer;
use super::report::{Millis, Record};
use berth_scheduler::{ClusterCache, Scheduler};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use std::sync::{Arc, Mutex};

/// The most decisions explained per pod (a pod that fails for hours is explained at its
/// first attempts).
pub const MAX_PER_POD: usize = 5;

/// What explanations need: the client, the run's scheduler configuration, and the pods
/// chosen (as the report names them).
#[derive(Clone)]
pub struct Why {
    pub client: kube::Client,
    pub policy: Option<std::path::PathBuf>,
    pub config: Option<std::path::PathBuf>,
    pub seed: u64,
    pub pods: Vec<String>,
}

impl Why {
    /// Whether `alias` (the report's name) is one of the chosen pods, explained fewer than
    /// [`MAX_PER_POD`] times so far.
    pub fn wanted(&self, observer: &Observer, alias: &str) -> bool {
        self.pods.iter().any(|p| p == alias) && observer.explained(alias) < MAX_PER_POD
    }

    /// Explains the pod `real` (`namespace/name` in the API) now, in a task of its own,
    /// recording it under `alias` at `at`.
    pub fn spawn(&self, real: String, alias: String, at: Millis, observer: Arc<Mutex<Observer>>) {
        let why = self.clone();
        tokio::spawn(async move {
            match why.explain(&real).await {
                Ok(mut explanation) => {
                    explanation.pod = alias.clone();
                    let mut o = observer.lock().unwrap_or_else(|e| e.into_inner());
                    o.records.push(Record::Explained {
                        at,
                        pod: alias,
                        explanation,
                    });
                }
                Err(e) => tracing::warn!(pod = %real, error = %e, "explaining a decision failed"),
            }
        });
    }

    async fn explain(&self, real: &str) -> anyhow::Result<berth_scheduler::Explanation> {
        let (ns, name) = real.split_once('/').unwrap_or(("default", real));
        let pod = Api::<Pod>::namespaced(self.client.clone(), ns)
            .get(name)
            .await?;
        let mut cache = ClusterCache::new();
        crate::explain::load(&self.client, &mut cache).await?;
        let _ = cache.remove_pod(real);
        let mut pending = serde_json::to_value(&pod)?;
        if let Some(spec) = pending.get_mut("spec").and_then(|s| s.as_object_mut()) {
            spec.remove("nodeName");
        }
        let info = cache
            .compile_pod_json(&serde_json::to_vec(&pending)?)
            .map_err(|e| anyhow::anyhow!("compiling pod {real}: {e}"))?;
        let mut scheduler: Scheduler =
            super::capacity::scheduler(self.policy.as_deref(), self.config.as_deref(), self.seed)?;
        let mut ex = scheduler.explain(&cache, &info);
        if self.config.is_some() {
            crate::explain::as_plugins(&mut ex);
        }
        Ok(ex)
    }
}
