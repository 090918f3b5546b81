//! The policy a scheduler runs, published as the ConfigMap
//! `kube-system/<scheduler>-running-policy` (not `<scheduler>-policy`, a name users give the
//! ConfigMap they mount the policy file from)
//! under the key `policy.cfg` (the key kube-scheduler's `--policy-configmap` read), so that
//! `berth explain` explains a pod with the policy its scheduler really runs.
//!
//! A profile of a KubeSchedulerConfiguration is published the same way under the key
//! [`CONFIG_KEY`] (the whole configuration file) with the annotation [`PROFILE_ANNOTATION`]
//! naming the profile; reading it back compiles that profile again.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use crate::policy::Policy;

/// Where published policies live.
pub const NAMESPACE: &str = "kube-system";
/// The data key holding the policy file.
pub const KEY: &str = "policy.cfg";
/// Where the policy came from: a file's path, or `default`.
pub const SOURCE_ANNOTATION: &str = "berth.io/policy-source";
/// The data key holding a KubeSchedulerConfiguration.
pub const CONFIG_KEY: &str = "config.yaml";
/// Which profile of the configuration the scheduler runs.
pub const PROFILE_ANNOTATION: &str = "berth.io/profile";
const FIELD_MANAGER: &str = "berth-scheduler";

/// Writes (or overwrites) the published profile `scheduler` of the configuration `text`.
pub async fn publish_profile(
    client: kube::Client,
    scheduler: &str,
    text: &str,
    source: &str,
) -> Result<(), kube::Error> {
    let name = configmap_name(scheduler);
    let cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NAMESPACE,
                     "annotations": {SOURCE_ANNOTATION: source, PROFILE_ANNOTATION: scheduler}},
        "data": {CONFIG_KEY: text},
    });
    let api: Api<ConfigMap> = Api::namespaced(client, NAMESPACE);
    api.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&cm),
    )
    .await?;
    Ok(())
}

/// `<scheduler>-running-policy`.
pub fn configmap_name(scheduler: &str) -> String {
    format!("{scheduler}-running-policy")
}

/// Writes (or overwrites) `scheduler`'s published policy.
pub async fn publish(
    client: kube::Client,
    scheduler: &str,
    policy: &Policy,
    source: &str,
) -> Result<(), kube::Error> {
    let name = configmap_name(scheduler);
    let cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NAMESPACE,
                     "annotations": {SOURCE_ANNOTATION: source}},
        "data": {KEY: policy.to_json()},
    });
    let api: Api<ConfigMap> = Api::namespaced(client, NAMESPACE);
    api.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&cm),
    )
    .await?;
    Ok(())
}

/// A published policy and where it came from.
pub struct Published {
    /// The policy the scheduler runs.
    pub policy: Policy,
    /// Its file's path, or `default`.
    pub source: String,
    /// The KubeSchedulerConfiguration profile, when the scheduler runs one (`policy` is then
    /// its compiled plugins).
    pub profile: Option<crate::config::CompiledProfile>,
}

/// `scheduler`'s published policy; `Ok(None)` if it published none.
pub async fn read(client: kube::Client, scheduler: &str) -> Result<Option<Published>, String> {
    let name = configmap_name(scheduler);
    let api: Api<ConfigMap> = Api::namespaced(client, NAMESPACE);
    let found = api
        .get_opt(&name)
        .await
        .map_err(|e| format!("reading ConfigMap {NAMESPACE}/{name}: {e}"))?;
    let Some(cm) = found else {
        return Ok(None);
    };
    let source = cm
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(SOURCE_ANNOTATION))
        .cloned()
        .unwrap_or_else(|| "unknown".into());
    if let Some(text) = cm.data.as_ref().and_then(|d| d.get(CONFIG_KEY)) {
        let profile = crate::config::SchedulerConfiguration::from_str(text)
            .and_then(|c| c.compile())
            .map_err(|e| format!("ConfigMap {NAMESPACE}/{name}, key {CONFIG_KEY}: {e}"))?
            .into_iter()
            .find(|p| p.scheduler_name == scheduler)
            .ok_or_else(|| {
                format!(
                    "ConfigMap {NAMESPACE}/{name}: the configuration has no profile {scheduler:?}"
                )
            })?;
        return Ok(Some(Published {
            policy: profile.policy.clone(),
            source,
            profile: Some(profile),
        }));
    }
    let text = cm
        .data
        .as_ref()
        .and_then(|d| d.get(KEY))
        .ok_or_else(|| format!("ConfigMap {NAMESPACE}/{name} has no {KEY:?} key"))?;
    let policy = Policy::from_str(text)
        .map_err(|e| format!("ConfigMap {NAMESPACE}/{name}, key {KEY}: {e}"))?;
    Ok(Some(Published {
        policy,
        source,
        profile: None,
    }))
}
