//! PodNodeConstraints (OpenShift; seed 16.5.2–16.5.3, control-loops §4.3): only users allowed
//! to `create` `pods/binding` in the namespace may target nodes themselves, by `spec.nodeName`
//! or by a `nodeSelector` label in `nodeSelectorLabelBlacklist`, in a pod or in the pod template
//! of a workload object.
//!
//! What is checked, as OpenShift 3.11 does: pods on creation; ReplicationControllers,
//! Deployments, ReplicaSets, StatefulSets, Jobs and CronJobs on creation and update. DaemonSets
//! are let through, as upstream ignores them (a daemon's nodeSelector is how it picks its
//! nodes). An update that leaves the template's node targeting (its nodeName and its
//! blacklisted labels) as it was is not checked, so that a user may still edit, and the
//! controllers scale, a workload an administrator pinned.
//!
//! A node creating a mirror pod bound to itself passes (OpenShift's NodeRestriction carve-out).
//!
//! Configuration (off unless a master config names it):
//! `{apiVersion: v1, kind: PodNodeConstraintsConfig, nodeSelectorLabelBlacklist: [...]}`; without
//! `nodeSelectorLabelBlacklist` the blacklist is `[kubernetes.io/hostname]`, and `[]` blacklists
//! nothing (nodeName stays restricted).

use super::{ConfigError, Handles, Plugin, Registration};
use crate::authorizer::{Attributes, Authorizer};
use crate::codec::meta_str;
use crate::error::{ApiError, ApiResult};
use crate::path::qualified_resource;
use crate::user::UserInfo;
use berth_api::registry::ResourceType;
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;

pub const REGISTRATION: Registration = Registration {
    name: "PodNodeConstraints",
    on_by_default: false,
    build,
};

const BLACKLIST: &str = "nodeSelectorLabelBlacklist";
/// The blacklist when the configuration does not give one.
pub const DEFAULT_BLACKLIST: &[&str] = &["kubernetes.io/hostname"];
const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";
const NODE_USER_PREFIX: &str = "system:node:";
const NODES_GROUP: &str = "system:nodes";

struct PodNodeConstraints {
    blacklist: BTreeSet<String>,
    authorizer: Arc<dyn Authorizer>,
}

fn build(handles: &Handles, configuration: Option<&Value>) -> Result<Box<dyn Plugin>, ConfigError> {
    Ok(Box::new(PodNodeConstraints {
        blacklist: configure(configuration)?,
        authorizer: handles.authorizer.clone(),
    }))
}

fn configure(configuration: Option<&Value>) -> Result<BTreeSet<String>, ConfigError> {
    let default = || DEFAULT_BLACKLIST.iter().map(|l| l.to_string()).collect();
    let Some(c) = configuration else {
        return Ok(default());
    };
    let name = REGISTRATION.name;
    super::config::only_fields(name, c, &[BLACKLIST])?;
    match c.get(BLACKLIST) {
        None | Some(Value::Null) => Ok(default()),
        Some(Value::Array(labels)) => labels
            .iter()
            .map(|l| {
                l.as_str().map(str::to_string).ok_or_else(|| {
                    ConfigError::new(name, BLACKLIST, format!("expected label keys, got {l}"))
                })
            })
            .collect(),
        Some(other) => Err(ConfigError::new(
            name,
            BLACKLIST,
            format!("expected a list of label keys, got {other}"),
        )),
    }
}

/// Where the pod spec sits in an object of a kind this plugin checks; `None` for other kinds.
fn pod_spec_path(rt: &ResourceType) -> Option<&'static [&'static str]> {
    match (rt.group, rt.kind) {
        ("", "Pod") => Some(&["spec"]),
        ("", "ReplicationController")
        | ("apps", "Deployment" | "ReplicaSet" | "StatefulSet")
        | ("batch", "Job") => Some(&["spec", "template", "spec"]),
        ("batch", "CronJob") => Some(&["spec", "jobTemplate", "spec", "template", "spec"]),
        _ => None,
    }
}

