//! `descheduler/v1alpha2`: profiles with plugins and their arguments (control-loops §1.12).
//!
//! The seed's five strategies run as in v1alpha1 whichever format enables them (except
//! LowNodeUtilization's thresholds, which follow v1alpha2: missing resources are 100%, both
//! maps name the same resources, 0..100, thresholds ≤ targets, and `numberOfNodes` gates with
//! `<=`); five more plugins exist only here (HighNodeUtilization,
//! RemovePodsViolatingTopologySpreadConstraint, RemovePodsHavingTooManyRestarts, PodLifeTime,
//! RemoveFailedPods, their arguments in [`super::plugin_args`]). Profiles are merged: a plugin
//! enabled in any profile runs once, with the arguments of the profile that enabled it first.
//! Arguments berth accepts without acting on them are listed as warnings.

use super::{
    boolean, count, mapping, node_affinity_types, plugin_args, thresholds, EvictorArgs, FieldError,
    FieldResult, LowNodeUtilization, Policy, Thresholds,
};
use crate::Strategy;
use berth_core::labels::Selector;
use serde_json::{Map, Value};

const DEFAULT_EVICTOR: &str = "DefaultEvictor";

pub(super) fn compile(doc: &Map<String, Value>) -> FieldResult<Policy> {
    let mut policy = Policy::default();
    for (key, v) in doc {
        match key.as_str() {
            "apiVersion" | "kind" | "profiles" => {}
            "nodeSelector" => {
                let s = v
                    .as_str()
                    .ok_or_else(|| FieldError::new("policy", key, "must be a string"))?;
                Selector::parse(s).map_err(|e| FieldError::new("policy", key, e.to_string()))?;
                policy.node_selector = (!s.is_empty()).then(|| s.to_string());
            }
            "maxNoOfPodsToEvictPerNode" => {
                policy.max_pods_to_evict_per_node = Some(count("policy", key, v)?)
            }
            "maxNoOfPodsToEvictPerNamespace"
            | "maxNoOfPodsToEvictTotal"
            | "gracePeriodSeconds"
            | "evictionFailureEventNotification"
            | "metricsCollector"
            | "metricsProviders"
            | "prometheus" => policy
                .warnings
                .push(format!("{key} is accepted and not acted on by berth")),
            _ => return Err(FieldError::new("policy", key, "unknown field")),
        }
    }
    let profiles = match doc.get("profiles") {
        None | Some(Value::Null) => return Ok(policy),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(FieldError::new("policy", "profiles", "must be a list")),
    };
    for (i, profile) in profiles.iter().enumerate() {
        self::profile(&mut policy, &format!("profiles[{i}]"), profile)?;
    }
    Ok(policy)
}

