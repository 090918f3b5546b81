//! DaemonSets and StatefulSets (apps/v1): upstream's defaults (`apis/apps/v1/defaults.go`) and
//! status reset on create, so their controllers and `kubectl rollout` find an `updateStrategy`.

use super::{defaults::default_at, Strategy};
use crate::error::ApiResult;
use serde_json::{json, Value};

pub struct DaemonSet;

impl Strategy for DaemonSet {
    fn prepare_for_create(&self, ds: &mut Value) {
        if let Some(o) = ds.as_object_mut() {
            o.remove("status");
        }
        default_daemon_set_spec(&mut ds["spec"]);
    }

    fn prepare_for_update(&self, _old: &Value, new: &mut Value) -> ApiResult<()> {
        default_daemon_set_spec(&mut new["spec"]);
        Ok(())
    }
}

/// `updateStrategy` RollingUpdate with `maxUnavailable` 1 and `maxSurge` 0;
/// `revisionHistoryLimit` 10.
fn default_daemon_set_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    default_at(spec, "updateStrategy", json!({}));
    let strategy = &mut spec["updateStrategy"];
    default_at(strategy, "type", json!("RollingUpdate"));
    if strategy["type"] == "RollingUpdate" {
        default_at(strategy, "rollingUpdate", json!({}));
        default_at(&mut strategy["rollingUpdate"], "maxUnavailable", json!(1));
        default_at(&mut strategy["rollingUpdate"], "maxSurge", json!(0));
    }
    default_at(spec, "revisionHistoryLimit", json!(10));
}

pub struct StatefulSet;

impl Strategy for StatefulSet {
    fn prepare_for_create(&self, sts: &mut Value) {
        if let Some(o) = sts.as_object_mut() {
            o.remove("status");
        }
        default_stateful_set_spec(&mut sts["spec"]);
    }

    fn prepare_for_update(&self, _old: &Value, new: &mut Value) -> ApiResult<()> {
        default_stateful_set_spec(&mut new["spec"]);
        Ok(())
    }
}

/// `replicas` 1, `podManagementPolicy` OrderedReady, `updateStrategy` RollingUpdate with
/// `partition` 0, `revisionHistoryLimit` 10, PVCs retained.
fn default_stateful_set_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    default_at(spec, "replicas", json!(1));
    default_at(spec, "podManagementPolicy", json!("OrderedReady"));
    default_at(spec, "updateStrategy", json!({}));
    let strategy = &mut spec["updateStrategy"];
    default_at(strategy, "type", json!("RollingUpdate"));
    if strategy["type"] == "RollingUpdate" {
        default_at(strategy, "rollingUpdate", json!({}));
        default_at(&mut strategy["rollingUpdate"], "partition", json!(0));
    }
    default_at(spec, "revisionHistoryLimit", json!(10));
    default_at(
        spec,
        "persistentVolumeClaimRetentionPolicy",
        json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_daemon_set_rolls_one_node_at_a_time_by_default() {
        let mut ds = json!({"spec": {"template": {}}, "status": {"numberReady": 3}});
        DaemonSet.prepare_for_create(&mut ds);
        assert_eq!(
            ds["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        );
        assert_eq!(ds["spec"]["revisionHistoryLimit"], 10);
        assert!(ds.get("status").is_none());
    }

    #[test]
    fn an_on_delete_daemon_set_gets_no_rolling_update() {
        let mut ds = json!({"spec": {"updateStrategy": {"type": "OnDelete"}}});
        DaemonSet.prepare_for_create(&mut ds);
        assert_eq!(ds["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
    }

    #[test]
    fn a_stateful_set_is_ordered_ready_with_partition_zero_by_default() {
        let mut sts = json!({"spec": {"serviceName": "web"}});
        StatefulSet.prepare_for_create(&mut sts);
        let s = &sts["spec"];
        assert_eq!(s["replicas"], 1);
        assert_eq!(s["podManagementPolicy"], "OrderedReady");
        assert_eq!(
            s["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
        );
        assert_eq!(s["revisionHistoryLimit"], 10);
    }
}