fn pod_spec<'a>(obj: &'a Value, path: &[&str]) -> &'a Value {
    path.iter().fold(obj, |v, field| &v[*field])
}

/// How a pod spec targets nodes: its nodeName and its blacklisted nodeSelector labels (sorted,
/// with their values, so that a changed value counts as a change).
#[derive(Debug, PartialEq)]
struct Targeting<'a> {
    node_name: &'a str,
    labels: Vec<(&'a str, &'a Value)>,
}

impl Targeting<'_> {
    fn none(&self) -> bool {
        self.node_name.is_empty() && self.labels.is_empty()
    }

    /// Upstream's reason, the labels printed as Go prints a list.
    fn reason(&self) -> String {
        let labels: Vec<&str> = self.labels.iter().map(|(k, _)| *k).collect();
        let labels = format!("[{}]", labels.join(" "));
        match (self.node_name.is_empty(), self.labels.is_empty()) {
            (false, true) => "node selection by nodeName is prohibited by policy for your role".into(),
            (true, _) => format!("node selection by label(s) {labels} is prohibited by policy for your role"),
            (false, false) => format!(
                "node selection by nodeName and label(s) {labels} is prohibited by policy for your role"
            ),
        }
    }
}

impl PodNodeConstraints {
    fn targeting<'a>(&self, spec: &'a Value) -> Targeting<'a> {
        let labels = spec["nodeSelector"]
            .as_object()
            .map(|selector| {
                // serde_json's map is ordered by key, so the labels come out sorted.
                selector
                    .iter()
                    .filter(|(k, _)| self.blacklist.contains(k.as_str()))
                    .map(|(k, v)| (k.as_str(), v))
                    .collect()
            })
            .unwrap_or_default();
        Targeting {
            node_name: spec["nodeName"].as_str().unwrap_or(""),
            labels,
        }
    }

    /// Refuses `targeting` unless the user may bind pods in the object's namespace.
    fn check(
        &self,
        user: &UserInfo,
        rt: &ResourceType,
        obj: &Value,
        targeting: &Targeting<'_>,
    ) -> ApiResult<()> {
        if targeting.none() || is_node_self_targeting_mirror_pod(user, rt, obj, targeting) {
            return Ok(());
        }
        let name = meta_str(obj, "name");
        let attributes = Attributes {
            user,
            verb: "create",
            api_group: "",
            resource: "pods",
            subresource: "binding",
            namespace: meta_str(obj, "namespace"),
            // Upstream names the pod only when a pod is checked, not a workload's template.
            name: if rt.kind == "Pod" { name } else { "" },
            path: "",
            field_selector: "",
        };
        if self.authorizer.authorize(&attributes).allowed() {
            return Ok(());
        }
        Err(ApiError::Forbidden(format!(
            "{} \"{name}\" is forbidden: {}",
            qualified_resource(rt),
            targeting.reason()
        )))
    }
}

/// A node creating a mirror pod bound to itself (upstream's NodeIdentity: a `system:node:NAME`
/// user in the `system:nodes` group).
fn is_node_self_targeting_mirror_pod(
    user: &UserInfo,
    rt: &ResourceType,
    obj: &Value,
    targeting: &Targeting<'_>,
) -> bool {
    rt.kind == "Pod"
        && !targeting.node_name.is_empty()
        && obj["metadata"]["annotations"]
            .get(MIRROR_POD_ANNOTATION)
            .is_some()
        && user.in_group(NODES_GROUP)
        && user.name.strip_prefix(NODE_USER_PREFIX) == Some(targeting.node_name)
}

impl Plugin for PodNodeConstraints {
    fn admit_create(&self, user: &UserInfo, rt: &ResourceType, obj: &mut Value) -> ApiResult<()> {
        let Some(path) = pod_spec_path(rt) else {
            return Ok(());
        };
        self.check(user, rt, obj, &self.targeting(pod_spec(obj, path)))
    }

