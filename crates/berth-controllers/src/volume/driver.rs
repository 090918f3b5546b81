//! The persistent-volume binder loop: on volume, claim or storage class changes, run
//! [`super::sync`] and carry its actions out with upstream's verbs (`update` on the objects and
//! their `status`). A binding's writes carry the resourceVersion they were decided on, so a
//! volume another pass took meanwhile answers 409 and the next pass decides again.

use super::{sync, Action, ClaimRef, BIND_COMPLETED, BOUND_BY_CONTROLLER};
use crate::update::{update, update_status};
use crate::wait::wait;
use crate::workqueue::Queue;
use berth_informers::Informer;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, DeleteParams};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The binder's work queues, as upstream names them: volumes are the keys of `volumes`,
/// claims those of `claims`.
#[derive(Clone)]
pub(crate) struct Queues {
    pub volumes: Queue,
    pub claims: Queue,
}

/// The process's shared watches read; `client` writes (the `persistent-volume-binder` account).
pub(crate) async fn run(
    client: kube::Client,
    informers: crate::informers::Informers,
    queues: Queues,
) {
    let mut volumes: Informer<PersistentVolume> = informers.shared();
    let mut claims: Informer<PersistentVolumeClaim> = informers.shared();
    let mut classes: Informer<StorageClass> = informers.shared();
    if !(volumes.synced().await && claims.synced().await && classes.synced().await) {
        return;
    }
    loop {
        let all_volumes: Vec<Arc<PersistentVolume>> = volumes.store.state();
        let all_claims: Vec<Arc<PersistentVolumeClaim>> = claims.store.state();
        let delayed: BTreeSet<String> = classes
            .store
            .state()
            .iter()
            .filter(|c| c.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer"))
            .filter_map(|c| c.metadata.name.clone())
            .collect();
        let volume_refs: Vec<&PersistentVolume> = all_volumes.iter().map(|v| v.as_ref()).collect();
        let claim_refs: Vec<&PersistentVolumeClaim> =
            all_claims.iter().map(|c| c.as_ref()).collect();
        let by_name: BTreeMap<&str, &PersistentVolume> = volume_refs
            .iter()
            .filter_map(|v| Some((v.metadata.name.as_deref()?, *v)))
            .collect();
        let actions = sync(&volume_refs, &claim_refs, &delayed, &BTreeSet::new());
        // A binding and a claim's phase are a claim's sync, the rest a volume's; the objects
        // without an action were synced by the (pure) decision itself.
        let for_claims = actions
            .iter()
            .filter(|a| matches!(a, Action::Bind { .. } | Action::ClaimPhase { .. }))
            .count();
        let mut claim_pass = queues.claims.pass(all_claims.len());
        let mut volume_pass = queues.volumes.pass(all_volumes.len());
        claim_pass.skip(all_claims.len().saturating_sub(for_claims));
        volume_pass.skip(all_volumes.len().saturating_sub(actions.len() - for_claims));
        for action in actions {
            let work = match action {
                Action::Bind { .. } | Action::ClaimPhase { .. } => claim_pass.take(),
                _ => volume_pass.take(),
            };
            if let Err(e) = execute(&client, &action, &by_name).await {
                tracing::debug!(?action, error = %e, "volume binder: will retry");
                work.retry();
            }
        }
        drop((claim_pass, volume_pass));
        wait(
            &mut [
                &mut volumes.changed,
                &mut claims.changed,
                &mut classes.changed,
            ],
            None,
        )
        .await;
    }
}

async fn execute(
    client: &kube::Client,
    action: &Action,
    volumes: &BTreeMap<&str, &PersistentVolume>,
) -> Result<(), kube::Error> {
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    let claims = |ns: &str| -> Api<PersistentVolumeClaim> { Api::namespaced(client.clone(), ns) };
    match action {
        Action::Bind { claim, volume } => {
            let Some(pv) = volumes.get(volume.as_str()) else {
                return Ok(());
            };
            bind(&pvs, &claims(&claim.namespace), claim, pv).await
        }
        Action::VolumePhase { volume, phase } => {
            let Some(pv) = volumes.get(volume.as_str()) else {
                return Ok(());
            };
            let patch = json!({"metadata": {"resourceVersion": pv.metadata.resource_version},
                               "status": {"phase": phase}});
            update_status(&pvs, volume, &patch).await?;
            tracing::info!(volume = %volume, phase = %phase, "volume phase");
            Ok(())
        }
        Action::ClaimPhase { claim, phase } => {
            let patch = json!({"status": {"phase": phase}});
            update_status(&claims(&claim.namespace), &claim.name, &patch).await
        }
        Action::DeleteVolume { volume } => {
            pvs.delete(volume, &DeleteParams::default()).await?;
            tracing::info!(volume = %volume, "deleted released volume (reclaim policy Delete)");
            Ok(())
        }
    }
}

/// Upstream's order: the volume's `claimRef`, its phase, the claim's `volumeName`, its phase.
async fn bind(
    pvs: &Api<PersistentVolume>,
    claims: &Api<PersistentVolumeClaim>,
    claim: &ClaimRef,
    pv: &PersistentVolume,
) -> Result<(), kube::Error> {
    let volume = pv.metadata.name.clone().unwrap_or_default();
    let spec = pv.spec.clone().unwrap_or_default();
    let has_ref = spec
        .claim_ref
        .as_ref()
        .is_some_and(|r| r.uid.as_deref() == Some(claim.uid.as_str()));
    if !has_ref {
        let patch = json!({
            "metadata": {"resourceVersion": pv.metadata.resource_version,
                         "annotations": {BOUND_BY_CONTROLLER: "yes"}},
            "spec": {"claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                                  "namespace": claim.namespace, "name": claim.name,
                                  "uid": claim.uid}},
        });
        update(pvs, &volume, &patch).await?;
    }
    update_status(pvs, &volume, &json!({"status": {"phase": "Bound"}})).await?;
    let current = claims.get(&claim.name).await?;
    if current.metadata.uid.as_deref() != Some(claim.uid.as_str()) {
        return Ok(());
    }
    let named = current
        .spec
        .as_ref()
        .and_then(|s| s.volume_name.as_deref())
        .is_some_and(|v| v == volume);
    let completed = current
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(BIND_COMPLETED));
    if !named || !completed {
        let mut annotations = json!({BIND_COMPLETED: "yes"});
        if !named {
            annotations[BOUND_BY_CONTROLLER] = json!("yes");
        }
        let patch = json!({"metadata": {"resourceVersion": current.metadata.resource_version,
                                         "annotations": annotations},
                           "spec": {"volumeName": volume}});
        update(claims, &claim.name, &patch).await?;
    }
    let status = json!({"status": {"phase": "Bound", "accessModes": spec.access_modes,
                                   "capacity": spec.capacity}});
    update_status(claims, &claim.name, &status).await?;
    tracing::info!(claim = %format!("{}/{}", claim.namespace, claim.name), volume = %volume, "bound");
    Ok(())
}
