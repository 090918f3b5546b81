//! The kubelet config controller (upstream `pkg/controller/kubelet-config`): a KubeletConfig's
//! `spec.kubeletConfig` (upstream's `KubeletConfiguration` fields) becomes, for each pool its
//! `machineConfigPoolSelector` selects, a MachineConfig `99-<pool>-generated-kubelet` with the
//! file `/etc/kubernetes/kubelet.conf`. The second and later KubeletConfigs of one pool get
//! `-1`, `-2`... (oldest first), so that the newest one wins when the pool's configurations
//! merge, as in the operator.
//!
//! berth's file carries only the KubeletConfig's fields, not the whole kubelet configuration:
//! each node's daemon lays them over its node's own settings (the cluster file's pool).

use super::{labels_of, name_of, API_VERSION, CONTROLLER_VERSION, GENERATED_BY};
use super::{IGNITION_VERSION, KUBELET_CONF_PATH, ROLE_LABEL};
use base64::Engine;
use berth_core::labels::Selector;
use serde_json::{json, Map, Value};

/// The error of a KubeletConfig that selects no pool (the operator's `errCouldNotFindMCPSet`).
pub fn no_pool_message(name: &str) -> String {
    format!("could not find any MachineConfigPool set for KubeletConfig {name}")
}

/// What the controller makes of one KubeletConfig.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Rendered for these pools (by name).
    Success { pools: Vec<String> },
    /// Not applied; the error, in the operator's words (the condition says `Error: ...`).
    Failure(String),
}

/// Fields a KubeletConfig may not set: the node would not come back after a reboot
/// (upstream `validateUserKubeletConfig`).
const NOT_ALLOWED: [&str; 6] = [
    "cgroupDriver",
    "clusterDNS",
    "clusterDomain",
    "featureGates",
    "staticPodPath",
    "failSwapOn",
];

/// The Go types of the kubelet configuration fields berth checks while decoding, for the
/// decoder's own error (`json: cannot unmarshal string into Go struct field ...`).
fn decode_error(field: &str, value: &Value) -> Option<String> {
    let json_kind = |v: &Value| match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let (go_type, fits) = match field {
        "systemReserved"
        | "kubeReserved"
        | "evictionHard"
        | "evictionSoft"
        | "evictionSoftGracePeriod"
        | "evictionMinimumReclaim" => (
            "map[string]string",
            value.is_null()
                || value
                    .as_object()
                    .is_some_and(|m| m.values().all(Value::is_string)),
        ),
        "maxPods" | "podsPerCore" | "evictionMaxPodGracePeriod" => (
            "int32",
            value.is_null() || value.as_i64().is_some_and(|n| i32::try_from(n).is_ok()),
        ),
        "evictionPressureTransitionPeriod" => ("v1.Duration", value.is_null() || value.is_string()),
        "enforceNodeAllocatable" => (
            "[]string",
            value.is_null()
                || value
                    .as_array()
                    .is_some_and(|a| a.iter().all(Value::is_string)),
        ),
        _ => return None,
    };
    if fits {
        return None;
    }
    // A map's wrong value is reported at the value, as Go's decoder does.
    let (kind, at) = match value.as_object() {
        Some(m) => match m.iter().find(|(_, v)| !v.is_string()) {
            Some((k, v)) => (json_kind(v), format!("{field}.{k}")),
            None => (json_kind(value), field.to_string()),
        },
        None => (json_kind(value), field.to_string()),
    };
    let go_type = if value.is_object() && go_type.starts_with("map") {
        "string"
    } else {
        go_type
    };
    Some(format!(
        "KubeletConfig could not be unmarshalled, err: json: cannot unmarshal {kind} into Go struct field KubeletConfiguration.{at} of type {go_type}"
    ))
}

