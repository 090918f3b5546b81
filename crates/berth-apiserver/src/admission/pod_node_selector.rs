//! PodNodeSelector (seed 16.5.4, control-loops §4.2): a namespace's node selector is merged
//! into every new pod in it, and a per-namespace whitelist limits the labels its pods may select.
//!
//! The namespace's selector is its `scheduler.alpha.kubernetes.io/node-selector` annotation
//! when it has one, even an empty one (which opts the namespace out of the default), else the
//! cluster default. Only pod creation is checked, as upstream registers the plugin for `Create`.
//!
//! Configuration (the seed's shape; off unless a master config names it):
//! ```yaml
//! podNodeSelectorPluginConfig:
//!   clusterDefaultNodeSelector: "k3=v3"
//!   ns1: region=west,env=test,infra=fedora,os=fedora   # the whitelist of namespace ns1
//! ```

use super::node_selector::{self, LabelSet};
use super::{AdmissionCache, ConfigError, Handles, Plugin, Registration};
use crate::codec::meta_str;
use crate::error::{ApiError, ApiResult};
use crate::user::UserInfo;
use berth_api::registry::ResourceType;
use berth_store::Store;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

pub const REGISTRATION: Registration = Registration {
    name: "PodNodeSelector",
    on_by_default: false,
    build,
};

/// The namespace annotation holding its node selector.
pub const ANNOTATION: &str = "scheduler.alpha.kubernetes.io/node-selector";
const PLUGIN_CONFIG: &str = "podNodeSelectorPluginConfig";
const CLUSTER_DEFAULT: &str = "clusterDefaultNodeSelector";

pub const CONFLICT: &str =
    "pod node label selector conflicts with its namespace node label selector";
pub const NOT_WHITELISTED: &str =
    "pod node label selector labels conflict with its namespace whitelist";

/// The parsed configuration: the cluster default and each namespace's whitelist.
#[derive(Debug, Default, PartialEq)]
struct Selectors {
    cluster_default: LabelSet,
    whitelists: HashMap<String, LabelSet>,
}

struct PodNodeSelector {
    store: Store,
    cache: Arc<AdmissionCache>,
    selectors: Selectors,
}

fn build(handles: &Handles, configuration: Option<&Value>) -> Result<Box<dyn Plugin>, ConfigError> {
    Ok(Box::new(PodNodeSelector {
        store: handles.store.clone(),
        cache: handles.cache.clone(),
        selectors: configure(configuration)?,
    }))
}

/// Parses every selector of the configuration at start, so that a bad one stops the start
/// naming its field rather than failing pod creations later.
fn configure(configuration: Option<&Value>) -> Result<Selectors, ConfigError> {
    let mut out = Selectors::default();
    let Some(c) = configuration else {
        return Ok(out);
    };
    let name = REGISTRATION.name;
    super::config::only_fields(name, c, &[PLUGIN_CONFIG])?;
    let entries = match c.get(PLUGIN_CONFIG) {
        None | Some(Value::Null) => return Ok(out),
        Some(Value::Object(entries)) => entries,
        Some(other) => {
            return Err(ConfigError::new(
                name,
                PLUGIN_CONFIG,
                format!("expected a map of namespace names to node selectors, got {other}"),
            ))
        }
    };
    for (key, selector) in entries {
        let field = format!("{PLUGIN_CONFIG}.{key}");
        let text = selector.as_str().ok_or_else(|| {
            ConfigError::new(
                name,
                &field,
                format!(
                    "expected a node selector such as \"env=test,infra=fedora\", got {selector}"
                ),
            )
        })?;
        let set = node_selector::parse(text).map_err(|e| ConfigError::new(name, &field, e))?;
        if key == CLUSTER_DEFAULT {
            out.cluster_default = set;
        } else {
            out.whitelists.insert(key.clone(), set);
        }
    }
    Ok(out)
}

impl Plugin for PodNodeSelector {
    fn admit_create(&self, _user: &UserInfo, rt: &ResourceType, obj: &mut Value) -> ApiResult<()> {
        if rt.kind != "Pod" || !rt.group.is_empty() {
            return Ok(());
        }
        let ns_name = meta_str(obj, "namespace").to_string();
        let namespace = self
            .cache
            .namespace_object(&self.store, &ns_name)?
            .ok_or_else(|| ApiError::Internal(format!("namespace {ns_name} does not exist")))?;
        let annotation = namespace["metadata"]["annotations"].get(ANNOTATION);
        admit_pod(&self.selectors, &ns_name, annotation, obj)
    }
}

