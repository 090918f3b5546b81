//! Whether a daemon pod fits a node's allocatable resources, as the 1.11 DaemonSet controller
//! checks before creating one (its simulation runs the scheduler's `PodFitsResources`).
//!
//! A node that is short of a resource keeps a daemon it already runs but gets no new one, and
//! the controller reports `FailedPlacement` with upstream's message:
//! `failed to place pod on "<node>": Node didn't have enough resource: <name>, requested: <r>,
//! used: <u>, capacity: <c>` (cpu in millicores, the rest in units). The pods counted are the
//! node's bound pods that have not terminated, the DaemonSet's own excepted.

use berth_core::quantity::Quantity;
use k8s_openapi::api::core::v1::{Node, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as WireQuantity;
use std::collections::BTreeMap;

const PODS: &str = "pods";
const CPU: &str = "cpu";

/// Resource amounts by name: cpu in millicores, everything else in units (bytes, devices).
pub type Amounts = BTreeMap<String, i64>;

/// What the pods bound to one node request, and how many there are.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeUse {
    pub pods: i64,
    pub requested: Amounts,
}

impl NodeUse {
    /// Counts `pod` in (`sign` 1) or out (`sign` -1).
    pub fn add(&mut self, request: &Amounts, sign: i64) {
        self.pods += sign;
        for (name, v) in request {
            *self.requested.entry(name.clone()).or_default() += sign * v;
        }
    }
}

fn amount(name: &str, q: &WireQuantity) -> i64 {
    match Quantity::parse(&q.0) {
        Ok(q) if name == CPU => q.milli_value(),
        Ok(q) => q.value(),
        Err(_) => 0,
    }
}

fn requests_of(resources: Option<&k8s_openapi::api::core::v1::ResourceRequirements>) -> Amounts {
    resources
        .and_then(|r| r.requests.as_ref())
        .into_iter()
        .flatten()
        .map(|(name, q)| (name.clone(), amount(name, q)))
        .collect()
}

/// A pod's effective request: the sum over its containers, raised to any init container's.
pub fn pod_request(spec: &PodSpec) -> Amounts {
    let mut total = Amounts::new();
    for c in &spec.containers {
        for (name, v) in requests_of(c.resources.as_ref()) {
            *total.entry(name).or_default() += v;
        }
    }
    for c in spec.init_containers.iter().flatten() {
        for (name, v) in requests_of(c.resources.as_ref()) {
            let e = total.entry(name).or_default();
            *e = (*e).max(v);
        }
    }
    total
}

/// Whether the pod takes up room on its node: bound and not Succeeded or Failed.
pub fn occupies_node(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    !matches!(phase, Some("Succeeded" | "Failed"))
}

/// What every node's pods use, by node name (pods that occupy their node only).
pub fn node_use<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> BTreeMap<String, NodeUse> {
    let mut out: BTreeMap<String, NodeUse> = BTreeMap::new();
    for p in pods {
        let Some(node) = crate::model::pod_node(p) else {
            continue;
        };
        if !occupies_node(p) {
            continue;
        }
        let request = p.spec.as_ref().map(pod_request).unwrap_or_default();
        out.entry(node.to_string()).or_default().add(&request, 1);
    }
    out
}

/// Why a pod requesting `request` does not fit `node` next to `used`: upstream's
/// InsufficientResourceError text for the last resource short (its checks run pods, cpu,
/// memory, ephemeral-storage, then the rest), or `None` when it fits.
///
/// The check is the scheduler's own PodFitsResources ([`berth_scheduler::fits`]); the node's
/// use is handed to it as its pod count of pods, the first requesting it all. Only resources
/// decide here: whether the daemon should run on the node at all (selector, taints) is
/// `node_should_run`'s question.
pub fn insufficient(request: &Amounts, node: &Node, used: &NodeUse) -> Option<String> {
    let node = serde_json::to_value(node)
        .and_then(serde_json::from_value::<berth_scheduler::model::Node>)
        .ok()?;
    let pod = scheduler_pod("daemon", request)?;
    let mut on_node = Vec::new();
    for n in 0..used.pods.max(0) {
        let requested = if n == 0 { &used.requested } else { &EMPTY };
        on_node.push(scheduler_pod(&format!("used-{n}"), requested)?);
    }
    let berth_scheduler::Fit::Unfit { insufficient, .. } =
        berth_scheduler::fits(&pod, &node, &on_node)
    else {
        return None;
    };
    let rank = |name: &str| match name {
        PODS => 0,
        CPU => 1,
        "memory" => 2,
        "ephemeral-storage" => 3,
        _ => 4,
    };
    insufficient
        .into_iter()
        // a resource the pod does not ask for is not its problem, even on an overcommitted node
        .filter(|short| short.resource == PODS || short.requested != 0)
        .max_by(|a, b| (rank(&a.resource), &a.resource).cmp(&(rank(&b.resource), &b.resource)))
        .map(|short| {
            format!(
                "Node didn't have enough resource: {}, requested: {}, used: {}, capacity: {}",
                short.resource, short.requested, short.used, short.capacity
            )
        })
}

