//! PriorityClasses (control-loops §4.1): reserved `system-` names, the user value ceiling,
//! `value` immutable, system classes unchangeable. The single global default is the Priority
//! admission plugin's (`crate::admission`).

use super::{causes, Strategy};
use crate::admission::{
    HIGHEST_USER_DEFINABLE_PRIORITY, SYSTEM_CLUSTER_CRITICAL, SYSTEM_NODE_CRITICAL,
};
use crate::codec::meta_str;
use crate::error::{ApiError, ApiResult, Cause};
use berth_api::registry::ResourceType;
use serde_json::Value;

pub struct PriorityClass;

impl Strategy for PriorityClass {
    /// `preemptionPolicy` defaults as upstream defaults it in every served version (the seeds'
    /// `scheduling.k8s.io/v1beta1` classes leave it out).
    fn prepare_for_create(&self, class: &mut Value) {
        if class.get("preemptionPolicy").is_none_or(Value::is_null) {
            class["preemptionPolicy"] = serde_json::json!("PreemptLowerPriority");
        }
    }

    fn prepare_for_update(&self, old: &Value, new: &mut Value) -> ApiResult<()> {
        if old["value"] != new["value"] {
            return Err(ApiError::Invalid {
                kind: "PriorityClass".into(),
                name: meta_str(old, "name").into(),
                causes: vec![Cause {
                    reason: "FieldValueForbidden".into(),
                    message: "Forbidden: may not be changed in an update.".into(),
                    field: "value".into(),
                }],
            });
        }
        if meta_str(old, "name").starts_with("system-")
            && old["globalDefault"] != new["globalDefault"]
        {
            return Err(ApiError::Forbidden(format!(
                "priorityclasses \"{}\" is forbidden: system priority classes may not be changed",
                meta_str(old, "name")
            )));
        }
        Ok(())
    }

    fn validate(&self, rt: &ResourceType, class: &Value, _old: Option<&Value>) -> Vec<Cause> {
        let mut out = causes(berth_core::validation::validate_generic(
            class,
            rt.namespaced,
        ));
        out.extend(validate_class(class));
        out
    }
}

/// PriorityClass validation: reserved `system-` names and the user value ceiling.
fn validate_class(class: &Value) -> Vec<Cause> {
    let name = meta_str(class, "name");
    let value = class["value"].as_i64();
    let mut causes = Vec::new();
    if name.starts_with("system-") {
        let known = [SYSTEM_CLUSTER_CRITICAL, SYSTEM_NODE_CRITICAL];
        let detail = match known.iter().find(|(n, _)| *n == name) {
            None => Some(format!("{name} is not a known system priority class")),
            Some((_, v)) if value != Some(*v) => {
                Some(format!("value of {name} PriorityClass must be {v}"))
            }
            Some(_) if class["globalDefault"] == true => Some(format!(
                "globalDefault of {name} PriorityClass must be false"
            )),
            Some(_) => None,
        };
        if let Some(d) = detail {
            causes.push(Cause {
                reason: "FieldValueForbidden".into(),
                message: format!("Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: {d}"),
                field: "metadata.name".into(),
            });
        }
    } else if value.is_some_and(|v| v > HIGHEST_USER_DEFINABLE_PRIORITY) {
        causes.push(Cause {
            reason: "FieldValueForbidden".into(),
            message: format!("Forbidden: maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"),
            field: "value".into(),
        });
    }
    if value.is_none() {
        causes.push(Cause {
            reason: "FieldValueRequired".into(),
            message: "Required value".into(),
            field: "value".into(),
        });
    }
    causes
}
