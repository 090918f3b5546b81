//! ReplicationControllers: upstream's defaulting (`SetDefaults_ReplicationController`): a
//! missing `spec.selector` and missing `metadata.labels` are the template's labels; a missing
//! `spec.replicas` is 1.

use super::Strategy;
use crate::error::ApiResult;
use serde_json::{json, Value};

pub struct ReplicationController;

fn set_defaults(rc: &mut Value) {
    let labels = rc
        .pointer("/spec/template/metadata/labels")
        .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
        .cloned();
    if let Some(labels) = labels {
        let empty =
            |v: Option<&Value>| v.is_none_or(|s| s.as_object().is_none_or(|m| m.is_empty()));
        if empty(rc.pointer("/spec/selector")) {
            rc["spec"]["selector"] = labels.clone();
        }
        if empty(rc.pointer("/metadata/labels")) && rc["metadata"].is_object() {
            rc["metadata"]["labels"] = labels;
        }
    }
    if rc["spec"].is_object() && rc["spec"].get("replicas").is_none_or(Value::is_null) {
        rc["spec"]["replicas"] = json!(1);
    }
}

impl Strategy for ReplicationController {
    fn prepare_for_create(&self, obj: &mut Value) {
        set_defaults(obj);
    }

    fn prepare_for_update(&self, _old: &Value, new: &mut Value) -> ApiResult<()> {
        set_defaults(new);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selector_labels_and_replicas_default_from_the_template() {
        let mut rc = json!({"metadata": {"name": "r"},
                            "spec": {"template": {"metadata": {"labels": {"app": "x"}}}}});
        set_defaults(&mut rc);
        assert_eq!(rc["spec"]["selector"], json!({"app": "x"}));
        assert_eq!(rc["metadata"]["labels"], json!({"app": "x"}));
        assert_eq!(rc["spec"]["replicas"], 1);
    }

    #[test]
    fn given_values_are_kept() {
        let mut rc = json!({"metadata": {"name": "r", "labels": {"own": "y"}},
                            "spec": {"replicas": 0, "selector": {"app": "x"},
                                     "template": {"metadata": {"labels": {"app": "x", "v": "2"}}}}});
        let before = rc.clone();
        set_defaults(&mut rc);
        assert_eq!(rc, before);
    }
}
