//! What the simulation watches, turned into [`Record`]s (pure: objects in, records out).
//!
//! The driver feeds it the pods, nodes and events it watches through the API, with the
//! virtual time at which each arrived, and asks for a [`Sample`] at every sampling instant.

use super::report::{Millis, NodeSample, Record, Sample};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// A pod as the report needs it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct PodState {
    node: Option<String>,
    cpu_milli: i64,
    memory: i64,
    terminating: bool,
    finished: bool,
}

/// A node's allocatable.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct NodeState {
    cpu_milli: i64,
    memory: i64,
}

/// The recorder's view of the cluster and what it has recorded so far.
#[derive(Debug, Default)]
pub struct Observer {
    pods: HashMap<String, PodState>,
    nodes: BTreeMap<String, NodeState>,
    /// Each event's count as last seen (by namespace/name), so a repeat counts once.
    event_counts: HashMap<String, i64>,
    /// Generated pod names (`web-7d4b9c-xk2p9`) by the name the report gives them
    /// (`web-7d4b9c-1`, numbered in order of first sight): the API server's random suffixes
    /// differ from run to run, the order in which the simulation creates pods does not.
    aliases: HashMap<String, String>,
    /// How many pods of each `generateName` were seen.
    generated: HashMap<String, u32>,
    pub records: Vec<Record>,
}

/// The event reasons that are evictions.
const EVICTION_REASONS: [&str; 3] = ["Evicted", "TaintManagerEviction", "Descheduled"];

fn key(obj: &Value) -> String {
    let ns = obj
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if ns.is_empty() {
        name.to_string()
    } else {
        format!("{ns}/{name}")
    }
}

fn quantity_milli(v: Option<&Value>) -> i64 {
    v.and_then(|q| berth_core::quantity::from_json(q).ok())
        .map_or(0, |q| q.milli_value())
}

fn quantity(v: Option<&Value>) -> i64 {
    v.and_then(|q| berth_core::quantity::from_json(q).ok())
        .map_or(0, |q| q.value())
}

