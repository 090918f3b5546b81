//! The descheduler policy: the seed's `descheduler/v1alpha1` `DeschedulerPolicy` and upstream's
//! `descheduler/v1alpha2` profiles, both compiled to one [`Policy`].
//!
//! Text goes to a document tree ([`document`]), then the version's reader walks it field by field,
//! so every error names the strategy (or plugin) and the field it is about. No I/O here: the
//! caller reads the file and names it.

mod document;
mod plugin_args;
mod v1alpha1;
mod v1alpha2;

pub use plugin_args::{
    HighNodeUtilization, PodLifeTime, PodScope, RemoveFailedPods, TooManyRestarts, TopologySpread,
};

use berth_core::labels::Selector;
use serde_json::Value;

/// A policy that cannot be used: the file, the strategy (or `policy` for the document itself),
/// the field and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}: strategy {strategy}: field {field}: {reason}")]
pub struct PolicyError {
    /// The file as the user named it.
    pub file: String,
    /// The strategy or plugin, or `policy`.
    pub strategy: String,
    /// The field's path inside the strategy (`params.nodeResourceUtilizationThresholds.thresholds.cpu`).
    pub field: String,
    /// What is wrong.
    pub reason: String,
}

/// A [`PolicyError`] before the file is known.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FieldError {
    pub strategy: String,
    pub field: String,
    pub reason: String,
}

impl FieldError {
    pub(crate) fn new(strategy: &str, field: &str, reason: impl Into<String>) -> FieldError {
        FieldError {
            strategy: strategy.into(),
            field: field.into(),
            reason: reason.into(),
        }
    }
}

pub(crate) type FieldResult<T> = Result<T, FieldError>;

/// The percentages of allocatable LowNodeUtilization compares usage with; `None` = not checked.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Thresholds {
    /// cpu, percent.
    pub cpu: Option<f64>,
    /// memory, percent.
    pub memory: Option<f64>,
    /// pods, percent.
    pub pods: Option<f64>,
}

/// LowNodeUtilization's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct LowNodeUtilization {
    /// At or below every one of these a schedulable node is underutilized.
    pub thresholds: Thresholds,
    /// Above any one of these a node is overutilized.
    pub target_thresholds: Thresholds,
    /// The strategy runs only with more underutilized nodes than this (v1alpha1: at least this many).
    pub number_of_nodes: usize,
    /// v1alpha2 gates with `underutilized <= numberOfNodes`, v1alpha1 with `<`.
    pub gate_inclusive: bool,
}

/// Which pods may be evicted at all (§1.4; v1alpha2's DefaultEvictor arguments).
#[derive(Debug, Clone, Default)]
pub struct EvictorArgs {
    /// Pods with `emptyDir`/`hostPath` volumes may be evicted.
    pub evict_local_storage_pods: bool,
    /// DaemonSet pods may be evicted.
    pub evict_daemonset_pods: bool,
    /// Critical pods may be evicted.
    pub evict_system_critical_pods: bool,
    /// Pods with PersistentVolumeClaims are not evicted.
    pub ignore_pvc_pods: bool,
    /// Only pods with a priority below this are evicted.
    pub priority_threshold: Option<i32>,
    /// Only pods matching this are evicted.
    pub label_selector: Option<Selector>,
    /// Failed pods without an owner may be evicted (`evictFailedBarePods`).
    pub evict_failed_bare_pods: bool,
    /// A pod is evicted only when another ready node would take it (`nodeFit`).
    pub node_fit: bool,
    /// Pods whose owner has fewer pods than this are not evicted (`minReplicas`; ≤ 1: no check).
    pub min_replicas: u32,
    /// Pods started less than this many seconds ago, or not started, are not evicted (`minPodAge`).
    pub min_pod_age_seconds: Option<i64>,
}

/// A compiled descheduler policy.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// RemoveDuplicates is on.
    pub remove_duplicates: bool,
    /// LowNodeUtilization, when on.
    pub low_node_utilization: Option<LowNodeUtilization>,
    /// RemovePodsViolatingInterPodAntiAffinity is on.
    pub inter_pod_anti_affinity: bool,
    /// RemovePodsViolatingNodeAffinity is on (for `requiredDuringSchedulingIgnoredDuringExecution`).
    pub node_affinity: bool,
    /// RemovePodsViolatingNodeTaints is on.
    pub node_taints: bool,
    /// HighNodeUtilization (v1alpha2), when on.
    pub high_node_utilization: Option<HighNodeUtilization>,
    /// RemovePodsViolatingTopologySpreadConstraint (v1alpha2), when on.
    pub topology_spread: Option<TopologySpread>,
    /// RemovePodsHavingTooManyRestarts (v1alpha2), when on.
    pub too_many_restarts: Option<TooManyRestarts>,
    /// PodLifeTime (v1alpha2), when on.
    pub pod_life_time: Option<PodLifeTime>,
    /// RemoveFailedPods (v1alpha2), when on.
    pub remove_failed_pods: Option<RemoveFailedPods>,
    /// The evictor's settings from the policy (the command line may add to them).
    pub evictor: EvictorArgs,
    /// v1alpha2 `nodeSelector`.
    pub node_selector: Option<String>,
    /// v1alpha2 `maxNoOfPodsToEvictPerNode`.
    pub max_pods_to_evict_per_node: Option<u32>,
    /// Things the policy says that berth accepts and does not act on, for the user to see.
    pub warnings: Vec<String>,
}

