//! OpenShift's project node selector (`OriginPodNodeEnvironment`, seed 16.10 and the note in
//! 16.5.4): the namespace annotation `openshift.io/node-selector`, which
//! `oc adm new-project --node-selector` sets, is merged into every new pod of the project.
//!
//! A namespace without the annotation gets the cluster default, the master config's
//! `projectConfig.defaultNodeSelector`; an annotation that is present but empty means "no node
//! selector" for that project. A pod selecting another value for one of the project's keys is
//! refused. Only pod creation is checked, as OpenShift registers the plugin for `Create`.
//!
//! It is a separate plugin from upstream's PodNodeSelector (the seed: "you cannot use
//! `oc adm new-project` for setting [the PodNodeSelector] node selector"): when a namespace has
//! both annotations, both selectors are merged into the pod, PodNodeSelector's first, and a key
//! on which they disagree refuses the pod with this plugin's message.
//!
//! Configuration: `{defaultNodeSelector: "role=app"}`, which `berth serve` fills from the master
//! config's `projectConfig.defaultNodeSelector`. On by default, as in OpenShift: without a
//! default and without annotations it changes nothing.

use super::node_selector::{self, LabelSet};
use super::{AdmissionCache, ConfigError, Handles, Plugin, Registration};
use crate::codec::meta_str;
use crate::error::{ApiError, ApiResult};
use crate::user::UserInfo;
use berth_api::registry::ResourceType;
use berth_store::Store;
use serde_json::Value;
use std::sync::Arc;

pub const REGISTRATION: Registration = Registration {
    name: "OriginPodNodeEnvironment",
    on_by_default: true,
    build,
};

/// The namespace annotation holding the project's node selector.
pub const ANNOTATION: &str = "openshift.io/node-selector";
/// The configuration field (the master config's `projectConfig.defaultNodeSelector`).
pub const DEFAULT_NODE_SELECTOR: &str = "defaultNodeSelector";

pub const CONFLICT: &str = "pod node label selector conflicts with its project node label selector";

struct ProjectNodeSelector {
    store: Store,
    cache: Arc<AdmissionCache>,
    default: LabelSet,
}

fn build(handles: &Handles, configuration: Option<&Value>) -> Result<Box<dyn Plugin>, ConfigError> {
    Ok(Box::new(ProjectNodeSelector {
        store: handles.store.clone(),
        cache: handles.cache.clone(),
        default: configure(configuration)?,
    }))
}

fn configure(configuration: Option<&Value>) -> Result<LabelSet, ConfigError> {
    let Some(c) = configuration else {
        return Ok(LabelSet::new());
    };
    let name = REGISTRATION.name;
    super::config::only_fields(name, c, &[DEFAULT_NODE_SELECTOR])?;
    match c.get(DEFAULT_NODE_SELECTOR) {
        None | Some(Value::Null) => Ok(LabelSet::new()),
        Some(Value::String(s)) => {
            node_selector::parse(s).map_err(|e| ConfigError::new(name, DEFAULT_NODE_SELECTOR, e))
        }
        Some(other) => Err(ConfigError::new(
            name,
            DEFAULT_NODE_SELECTOR,
            format!("expected a node selector such as \"role=app\", got {other}"),
        )),
    }
}

impl Plugin for ProjectNodeSelector {
    fn admit_create(&self, _user: &UserInfo, rt: &ResourceType, obj: &mut Value) -> ApiResult<()> {
        if rt.kind != "Pod" || !rt.group.is_empty() {
            return Ok(());
        }
        let ns_name = meta_str(obj, "namespace").to_string();
        // A missing namespace is NamespaceLifecycle's to refuse; here it has no annotation.
        let namespace = self.cache.namespace_object(&self.store, &ns_name)?;
        let annotation = namespace
            .as_deref()
            .and_then(|ns| ns["metadata"]["annotations"].get(ANNOTATION));
        admit_pod(&self.default, annotation, obj)
    }
}

/// Merges the project's selector (its annotation, else the default) into the pod.
fn admit_pod(default: &LabelSet, annotation: Option<&Value>, pod: &mut Value) -> ApiResult<()> {
    let project = match annotation {
        Some(v) => node_selector::parse(v.as_str().unwrap_or("")).map_err(ApiError::Internal)?,
        None => default.clone(),
    };
    if project.is_empty() {
        return Ok(());
    }
    let name = meta_str(pod, "name").to_string();
    let Some(pod_selector) = node_selector::pod_node_selector(pod) else {
        return Ok(());
    };
    if node_selector::conflicts(&project, pod_selector) {
        return Err(ApiError::Forbidden(format!(
            "pods \"{name}\" is forbidden: {CONFLICT}"
        )));
    }
    node_selector::merge(&project, pod_selector);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn admit(default: &str, annotation: Option<&str>, given: Value) -> Result<Value, String> {
        let default = configure(Some(&json!({DEFAULT_NODE_SELECTOR: default}))).unwrap();
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"nodeSelector": given}});
        let annotation = annotation.map(|a| json!(a));
        admit_pod(&default, annotation.as_ref(), &mut pod)
            .map(|()| pod["spec"]["nodeSelector"].clone())
            .map_err(|e| e.message())
    }

    #[test]
    fn the_project_selector_is_merged_into_the_pod() {
        assert_eq!(
            admit("", Some("type=user-node,region=east"), json!({"app": "x"})),
            Ok(json!({"type": "user-node", "region": "east", "app": "x"}))
        );
        assert_eq!(
            admit("", Some("superregion=us"), json!({"superregion": "us"})),
            Ok(json!({"superregion": "us"}))
        );
    }

    #[test]
    fn without_an_annotation_the_default_applies_and_an_empty_one_means_none() {
        assert_eq!(
            admit("role=app", None, json!({})),
            Ok(json!({"role": "app"}))
        );
        assert_eq!(admit("role=app", Some(""), json!({})), Ok(json!({})));
        assert_eq!(
            admit("role=app", Some("role=infra"), json!({})),
            Ok(json!({"role": "infra"}))
        );
        assert_eq!(admit("", None, json!({"a": "b"})), Ok(json!({"a": "b"})));
    }

    #[test]
    fn a_conflicting_pod_selector_is_refused() {
        assert_eq!(
            admit("", Some("superregion=us"), json!({"superregion": "apac"})),
            Err(format!("pods \"p\" is forbidden: {CONFLICT}"))
        );
        assert_eq!(
            admit("role=app", None, json!({"role": "db"})),
            Err(format!("pods \"p\" is forbidden: {CONFLICT}"))
        );
    }

    #[test]
    fn a_bad_default_stops_the_start_and_a_bad_annotation_the_request() {
        let e = configure(Some(&json!({DEFAULT_NODE_SELECTOR: "role!=app"}))).unwrap_err();
        assert_eq!(e.field, DEFAULT_NODE_SELECTOR);
        let e = configure(Some(&json!({DEFAULT_NODE_SELECTOR: ["a=b"]}))).unwrap_err();
        assert_eq!(e.field, DEFAULT_NODE_SELECTOR);
        assert!(configure(Some(&json!({"nodeSelector": "a=b"}))).is_err());
        assert!(admit("", Some("a b"), json!({})).is_err());
    }
}