fn profile(policy: &mut Policy, at: &str, v: &Value) -> FieldResult<()> {
    let p = mapping("policy", at, v)?;
    for key in p.keys() {
        if !matches!(key.as_str(), "name" | "pluginConfig" | "plugins") {
            return Err(FieldError::new(
                "policy",
                &format!("{at}.{key}"),
                "unknown field",
            ));
        }
    }
    // Which plugins this profile enables, at which extension point.
    let mut enabled: Vec<Strategy> = Vec::new();
    if let Some(plugins) = p.get("plugins").filter(|v| !v.is_null()) {
        let plugins = mapping("policy", &format!("{at}.plugins"), plugins)?;
        for (point, set) in plugins {
            let set_at = format!("{at}.plugins.{point}");
            if !matches!(
                point.as_str(),
                "balance" | "deschedule" | "filter" | "preEvictionFilter" | "sort" | "presort"
            ) {
                return Err(FieldError::new(
                    "policy",
                    &set_at,
                    "unknown extension point",
                ));
            }
            let set = mapping("policy", &set_at, set)?;
            for (list_name, names) in set {
                let list_at = format!("{set_at}.{list_name}");
                if !matches!(list_name.as_str(), "enabled" | "disabled") {
                    return Err(FieldError::new("policy", &list_at, "unknown field"));
                }
                let names = match names {
                    Value::Null => continue,
                    Value::Array(n) => n,
                    _ => return Err(FieldError::new("policy", &list_at, "must be a list")),
                };
                for (j, n) in names.iter().enumerate() {
                    let name = n.as_str().unwrap_or_default();
                    let item_at = format!("{list_at}[{j}]");
                    if list_name == "disabled" {
                        continue;
                    }
                    if name == DEFAULT_EVICTOR
                        && matches!(point.as_str(), "filter" | "preEvictionFilter")
                    {
                        continue;
                    }
                    let Some(s) = Strategy::from_name(name) else {
                        return Err(FieldError::new(
                            "policy",
                            &item_at,
                            format!("unknown plugin {n} at extension point {point}"),
                        ));
                    };
                    let wants = if s.balances() {
                        "balance"
                    } else {
                        "deschedule"
                    };
                    if point != wants {
                        return Err(FieldError::new(
                            name,
                            &item_at,
                            format!("{name} is a {wants} plugin, not a {point} plugin"),
                        ));
                    }
                    enabled.push(s);
                }
            }
        }
    }
    let mut args: Vec<(&str, &Value)> = Vec::new();
    if let Some(configs) = p.get("pluginConfig").filter(|v| !v.is_null()) {
        let Some(configs) = configs.as_array() else {
            return Err(FieldError::new(
                "policy",
                &format!("{at}.pluginConfig"),
                "must be a list",
            ));
        };
        for (j, c) in configs.iter().enumerate() {
            let c_at = format!("{at}.pluginConfig[{j}]");
            let c = mapping("policy", &c_at, c)?;
            let name = c.get("name").and_then(Value::as_str).ok_or_else(|| {
                FieldError::new(
                    "policy",
                    &format!("{c_at}.name"),
                    "required: the plugin's name",
                )
            })?;
            if name != DEFAULT_EVICTOR && Strategy::from_name(name).is_none() {
                return Err(FieldError::new(
                    "policy",
                    &format!("{c_at}.name"),
                    format!("unknown plugin {name:?}"),
                ));
            }
            args.push((name, c.get("args").unwrap_or(&Value::Null)));
        }
    }
    for (name, a) in &args {
        if *name == DEFAULT_EVICTOR {
            default_evictor(policy, a)?;
        }
    }
    for s in enabled {
        let a = args
            .iter()
            .find(|(n, _)| *n == s.name())
            .map_or(&Value::Null, |(_, a)| *a);
        let a = if a.is_null() {
            &Map::new()
        } else {
            mapping(s.name(), "args", a)?
        };
        plugin(policy, s, a)?;
    }
    Ok(())
}

