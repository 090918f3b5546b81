//! PersistentVolumes and PersistentVolumeClaims: upstream's `SetDefaults_PersistentVolume`
//! and `SetDefaults_PersistentVolumeClaim` (reclaim policy `Retain`, volume mode `Filesystem`,
//! phase `Pending`); a delete answers with the deleted object.

use super::{defaults::default_at, Strategy};
use crate::error::ApiResult;
use serde_json::{json, Value};

pub struct PersistentVolume;

impl Strategy for PersistentVolume {
    fn prepare_for_create(&self, pv: &mut Value) {
        default_volume_spec(pv);
        default_phase(pv);
    }

    fn prepare_for_update(&self, _old: &Value, new: &mut Value) -> ApiResult<()> {
        default_volume_spec(new);
        Ok(())
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }
}

fn default_volume_spec(pv: &mut Value) {
    if pv["spec"].is_object() {
        default_at(
            &mut pv["spec"],
            "persistentVolumeReclaimPolicy",
            json!("Retain"),
        );
        default_at(&mut pv["spec"], "volumeMode", json!("Filesystem"));
    }
}

/// A new volume or claim is `Pending` until bound, whatever status it was sent with.
fn default_phase(obj: &mut Value) {
    if obj.is_object() {
        obj["status"] = json!({"phase": "Pending"});
    }
}

pub struct PersistentVolumeClaim;

impl Strategy for PersistentVolumeClaim {
    fn prepare_for_create(&self, pvc: &mut Value) {
        default_claim_spec(pvc);
        default_phase(pvc);
    }

    fn prepare_for_update(&self, _old: &Value, new: &mut Value) -> ApiResult<()> {
        default_claim_spec(new);
        Ok(())
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }
}

fn default_claim_spec(pvc: &mut Value) {
    if pvc["spec"].is_object() {
        default_at(&mut pvc["spec"], "volumeMode", json!("Filesystem"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_volume_is_retained_by_default_and_starts_pending() {
        let mut pv =
            json!({"spec": {"capacity": {"storage": "1Gi"}}, "status": {"phase": "Bound"}});
        PersistentVolume.prepare_for_create(&mut pv);
        assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain");
        assert_eq!(pv["spec"]["volumeMode"], "Filesystem");
        assert_eq!(pv["status"], json!({"phase": "Pending"}));
    }

    #[test]
    fn a_volume_keeps_the_policy_it_names() {
        let mut pv =
            json!({"spec": {"persistentVolumeReclaimPolicy": "Delete", "volumeMode": "Block"}});
        PersistentVolume
            .prepare_for_update(&json!({}), &mut pv)
            .unwrap();
        assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Delete");
        assert_eq!(pv["spec"]["volumeMode"], "Block");
    }

    #[test]
    fn a_claim_is_a_filesystem_by_default() {
        let mut pvc = json!({"spec": {}});
        PersistentVolumeClaim.prepare_for_create(&mut pvc);
        assert_eq!(pvc["spec"]["volumeMode"], "Filesystem");
        assert_eq!(pvc["status"]["phase"], "Pending");
    }
}
