//! Carrying out the timeline's actions through the API, as a user with kubectl would.
//!
//! A failed action (a manifest the API refuses, a node that does not exist) does not stop the
//! simulation: it is recorded with the API's message, as `kubectl` would print it.

use super::timeline::{Action, ObjectRef, TaintChange};
use berth_kubelet::simulate::{Simulate, SIMULATE_ANNOTATION};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::{ApiResource, Discovery, Scope};
use serde_json::{json, Value};

/// Carries out timeline actions with an admin client and the API's discovery.
pub struct Actor {
    client: kube::Client,
    discovery: Discovery,
}

impl Actor {
    pub async fn new(client: kube::Client) -> anyhow::Result<Actor> {
        let discovery = Discovery::new(client.clone())
            .run()
            .await
            .map_err(|e| anyhow::anyhow!("discovering the API's resources: {e}"))?;
        Ok(Actor { client, discovery })
    }

    /// Carries out one action; returns what was done (or failed), one line per object.
    pub async fn run(&self, action: &Action) -> Vec<String> {
        let mut done = Vec::new();
        match action {
            Action::Create(manifests) => {
                for m in manifests {
                    done.push(self.create(m).await);
                }
            }
            Action::Scale(items) => {
                for (obj, replicas) in items {
                    let field = if obj.kind == "Job" {
                        "parallelism"
                    } else {
                        "replicas"
                    };
                    let patch = json!({"spec": {field: replicas}});
                    let what = format!("scale {} to {replicas}", describe(obj));
                    done.push(outcome(what, self.patch_object(obj, &patch).await));
                }
            }
            Action::Delete(items) => {
                for obj in items {
                    let what = format!("delete {}", describe(obj));
                    done.push(outcome(what, self.delete(obj).await));
                }
            }
            Action::Fail(nodes) => {
                for (node, mode) in nodes {
                    let what = format!("fail node {node} ({})", mode.as_str());
                    done.push(outcome(what, self.simulate(node, *mode).await));
                }
            }
            Action::Recover(nodes) => {
                for node in nodes {
                    let what = format!("recover node {node}");
                    done.push(outcome(what, self.simulate(node, Simulate::Running).await));
                }
            }
            Action::Cordon(nodes) | Action::Uncordon(nodes) => {
                let cordon = matches!(action, Action::Cordon(_));
                for node in nodes {
                    let verb = if cordon { "cordon" } else { "uncordon" };
                    let patch = json!({"spec": {"unschedulable": cordon}});
                    let what = format!("{verb} node {node}");
                    done.push(outcome(what, self.patch_node(node, &patch).await));
                }
            }
            Action::Label(changes) => {
                for (node, labels) in changes {
                    let map: serde_json::Map<String, Value> = labels
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone().map_or(Value::Null, Value::String)))
                        .collect();
                    let shown: Vec<String> = labels
                        .iter()
                        .map(|(k, v)| match v {
                            Some(v) => format!("{k}={v}"),
                            None => format!("{k}-"),
                        })
                        .collect();
                    let patch = json!({"metadata": {"labels": map}});
                    let what = format!("label node {node} {}", shown.join(" "));
                    done.push(outcome(what, self.patch_node(node, &patch).await));
                }
            }
            Action::Taint(changes) | Action::Untaint(changes) => {
                let adding = matches!(action, Action::Taint(_));
                for change in changes {
                    let what = format!(
                        "{} node {} {}",
                        if adding { "taint" } else { "untaint" },
                        change.node,
                        taint_text(change)
                    );
                    done.push(outcome(what, self.taint(change, adding).await));
                }
            }
        }
        done
    }

    fn resource(&self, api_version: Option<&str>, kind: &str) -> Option<(ApiResource, bool)> {
        for group in self.discovery.groups() {
            for (ar, caps) in group.recommended_resources() {
                let version_matches = api_version.is_none_or(|v| ar.api_version == v);
                if ar.kind == kind && version_matches {
                    return Some((ar, caps.scope == Scope::Namespaced));
                }
            }
        }
        // The non-preferred versions, when one was named.
        let v = api_version?;
        for group in self.discovery.groups() {
            for version in group.versions() {
                for (ar, caps) in group.versioned_resources(version) {
                    if ar.kind == kind && ar.api_version == v {
                        return Some((ar, caps.scope == Scope::Namespaced));
                    }
                }
            }
        }
        None
    }

    fn api(&self, ar: &ApiResource, namespaced: bool, ns: &str) -> Api<DynamicObject> {
        if namespaced {
            Api::namespaced_with(self.client.clone(), ns, ar)
        } else {
            Api::all_with(self.client.clone(), ar)
        }
    }

    async fn create(&self, manifest: &Value) -> String {
        let (shown, result) = self.create_object(manifest).await;
        outcome(format!("create {shown}"), result.map_err(|r| r.message))
    }

    /// Creates one object; returns how it is named (`Pod ns/name`) and what the API answered.
    async fn create_object(&self, manifest: &Value) -> (String, Result<(), Refusal>) {
        let kind = manifest.get("kind").and_then(Value::as_str).unwrap_or("");
        let version = manifest.get("apiVersion").and_then(Value::as_str);
        let name = manifest
            .pointer("/metadata/name")
            .or_else(|| manifest.pointer("/metadata/generateName"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let ns = manifest
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("default");
        let Some((ar, namespaced)) = self.resource(version, kind) else {
            let message = format!(
                "the server doesn't have a resource type {kind:?} in {}",
                version.unwrap_or("")
            );
            return (format!("{kind} {name}"), Err(Refusal::local(message)));
        };
        let shown = if namespaced {
            format!("{kind} {ns}/{name}")
        } else {
            format!("{kind} {name}")
        };
        let obj: DynamicObject = match serde_json::from_value(manifest.clone()) {
            Ok(o) => o,
            Err(e) => return (shown, Err(Refusal::local(e.to_string()))),
        };
        let result = self
            .api(&ar, namespaced, ns)
            .create(&PostParams::default(), &obj)
            .await
            .map(|_| ())
            .map_err(Refusal::from);
        (shown, result)
    }

    /// Creates a live cluster's objects at time 0 and cordons the nodes cordoned there. One
    /// line says how many were created; each refusal gets its own line with the API's words.
    /// An object that exists already (a namespace's `default` ServiceAccount, made by its
    /// controller) counts as created.
    pub async fn import(&self, live: &super::live::Snapshot) -> Vec<String> {
        let mut lines = Vec::new();
        let mut created = 0;
        for manifest in &live.objects {
            match self.create_object(manifest).await {
                (_, Ok(())) => created += 1,
                (_, Err(r)) if r.reason == "AlreadyExists" => created += 1,
                (shown, Err(r)) => lines.push(format!("import {shown} failed: {}", r.message)),
            }
        }
        lines.insert(
            0,
            format!(
                "import from {}: {} nodes, {created} of {} objects created",
                live.source,
                live.nodes.len(),
                live.objects.len()
            ),
        );
        if !live.cordoned.is_empty() {
            lines.extend(self.run(&Action::Cordon(live.cordoned.clone())).await);
        }
        lines
    }

    async fn patch_object(&self, obj: &ObjectRef, patch: &Value) -> Result<(), String> {
        let (ar, namespaced) = self
            .resource(obj.api_version.as_deref(), &obj.kind)
            .ok_or_else(|| format!("the server doesn't have a resource type {:?}", obj.kind))?;
        self.api(&ar, namespaced, &obj.namespace)
            .patch(&obj.name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .map(|_| ())
            .map_err(api_message)
    }

    async fn delete(&self, obj: &ObjectRef) -> Result<(), String> {
        let (ar, namespaced) = self
            .resource(obj.api_version.as_deref(), &obj.kind)
            .ok_or_else(|| format!("the server doesn't have a resource type {:?}", obj.kind))?;
        self.api(&ar, namespaced, &obj.namespace)
            .delete(&obj.name, &DeleteParams::background())
            .await
            .map(|_| ())
            .map_err(api_message)
    }

    async fn patch_node(&self, node: &str, patch: &Value) -> Result<(), String> {
        Api::<Node>::all(self.client.clone())
            .patch(node, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .map(|_| ())
            .map_err(api_message)
    }

    async fn simulate(&self, node: &str, mode: Simulate) -> Result<(), String> {
        let patch = json!({"metadata": {"annotations": {SIMULATE_ANNOTATION: mode.as_str()}}});
        self.patch_node(node, &patch).await
    }

    /// Adds or removes one taint: read, change, write back on the read's resourceVersion,
    /// again on a conflict (the node lifecycle controller writes taints too).
    async fn taint(&self, change: &TaintChange, adding: bool) -> Result<(), String> {
        let api = Api::<Node>::all(self.client.clone());
        for _ in 0..5 {
            let node = api.get(&change.node).await.map_err(api_message)?;
            let mut value = serde_json::to_value(&node).map_err(|e| e.to_string())?;
            let mut taints: Vec<Value> = value
                .pointer("/spec/taints")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let same = |t: &Value| {
                t.get("key").and_then(Value::as_str) == Some(change.key.as_str())
                    && t.get("effect").and_then(Value::as_str) == Some(change.effect.as_str())
            };
            taints.retain(|t| !same(t));
            if adding {
                let mut t = json!({"key": change.key, "effect": change.effect});
                if let Some(v) = &change.value {
                    t["value"] = json!(v);
                }
                taints.push(t);
            }
            value["spec"]["taints"] = Value::Array(taints);
            let node: Node = serde_json::from_value(value).map_err(|e| e.to_string())?;
            match api
                .replace(&change.node, &PostParams::default(), &node)
                .await
            {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(e)) if e.code == 409 => continue,
                Err(e) => return Err(api_message(e)),
            }
        }
        Err("conflicts on every attempt".into())
    }
}

fn describe(obj: &ObjectRef) -> String {
    format!("{} {}/{}", obj.kind, obj.namespace, obj.name)
}

fn taint_text(t: &TaintChange) -> String {
    match &t.value {
        Some(v) => format!("{}={}:{}", t.key, v, t.effect),
        None => format!("{}:{}", t.key, t.effect),
    }
}

fn api_message(e: kube::Error) -> String {
    match e {
        kube::Error::Api(status) => status.message,
        other => other.to_string(),
    }
}

/// Why the API (or the client, before asking it) did not create an object.
struct Refusal {
    /// The Status reason (`AlreadyExists`), empty when the API was not asked.
    reason: String,
    message: String,
}

impl Refusal {
    fn local(message: String) -> Refusal {
        Refusal {
            reason: String::new(),
            message,
        }
    }
}

impl From<kube::Error> for Refusal {
    fn from(e: kube::Error) -> Refusal {
        let reason = match &e {
            kube::Error::Api(status) => status.reason.clone(),
            _ => String::new(),
        };
        Refusal {
            reason,
            message: api_message(e),
        }
    }
}

fn outcome(what: String, result: Result<(), String>) -> String {
    match result {
        Ok(()) => what,
        Err(e) => format!("{what} failed: {e}"),
    }
}
