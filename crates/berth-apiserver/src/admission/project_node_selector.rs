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
/// OpenShift's words for a pod bound (by `spec.nodeName`) to a node outside the project's.
pub const NODE_NAME_CONFLICT: &str = "pod node name conflicts with project node label selector";

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
        let node_labels = |name: &str| -> ApiResult<Option<Value>> {
            let key = format!("/registry/core/nodes/{name}");
            let found = self
                .store
                .get(&key)
                .map_err(|e| ApiError::Internal(e.to_string()))?;
            Ok(found.and_then(|kv| {
                let node: Value = serde_json::from_slice(&kv.value).ok()?;
                Some(node["metadata"]["labels"].clone())
            }))
        };
        admit_pod(&self.default, annotation, obj, &node_labels)
    }
}

/// Merges the project's selector (its annotation, else the default) into the pod; a pod that
/// names its node must name one the project's selector matches (`node_labels` reads a node's
/// labels, `None` for no such node), as OpenShift's plugin checks.
fn admit_pod(
    default: &LabelSet,
    annotation: Option<&Value>,
    pod: &mut Value,
    node_labels: &dyn Fn(&str) -> ApiResult<Option<Value>>,
) -> ApiResult<()> {
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
    let node_name = pod["spec"]["nodeName"].as_str().unwrap_or("").to_string();
    if !node_name.is_empty() {
        let Some(labels) = node_labels(&node_name)? else {
            return Err(ApiError::Forbidden(format!(
                "pods \"{name}\" is forbidden: cannot validate project node label selector: node \"{node_name}\" not found"
            )));
        };
        if project
            .iter()
            .any(|(k, v)| labels[k.as_str()] != v.as_str())
        {
            return Err(ApiError::Forbidden(format!(
                "pods \"{name}\" is forbidden: {NODE_NAME_CONFLICT}"
            )));
        }
    }
    let Some(pod_selector) = node_selector::pod_node_selector(pod) else {
        return Ok(());
    };
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
        admit_pod(&default, annotation.as_ref(), &mut pod, &|_| Ok(None))
            .map(|()| pod["spec"]["nodeSelector"].clone())
            .map_err(|e| e.message())
    }

    #[test]
    fn a_pod_naming_its_node_must_name_one_of_the_project() {
        let default = LabelSet::new();
        let annotation = json!("superregion=us");
        let labels = |name: &str| -> ApiResult<Option<Value>> {
            Ok(match name {
                "us-1" => Some(json!({"superregion": "us", "kubernetes.io/hostname": "us-1"})),
                "eu-1" => Some(json!({"superregion": "eu"})),
                _ => None,
            })
        };
        let admit_on = |node: &str| {
            let mut pod = json!({"metadata": {"name": "p"}, "spec": {"nodeName": node}});
            admit_pod(&default, Some(&annotation), &mut pod, &labels)
                .map(|()| pod["spec"]["nodeSelector"].clone())
                .map_err(|e| e.message())
        };
        assert_eq!(admit_on("us-1"), Ok(json!({"superregion": "us"})));
        assert_eq!(
            admit_on("eu-1"),
            Err(
                "pods \"p\" is forbidden: pod node name conflicts with project node label selector"
                    .into()
            )
        );
        assert_eq!(
            admit_on("gone"),
            Err("pods \"p\" is forbidden: cannot validate project node label selector: node \"gone\" not found".into())
        );
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