fn plugin(policy: &mut Policy, s: Strategy, args: &Map<String, Value>) -> FieldResult<()> {
    let name = s.name();
    // The v1alpha2-only plugins act on every argument they accept.
    match s {
        Strategy::HighNodeUtilization => {
            let a = plugin_args::high_node_utilization(args)?;
            policy.high_node_utilization.get_or_insert(a);
            return Ok(());
        }
        Strategy::RemovePodsViolatingTopologySpreadConstraint => {
            let a = plugin_args::topology_spread(args)?;
            policy.topology_spread.get_or_insert(a);
            return Ok(());
        }
        Strategy::RemovePodsHavingTooManyRestarts => {
            let a = plugin_args::too_many_restarts(args)?;
            policy.too_many_restarts.get_or_insert(a);
            return Ok(());
        }
        Strategy::PodLifeTime => {
            let a = plugin_args::pod_life_time(args)?;
            policy.pod_life_time.get_or_insert(a);
            return Ok(());
        }
        Strategy::RemoveFailedPods => {
            let a = plugin_args::remove_failed_pods(args)?;
            policy.remove_failed_pods.get_or_insert(a);
            return Ok(());
        }
        _ => {}
    }
    let known: &[&str] = match s {
        Strategy::RemoveDuplicates => &["excludeOwnerKinds", "namespaces"],
        Strategy::LowNodeUtilization => &[
            "thresholds",
            "targetThresholds",
            "numberOfNodes",
            "useDeviationThresholds",
            "evictableNamespaces",
            "evictionLimits",
            "metricsUtilization",
        ],
        Strategy::RemovePodsViolatingInterPodAntiAffinity => &["namespaces", "labelSelector"],
        Strategy::RemovePodsViolatingNodeAffinity => {
            &["nodeAffinityType", "namespaces", "labelSelector"]
        }
        Strategy::RemovePodsViolatingNodeTaints => &[
            "namespaces",
            "labelSelector",
            "includePreferNoSchedule",
            "excludedTaints",
            "includedTaints",
        ],
        _ => &[],
    };
    for (key, v) in args {
        if !known.contains(&key.as_str()) {
            return Err(FieldError::new(
                name,
                &format!("args.{key}"),
                "unknown field",
            ));
        }
        let acted_on = matches!(
            (s, key.as_str()),
            (
                Strategy::LowNodeUtilization,
                "thresholds" | "targetThresholds" | "numberOfNodes"
            ) | (
                Strategy::RemovePodsViolatingNodeAffinity,
                "nodeAffinityType"
            )
        );
        let harmless = v.is_null() || v == &Value::Bool(false);
        if !acted_on && !harmless {
            policy.warnings.push(format!(
                "{name}: args.{key} is accepted and not acted on by berth"
            ));
        }
    }
    match s {
        Strategy::RemoveDuplicates => policy.remove_duplicates = true,
        Strategy::RemovePodsViolatingInterPodAntiAffinity => policy.inter_pod_anti_affinity = true,
        Strategy::RemovePodsViolatingNodeTaints => policy.node_taints = true,
        Strategy::RemovePodsViolatingNodeAffinity => {
            let Some(types) = args.get("nodeAffinityType") else {
                return Err(FieldError::new(
                    name,
                    "args.nodeAffinityType",
                    "required: list the node affinity types to check \
                     ([requiredDuringSchedulingIgnoredDuringExecution])",
                ));
            };
            node_affinity_types(name, "args.nodeAffinityType", types)?;
            policy.node_affinity = true;
        }
        Strategy::LowNodeUtilization => {
            policy.low_node_utilization = Some(low_node_utilization(name, args)?)
        }
        _ => {}
    }
    Ok(())
}

fn low_node_utilization(name: &str, args: &Map<String, Value>) -> FieldResult<LowNodeUtilization> {
    let read = |field: &str| match args.get(field) {
        None | Some(Value::Null) => Ok(Thresholds::default()),
        Some(v) => thresholds(name, &format!("args.{field}"), v),
    };
    let low = read("thresholds")?;
    let target = read("targetThresholds")?;
    let pairs = [
        ("cpu", low.cpu, target.cpu),
        ("memory", low.memory, target.memory),
        ("pods", low.pods, target.pods),
    ];
    for (r, l, t) in pairs {
        for (field, v) in [("thresholds", l), ("targetThresholds", t)] {
            if let Some(v) = v {
                if !(0.0..=100.0).contains(&v) {
                    return Err(FieldError::new(
                        name,
                        &format!("args.{field}.{r}"),
                        format!("{v} is not a percentage between 0 and 100"),
                    ));
                }
            }
        }
        match (l, t) {
            (Some(l), Some(t)) if l > t => {
                return Err(FieldError::new(
                    name,
                    &format!("args.thresholds.{r}"),
                    format!("{l} is above targetThresholds.{r} ({t})"),
                ))
            }
            (Some(_), None) | (None, Some(_)) => {
                return Err(FieldError::new(
                    name,
                    &format!("args.thresholds.{r}"),
                    "thresholds and targetThresholds must name the same resources",
                ))
            }
            _ => {}
        }
    }
    if low == Thresholds::default() {
        return Err(FieldError::new(
            name,
            "args.thresholds",
            "no resource threshold is configured",
        ));
    }
    let full = |t: Thresholds| Thresholds {
        cpu: Some(t.cpu.unwrap_or(100.0)),
        memory: Some(t.memory.unwrap_or(100.0)),
        pods: Some(t.pods.unwrap_or(100.0)),
    };
    let number_of_nodes = match args.get("numberOfNodes") {
        None | Some(Value::Null) => 0,
        Some(v) => count(name, "args.numberOfNodes", v)? as usize,
    };
    Ok(LowNodeUtilization {
        thresholds: full(low),
        target_thresholds: full(target),
        number_of_nodes,
        gate_inclusive: true,
    })
}

