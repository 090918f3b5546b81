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
    pub fn phase(mut self, phase: &str) -> P {
        self.0["status"]["phase"] = json!(phase);
        self
    }
    /// Created `secs` before the epoch second `now`.
    pub fn created_secs_before(mut self, now: i64, secs: i64) -> P {
        let t = chrono::DateTime::from_timestamp(now - secs, 0).unwrap();
        self.0["metadata"]["creationTimestamp"] = json!(t.to_rfc3339());
        self.0["status"]["startTime"] = json!(t.to_rfc3339());
        self
    }
    fn status_list(&mut self, list: &str) -> &mut Vec<Value> {
        let status = self.0["status"].as_object_mut().unwrap();
        status
            .entry(list)
            .or_insert(json!([]))
            .as_array_mut()
            .unwrap()
    }
    pub fn waiting(mut self, reason: &str) -> P {
        self.status_list("containerStatuses").push(
            json!({"name": "c", "restartCount": 0, "state": {"waiting": {"reason": reason}}}),
        );
        self
    }
    pub fn terminated(mut self, reason: &str) -> P {
        self.status_list("containerStatuses").push(
            json!({"name": "c", "restartCount": 0, "state": {"terminated": {"reason": reason}}}),
        );
        self
    }
    pub fn init_terminated(mut self, reason: &str) -> P {
        self.status_list("initContainerStatuses").push(
            json!({"name": "i", "restartCount": 0, "state": {"terminated": {"reason": reason}}}),
        );
        self
    }
    pub fn pod_reason(mut self, reason: &str) -> P {
        self.0["status"]["reason"] = json!(reason);
        self
    }
    pub fn restarts(mut self, containers: i64, init: i64) -> P {
        self.status_list("containerStatuses")
            .push(json!({"name": "c", "restartCount": containers, "state": {"running": {}}}));
        self.status_list("initContainerStatuses")
            .push(json!({"name": "i", "restartCount": init, "state": {"terminated": {}}}));
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

/// A v1alpha2 policy with one profile enabling `plugin` at `point` with `args`.
pub(crate) fn v2_plugin(plugin: &str, point: &str, args: Value) -> Policy {
    v2_plugin_with_evictor(plugin, point, args, json!({}))
}

/// As [`v2_plugin`], with DefaultEvictor arguments.
pub(crate) fn v2_plugin_with_evictor(
    plugin: &str,
    point: &str,
    args: Value,
    evictor: Value,
) -> Policy {
    Policy::parse(
        "test.json",
        &v2_doc(plugin, point, args, evictor).to_string(),
    )
    .unwrap()
}

/// The error of a v1alpha2 policy enabling `plugin` with `args`.
pub(crate) fn v2_error(plugin: &str, point: &str, args: Value) -> crate::PolicyError {
    Policy::parse(
        "test.json",
        &v2_doc(plugin, point, args, json!({})).to_string(),
    )
    .unwrap_err()
}

fn v2_doc(plugin: &str, point: &str, args: Value, evictor: Value) -> Value {
    json!({"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy", "profiles": [{
        "name": "p",
        "pluginConfig": [{"name": "DefaultEvictor", "args": evictor}, {"name": plugin, "args": args}],
        "plugins": {point: {"enabled": [plugin]}}}]})
}

/// A pass at `now` (epoch seconds), no cap.
pub(crate) fn run_with_now(nodes: Vec<N>, pods: Vec<P>, policy: &Policy, now: i64) -> Plan {
    run_with_now_cap(nodes, pods, policy, now, 0)
}

/// A pass at `now` with a per-node cap.
pub(crate) fn run_with_now_cap(
    nodes: Vec<N>,
    pods: Vec<P>,
    policy: &Policy,
    now: i64,
    cap: u32,
) -> Plan {
    let nodes: Vec<_> = nodes.into_iter().map(N::build).collect();
    let pods: Vec<_> = pods.into_iter().map(P::build).collect();
    let options = Options {
        max_pods_to_evict_per_node: Some(cap),
        now: Some(now),
        ..Options::default()
    };
    plan(&nodes, &pods, policy, &options)
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
