//! A simulated node made from a live cluster's Node object (`berth simulate
//! --from-kubeconfig`): the same name, labels, taints, capacity, allocatable and images, so the
//! scheduler sees the node the live one is.
//!
//! What the API does not show is not invented: the live kubelet's reservations are taken as
//! the difference between capacity and allocatable, and its eviction thresholds (they live in
//! the kubelet's own configuration, not in the Node) are upstream's defaults, as `--nodes N`
//! nodes have. The taints the node lifecycle controller owns (`node.kubernetes.io/...`) are
//! left to the simulated controller, which sets them from the simulated node's own state.

use super::{Image, NodeConfig, Taint};
use crate::allocatable::ResourceList;
use berth_core::quantity::Quantity;
use serde_json::Value;

/// The prefix of the taints the node lifecycle controller sets and removes by itself.
const LIFECYCLE_TAINT_PREFIX: &str = "node.kubernetes.io/";

/// The simulated twin of the live Node `node`.
/// An error names the node and the field: `node n1: status.capacity: has no pods`.
pub fn from_live_node(node: &Value) -> Result<NodeConfig, String> {
    let name = node
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| "a node without a name".to_string())?;
    let err = |field: &str, reason: String| format!("node {name}: {field}: {reason}");
    let capacity = resources(node.pointer("/status/capacity"), "status.capacity", &err)?;
    for needed in ["cpu", "memory", "pods"] {
        if !capacity.contains_key(needed) {
            return Err(err("status.capacity", format!("has no {needed}")));
        }
    }
    let mut allocatable = resources(
        node.pointer("/status/allocatable"),
        "status.allocatable",
        &err,
    )?;
    for (resource, amount) in &capacity {
        allocatable.entry(resource.clone()).or_insert(*amount);
    }
    // What the live kubelet holds back, as one figure: its kube-, system-reserved and hard
    // eviction thresholds cannot be told apart from the Node.
    let mut kube_reserved = ResourceList::new();
    for (resource, cap) in &capacity {
        let held = cap
            .checked_sub(&allocatable[resource])
            .filter(Quantity::is_positive);
        if let Some(held) = held {
            kube_reserved.insert(resource.clone(), held);
        }
    }
    let mut twin = NodeConfig::quick(1).remove(0);
    twin.name = name.to_string();
    twin.labels = labels(node);
    twin.labels
        .entry("kubernetes.io/hostname".into())
        .or_insert_with(|| name.to_string());
    twin.taints = taints(node);
    twin.images = images(node);
    twin.machine_capacity = capacity.clone();
    twin.capacity = capacity;
    twin.allocatable = allocatable;
    twin.kube_reserved = kube_reserved;
    twin.system_reserved = ResourceList::new();
    Ok(twin)
}

/// Whether the live node is cordoned (`spec.unschedulable`), which the import repeats.
pub fn is_cordoned(node: &Value) -> bool {
    node.pointer("/spec/unschedulable") == Some(&Value::Bool(true))
}

fn resources(
    list: Option<&Value>,
    field: &str,
    err: &dyn Fn(&str, String) -> String,
) -> Result<ResourceList, String> {
    let mut out = ResourceList::new();
    let Some(map) = list.and_then(Value::as_object) else {
        return Ok(out);
    };
    for (resource, amount) in map {
        let text = amount.as_str().unwrap_or_default();
        let q = Quantity::parse(text)
            .map_err(|e| err(&format!("{field}.{resource}"), format!("{text:?}: {e}")))?;
        out.insert(resource.clone(), q);
    }
    Ok(out)
}

fn labels(node: &Value) -> std::collections::BTreeMap<String, String> {
    node.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

fn taints(node: &Value) -> Vec<Taint> {
    let Some(list) = node.pointer("/spec/taints").and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|t| {
            let key = t.get("key")?.as_str()?;
            let effect = t.get("effect")?.as_str()?;
            let known = matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute");
            (known && !key.starts_with(LIFECYCLE_TAINT_PREFIX)).then(|| Taint {
                key: key.to_string(),
                value: t
                    .get("value")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                effect: effect.to_string(),
            })
        })
        .collect()
}

