//! Fixture builders for the strategies' tables: `pod("p").rs("rs").cpu(400).on("n1")`.

use crate::model::{NodeState, PodState};
use crate::{plan, Options, Plan, Policy};
use serde_json::{json, Value};

/// A pod under construction.
pub(crate) struct P(Value);

pub(crate) fn pod(name: &str) -> P {
    P(
        json!({"metadata": {"name": name, "namespace": "default", "labels": {}, "annotations": {},
        "ownerReferences": []},
        "spec": {"containers": [{"name": "c", "resources": {}}], "volumes": []},
        "status": {"phase": "Running"}}),
    )
}

impl P {
    pub fn namespace(mut self, ns: &str) -> P {
        self.0["metadata"]["namespace"] = json!(ns);
        self
    }
    pub fn on(mut self, node: &str) -> P {
        self.0["spec"]["nodeName"] = json!(node);
        self
    }
    pub fn owner(mut self, kind: &str, name: &str) -> P {
        let refs = self.0["metadata"]["ownerReferences"]
            .as_array_mut()
            .unwrap();
        refs.push(json!({"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": name, "controller": true}));
        self
    }
    pub fn rs(self, name: &str) -> P {
        self.owner("ReplicaSet", name)
    }
    pub fn label(mut self, k: &str, v: &str) -> P {
        self.0["metadata"]["labels"][k] = json!(v);
        self
    }
    pub fn annotate(mut self, k: &str, v: &str) -> P {
        self.0["metadata"]["annotations"][k] = json!(v);
        self
    }
    pub fn critical_annotation(self, v: &str) -> P {
        self.annotate("scheduler.alpha.kubernetes.io/critical-pod", v)
    }
    pub fn mirror(self) -> P {
        self.annotate("kubernetes.io/config.mirror", "x")
    }
    pub fn priority(mut self, p: i32) -> P {
        self.0["spec"]["priority"] = json!(p);
        self
    }
    pub fn cpu(mut self, milli: i64) -> P {
        self.0["spec"]["containers"][0]["resources"]["requests"]["cpu"] =
            json!(format!("{milli}m"));
        self
    }
    pub fn guaranteed(mut self) -> P {
        let r = json!({"cpu": "100m", "memory": "100Mi"});
        self.0["spec"]["containers"][0]["resources"] = json!({"requests": r, "limits": r});
        self
    }
    pub fn empty_dir(mut self) -> P {
        self.0["spec"]["volumes"] = json!([{"name": "v", "emptyDir": {}}]);
        self
    }
    pub fn terminating(mut self) -> P {
        self.0["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        self
    }
    pub fn spec(mut self, field: &str, v: Value) -> P {
        self.0["spec"][field] = v;
        self
    }
    pub fn build(self) -> PodState {
        PodState::from_json(&self.0).unwrap()
    }
}

/// A node under construction.
pub(crate) struct N(Value);

pub(crate) fn node(name: &str) -> N {
    N(json!({"metadata": {"name": name, "labels": {}},
        "spec": {},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}]}}))
}

impl N {
    pub fn alloc(mut self, cpu_milli: i64, memory: i64, pods: i64) -> N {
        self.0["status"]["allocatable"] = json!({"cpu": format!("{cpu_milli}m"), "memory": memory.to_string(), "pods": pods.to_string()});
        self
    }
    pub fn label(mut self, k: &str, v: &str) -> N {
        self.0["metadata"]["labels"][k] = json!(v);
        self
    }
    pub fn unschedulable(mut self) -> N {
        self.0["spec"]["unschedulable"] = json!(true);
        self
    }
    pub fn taint(mut self, key: &str, value: &str, effect: &str) -> N {
        let taints = self.0["spec"]
            .as_object_mut()
            .unwrap()
            .entry("taints")
            .or_insert(json!([]));
        taints
            .as_array_mut()
            .unwrap()
            .push(json!({"key": key, "value": value, "effect": effect}));
        self
    }
    pub fn build(self) -> NodeState {
        NodeState::from_json(&self.0).unwrap()
    }
}

/// A v1alpha1 policy with the given strategies' entries.
pub(crate) fn policy(strategies: Value) -> Policy {
    let doc = json!({"apiVersion": "descheduler/v1alpha1", "kind": "DeschedulerPolicy", "strategies": strategies});
    Policy::parse("test.json", &doc.to_string()).unwrap()
}

/// The evicted pods' names, in order.
pub(crate) fn evicted(nodes: Vec<N>, pods: Vec<P>, policy: &Policy, cap: u32) -> Vec<String> {
    names(&run(nodes, pods, policy, cap))
}

pub(crate) fn run(nodes: Vec<N>, pods: Vec<P>, policy: &Policy, cap: u32) -> Plan {
    let nodes: Vec<_> = nodes.into_iter().map(N::build).collect();
    let pods: Vec<_> = pods.into_iter().map(P::build).collect();
    let options = Options {
        max_pods_to_evict_per_node: Some(cap),
        ..Options::default()
    };
    plan(&nodes, &pods, policy, &options)
}

pub(crate) fn names(p: &Plan) -> Vec<String> {
    p.evictions.iter().map(|e| e.name.clone()).collect()
}
