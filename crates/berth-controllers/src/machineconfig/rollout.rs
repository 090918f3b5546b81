//! The node controller (upstream `pkg/controller/node`): which nodes a pool owns, which of
//! them to point at the pool's configuration next, and the pool's status.
//!
//! A node belongs to the pools whose `nodeSelector` matches it; a custom pool wins over
//! `worker` (a node labelled both worker and infra is the infra pool's); a node still in two
//! pools is in none. A node without `currentConfig` joined the cluster on the pool's
//! configuration (the machine config server's first boot): it gets `currentConfig` and
//! `desiredConfig` at once, `state: Done`. Otherwise nodes whose `desiredConfig` is not the
//! pool's target are its candidates, in name order, as many as `maxUnavailable` (1 by
//! default; a number or a percentage of the pool's machines, at least 1) leaves room for
//! beside the nodes unavailable now (not Ready, or updating). A degraded node goes to a new
//! target at once, so that a fixed configuration reaches it.

use super::{name_of, CURRENT_CONFIG, DESIRED_CONFIG, REASON, STATE};
use super::{STATE_DEGRADED, STATE_DONE};
use berth_core::labels::Selector;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// What the node controller knows of a node.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NodeView {
    pub name: String,
    pub labels: Map<String, Value>,
    pub annotations: BTreeMap<String, String>,
    /// Its `Ready` condition is `True`.
    pub ready: bool,
}

impl NodeView {
    fn annotation(&self, key: &str) -> &str {
        self.annotations.get(key).map_or("", String::as_str)
    }

    /// Updated to `target`: current and desired are it, and the daemon is done.
    fn updated(&self, target: &str) -> bool {
        self.annotation(CURRENT_CONFIG) == target
            && self.annotation(DESIRED_CONFIG) == target
            && self.annotation(STATE) == STATE_DONE
    }

    fn degraded(&self) -> bool {
        matches!(self.annotation(STATE), STATE_DEGRADED | "Unreconcilable")
    }

    /// Not Ready, or in the middle of an update.
    fn unavailable(&self) -> bool {
        !self.ready
            || self.annotation(CURRENT_CONFIG) != self.annotation(DESIRED_CONFIG)
            || self.annotation(STATE) != STATE_DONE
    }
}

/// The pool `pool` owns which of `nodes`, given every pool (by name).
pub fn nodes_of<'a>(pool: &Value, pools: &[Value], nodes: &'a [NodeView]) -> Vec<&'a NodeView> {
    let selector = |p: &Value| {
        Selector::from_label_selector(p.pointer("/spec/nodeSelector").unwrap_or(&Value::Null))
            .ok()
            .filter(|s| !s.is_everything())
    };
    nodes
        .iter()
        .filter(|n| {
            let mut owners: Vec<&str> = pools
                .iter()
                .filter(|p| selector(p).is_some_and(|s| s.matches(&n.labels)))
                .map(name_of)
                .collect();
            if owners.len() > 1 {
                owners.retain(|o| *o != "worker");
            }
            owners == [name_of(pool)]
        })
        .collect()
}

/// The annotations the controller writes on a node: (node, annotations).
pub type NodePatch = (String, BTreeMap<String, String>);

/// The pool's `maxUnavailable` over `machines` machines.
pub fn max_unavailable(pool: &Value, machines: usize) -> usize {
    let v = pool.pointer("/spec/maxUnavailable");
    let n = match v {
        Some(Value::Number(n)) => n.as_u64().map_or(1, |n| n as usize),
        Some(Value::String(s)) => match s.strip_suffix('%').and_then(|p| p.parse::<usize>().ok()) {
            Some(percent) => machines * percent / 100,
            None => s.parse().unwrap_or(1),
        },
        _ => 1,
    };
    n.max(1)
}

/// The writes that move `pool`'s nodes towards its target configuration.
pub fn plan(pool: &Value, nodes: &[&NodeView]) -> Vec<NodePatch> {
    let Some(target) = pool
        .pointer("/spec/configuration/name")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
    else {
        return Vec::new();
    };
    let mut patches = Vec::new();
    let mut joined = Vec::new();
    for n in nodes {
        if n.annotation(CURRENT_CONFIG).is_empty() {
            let current = pool
                .pointer("/status/configuration/name")
                .and_then(Value::as_str)
                .filter(|c| !c.is_empty())
                .unwrap_or(target);
            let set = BTreeMap::from([
                (CURRENT_CONFIG.to_string(), current.to_string()),
                (DESIRED_CONFIG.to_string(), current.to_string()),
                (STATE.to_string(), STATE_DONE.to_string()),
            ]);
            patches.push((n.name.clone(), set));
            joined.push(n.name.as_str());
        }
    }
    if pool.pointer("/spec/paused") == Some(&Value::Bool(true)) {
        return patches;
    }
    let unavailable = nodes
        .iter()
        .filter(|n| !joined.contains(&n.name.as_str()) && n.unavailable())
        .count();
    let room = max_unavailable(pool, nodes.len()).saturating_sub(unavailable);
    let mut candidates: Vec<&&NodeView> = nodes
        .iter()
        .filter(|n| !joined.contains(&n.name.as_str()))
        .filter(|n| n.annotation(DESIRED_CONFIG) != target)
        .collect();
    candidates.sort_by(|a, b| a.name.cmp(&b.name));
    // A degraded node (unavailable already) may go to the new target at once: that is how
    // a fixed configuration reaches it.
    let (degraded, healthy): (Vec<&&NodeView>, Vec<&&NodeView>) =
        candidates.into_iter().partition(|n| n.degraded());
    for n in degraded.into_iter().chain(healthy.into_iter().take(room)) {
        let set = BTreeMap::from([(DESIRED_CONFIG.to_string(), target.to_string())]);
        patches.push((n.name.clone(), set));
    }
    patches
}