static EMPTY: Amounts = Amounts::new();

/// A pod of the scheduler's model with one container requesting `request` (cpu in millicores).
fn scheduler_pod(name: &str, request: &Amounts) -> Option<berth_scheduler::model::Pod> {
    let requests: serde_json::Map<String, serde_json::Value> = request
        .iter()
        .filter(|(name, v)| name.as_str() != PODS && **v != 0)
        .map(|(name, v)| {
            let q = if name == CPU {
                format!("{v}m")
            } else {
                v.to_string()
            };
            (name.clone(), serde_json::Value::String(q))
        })
        .collect();
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": "daemonset-fit"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}]},
    }))
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(allocatable: serde_json::Value) -> Node {
        serde_json::from_value(
            json!({"metadata": {"name": "n1"}, "status": {"allocatable": allocatable}}),
        )
        .unwrap()
    }

    fn spec(v: serde_json::Value) -> PodSpec {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn request_sums_containers_and_takes_the_larger_init_container() {
        let s = spec(json!({"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}}},
            {"name": "b", "resources": {"requests": {"cpu": "200m"}}}],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "500m", "memory": "10Mi"}}}]}));
        let r = pod_request(&s);
        assert_eq!(r["cpu"], 500);
        assert_eq!(r["memory"], 1 << 30);
    }

    #[test]
    fn fits_until_a_resource_runs_short() {
        let n = node(json!({"cpu": "4", "memory": "8Gi", "pods": "110"}));
        let used = NodeUse {
            pods: 3,
            requested: [("cpu".to_string(), 3800)].into(),
        };
        let small: Amounts = [("cpu".to_string(), 200)].into();
        assert_eq!(insufficient(&small, &n, &used), None);
        let big: Amounts = [("cpu".to_string(), 500)].into();
        assert_eq!(
            insufficient(&big, &n, &used).as_deref(),
            Some(
                "Node didn't have enough resource: cpu, requested: 500, used: 3800, capacity: 4000"
            )
        );
    }

    #[test]
    fn the_last_short_resource_is_reported_and_pods_count() {
        let n = node(json!({"cpu": "1", "memory": "1Gi", "pods": "2"}));
        let used = NodeUse {
            pods: 2,
            requested: [("cpu".to_string(), 900), ("memory".to_string(), 1 << 30)].into(),
        };
        let r: Amounts = [("cpu".to_string(), 200), ("memory".to_string(), 1)].into();
        assert_eq!(
            insufficient(&r, &n, &used).as_deref(),
            Some("Node didn't have enough resource: memory, requested: 1, used: 1073741824, capacity: 1073741824")
        );
        // A pod with no requests still needs a pod slot.
        assert_eq!(
            insufficient(&Amounts::new(), &n, &used).as_deref(),
            Some("Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2")
        );
    }

    #[test]
    fn an_extended_resource_the_node_lacks_does_not_fit() {
        let n = node(json!({"cpu": "4", "memory": "8Gi", "pods": "110"}));
        let r: Amounts = [("nvidia.com/gpu".to_string(), 1)].into();
        assert_eq!(
            insufficient(&r, &n, &NodeUse::default()).as_deref(),
            Some("Node didn't have enough resource: nvidia.com/gpu, requested: 1, used: 0, capacity: 0")
        );
    }

    #[test]
    fn terminated_and_unbound_pods_take_no_room() {
        let pod = |node: Option<&str>, phase: &str| -> Pod {
            serde_json::from_value(json!({"metadata": {"name": "p"},
                "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
                "status": {"phase": phase}}))
            .unwrap()
        };
        let pods = [
            pod(Some("n1"), "Running"),
            pod(Some("n1"), "Failed"),
            pod(Some("n1"), "Succeeded"),
            pod(None, "Pending"),
        ];
        let used = node_use(pods.iter());
        assert_eq!(used["n1"].pods, 1);
        assert_eq!(used["n1"].requested["cpu"], 1000);
    }
}
