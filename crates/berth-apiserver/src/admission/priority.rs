//! The Priority admission plugin (control-loops §4.1): resolves a new pod's priority class into
//! `spec.priority` (and its preemption policy), and keeps a single global default class.
//! PriorityClass validation and immutable fields are the class's strategy
//! (`crate::strategy::priority_class`).

use super::{AdmissionCache, ConfigError, Handles, Plugin, Registration};
use crate::codec::meta_str;
use crate::error::{ApiError, ApiResult};
use crate::user::UserInfo;
use berth_api::registry::ResourceType;
use berth_store::Store;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The highest value a user-defined class may have.
pub const HIGHEST_USER_DEFINABLE_PRIORITY: i64 = 1_000_000_000;
/// Built-in class names and values.
pub const SYSTEM_CLUSTER_CRITICAL: (&str, i64) = ("system-cluster-critical", 2_000_000_000);
pub const SYSTEM_NODE_CRITICAL: (&str, i64) = ("system-node-critical", 2_000_001_000);

pub const REGISTRATION: Registration = Registration {
    name: "Priority",
    on_by_default: true,
    build,
};

struct Priority {
    store: Store,
    cache: Arc<AdmissionCache>,
    disabled: Arc<AtomicBool>,
}

fn build(handles: &Handles, configuration: Option<&Value>) -> Result<Box<dyn Plugin>, ConfigError> {
    if let Some(c) = configuration {
        super::config::only_fields(REGISTRATION.name, c, &[])?;
    }
    Ok(Box::new(Priority {
        store: handles.store.clone(),
        cache: handles.cache.clone(),
        disabled: handles.priority_disabled.clone(),
    }))
}

impl Plugin for Priority {
    fn admit_create(&self, _user: &UserInfo, rt: &ResourceType, obj: &mut Value) -> ApiResult<()> {
        match rt.kind {
            "Pod" => self.admit_pod(obj),
            "PriorityClass" => self.check_single_default(obj),
            _ => Ok(()),
        }
    }

    fn admit_update(
        &self,
        _user: &UserInfo,
        rt: &ResourceType,
        _old: &Value,
        new: &mut Value,
    ) -> ApiResult<()> {
        match rt.kind {
            "PriorityClass" => self.check_single_default(new),
            _ => Ok(()),
        }
    }
}

fn forbidden_pod(pod: &Value, why: String) -> ApiError {
    ApiError::Forbidden(format!(
        "pods \"{}\" is forbidden: {why}",
        meta_str(pod, "name")
    ))
}

impl Priority {
    fn classes(&self) -> ApiResult<Arc<Vec<Value>>> {
        self.cache.priority_classes(&self.store)
    }

    /// Resolves `priorityClassName` into `spec.priority` on pod create.
    fn admit_pod(&self, pod: &mut Value) -> ApiResult<()> {
        if self.disabled.load(Ordering::Relaxed) {
            return match pod["spec"]["priorityClassName"].as_str() {
                Some(name) if !name.is_empty() => Err(forbidden_pod(
                    pod,
                    "spec.priorityClassName: pod priority is disabled on this cluster".into(),
                )),
                _ => Ok(()),
            };
        }
        let mut class_name = pod["spec"]["priorityClassName"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let critical_annotation = pod["metadata"]["annotations"]
            .get("scheduler.alpha.kubernetes.io/critical-pod")
            .is_some();
        if class_name.is_empty()
            && critical_annotation
            && meta_str(pod, "namespace") == "kube-system"
        {
            class_name = SYSTEM_CLUSTER_CRITICAL.0.to_string();
        }
        let all = self.classes()?;
        let (value, policy) = if class_name.is_empty() {
            let default = all
                .iter()
                .filter(|c| c["globalDefault"] == true)
                .min_by_key(|c| c["value"].as_i64().unwrap_or(0));
            match default {
                Some(c) => {
                    class_name = meta_str(c, "name").to_string();
                    (
                        c["value"].as_i64().unwrap_or(0),
                        c["preemptionPolicy"].as_str().map(str::to_string),
                    )
                }
                None => (0, None),
            }
        } else {
            let c = all
                .iter()
                .find(|c| meta_str(c, "name") == class_name)
                .ok_or_else(|| {
                    forbidden_pod(
                        pod,
                        format!("no PriorityClass with name {class_name} was found"),
                    )
                })?;
            (
                c["value"].as_i64().unwrap_or(0),
                c["preemptionPolicy"].as_str().map(str::to_string),
            )
        };
        if let Some(given) = pod["spec"]["priority"].as_i64() {
            if given != value {
                return Err(forbidden_pod(pod, format!(
                    "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name"
                )));
            }
        }
        pod["spec"]["priority"] = json!(value);
        if !class_name.is_empty() {
            pod["spec"]["priorityClassName"] = json!(class_name);
            if let Some(p) = policy {
                pod["spec"]["preemptionPolicy"] = json!(p);
            }
        }
        Ok(())
    }

    /// Only one class may be the global default.
    fn check_single_default(&self, class: &Value) -> ApiResult<()> {
        if class["globalDefault"] != true {
            return Ok(());
        }
        let name = meta_str(class, "name");
        if let Some(other) = self
            .classes()?
            .iter()
            .find(|c| c["globalDefault"] == true && meta_str(c, "name") != name)
        {
            return Err(ApiError::Forbidden(format!(
                "PriorityClass {} is already marked as default. Only one default can exist",
                meta_str(other, "name")
            )));
        }
        Ok(())
    }
}