/// Sets `type_` in `conditions`, keeping its transition time when its status is unchanged.
fn set_condition(
    conditions: &mut Vec<Value>,
    old: &[Value],
    type_: &str,
    status: bool,
    message: String,
    now: &str,
) {
    let status = if status { "True" } else { "False" };
    let since = old
        .iter()
        .find(|c| c["type"] == type_ && c["status"] == status)
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or(json!(now));
    conditions.push(
        json!({"type": type_, "status": status, "reason": "", "message": message,
                           "lastTransitionTime": since}),
    );
}

/// The pool's status over its nodes (upstream `calculateStatus`).
pub fn status(pool: &Value, nodes: &[&NodeView], now: &str) -> Value {
    let target = pool
        .pointer("/spec/configuration/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let machines = nodes.len();
    let updated = nodes.iter().filter(|n| n.updated(target)).count();
    let ready = nodes
        .iter()
        .filter(|n| n.updated(target) && n.ready)
        .count();
    let unavailable = nodes.iter().filter(|n| n.unavailable()).count();
    let degraded: Vec<&&NodeView> = nodes.iter().filter(|n| n.degraded()).collect();
    let all_updated = updated == machines && !target.is_empty();
    let mut configuration = pool
        .pointer("/status/configuration")
        .cloned()
        .unwrap_or(json!({}));
    if all_updated {
        configuration = pool
            .pointer("/spec/configuration")
            .cloned()
            .unwrap_or(json!({}));
    }
    let old: Vec<Value> = pool
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let paused = pool.pointer("/spec/paused") == Some(&Value::Bool(true));
    let mut conditions = Vec::new();
    set_condition(
        &mut conditions,
        &old,
        "RenderDegraded",
        target.is_empty(),
        String::new(),
        now,
    );
    let node_degraded = !degraded.is_empty();
    let degraded_message = degraded
        .iter()
        .map(|n| format!("Node {} is reporting: {:?}", n.name, n.annotation(REASON)))
        .collect::<Vec<_>>()
        .join(", ");
    set_condition(
        &mut conditions,
        &old,
        "NodeDegraded",
        node_degraded,
        if node_degraded {
            format!(
                "{} nodes are reporting degraded status on sync",
                degraded.len()
            )
        } else {
            String::new()
        },
        now,
    );
    set_condition(
        &mut conditions,
        &old,
        "Degraded",
        node_degraded,
        degraded_message,
        now,
    );
    set_condition(
        &mut conditions,
        &old,
        "Updated",
        all_updated && !node_degraded,
        if all_updated {
            format!("All nodes are updated with MachineConfig {target}")
        } else {
            String::new()
        },
        now,
    );
    let updating = !all_updated && !target.is_empty();
    set_condition(
        &mut conditions,
        &old,
        "Updating",
        updating && !paused,
        match (updating, paused) {
            (true, false) => format!("All nodes are updating to MachineConfig {target}"),
            (true, true) => format!("Pool is paused; will not update to MachineConfig {target}"),
            _ => String::new(),
        },
        now,
    );
    json!({
        "observedGeneration": pool.pointer("/metadata/generation").cloned().unwrap_or(json!(1)),
        "configuration": configuration,
        "machineCount": machines,
        "updatedMachineCount": updated,
        "readyMachineCount": ready,
        "unavailableMachineCount": unavailable,
        "degradedMachineCount": degraded.len(),
        "conditions": conditions,
    })
}

/// Whether `pool`'s status already says everything `want` says (other fields, written by
/// someone else, are left alone by the merge patch and not compared).
pub fn status_current(pool: &Value, want: &Value) -> bool {
    let Some(want) = want.as_object() else {
        return true;
    };
    want.iter()
        .all(|(k, v)| pool.pointer(&format!("/status/{k}")) == Some(v))
}