/// The rule itself: merge the namespace's selector (its annotation, else the cluster default)
/// into the pod, refusing a conflict or a label outside the namespace's whitelist.
fn admit_pod(
    selectors: &Selectors,
    namespace: &str,
    annotation: Option<&Value>,
    pod: &mut Value,
) -> ApiResult<()> {
    let namespace_selector = match annotation {
        Some(v) => node_selector::parse(v.as_str().unwrap_or("")).map_err(ApiError::Internal)?,
        None => selectors.cluster_default.clone(),
    };
    let name = meta_str(pod, "name").to_string();
    let forbidden = |why: &str| ApiError::Forbidden(format!("pods \"{name}\" is forbidden: {why}"));
    let Some(pod_selector) = node_selector::pod_node_selector(pod) else {
        return Ok(());
    };
    if node_selector::conflicts(&namespace_selector, pod_selector) {
        return Err(forbidden(CONFLICT));
    }
    node_selector::merge(&namespace_selector, pod_selector);
    let empty = LabelSet::new();
    let whitelist = selectors.whitelists.get(namespace).unwrap_or(&empty);
    if !node_selector::within(pod_selector, whitelist) {
        return Err(forbidden(NOT_WHITELISTED));
    }
    node_selector::drop_if_empty(pod);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn selectors(cluster_default: &str, whitelist: Option<&str>) -> Selectors {
        let mut entries = json!({CLUSTER_DEFAULT: cluster_default});
        if let Some(w) = whitelist {
            entries["testNamespace"] = json!(w);
        }
        configure(Some(&json!({PLUGIN_CONFIG: entries}))).unwrap()
    }

    fn pod(node_selector: Value) -> Value {
        json!({"metadata": {"name": "p", "namespace": "testNamespace"},
               "spec": {"containers": [], "nodeSelector": node_selector}})
    }

    /// One row of upstream's `podnodeselector/admission_test.go` (control-loops §4.2).
    fn admit(
        default: &str,
        annotation: Option<&str>,
        whitelist: Option<&str>,
        given: Value,
    ) -> Result<Value, String> {
        let mut p = pod(given);
        let annotation = annotation.map(|a| json!(a));
        admit_pod(
            &selectors(default, whitelist),
            "testNamespace",
            annotation.as_ref(),
            &mut p,
        )
        .map(|()| p["spec"].get("nodeSelector").cloned().unwrap_or(json!({})))
        .map_err(|e| e.message())
    }

    fn conflict() -> Result<Value, String> {
        Err(format!("pods \"p\" is forbidden: {CONFLICT}"))
    }

    #[test]
    fn the_namespace_selector_or_the_cluster_default_is_merged_into_the_pod() {
        assert_eq!(admit("", None, None, json!({})), Ok(json!({})));
        assert_eq!(
            admit("infra = false", None, None, json!({})),
            Ok(json!({"infra": "false"}))
        );
        assert_eq!(
            admit("", Some(" infra = false "), None, json!({})),
            Ok(json!({"infra": "false"}))
        );
        assert_eq!(
            admit("infra = false", Some("infra=true"), None, json!({})),
            Ok(json!({"infra": "true"}))
        );
        assert_eq!(
            admit(
                "infra = false",
                Some("infra=true"),
                None,
                json!({"env": "test"})
            ),
            Ok(json!({"infra": "true", "env": "test"}))
        );
    }

    #[test]
    fn an_empty_annotation_opts_the_namespace_out_of_the_cluster_default() {
        assert_eq!(
            admit("infra = false", Some(""), None, json!({})),
            Ok(json!({}))
        );
        // The pod stays without a nodeSelector field at all.
        let mut p = json!({"metadata": {"name": "p"}, "spec": {"containers": []}});
        admit_pod(&selectors("", None), "testNamespace", None, &mut p).unwrap();
        assert!(p["spec"].get("nodeSelector").is_none());
    }

    #[test]
    fn a_pod_label_with_another_value_than_the_namespace_is_refused() {
        assert_eq!(
            admit(
                "env = test",
                Some("infra=true"),
                None,
                json!({"infra": "false"})
            ),
            conflict()
        );
        assert_eq!(
            admit(
                "env=dev",
                Some("infra=false, env = test"),
                None,
                json!({"env": "dev", "color": "blue"})
            ),
            conflict()
        );
    }

    #[test]
    fn labels_outside_the_namespace_whitelist_are_refused() {
        assert_eq!(
            admit(
                "env=dev",
                Some("infra=false, env = dev"),
                Some("env=dev, infra=false, color=blue"),
                json!({"env": "dev", "color": "blue"})
            ),
            Ok(json!({"infra": "false", "env": "dev", "color": "blue"}))
        );
        assert_eq!(
            admit(
                "env=dev",
                Some("infra=false, env = dev"),
                Some("env=dev, infra=true, color=blue"),
                json!({"env": "dev", "color": "blue"})
            ),
            Err(format!("pods \"p\" is forbidden: {NOT_WHITELISTED}"))
        );
    }

    #[test]
    fn the_seed_example_merges_the_project_labels() {
        // Seed 16.5.4: ns1 annotated env=test,infra=fedora; the pod selects env=test, os=fedora.
        let c = json!({PLUGIN_CONFIG: {CLUSTER_DEFAULT: "k3=v3",
            "ns1": "region=west,env=test,infra=fedora,os=fedora"}});
        let s = configure(Some(&c)).unwrap();
        let mut p = json!({"metadata": {"name": "hello-pod"},
            "spec": {"nodeSelector": {"env": "test", "os": "fedora"}}});
        admit_pod(&s, "ns1", Some(&json!("env=test,infra=fedora")), &mut p).unwrap();
        assert_eq!(
            p["spec"]["nodeSelector"],
            json!({"env": "test", "infra": "fedora", "os": "fedora"})
        );
        let mut production = json!({"metadata": {"name": "hello-pod"},
            "spec": {"nodeSelector": {"env": "production", "infra": "fedora", "os": "fedora"}}});
        let e = admit_pod(
            &s,
            "ns1",
            Some(&json!("env=test,infra=fedora")),
            &mut production,
        )
        .unwrap_err();
        assert_eq!(e.code(), 403);
        // Another namespace without the annotation gets the cluster default, and no whitelist.
        let mut other = json!({"metadata": {"name": "p"}, "spec": {"nodeSelector": {"zone": "a"}}});
        admit_pod(&s, "other", None, &mut other).unwrap();
        assert_eq!(
            other["spec"]["nodeSelector"],
            json!({"k3": "v3", "zone": "a"})
        );
    }

    #[test]
    fn a_bad_annotation_fails_the_request_and_a_bad_configuration_the_start() {
        let e = admit("", Some("a!=b"), None, json!({})).unwrap_err();
        assert!(e.contains("Invalid value"), "{e}");
        let e = configure(Some(&json!({PLUGIN_CONFIG: {"ns1": "env in (a)"}}))).unwrap_err();
        assert_eq!(e.field, "podNodeSelectorPluginConfig.ns1");
        let e = configure(Some(&json!({PLUGIN_CONFIG: {"ns1": 3}}))).unwrap_err();
        assert_eq!(e.field, "podNodeSelectorPluginConfig.ns1");
        let e = configure(Some(&json!({PLUGIN_CONFIG: "k3=v3"}))).unwrap_err();
        assert_eq!(e.field, PLUGIN_CONFIG);
        let e = configure(Some(&json!({"clusterDefaultNodeSelector": "k3=v3"}))).unwrap_err();
        assert_eq!(e.field, "clusterDefaultNodeSelector");
        assert_eq!(configure(None).unwrap(), Selectors::default());
        assert_eq!(configure(Some(&json!({}))).unwrap(), Selectors::default());
    }

    #[test]
    fn only_pod_creation_is_admitted() {
        let plugin = PodNodeSelector {
            store: Store::memory(),
            cache: Arc::default(),
            selectors: selectors("k3=v3", None),
        };
        let rs = berth_api::registry::find("apps", "v1", "replicasets").unwrap();
        let mut obj = json!({"metadata": {"name": "r", "namespace": "missing"}, "spec": {}});
        plugin
            .admit_create(&UserInfo::admin(), rs, &mut obj)
            .unwrap();
        assert!(obj["spec"].get("nodeSelector").is_none());
        let pods = berth_api::registry::find("", "v1", "pods").unwrap();
        let mut old = pod(json!({}));
        plugin
            .admit_update(&UserInfo::admin(), pods, &pod(json!({})), &mut old)
            .unwrap();
        assert_eq!(old["spec"]["nodeSelector"], json!({}));
        // A pod in a namespace that does not exist: upstream's internal error.
        let mut p = json!({"metadata": {"name": "p", "namespace": "missing"}, "spec": {}});
        let e = plugin
            .admit_create(&UserInfo::admin(), pods, &mut p)
            .unwrap_err();
        assert_eq!(
            (e.code(), e.message()),
            (500, "namespace missing does not exist".to_string())
        );
    }
}
