//! The cluster as the strategies read it: nodes and pods compiled once from their API JSON.
//!
//! Each object keeps the scheduler's model of it (what [`berth_scheduler::fits`] takes) next to
//! what the strategies compute from it once per pass: requests, QoS class, local storage, the
//! required anti-affinity terms with their selectors parsed.

use berth_core::labels::Selector;
use berth_core::qos;
use berth_core::quantity::Quantity as CoreQuantity;
use berth_scheduler::model::{Node, Pod, Quantity};
use serde_json::Value;
use std::collections::BTreeMap;

/// An object that cannot be read as a node or a pod.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{kind} {name:?}: {reason}")]
pub struct ModelError {
    /// `node` or `pod`.
    pub kind: &'static str,
    /// The object's name (`namespace/name` for pods), or empty when unreadable.
    pub name: String,
    /// What is wrong.
    pub reason: String,
}

/// A pod's QoS class, in the order the descheduler evicts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Qos {
    /// No requests or limits.
    BestEffort,
    /// Some requests or limits.
    Burstable,
    /// Requests equal limits for cpu and memory in every container.
    Guaranteed,
}

/// What a pod requests of the resources LowNodeUtilization weighs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Request {
    /// Millicores.
    pub cpu_milli: i64,
    /// Bytes.
    pub memory_bytes: i64,
}

/// A required pod anti-affinity term with its selector parsed.
#[derive(Debug, Clone)]
pub struct AntiAffinityTerm {
    /// Namespaces the term looks at (the pod's own when the term names none).
    pub namespaces: Vec<String>,
    /// The selector; `None` when the term's selector is absent or invalid (matches nothing).
    pub selector: Option<Selector>,
}

/// One pod, compiled.
#[derive(Debug, Clone)]
pub struct PodState {
    /// The scheduler's model of the pod.
    pub pod: Pod,
    /// Namespace (`default` when empty).
    pub namespace: String,
    /// Name.
    pub name: String,
    /// The node it is bound to (empty while unbound).
    pub node: String,
    /// QoS class.
    pub qos: Qos,
    /// cpu and memory requests: the larger of the containers' sum and the largest init container.
    pub request: Request,
    /// Uses a `hostPath` or `emptyDir` volume.
    pub local_storage: bool,
    /// Uses a PersistentVolumeClaim.
    pub uses_pvc: bool,
    /// Its required anti-affinity terms.
    pub anti_affinity: Vec<AntiAffinityTerm>,
    /// What its status says about its containers, for the plugins that read it.
    pub containers: ContainerFacts,
    /// `metadata.creationTimestamp`, seconds since the epoch.
    pub created: Option<i64>,
    /// `status.startTime`, seconds since the epoch.
    pub started: Option<i64>,
    /// Its `topologySpreadConstraints`.
    pub spread: Vec<SpreadConstraint>,
}

/// One of a pod's `topologySpreadConstraints`, its selector parsed.
#[derive(Debug, Clone)]
pub struct SpreadConstraint {
    /// `maxSkew`.
    pub max_skew: i64,
    /// `topologyKey`.
    pub topology_key: String,
    /// `whenUnsatisfiable` (`DoNotSchedule` or `ScheduleAnyway`).
    pub when_unsatisfiable: String,
    /// The selector; `None` when absent or invalid (matches nothing, as upstream skips it).
    pub selector: Option<Selector>,
    /// The constraint as written: identical constraints of a namespace are balanced once.
    pub raw: Value,
}

fn spread_constraints(spec: &Value) -> Vec<SpreadConstraint> {
    let Some(list) = spec
        .get("topologySpreadConstraints")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|c| {
            Some(SpreadConstraint {
                max_skew: c.get("maxSkew")?.as_i64()?,
                topology_key: c.get("topologyKey")?.as_str()?.to_string(),
                when_unsatisfiable: c.get("whenUnsatisfiable")?.as_str()?.to_string(),
                selector: c
                    .get("labelSelector")
                    .filter(|s| !s.is_null())
                    .and_then(|s| Selector::from_label_selector(s).ok()),
                raw: c.clone(),
            })
        })
        .collect()
}