    fn admit_update(
        &self,
        user: &UserInfo,
        rt: &ResourceType,
        old: &Value,
        new: &mut Value,
    ) -> ApiResult<()> {
        let Some(path) = pod_spec_path(rt) else {
            return Ok(());
        };
        // Pods are checked on creation only (a pod's nodeName is set by binding, its
        // nodeSelector is immutable).
        if rt.kind == "Pod" {
            return Ok(());
        }
        let targeting = self.targeting(pod_spec(new, path));
        if targeting == self.targeting(pod_spec(old, path)) {
            return Ok(());
        }
        self.check(user, rt, new, &targeting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authorizer::Decision;
    use berth_api::registry::find;
    use serde_json::json;
    use std::sync::Mutex;

    /// An authorizer that allows `pods/binding` to the users named, and records what it is asked.
    #[derive(Default)]
    struct Binders {
        allowed: Vec<&'static str>,
        asked: Mutex<Vec<String>>,
    }

    impl Authorizer for Binders {
        fn authorize(&self, a: &Attributes<'_>) -> Decision {
            self.asked.lock().unwrap().push(format!(
                "{} {} {}/{}/{} in {} name={}",
                a.user.name, a.verb, a.api_group, a.resource, a.subresource, a.namespace, a.name
            ));
            if self.allowed.contains(&a.user.name.as_str()) {
                Decision::Allow
            } else {
                Decision::Deny("no RBAC policy matched".into())
            }
        }
    }

    fn plugin(blacklist: Value, binders: &[&'static str]) -> (PodNodeConstraints, Arc<Binders>) {
        let authorizer = Arc::new(Binders {
            allowed: binders.to_vec(),
            ..Binders::default()
        });
        let configuration = json!({"apiversion": "v1", "kind": "PodNodeConstraintsConfig",
            BLACKLIST: blacklist});
        let p = PodNodeConstraints {
            blacklist: configure(Some(&configuration)).unwrap(),
            authorizer: authorizer.clone(),
        };
        (p, authorizer)
    }

    fn developer() -> UserInfo {
        UserInfo {
            name: "developer".into(),
            groups: vec!["system:authenticated".into()],
            ..UserInfo::default()
        }
    }

    fn admin() -> UserInfo {
        UserInfo::admin()
    }

    fn pod_spec(node_name: &str, node_selector: Value) -> Value {
        let mut spec = json!({"containers": [{"name": "c", "image": "i"}]});
        if !node_name.is_empty() {
            spec["nodeName"] = json!(node_name);
        }
        if !node_selector.is_null() {
            spec["nodeSelector"] = node_selector;
        }
        spec
    }

    fn pod(node_name: &str, node_selector: Value) -> Value {
        json!({"metadata": {"name": "p", "namespace": "dev"},
            "spec": pod_spec(node_name, node_selector)})
    }

    fn create(
        p: &PodNodeConstraints,
        user: &UserInfo,
        plural: &str,
        obj: Value,
    ) -> Result<(), String> {
        let rt = registry_type(plural);
        p.admit_create(user, rt, &mut obj.clone())
            .map_err(|e| e.message())
    }

    fn registry_type(plural: &str) -> &'static ResourceType {
        ["", "apps", "batch"]
            .iter()
            .find_map(|g| find(g, "v1", plural))
            .unwrap()
    }

    #[test]
    fn origins_vectors_for_a_user_without_pods_binding() {
        let (p, _) = plugin(json!(["bogus"]), &[]);
        let dev = developer();
        assert_eq!(create(&p, &dev, "pods", pod("", Value::Null)), Ok(()));
        assert_eq!(
            create(&p, &dev, "pods", pod("", json!({"bogus": "frank"}))),
            Err("pods \"p\" is forbidden: node selection by label(s) [bogus] is prohibited by policy for your role".into())
        );
        assert_eq!(
            create(&p, &dev, "pods", pod("frank", Value::Null)),
            Err("pods \"p\" is forbidden: node selection by nodeName is prohibited by policy for your role".into())
        );
        assert_eq!(
            create(&p, &dev, "pods", pod("frank", json!({"bogus": "frank"}))),
            Err("pods \"p\" is forbidden: node selection by nodeName and label(s) [bogus] is prohibited by policy for your role".into())
        );
        assert_eq!(
            create(&p, &dev, "pods", pod("", json!({"region": "east"}))),
            Ok(())
        );
    }

    #[test]
    fn a_user_with_pods_binding_may_target_nodes() {
        let (p, asked) = plugin(json!(["bogus"]), &["system:admin"]);
        assert_eq!(
            create(
                &p,
                &admin(),
                "pods",
                pod("frank", json!({"bogus": "frank"}))
            ),
            Ok(())
        );
        // Upstream's question: create pods/binding in the pod's namespace, naming the pod.
        assert_eq!(
            asked.asked.lock().unwrap().as_slice(),
            ["system:admin create /pods/binding in dev name=p"]
        );
    }

    #[test]
    fn blacklisted_labels_are_listed_sorted() {
        let (p, _) = plugin(json!(["region", "kubernetes.io/hostname", "zone"]), &[]);
        let selector = json!({"zone": "a", "region": "us-east", "superregion": "us",
            "kubernetes.io/hostname": "n1"});
        assert_eq!(
            create(&p, &developer(), "pods", pod("", selector)),
            Err("pods \"p\" is forbidden: node selection by label(s) [kubernetes.io/hostname region zone] is prohibited by policy for your role".into())
        );
        // The seed's superregion example: the project-level label is not blacklisted.
        assert_eq!(
            create(
                &p,
                &developer(),
                "pods",
                pod("", json!({"superregion": "us"}))
            ),
            Ok(())
        );
    }

    #[test]
    fn the_blacklist_defaults_to_the_hostname_label() {
        let c = json!({"apiVersion": "v1", "kind": "PodNodeConstraintsConfig"});
        assert_eq!(
            configure(Some(&c)).unwrap(),
            BTreeSet::from(["kubernetes.io/hostname".to_string()])
        );
        let (empty, _) = plugin(json!([]), &[]);
        assert!(empty.blacklist.is_empty());
        // An empty blacklist still restricts nodeName.
        assert!(create(&empty, &developer(), "pods", pod("n1", Value::Null)).is_err());
        let e = configure(Some(&json!({BLACKLIST: "region"}))).unwrap_err();
        assert_eq!(e.field, BLACKLIST);
        let e = configure(Some(&json!({BLACKLIST: [1]}))).unwrap_err();
        assert_eq!(e.field, BLACKLIST);
        let e = configure(Some(&json!({"nodeSelectorLabelBlackList": []}))).unwrap_err();
        assert_eq!(e.field, "nodeSelectorLabelBlackList");
    }

    fn template(spec: Value) -> Value {
        json!({"metadata": {"labels": {"app": "a"}}, "spec": spec})
    }

    fn workload(kind: &str, spec: Value) -> Value {
        let body = if kind == "cronjobs" {
            json!({"schedule": "* * * * *", "jobTemplate": {"spec": {"template": template(spec)}}})
        } else {
            json!({"template": template(spec)})
        };
        json!({"metadata": {"name": "w", "namespace": "dev"}, "spec": body})
    }

    #[test]
    fn pod_templates_of_every_workload_kind_are_checked() {
        let (p, asked) = plugin(json!(["region"]), &["system:admin"]);
        let cases = [
            ("replicationcontrollers", "replicationcontrollers"),
            ("deployments", "deployments.apps"),
            ("replicasets", "replicasets.apps"),
            ("statefulsets", "statefulsets.apps"),
            ("jobs", "jobs.batch"),
            ("cronjobs", "cronjobs.batch"),
        ];
        for (plural, qualified) in cases {
            let named = workload(plural, pod_spec("n1", Value::Null));
            assert_eq!(
                create(&p, &developer(), plural, named.clone()),
                Err(format!("{qualified} \"w\" is forbidden: node selection by nodeName is prohibited by policy for your role")),
                "{plural}"
            );
            let labelled = workload(plural, pod_spec("", json!({"region": "east"})));
            assert_eq!(
                create(&p, &developer(), plural, labelled),
                Err(format!("{qualified} \"w\" is forbidden: node selection by label(s) [region] is prohibited by policy for your role")),
                "{plural}"
            );
            assert_eq!(create(&p, &admin(), plural, named), Ok(()), "{plural}");
            let plain = workload(plural, pod_spec("", json!({"disk": "ssd"})));
            assert_eq!(create(&p, &developer(), plural, plain), Ok(()), "{plural}");
        }
        // A template is not a pod: the question names no pod.
        assert!(asked
            .asked
            .lock()
            .unwrap()
            .iter()
            .all(|q| q.ends_with("name=")));
    }

    #[test]
    fn daemonsets_and_other_kinds_are_let_through() {
        let (p, _) = plugin(json!(["region"]), &[]);
        let ds = workload("daemonsets", pod_spec("n1", json!({"region": "east"})));
        assert_eq!(create(&p, &developer(), "daemonsets", ds), Ok(()));
        let svc = json!({"metadata": {"name": "s", "namespace": "dev"}, "spec": {"nodeName": "x"}});
        assert_eq!(create(&p, &developer(), "services", svc), Ok(()));
    }

    fn update(p: &PodNodeConstraints, plural: &str, old: Value, new: Value) -> Result<(), String> {
        p.admit_update(&developer(), registry_type(plural), &old, &mut new.clone())
            .map_err(|e| e.message())
    }

    #[test]
    fn an_update_is_checked_only_when_it_changes_the_node_targeting() {
        let (p, _) = plugin(json!(["region"]), &[]);
        let pinned = workload(
            "deployments",
            pod_spec("", json!({"region": "east", "disk": "ssd"})),
        );
        // Another image, another non-blacklisted label, more replicas: unchanged targeting.
        let mut edited = pinned.clone();
        edited["spec"]["template"]["spec"]["containers"][0]["image"] = json!("i2");
        edited["spec"]["template"]["spec"]["nodeSelector"]["disk"] = json!("hdd");
        edited["spec"]["replicas"] = json!(5);
        assert_eq!(update(&p, "deployments", pinned.clone(), edited), Ok(()));
        // Another blacklisted value, or a nodeName, is a change the developer may not make.
        let mut moved = pinned.clone();
        moved["spec"]["template"]["spec"]["nodeSelector"]["region"] = json!("west");
        assert!(update(&p, "deployments", pinned.clone(), moved).is_err());
        let mut named = pinned.clone();
        named["spec"]["template"]["spec"]["nodeName"] = json!("n1");
        assert_eq!(
            update(&p, "deployments", pinned.clone(), named),
            Err("deployments.apps \"w\" is forbidden: node selection by nodeName and label(s) [region] is prohibited by policy for your role".into())
        );
        // Dropping the targeting is always allowed.
        let free = workload("deployments", pod_spec("", Value::Null));
        assert_eq!(
            update(&p, "deployments", pinned.clone(), free.clone()),
            Ok(())
        );
        // Pods are checked on creation only.
        assert_eq!(
            update(&p, "pods", pod("", Value::Null), pod("n1", Value::Null)),
            Ok(())
        );
        let cj = workload("cronjobs", pod_spec("", Value::Null));
        let cj_pinned = workload("cronjobs", pod_spec("n1", Value::Null));
        assert!(update(&p, "cronjobs", cj, cj_pinned).is_err());
    }

    #[test]
    fn a_node_may_create_a_mirror_pod_bound_to_itself() {
        let (p, _) = plugin(json!([]), &[]);
        let node = |name: &str| UserInfo {
            name: format!("system:node:{name}"),
            groups: vec!["system:nodes".into(), "system:authenticated".into()],
            ..UserInfo::default()
        };
        let mut mirror = pod("n1", Value::Null);
        mirror["metadata"]["annotations"] = json!({MIRROR_POD_ANNOTATION: "x"});
        assert_eq!(create(&p, &node("n1"), "pods", mirror.clone()), Ok(()));
        assert!(create(&p, &node("n2"), "pods", mirror.clone()).is_err());
        assert!(create(&p, &node("n1"), "pods", pod("n1", Value::Null)).is_err());
        assert!(create(&p, &developer(), "pods", mirror).is_err());
    }
}
