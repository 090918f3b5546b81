//! Deployments and ReplicaSets (apps/v1): upstream's `SetDefaults_Deployment` and
//! `SetDefaults_ReplicaSet` on every write, so `kubectl describe` shows the strategy and a
//! replace with the manifest as first written compares equal to what is stored.

use super::{defaults::default_at, Strategy};
use crate::error::ApiResult;
use serde_json::{json, Value};

pub struct Deployment;

impl Strategy for Deployment {
    fn prepare_for_create(&self, deploy: &mut Value) {
        default_deployment_spec(&mut deploy["spec"]);
    }

    fn prepare_for_update(&self, _old: &Value, new: &mut Value) -> ApiResult<()> {
        default_deployment_spec(&mut new["spec"]);
        Ok(())
    }
}

/// `replicas` 1, `strategy` RollingUpdate with 25% unavailable and 25% surge,
/// `revisionHistoryLimit` 10, `progressDeadlineSeconds` 600.
fn default_deployment_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    default_at(spec, "replicas", json!(1));
    default_at(spec, "strategy", json!({}));
    let strategy = &mut spec["strategy"];
    default_at(strategy, "type", json!("RollingUpdate"));
    if strategy["type"] == "RollingUpdate" {
        default_at(strategy, "rollingUpdate", json!({}));
        default_at(
            &mut strategy["rollingUpdate"],
            "maxUnavailable",
            json!("25%"),
        );
        default_at(&mut strategy["rollingUpdate"], "maxSurge", json!("25%"));
    }
    default_at(spec, "revisionHistoryLimit", json!(10));
    default_at(spec, "progressDeadlineSeconds", json!(600));
}

pub struct ReplicaSet;

impl Strategy for ReplicaSet {
    fn prepare_for_create(&self, rs: &mut Value) {
        if rs["spec"].is_object() {
            default_at(&mut rs["spec"], "replicas", json!(1));
        }
    }

    fn prepare_for_update(&self, _old: &Value, new: &mut Value) -> ApiResult<()> {
        self.prepare_for_create(new);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deployment_without_a_strategy_rolls_25_percent_at_a_time() {
        let mut d = json!({"spec": {"template": {}}});
        Deployment.prepare_for_create(&mut d);
        assert_eq!(
            d["spec"],
            json!({"template": {}, "replicas": 1, "revisionHistoryLimit": 10,
                "progressDeadlineSeconds": 600, "strategy": {"type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}})
        );
    }

    #[test]
    fn a_recreate_deployment_gets_no_rolling_parameters_and_keeps_its_values() {
        let mut d = json!({"spec": {"replicas": 0, "strategy": {"type": "Recreate"},
            "revisionHistoryLimit": 2}});
        Deployment.prepare_for_create(&mut d);
        assert_eq!(d["spec"]["strategy"], json!({"type": "Recreate"}));
        assert_eq!(d["spec"]["replicas"], 0);
        assert_eq!(d["spec"]["revisionHistoryLimit"], 2);
    }

    #[test]
    fn a_partial_rolling_update_is_completed() {
        let mut d = json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1}}}});
        Deployment.prepare_for_update(&json!({}), &mut d).unwrap();
        assert_eq!(
            d["spec"]["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "25%"}})
        );
    }

    #[test]
    fn a_replica_set_defaults_to_one_replica() {
        let mut rs = json!({"spec": {}});
        ReplicaSet.prepare_for_create(&mut rs);
        assert_eq!(rs["spec"]["replicas"], 1);
    }
}
