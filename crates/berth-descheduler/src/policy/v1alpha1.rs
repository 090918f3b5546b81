//! `descheduler/v1alpha1`: the seed's `strategies` map (control-loops §1.1).
//!
//! Deliberate choices: a strategy name berth does not know is a warning (upstream ignores it
//! silently, which hides typos); LowNodeUtilization's settings that upstream rejects at run time
//! with a log line (no thresholds, a resource other than cpu/memory/pods, targets without `pods`)
//! are errors at load, so a bad policy evicts nothing and says why.

use super::{
    boolean, mapping, node_affinity_types, thresholds, FieldError, FieldResult, LowNodeUtilization,
    Policy,
};
use crate::Strategy;
use serde_json::{Map, Value};

pub(super) fn compile(doc: &Map<String, Value>) -> FieldResult<Policy> {
    let mut policy = Policy::default();
    for key in doc.keys() {
        if !matches!(key.as_str(), "apiVersion" | "kind" | "strategies") {
            return Err(FieldError::new("policy", key, "unknown field"));
        }
    }
    let Some(strategies) = doc.get("strategies") else {
        return Ok(policy);
    };
    if strategies.is_null() {
        return Ok(policy);
    }
    let strategies = mapping("policy", "strategies", strategies)?;
    for (name, entry) in strategies {
        // The seed's file knows the first five; the v1alpha2 plugins are not strategies here.
        let Some(strategy) = Strategy::from_name(name).filter(|s| !s.v1alpha2_only()) else {
            let known: Vec<&str> = Strategy::ALL
                .into_iter()
                .filter(|s| !s.v1alpha2_only())
                .map(Strategy::name)
                .collect();
            policy.warnings.push(format!(
                "strategy {name:?} is not one berth knows; ignored (known: {})",
                known.join(", ")
            ));
            continue;
        };
        let entry = if entry.is_null() {
            &Map::new()
        } else {
            mapping(name, "(entry)", entry)?
        };
        for key in entry.keys() {
            if !matches!(key.as_str(), "enabled" | "weight" | "params") {
                return Err(FieldError::new(name, key, "unknown field"));
            }
        }
        let enabled = match entry.get("enabled") {
            None | Some(Value::Null) => false,
            Some(v) => boolean(name, "enabled", v)?,
        };
        if let Some(w) = entry.get("weight") {
            if !w.is_null() && !w.is_number() {
                return Err(FieldError::new(name, "weight", "must be a number"));
            }
        }
        let params = entry.get("params").filter(|p| !p.is_null());
        let params = match params {
            Some(p) => Some(mapping(name, "params", p)?),
            None => None,
        };
        match strategy {
            Strategy::RemoveDuplicates => policy.remove_duplicates = enabled,
            Strategy::RemovePodsViolatingInterPodAntiAffinity => {
                policy.inter_pod_anti_affinity = enabled
            }
            Strategy::RemovePodsViolatingNodeTaints => policy.node_taints = enabled,
            Strategy::RemovePodsViolatingNodeAffinity => {
                if let Some(types) = params.and_then(|p| p.get("nodeAffinityType")) {
                    node_affinity_types(name, "params.nodeAffinityType", types)?;
                } else if enabled {
                    return Err(FieldError::new(
                        name,
                        "params.nodeAffinityType",
                        "required: list the node affinity types to check \
                         ([requiredDuringSchedulingIgnoredDuringExecution])",
                    ));
                }
                policy.node_affinity = enabled;
            }
            Strategy::LowNodeUtilization => {
                let lnu = low_node_utilization(name, params)?;
                if enabled {
                    policy.low_node_utilization = Some(lnu);
                }
            }
            // Filtered out above: only v1alpha2 profiles enable these.
            Strategy::HighNodeUtilization
            | Strategy::RemovePodsViolatingTopologySpreadConstraint
            | Strategy::RemovePodsHavingTooManyRestarts
            | Strategy::PodLifeTime
            | Strategy::RemoveFailedPods => {}
        }
    }
    Ok(policy)
}

fn low_node_utilization(
    name: &str,
    params: Option<&Map<String, Value>>,
) -> FieldResult<LowNodeUtilization> {
    const AT: &str = "params.nodeResourceUtilizationThresholds";
    let Some(t) = params.and_then(|p| p.get("nodeResourceUtilizationThresholds")) else {
        return Err(FieldError::new(
            name,
            AT,
            "no resource threshold is configured",
        ));
    };
    let t = mapping(name, AT, t)?;
    for key in t.keys() {
        if !matches!(
            key.as_str(),
            "thresholds" | "targetThresholds" | "numberOfNodes"
        ) {
            return Err(FieldError::new(
                name,
                &format!("{AT}.{key}"),
                "unknown field",
            ));
        }
    }
    let low_at = format!("{AT}.thresholds");
    let low = match t.get("thresholds") {
        Some(v) if !v.is_null() => thresholds(name, &low_at, v)?,
        _ => {
            return Err(FieldError::new(
                name,
                &low_at,
                "no resource threshold is configured",
            ))
        }
    };
    if low == Default::default() {
        return Err(FieldError::new(
            name,
            &low_at,
            "no resource threshold is configured",
        ));
    }
    let target_at = format!("{AT}.targetThresholds");
    let target = match t.get("targetThresholds") {
        Some(v) if !v.is_null() => thresholds(name, &target_at, v)?,
        _ => {
            return Err(FieldError::new(
                name,
                &target_at,
                "no target resource threshold is configured",
            ))
        }
    };
    if target.pods.is_none() {
        return Err(FieldError::new(
            name,
            &format!("{target_at}.pods"),
            "no target resource threshold for pods is configured",
        ));
    }
    let number_of_nodes = match t.get("numberOfNodes") {
        None | Some(Value::Null) => 0,
        Some(v) => super::count(name, &format!("{AT}.numberOfNodes"), v)? as usize,
    };
    Ok(LowNodeUtilization {
        thresholds: low,
        target_thresholds: target,
        number_of_nodes,
        gate_inclusive: false,
    })
}