fn images(node: &Value) -> Vec<Image> {
    let Some(list) = node.pointer("/status/images").and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|i| {
            let name = i.get("names")?.as_array()?.first()?.as_str()?;
            Some(Image {
                name: name.to_string(),
                size_bytes: i.get("sizeBytes").and_then(Value::as_i64).unwrap_or(0),
                inodes: super::DEFAULT_IMAGE_INODES,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn live() -> Value {
        json!({
            "metadata": {"name": "ip-10-0-1-7", "labels": {
                "kubernetes.io/hostname": "ip-10-0-1-7",
                "topology.kubernetes.io/zone": "us-east-1a",
                "node.kubernetes.io/instance-type": "m5.xlarge"}},
            "spec": {"unschedulable": true, "taints": [
                {"key": "dedicated", "value": "db", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule",
                 "timeAdded": "2026-01-01T00:00:00Z"},
                {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]},
            "status": {
                "capacity": {"cpu": "4", "memory": "16110828Ki", "pods": "110",
                             "ephemeral-storage": "83873772Ki", "nvidia.com/gpu": "1"},
                "allocatable": {"cpu": "3920m", "memory": "15199468Ki", "pods": "110",
                                "ephemeral-storage": "77298068Ki", "nvidia.com/gpu": "1"},
                "images": [{"names": ["nginx@sha256:abc", "nginx:1.27"], "sizeBytes": 199000000}]
            }
        })
    }

    #[test]
    fn the_twin_reports_what_the_live_node_does() {
        let twin = from_live_node(&live()).unwrap();
        assert_eq!(twin.name, "ip-10-0-1-7");
        assert_eq!(twin.labels["topology.kubernetes.io/zone"], "us-east-1a");
        // Exactly the live labels: no role label is added to a node that has none.
        assert_eq!(twin.labels.len(), 3);
        assert_eq!(twin.allocatable["cpu"].milli_value(), 3920);
        assert_eq!(twin.allocatable["memory"].value(), 15_199_468 * 1024);
        assert_eq!(twin.capacity["nvidia.com/gpu"].value(), 1);
        assert_eq!(twin.kube_reserved["cpu"].milli_value(), 80);
        assert!(!twin.kube_reserved.contains_key("pods"));
        assert_eq!(twin.images.len(), 1);
        assert_eq!(twin.images[0].name, "nginx@sha256:abc");
        assert!(is_cordoned(&live()));
    }

    #[test]
    fn the_lifecycle_taints_are_left_to_the_simulated_controller() {
        let twin = from_live_node(&live()).unwrap();
        let keys: Vec<&str> = twin.taints.iter().map(|t| t.key.as_str()).collect();
        assert_eq!(keys, ["dedicated"]);
        assert_eq!(twin.taints[0].value, "db");
    }

    #[test]
    fn a_node_without_its_basic_resources_is_refused_by_name() {
        let mut node = live();
        node["status"]["capacity"]
            .as_object_mut()
            .unwrap()
            .remove("pods");
        let e = from_live_node(&node).unwrap_err();
        assert_eq!(e, "node ip-10-0-1-7: status.capacity: has no pods");
        let mut node = live();
        node["status"]["capacity"]["cpu"] = json!("four");
        let e = from_live_node(&node).unwrap_err();
        assert!(
            e.starts_with("node ip-10-0-1-7: status.capacity.cpu: \"four\""),
            "{e}"
        );
        assert!(from_live_node(&json!({"metadata": {}})).is_err());
    }

    #[test]
    fn allocatable_missing_a_resource_is_its_capacity() {
        let mut node = live();
        node["status"]["allocatable"]
            .as_object_mut()
            .unwrap()
            .remove("nvidia.com/gpu");
        let twin = from_live_node(&node).unwrap();
        assert_eq!(twin.allocatable["nvidia.com/gpu"].value(), 1);
    }
}