/// The container statuses as RemovePodsHavingTooManyRestarts, PodLifeTime and RemoveFailedPods
/// read them: restart counts and the `waiting`/`terminated` reasons, apart for init containers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContainerFacts {
    /// Σ restartCount over `containerStatuses`.
    pub restarts: i64,
    /// Σ restartCount over `initContainerStatuses`.
    pub init_restarts: i64,
    /// `state.waiting.reason` of each container that has one.
    pub waiting: Vec<String>,
    /// `state.waiting.reason` of each init container that has one.
    pub init_waiting: Vec<String>,
    /// `state.terminated.reason` of each container that has one.
    pub terminated: Vec<String>,
    /// `state.terminated.reason` of each init container that has one.
    pub init_terminated: Vec<String>,
    /// `status.reason` (`Evicted`, `NodeLost`, ...).
    pub pod_reason: String,
}

impl ContainerFacts {
    fn read(status: Option<&Value>) -> ContainerFacts {
        let list = |field: &str| {
            status
                .and_then(|s| s.get(field))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let restarts = |l: &[Value]| {
            l.iter()
                .filter_map(|c| c.get("restartCount").and_then(Value::as_i64))
                .fold(0i64, i64::saturating_add)
        };
        let reasons = |l: &[Value], state: &str| {
            l.iter()
                .filter_map(|c| c.pointer(&format!("/state/{state}/reason")))
                .filter_map(Value::as_str)
                .filter(|r| !r.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        let (main, init) = (list("containerStatuses"), list("initContainerStatuses"));
        ContainerFacts {
            restarts: restarts(&main),
            init_restarts: restarts(&init),
            waiting: reasons(&main, "waiting"),
            init_waiting: reasons(&init, "waiting"),
            terminated: reasons(&main, "terminated"),
            init_terminated: reasons(&init, "terminated"),
            pod_reason: status
                .and_then(|s| s.get("reason"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        }
    }
}

/// An RFC 3339 timestamp as seconds since the epoch.
fn epoch_seconds(text: Option<&str>) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(text?)
        .ok()
        .map(|t| t.timestamp())
}

/// One node, compiled.
#[derive(Debug, Clone)]
pub struct NodeState {
    /// The scheduler's model of the node.
    pub node: Node,
    /// Name.
    pub name: String,
    /// Allocatable (capacity when allocatable is empty) cpu in millicores.
    pub cpu_milli: i64,
    /// Allocatable memory in bytes.
    pub memory_bytes: i64,
    /// Allocatable pods.
    pub pods: i64,
    /// False when a `Ready` condition says anything but `True`.
    pub ready: bool,
}

impl PodState {
    /// Reads a pod from its API JSON.
    pub fn from_json(value: &Value) -> Result<PodState, ModelError> {
        let pod: Pod = serde_json::from_value(value.clone()).map_err(|e| ModelError {
            kind: "pod",
            name: name_of(value),
            reason: e.to_string(),
        })?;
        let spec = value.get("spec").cloned().unwrap_or(Value::Null);
        let qos = match qos::qos_class(&spec) {
            qos::GUARANTEED => Qos::Guaranteed,
            qos::BURSTABLE => Qos::Burstable,
            _ => Qos::BestEffort,
        };
        let volumes = spec.get("volumes").and_then(Value::as_array);
        let has = |source: &str| {
            volumes
                .into_iter()
                .flatten()
                .any(|v| v.get(source).is_some_and(|s| !s.is_null()))
        };
        let local_storage = has("hostPath") || has("emptyDir");
        let uses_pvc = has("persistentVolumeClaim");
        let namespace = pod.metadata.namespace_or_default().to_string();
        let anti_affinity = anti_affinity_terms(&pod, &namespace);
        let created = epoch_seconds(pod.metadata.creation_timestamp.as_deref());
        let started = epoch_seconds(pod.status.start_time.as_deref());
        Ok(PodState {
            spread: spread_constraints(&spec),
            containers: ContainerFacts::read(value.get("status")),
            created,
            started,
            namespace,
            name: pod.metadata.name.clone(),
            node: pod.spec.node_name.clone(),
            qos,
            request: request_of(&pod),
            local_storage,
            uses_pvc,
            anti_affinity,
            pod,
        })
    }

    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// Labels.
    pub fn labels(&self) -> &BTreeMap<String, String> {
        &self.pod.metadata.labels
    }

    /// The pod's annotation `key`, if present.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.pod.metadata.annotations.get(key).map(String::as_str)
    }

    /// True once the pod has finished (it no longer counts on its node).
    pub fn is_terminal(&self) -> bool {
        matches!(self.pod.status.phase.as_str(), "Succeeded" | "Failed")
    }

    /// `status.phase`.
    pub fn phase(&self) -> &str {
        &self.pod.status.phase
    }
}

impl NodeState {
    /// Reads a node from its API JSON.
    pub fn from_json(value: &Value) -> Result<NodeState, ModelError> {
        let node: Node = serde_json::from_value(value.clone()).map_err(|e| ModelError {
            kind: "node",
            name: name_of(value),
            reason: e.to_string(),
        })?;
        let source = if node.status.allocatable.is_empty() {
            &node.status.capacity
        } else {
            &node.status.allocatable
        };
        let amount = |r: &str, milli: bool| {
            source
                .get(r)
                .and_then(parse)
                .map_or(0, |q| if milli { q.milli_value() } else { q.value() })
        };
        let ready = !node
            .status
            .conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status != "True");
        Ok(NodeState {
            name: node.metadata.name.clone(),
            cpu_milli: amount("cpu", true),
            memory_bytes: amount("memory", false),
            pods: amount("pods", false),
            ready,
            node,
        })
    }

    /// Labels.
    pub fn labels(&self) -> &BTreeMap<String, String> {
        &self.node.metadata.labels
    }
}

fn name_of(value: &Value) -> String {
    let meta = value.get("metadata");
    let field = |f: &str| {
        meta.and_then(|m| m.get(f))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    match field("namespace") {
        ns if ns.is_empty() => field("name"),
        ns => format!("{ns}/{}", field("name")),
    }
}

fn parse(q: &Quantity) -> Option<CoreQuantity> {
    CoreQuantity::parse(&q.text()).ok()
}

/// Upstream's pod request for one resource: max(Σ containers, max over init containers).
fn request_of(pod: &Pod) -> Request {
    let get = |c: &berth_scheduler::model::Container, r: &str, milli: bool| {
        c.resources.requests.get(r).and_then(parse).map_or(0, |q| {
            if milli {
                q.milli_value()
            } else {
                q.value()
            }
        })
    };
    let one = |r: &str, milli: bool| {
        let sum: i64 = pod
            .spec
            .containers
            .iter()
            .map(|c| get(c, r, milli))
            .fold(0i64, i64::saturating_add);
        let init = pod
            .spec
            .init_containers
            .iter()
            .map(|c| get(c, r, milli))
            .max()
            .unwrap_or(0);
        sum.max(init)
    };
    Request {
        cpu_milli: one("cpu", true),
        memory_bytes: one("memory", false),
    }
}

fn anti_affinity_terms(pod: &Pod, namespace: &str) -> Vec<AntiAffinityTerm> {
    let terms = pod
        .spec
        .affinity
        .as_ref()
        .and_then(|a| a.pod_anti_affinity.as_ref())
        .map(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_slice()
        })
        .unwrap_or_default();
    terms
        .iter()
        .map(|t| AntiAffinityTerm {
            namespaces: if t.namespaces.is_empty() {
                vec![namespace.to_string()]
            } else {
                t.namespaces.clone()
            },
            selector: t.label_selector.as_ref().and_then(|s| {
                serde_json::to_value(s)
                    .ok()
                    .and_then(|v| Selector::from_label_selector(&v).ok())
            }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pod_request_is_the_larger_of_its_containers_sum_and_its_largest_init_container() {
        let p = PodState::from_json(&json!({"metadata": {"name": "p"}, "spec": {
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2", "memory": "1Mi"}}}],
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                {"name": "b", "resources": {"requests": {"cpu": "500m"}}}],
            "volumes": [{"name": "v", "emptyDir": {}}]}}))
        .unwrap();
        assert_eq!(p.request.cpu_milli, 2000);
        assert_eq!(p.request.memory_bytes, 1 << 30);
        assert_eq!(p.qos, Qos::Burstable);
        assert!(p.local_storage);
        assert_eq!(p.namespace, "default");
    }

    #[test]
    fn a_node_reads_allocatable_else_capacity_and_readiness() {
        let n = NodeState::from_json(&json!({"metadata": {"name": "n"}, "status": {
            "capacity": {"cpu": "4", "memory": "1Gi", "pods": "10"},
            "conditions": [{"type": "Ready", "status": "False"}]}}))
        .unwrap();
        assert_eq!((n.cpu_milli, n.memory_bytes, n.pods), (4000, 1 << 30, 10));
        assert!(!n.ready);
        let bad = NodeState::from_json(&json!({"metadata": {"name": "n"}, "spec": "x"}));
        assert!(bad.is_err());
    }
}