fn default_evictor(policy: &mut Policy, args: &Value) -> FieldResult<()> {
    const N: &str = DEFAULT_EVICTOR;
    if args.is_null() {
        return Ok(());
    }
    let args = mapping(N, "args", args)?;
    let e: &mut EvictorArgs = &mut policy.evictor;
    for (key, v) in args {
        let at = format!("args.{key}");
        match key.as_str() {
            "evictLocalStoragePods" => e.evict_local_storage_pods = boolean(N, &at, v)?,
            "evictDaemonSetPods" => e.evict_daemonset_pods = boolean(N, &at, v)?,
            "evictSystemCriticalPods" => e.evict_system_critical_pods = boolean(N, &at, v)?,
            "ignorePvcPods" => e.ignore_pvc_pods = boolean(N, &at, v)?,
            "priorityThreshold" => {
                let t = mapping(N, &at, v)?;
                if let Some(value) = t.get("value").filter(|v| !v.is_null()) {
                    let n = value
                        .as_i64()
                        .and_then(|n| i32::try_from(n).ok())
                        .ok_or_else(|| {
                            FieldError::new(N, &format!("{at}.value"), "must be an integer")
                        })?;
                    e.priority_threshold = Some(n);
                }
                let named = t
                    .get("name")
                    .is_some_and(|n| n.as_str().is_some_and(|n| !n.is_empty()));
                if named && e.priority_threshold.is_some() {
                    return Err(FieldError::new(
                        N,
                        &at,
                        "priority threshold misconfigured, only one of priorityThreshold fields can be set",
                    ));
                }
                if named {
                    policy.warnings.push(format!(
                        "{N}: {at}.name (a PriorityClass) is not looked up by berth; use value"
                    ));
                }
            }
            "labelSelector" => {
                if !v.is_null() {
                    let s = Selector::from_label_selector(v)
                        .map_err(|err| FieldError::new(N, &at, err.to_string()))?;
                    e.label_selector = Some(s);
                }
            }
            "nodeFit" => e.node_fit = boolean(N, &at, v)?,
            "evictFailedBarePods" => e.evict_failed_bare_pods = boolean(N, &at, v)?,
            "minReplicas" => {
                if !v.is_null() {
                    e.min_replicas = count(N, &at, v)?;
                }
            }
            "minPodAge" => {
                if !v.is_null() {
                    let text = v.as_str().ok_or_else(|| {
                        FieldError::new(N, &at, "must be a duration such as \"5m\"")
                    })?;
                    let d =
                        berth_core::duration::parse_with(text, berth_core::duration::Syntax::GO)
                            .map_err(|err| FieldError::new(N, &at, format!("{text:?}: {err}")))?;
                    e.min_pod_age_seconds = Some(i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
                }
            }
            "namespaceLabelSelector" | "podProtections" | "ignorePodsWithoutPDB" => {
                if !v.is_null() && v != &Value::Bool(false) {
                    policy
                        .warnings
                        .push(format!("{N}: {at} is accepted and not acted on by berth"));
                }
            }
            _ => return Err(FieldError::new(N, &at, "unknown field")),
        }
    }
    Ok(())
}
