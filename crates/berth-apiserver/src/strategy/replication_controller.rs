//! ReplicationControllers: upstream's `SetDefaults_ReplicationController`, applied on every
//! write: the selector and the controller's labels default to the template's labels, and
//! `replicas` to 1. The ReplicationController controller reads what this leaves.

use super::Strategy;
use crate::error::ApiResult;
use serde_json::{json, Value};

pub struct ReplicationController;

impl Strategy for ReplicationController {
    fn prepare_for_create(&self, rc: &mut Value) {
        default_rc(rc);
        rc["status"] = json!({"replicas": 0});
    }

    fn prepare_for_update(&self, _old: &Value, new: &mut Value) -> ApiResult<()> {
        default_rc(new);
        Ok(())
    }
}

fn empty(v: &Value) -> bool {
    v.as_object().is_none_or(|m| m.is_empty())
}

fn default_rc(rc: &mut Value) {
    if !rc["spec"].is_object() {
        return;
    }
    let labels = rc["spec"]["template"]["metadata"]["labels"].clone();
    if !empty(&labels) {
        if empty(&rc["spec"]["selector"]) {
            rc["spec"]["selector"] = labels.clone();
        }
        if empty(&rc["metadata"]["labels"]) && rc["metadata"].is_object() {
            rc["metadata"]["labels"] = labels;
        }
    }
    if rc["spec"]["replicas"].is_null() {
        rc["spec"]["replicas"] = json!(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selector_and_labels_default_to_the_templates() {
        let mut rc = json!({"metadata": {"name": "rc"}, "spec": {"template": {"metadata": {"labels": {"app": "web"}}}}});
        ReplicationController.prepare_for_create(&mut rc);
        assert_eq!(rc["spec"]["selector"], json!({"app": "web"}));
        assert_eq!(rc["metadata"]["labels"], json!({"app": "web"}));
        assert_eq!(rc["spec"]["replicas"], 1);
        let mut own = json!({"metadata": {"name": "rc", "labels": {"tier": "x"}},
            "spec": {"replicas": 3, "selector": {"app": "web", "v": "1"}, "template": {"metadata": {"labels": {"app": "web", "v": "1"}}}}});
        ReplicationController
            .prepare_for_update(&json!({}), &mut own)
            .unwrap();
        assert_eq!(
            own["metadata"]["labels"],
            json!({"tier": "x"}),
            "given labels stay"
        );
        assert_eq!(own["spec"]["replicas"], 3);
    }
}