/// Checks a KubeletConfig's spec as the operator does before rendering it.
pub fn validate(kc: &Value) -> Result<(), String> {
    let spec = kc.get("spec").cloned().unwrap_or(Value::Null);
    if let Some(level) = spec.get("logLevel").filter(|v| !v.is_null()) {
        if !level.as_i64().is_some_and(|l| (1..=10).contains(&l)) {
            return Err(format!(
                "KubeletConfig's LogLevel is not valid [1,10]: {level}"
            ));
        }
    }
    let config = match spec.get("kubeletConfig") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Object(m)) => m,
        Some(other) => {
            let kind = if other.is_array() { "array" } else { "string" };
            return Err(format!(
                "KubeletConfig could not be unmarshalled, err: json: cannot unmarshal {kind} into Go value of type v1beta1.KubeletConfiguration"
            ));
        }
    };
    for (field, value) in config {
        if let Some(e) = decode_error(field, value) {
            return Err(e);
        }
    }
    for field in NOT_ALLOWED {
        let Some(v) = config.get(field) else { continue };
        let set = match v {
            Value::Null => false,
            Value::String(s) => !s.is_empty(),
            Value::Array(a) => !a.is_empty(),
            Value::Object(m) => !m.is_empty(),
            Value::Bool(_) | Value::Number(_) => true,
        };
        if set {
            let shown = match v {
                Value::String(s) => s.clone(),
                Value::Array(a) => format!(
                    "[{}]",
                    a.iter()
                        .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string))
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
                Value::Object(m) => format!(
                    "map[{}]",
                    m.iter()
                        .map(|(k, v)| format!("{k}:{v}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
                other => other.to_string(),
            };
            return Err(format!(
                "KubeletConfiguration: {field} is not allowed to be set, but contains: {shown}"
            ));
        }
    }
    if let Some(swap) = config
        .get("memorySwap")
        .and_then(|m| m.get("swapBehavior"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        return Err(format!(
            "KubeletConfiguration: swapBehavior is not allowed to be set, but contains: {swap}"
        ));
    }
    let reserved = config
        .get("systemReserved")
        .and_then(Value::as_object)
        .is_some_and(|m| !m.is_empty());
    if reserved && spec.get("autoSizingReserved") == Some(&Value::Bool(true)) {
        return Err(
            "KubeletConfiguration: autoSizingReserved and systemdReserved cannot be set together"
                .into(),
        );
    }
    Ok(())
}

/// The pools a KubeletConfig selects (by name, in the order given); an empty or missing
/// selector selects none, as in the operator.
pub fn selected_pools<'a>(kc: &Value, pools: &'a [Value]) -> Result<Vec<&'a Value>, String> {
    let raw = kc
        .pointer("/spec/machineConfigPoolSelector")
        .cloned()
        .unwrap_or(Value::Null);
    let selector =
        Selector::from_label_selector(&raw).map_err(|e| format!("invalid label selector: {e}"))?;
    if selector.is_everything() || selector.is_nothing() {
        return Ok(Vec::new());
    }
    Ok(pools
        .iter()
        .filter(|p| selector.matches(&labels_of(p)))
        .collect())
}

/// The outcome of one KubeletConfig among the pools.
pub fn outcome(kc: &Value, pools: &[Value]) -> Outcome {
    if let Err(e) = validate(kc) {
        return Outcome::Failure(e);
    }
    match selected_pools(kc, pools) {
        Err(e) => Outcome::Failure(e),
        Ok(selected) if selected.is_empty() => Outcome::Failure(no_pool_message(name_of(kc))),
        Ok(selected) => Outcome::Success {
            pools: selected.iter().map(|p| name_of(p).to_string()).collect(),
        },
    }
}