impl Policy {
    /// Parses and compiles policy text; `file` names it in errors.
    ///
    /// ```
    /// let p = berth_descheduler::Policy::parse("policy.yaml", r#"
    /// apiVersion: "descheduler/v1alpha1"
    /// kind: "DeschedulerPolicy"
    /// strategies:
    ///   "RemoveDuplicates":
    ///      enabled: true
    /// "#).unwrap();
    /// assert!(p.remove_duplicates);
    /// ```
    pub fn parse(file: &str, text: &str) -> Result<Policy, PolicyError> {
        let at_file = |e: FieldError| PolicyError {
            file: file.to_string(),
            strategy: e.strategy,
            field: e.field,
            reason: e.reason,
        };
        let first = document::document(text).and_then(|doc| compile(&doc));
        match first {
            Ok(policy) => Ok(policy),
            // `enabled: false 1` is valid YAML (a string) and only the compiler rejects it: the
            // seed's callouts get a second chance, and the first error is the one reported.
            Err(e) => document::without_callouts(text)
                .and_then(|t| document::document(&t).and_then(|doc| compile(&doc)).ok())
                .ok_or_else(|| at_file(e)),
        }
    }
}

fn compile(doc: &Value) -> FieldResult<Policy> {
    let Some(map) = doc.as_object() else {
        return Err(FieldError::new(
            "policy",
            "(document)",
            "a DeschedulerPolicy must be a mapping",
        ));
    };
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or_default();
    if kind != "DeschedulerPolicy" {
        return Err(FieldError::new(
            "policy",
            "kind",
            format!("must be \"DeschedulerPolicy\", not {:?}", kind),
        ));
    }
    match map.get("apiVersion").and_then(Value::as_str) {
        Some("descheduler/v1alpha1") => v1alpha1::compile(map),
        Some("descheduler/v1alpha2") => v1alpha2::compile(map),
        other => Err(FieldError::new(
            "policy",
            "apiVersion",
            format!(
                "must be descheduler/v1alpha1 or descheduler/v1alpha2, not {:?}",
                other.unwrap_or_default()
            ),
        )),
    }
}

/// Reads one threshold map (`{cpu: 20, memory: 20, pods: 20}`); `field` is its path.
pub(crate) fn thresholds(strategy: &str, field: &str, v: &Value) -> FieldResult<Thresholds> {
    let Some(map) = v.as_object() else {
        return Err(FieldError::new(
            strategy,
            field,
            "must be a map of resource to percentage",
        ));
    };
    let mut t = Thresholds::default();
    for (name, value) in map {
        let at = format!("{field}.{name}");
        let Some(pct) = value.as_f64() else {
            return Err(FieldError::new(strategy, &at, "must be a number (percent)"));
        };
        if !pct.is_finite() {
            return Err(FieldError::new(strategy, &at, "must be a finite number"));
        }
        match name.as_str() {
            "cpu" => t.cpu = Some(pct),
            "memory" => t.memory = Some(pct),
            "pods" => t.pods = Some(pct),
            _ => {
                return Err(FieldError::new(
                    strategy,
                    &at,
                    "only cpu, memory, or pods thresholds can be specified",
                ))
            }
        }
    }
    Ok(t)
}

/// `nodeAffinityType`: every entry must be `requiredDuringSchedulingIgnoredDuringExecution`.
pub(crate) fn node_affinity_types(strategy: &str, field: &str, v: &Value) -> FieldResult<()> {
    let Some(list) = v.as_array() else {
        return Err(FieldError::new(strategy, field, "must be a list"));
    };
    for (i, t) in list.iter().enumerate() {
        if t.as_str() != Some(REQUIRED) {
            return Err(FieldError::new(
                strategy,
                &format!("{field}[{i}]"),
                format!("invalid nodeAffinityType {t}: only {REQUIRED:?} is supported"),
            ));
        }
    }
    Ok(())
}

const REQUIRED: &str = "requiredDuringSchedulingIgnoredDuringExecution";

/// A field that must be a boolean.
pub(crate) fn boolean(strategy: &str, field: &str, v: &Value) -> FieldResult<bool> {
    v.as_bool()
        .ok_or_else(|| FieldError::new(strategy, field, "must be true or false"))
}

/// A field that must be a non-negative integer.
pub(crate) fn count(strategy: &str, field: &str, v: &Value) -> FieldResult<u32> {
    v.as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| FieldError::new(strategy, field, "must be a non-negative integer"))
}

/// A mapping, or an error naming it.
pub(crate) fn mapping<'a>(
    strategy: &str,
    field: &str,
    v: &'a Value,
) -> FieldResult<&'a serde_json::Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| FieldError::new(strategy, field, "must be a mapping"))
}

#[cfg(test)]
mod tests;