/// The pod's effective requests (cpu milli, memory bytes), as the scheduler counts them: the
/// larger of the containers' sum and each init container, plus the overhead.
pub fn pod_requests(pod: &Value) -> (i64, i64) {
    let sum = |list: Option<&Value>| -> Vec<(i64, i64)> {
        list.and_then(Value::as_array)
            .map(|cs| {
                cs.iter()
                    .map(|c| {
                        let r = c.pointer("/resources/requests");
                        (
                            quantity_milli(r.and_then(|r| r.get("cpu"))),
                            quantity(r.and_then(|r| r.get("memory"))),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let containers = sum(pod.pointer("/spec/containers"));
    let mut cpu: i64 = containers.iter().map(|c| c.0).sum();
    let mut memory: i64 = containers.iter().map(|c| c.1).sum();
    for (c, m) in sum(pod.pointer("/spec/initContainers")) {
        cpu = cpu.max(c);
        memory = memory.max(m);
    }
    let overhead = pod.pointer("/spec/overhead");
    cpu += quantity_milli(overhead.and_then(|o| o.get("cpu")));
    memory += quantity(overhead.and_then(|o| o.get("memory")));
    (cpu, memory)
}

impl Observer {
    /// A pod added or changed: records its binding the first time it has a node.
    pub fn pod(&mut self, at: Millis, pod: &Value) {
        let key = self.alias_of(pod);
        let node = pod
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .map(str::to_string);
        let phase = pod.pointer("/status/phase").and_then(Value::as_str);
        let (cpu_milli, memory) = pod_requests(pod);
        let state = PodState {
            node: node.clone(),
            cpu_milli,
            memory,
            terminating: pod.pointer("/metadata/deletionTimestamp").is_some(),
            finished: matches!(phase, Some("Succeeded" | "Failed")),
        };
        let before = self.pods.insert(key.clone(), state);
        let was_bound = before.is_some_and(|b| b.node.is_some());
        if let (Some(node), false) = (node, was_bound) {
            self.records.push(Record::Scheduled { at, pod: key, node });
        }
    }

    /// A pod deleted.
    pub fn pod_deleted(&mut self, pod: &Value) {
        let key = self.alias_of(pod);
        self.pods.remove(&key);
    }

    /// The name the report gives this pod (see `aliases`).
    fn alias_of(&mut self, pod: &Value) -> String {
        let real = key(pod);
        if let Some(alias) = self.aliases.get(&real) {
            return alias.clone();
        }
        let prefix = pod
            .pointer("/metadata/generateName")
            .and_then(Value::as_str)
            .filter(|g| !g.is_empty());
        let name = pod
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let Some(prefix) = prefix.filter(|p| name.starts_with(p)) else {
            return real;
        };
        let ns = pod
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("");
        let n = self.generated.entry(format!("{ns}/{prefix}")).or_default();
        *n += 1;
        let alias = format!("{ns}/{prefix}{n}");
        self.aliases.insert(real, alias.clone());
        alias
    }

    /// A node added or changed.
    pub fn node(&mut self, node: &Value) {
        let alloc = node.pointer("/status/allocatable");
        self.nodes.insert(
            key(node),
            NodeState {
                cpu_milli: quantity_milli(alloc.and_then(|a| a.get("cpu"))),
                memory: quantity(alloc.and_then(|a| a.get("memory"))),
            },
        );
    }

    /// A node deleted.
    pub fn node_deleted(&mut self, node: &Value) {
        self.nodes.remove(&key(node));
    }

    /// An event added or changed (its count grown): failures, preemptions, evictions.
    pub fn event(&mut self, at: Millis, event: &Value) {
        let reason = event.get("reason").and_then(Value::as_str).unwrap_or("");
        let interesting = reason == "FailedScheduling"
            || reason == "Preempted"
            || EVICTION_REASONS.contains(&reason);
        if !interesting {
            return;
        }
        let count = event
            .get("count")
            .and_then(Value::as_i64)
            .or_else(|| event.pointer("/series/count").and_then(Value::as_i64))
            .unwrap_or(1)
            .max(1);
        let seen = self.event_counts.insert(key(event), count).unwrap_or(0);
        if count <= seen {
            return;
        }
        let times = u32::try_from(count - seen).unwrap_or(u32::MAX);
        let involved = event
            .get("involvedObject")
            .or_else(|| event.get("regarding"));
        // An object reference: `name` and `namespace` at its top level.
        let real = involved
            .map(|o| key(&serde_json::json!({"metadata": o})))
            .unwrap_or_default();
        let pod = self.aliases.get(&real).cloned().unwrap_or(real.clone());
        let mut message = event
            .get("message")
            .or_else(|| event.get("note"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        // `Marking for deletion Pod default/web-7d4b9c-xk2p9` names the pod as the report does.
        if pod != real && !real.is_empty() {
            message = message.replace(&real, &pod);
        }
        let record = match reason {
            "FailedScheduling" => Record::FailedScheduling {
                at,
                pod,
                message,
                times,
            },
            "Preempted" => Record::Preempted { at, pod, message },
            _ => Record::Evicted {
                at,
                pod,
                reason: reason.to_string(),
                message,
            },
        };
        self.records.push(record);
    }

    /// A descheduler run's previewed eviction (see `deschedule`), named as the report names
    /// the pod.
    pub fn moved(&mut self, at: Millis, m: &berth_descheduler::Move, strategy: String) {
        let pod = self.aliases.get(&m.pod).cloned().unwrap_or(m.pod.clone());
        let (to, message) = match &m.to {
            berth_descheduler::Destination::Node(n) => (Some(n.clone()), None),
            berth_descheduler::Destination::Nowhere(why) => (None, Some(why.clone())),
        };
        self.records.push(Record::Moved {
            at,
            pod,
            from: m.from.clone(),
            to,
            strategy,
            message,
        });
    }

    /// How many decisions of `pod` (the report's name) were explained so far.
    pub fn explained(&self, pod: &str) -> usize {
        self.records
            .iter()
            .filter(|r| matches!(r, Record::Explained { pod: p, .. } if p == pod))
            .count()
    }

    /// A timeline action carried out.
    pub fn action(&mut self, at: Millis, what: String) {
        self.records.push(Record::Action { at, what });
    }

    /// The cluster now: pending pods and each node's requests.
    pub fn sample(&mut self, at: Millis) {
        let mut nodes: BTreeMap<&str, NodeSample> = self
            .nodes
            .iter()
            .map(|(name, n)| {
                (
                    name.as_str(),
                    NodeSample {
                        name: name.clone(),
                        cpu_allocatable_milli: n.cpu_milli,
                        memory_allocatable: n.memory,
                        ..NodeSample::default()
                    },
                )
            })
            .collect();
        let mut pending = 0;
        for pod in self.pods.values() {
            if pod.finished {
                continue;
            }
            match &pod.node {
                None if !pod.terminating => pending += 1,
                None => {}
                Some(node) => {
                    if let Some(n) = nodes.get_mut(node.as_str()) {
                        n.cpu_requested_milli += pod.cpu_milli;
                        n.memory_requested += pod.memory;
                        n.pods += 1;
                    }
                }
            }
        }
        self.records.push(Record::Sample(Sample {
            at,
            pending,
            nodes: nodes.into_values().collect(),
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, node: Option<&str>, cpu: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "default"},
               "spec": {"nodeName": node, "containers": [{"name": "c",
                   "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]},
               "status": {"phase": "Pending"}})
    }

    #[test]
    fn a_binding_is_recorded_once_and_counted_on_its_node() {
        let mut o = Observer::default();
        o.node(&json!({"metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}}}));
        o.pod(0, &pod("a", None, "500m"));
        o.pod(5, &pod("a", Some("n1"), "500m"));
        o.pod(6, &pod("a", Some("n1"), "500m"));
        o.pod(7, &pod("b", None, "1"));
        o.sample(10);
        let scheduled: Vec<_> = o
            .records
            .iter()
            .filter(|r| matches!(r, Record::Scheduled { .. }))
            .collect();
        assert_eq!(scheduled.len(), 1);
        let Some(Record::Sample(s)) = o.records.last() else {
            panic!("no sample")
        };
        assert_eq!(s.pending, 1);
        assert_eq!(s.nodes[0].cpu_requested_milli, 500);
        assert_eq!(s.nodes[0].memory_requested, 1 << 30);
        assert_eq!(s.nodes[0].pods, 1);
    }

    #[test]
    fn an_aggregated_event_counts_each_repeat_once() {
        let mut o = Observer::default();
        let ev = |count| {
            json!({"metadata": {"name": "e1", "namespace": "default"}, "reason": "FailedScheduling",
                "count": count, "message": "0/2 nodes are available: 2 Insufficient cpu.",
                "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}})
        };
        o.event(1, &ev(1));
        o.event(2, &ev(1));
        o.event(3, &ev(3));
        let times: Vec<u32> = o
            .records
            .iter()
            .filter_map(|r| match r {
                Record::FailedScheduling { times, .. } => Some(*times),
                _ => None,
            })
            .collect();
        assert_eq!(times, vec![1, 2]);
    }

    #[test]
    fn generated_names_are_numbered_in_order_of_first_sight() {
        let mut o = Observer::default();
        let generated = |name: &str| {
            json!({"metadata": {"name": name, "generateName": "web-abc-", "namespace": "default"},
                   "spec": {"containers": []}})
        };
        o.pod(0, &generated("web-abc-zzzzz"));
        o.pod(0, &generated("web-abc-bbbbb"));
        o.pod(
            1,
            &json!({"metadata": {"name": "web-abc-zzzzz", "generateName": "web-abc-",
            "namespace": "default"}, "spec": {"nodeName": "n1", "containers": []}}),
        );
        o.event(
            2,
            &json!({"metadata": {"name": "e", "namespace": "default"}, "reason": "Preempted",
            "involvedObject": {"name": "web-abc-bbbbb", "namespace": "default"}, "message": "m"}),
        );
        assert_eq!(
            o.records,
            vec![
                Record::Scheduled {
                    at: 1,
                    pod: "default/web-abc-1".into(),
                    node: "n1".into()
                },
                Record::Preempted {
                    at: 2,
                    pod: "default/web-abc-2".into(),
                    message: "m".into()
                },
            ]
        );
    }

    #[test]
    fn requests_take_the_larger_of_containers_and_init_containers() {
        let p = json!({"spec": {
            "containers": [{"resources": {"requests": {"cpu": "100m"}}},
                           {"resources": {"requests": {"cpu": "200m", "memory": "1Mi"}}}],
            "initContainers": [{"resources": {"requests": {"cpu": "500m"}}}],
            "overhead": {"cpu": "10m"}}});
        assert_eq!(pod_requests(&p), (510, 1 << 20));
    }
}
