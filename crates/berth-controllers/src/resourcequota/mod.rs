//! The resource quota controller (upstream `pkg/controller/resourcequota`): each
//! ResourceQuota's `status.hard` is its `spec.hard`, and its `status.used` what the objects of
//! its namespace that it selects use of each hard resource (counted as admission counts them,
//! [`berth_core::quota`]).
//!
//! The engine ([`status`], [`resources_counted`]) is pure; the driver ([`run`]) watches quotas
//! and pods, lists the other kinds a quota counts, and writes each status that changed.

mod driver;

pub use driver::{run, Queues};

use berth_core::quantity::{self, Quantity};
use berth_core::quota::{self, Usage};
use serde_json::{json, Map, Value};

/// A kind whose objects a quota counts: API group (`""` for core) and resource.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Counted {
    pub group: String,
    pub plural: String,
}

fn counted(group: &str, plural: &str) -> Counted {
    Counted {
        group: group.into(),
        plural: plural.into(),
    }
}

/// The kinds whose objects `hard`'s resource names count (`cpu` and `requests.*` count pods,
/// `count/deployments.apps` deployments, `services.nodeports` services).
pub fn resources_counted(hard: &Map<String, Value>) -> Vec<Counted> {
    let mut out: Vec<Counted> = hard
        .keys()
        .filter_map(|name| {
            let name = name.as_str();
            if let Some(resource) = name.strip_prefix("count/") {
                return Some(match resource.split_once('.') {
                    Some((plural, group)) => counted(group, plural),
                    None => counted("", resource),
                });
            }
            match name {
                "pods" | "cpu" | "memory" | "ephemeral-storage" => Some(counted("", "pods")),
                n if n.starts_with("requests.") || n.starts_with("limits.") => {
                    (n != "requests.storage").then(|| counted("", "pods"))
                }
                "requests.storage" | "persistentvolumeclaims" => {
                    Some(counted("", "persistentvolumeclaims"))
                }
                n if n.starts_with("services") => Some(counted("", "services")),
                "secrets" | "configmaps" | "replicationcontrollers" | "resourcequotas" => {
                    Some(counted("", name))
                }
                _ => None,
            }
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The status `quota` should have, given the objects of its namespace of each counted kind.
pub fn status(quota: &Value, objects: &[(Counted, Vec<Value>)]) -> Value {
    let hard = quota["spec"]["hard"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut used = Usage::new();
    for (kind, list) in objects {
        for obj in list {
            if quota::quota_selects(quota, &kind.plural, obj) {
                quota::add_all(&mut used, &quota::usage(&kind.group, &kind.plural, obj));
            }
        }
    }
    let mut hard_out = Map::new();
    let mut used_out = Map::new();
    for (name, value) in &hard {
        let canonical = quantity::from_json(value)
            .map(|q| q.to_string())
            .unwrap_or_else(|_| value.as_str().unwrap_or("").to_string());
        hard_out.insert(name.clone(), json!(canonical));
        let u = used.get(name).cloned().unwrap_or_else(Quantity::default);
        used_out.insert(name.clone(), json!(u.to_string()));
    }
    json!({"hard": hard_out, "used": used_out})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hard_names_say_which_kinds_to_count() {
        let hard = json!({"pods": "3", "requests.cpu": "1", "count/deployments.apps": "2",
            "services.nodeports": "1", "secrets": "5", "example.com/widgets": "1"});
        assert_eq!(
            resources_counted(hard.as_object().unwrap()),
            vec![
                counted("", "pods"),
                counted("", "secrets"),
                counted("", "services"),
                counted("apps", "deployments"),
            ]
        );
    }

    #[test]
    fn used_counts_what_the_quota_selects_and_zero_for_the_rest() {
        let quota =
            json!({"spec": {"hard": {"pods": "3", "requests.cpu": "2", "count/secrets": "4"}}});
        let pods = vec![
            json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]}}),
            json!({"spec": {"containers": [{"name": "c"}]}}),
            json!({"spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Failed"}}),
        ];
        let s = status(&quota, &[(counted("", "pods"), pods)]);
        assert_eq!(
            s,
            json!({"hard": {"pods": "3", "requests.cpu": "2", "count/secrets": "4"},
                "used": {"pods": "2", "requests.cpu": "500m", "count/secrets": "0"}})
        );
    }

    #[test]
    fn a_scoped_quota_counts_only_the_pods_it_selects() {
        let quota = json!({"spec": {"hard": {"pods": "5"}, "scopes": ["BestEffort"]}});
        let pods = vec![
            json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}),
            json!({"spec": {"containers": [{"name": "c"}]}}),
        ];
        let s = status(&quota, &[(counted("", "pods"), pods)]);
        assert_eq!(s["used"]["pods"], "1");
    }
}