/// The kubelet configuration file a KubeletConfig renders: its `spec.kubeletConfig` as a
/// `KubeletConfiguration` (JSON, which is YAML).
pub fn kubelet_conf(kc: &Value) -> Value {
    let mut conf = Map::new();
    conf.insert("kind".into(), json!("KubeletConfiguration"));
    conf.insert("apiVersion".into(), json!("kubelet.config.k8s.io/v1beta1"));
    if let Some(m) = kc.pointer("/spec/kubeletConfig").and_then(Value::as_object) {
        for (k, v) in m {
            if k != "kind" && k != "apiVersion" && !v.is_null() {
                conf.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(conf)
}

/// An Ignition file whose contents are `bytes` (a base64 data URL, as the operator writes).
pub fn ignition_file(path: &str, bytes: &[u8]) -> Value {
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    json!({"path": path, "overwrite": true, "mode": 420,
           "contents": {"source": format!("data:text/plain;charset=utf-8;base64,{data}")}})
}

/// The name of the `index`th (0: oldest) KubeletConfig's MachineConfig for `pool`.
pub fn managed_name(pool: &str, index: usize) -> String {
    match index {
        0 => format!("99-{pool}-generated-kubelet"),
        i => format!("99-{pool}-generated-kubelet-{i}"),
    }
}

/// Whether a MachineConfig is one this controller generates (by name and annotation).
pub fn is_generated(mc: &Value) -> bool {
    name_of(mc).starts_with("99-")
        && name_of(mc).contains("-generated-kubelet")
        && mc
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(GENERATED_BY))
            .is_some()
}

/// The MachineConfig carrying `kc`'s settings for `pool`, named `name`.
pub fn machine_config(kc: &Value, pool: &str, name: &str) -> Value {
    let conf = serde_json::to_vec(&kubelet_conf(kc)).unwrap_or_default();
    json!({
        "apiVersion": API_VERSION, "kind": "MachineConfig",
        "metadata": {
            "name": name,
            "labels": {ROLE_LABEL: pool},
            "annotations": {GENERATED_BY: CONTROLLER_VERSION},
            "ownerReferences": [{
                "apiVersion": API_VERSION, "kind": "KubeletConfig",
                "name": name_of(kc),
                "uid": kc.pointer("/metadata/uid").cloned().unwrap_or(json!("")),
                "controller": true, "blockOwnerDeletion": true,
            }],
        },
        "spec": {"config": {
            "ignition": {"version": IGNITION_VERSION},
            "storage": {"files": [ignition_file(KUBELET_CONF_PATH, &conf)]},
        }},
    })
}

/// Every KubeletConfig's outcome and the MachineConfigs they make, by name.
pub fn reconcile(
    kcs: &[Value],
    pools: &[Value],
) -> (
    Vec<(String, Outcome)>,
    std::collections::BTreeMap<String, Value>,
) {
    let mut ordered: Vec<&Value> = kcs.iter().collect();
    let created = |kc: &Value| {
        kc.pointer("/metadata/creationTimestamp")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    ordered.sort_by_key(|kc| (created(kc), name_of(kc).to_string()));
    let mut outcomes = Vec::new();
    let mut per_pool: std::collections::BTreeMap<String, usize> = Default::default();
    let mut configs = std::collections::BTreeMap::new();
    for kc in ordered {
        // One being deleted renders nothing (its MachineConfigs go).
        if kc.pointer("/metadata/deletionTimestamp").is_some() {
            continue;
        }
        let out = outcome(kc, pools);
        if let Outcome::Success { pools } = &out {
            for pool in pools {
                let index = per_pool.entry(pool.clone()).or_default();
                let name = managed_name(pool, *index);
                *index += 1;
                configs.insert(name.clone(), machine_config(kc, pool, &name));
            }
        }
        outcomes.push((name_of(kc).to_string(), out));
    }
    (outcomes, configs)
}

/// The KubeletConfig's status after `outcome`: the operator keeps the last three conditions,
/// appending one whose message differs from the last, else refreshing the last one's time.
pub fn status(kc: &Value, outcome: &Outcome, now: &str) -> Value {
    let (type_, status, message) = match outcome {
        Outcome::Success { .. } => ("Success", "True", "Success".to_string()),
        Outcome::Failure(e) => ("Failure", "False", format!("Error: {e}")),
    };
    let condition = json!({"type": type_, "status": status, "message": message,
                           "lastTransitionTime": now});
    let mut conditions: Vec<Value> = kc
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    match conditions.last_mut() {
        Some(last)
            if last["message"] == condition["message"] && last["type"] == condition["type"] =>
        {
            last["lastTransitionTime"] = json!(now);
        }
        _ => conditions.push(condition),
    }
    let keep = conditions.len().saturating_sub(3);
    conditions.drain(..keep);
    json!({
        "observedGeneration": kc.pointer("/metadata/generation").cloned().unwrap_or(json!(1)),
        "conditions": conditions,
    })
}

/// Whether the status already says what `outcome` says (no write needed).
pub fn status_current(kc: &Value, outcome: &Outcome) -> bool {
    let (type_, message) = match outcome {
        Outcome::Success { .. } => ("Success", "Success".to_string()),
        Outcome::Failure(e) => ("Failure", format!("Error: {e}")),
    };
    let last = kc
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.last());
    let generation = kc.pointer("/metadata/generation");
    last.is_some_and(|c| c["type"] == type_ && c["message"] == message.as_str())
        && kc.pointer("/status/observedGeneration") == generation.or(Some(&json!(1)))
}
