//! The arguments of the v1alpha2-only plugins (upstream `pkg/framework/plugins/<name>/types.go`),
//! read and validated with upstream's defaults and words (`validation.go`).

use super::{boolean, count, mapping, thresholds, FieldError, FieldResult, Thresholds};
use crate::model::PodState;
use berth_core::labels::Selector;
use serde_json::{Map, Value};

/// Which pods a plugin looks at: its `namespaces` (`include` or `exclude`) and `labelSelector`.
#[derive(Debug, Clone, Default)]
pub struct PodScope {
    /// Only pods in these namespaces (when not empty).
    pub include: Vec<String>,
    /// No pods in these namespaces.
    pub exclude: Vec<String>,
    /// Only pods whose labels match.
    pub labels: Option<Selector>,
}

impl PodScope {
    /// Whether the plugin looks at `pod`.
    pub fn admits(&self, pod: &PodState) -> bool {
        if !self.include.is_empty() && !self.include.contains(&pod.namespace) {
            return false;
        }
        if self.exclude.contains(&pod.namespace) {
            return false;
        }
        self.labels.as_ref().is_none_or(|s| {
            let labels = pod.labels();
            s.matches_fn(|k| labels.get(k).map(String::as_str))
        })
    }
}

/// PodLifeTime's arguments.
#[derive(Debug, Clone, Default)]
pub struct PodLifeTime {
    /// Pods older than this many seconds are evicted (`maxPodLifeTimeSeconds`, required).
    pub max_seconds: i64,
    /// Only pods in one of these phases or container waiting reasons (empty: any).
    pub states: Vec<String>,
    /// `namespaces`, `labelSelector`.
    pub scope: PodScope,
}

/// RemoveFailedPods' arguments.
#[derive(Debug, Clone, Default)]
pub struct RemoveFailedPods {
    /// Failed pods owned by one of these kinds stay.
    pub exclude_owner_kinds: Vec<String>,
    /// Only pods older than this many seconds.
    pub min_lifetime_seconds: Option<i64>,
    /// Only pods failed for one of these reasons (empty: any).
    pub reasons: Vec<String>,
    /// Init containers' reasons count too.
    pub including_init_containers: bool,
    /// `namespaces`, `labelSelector`.
    pub scope: PodScope,
}

/// RemovePodsHavingTooManyRestarts' arguments.
#[derive(Debug, Clone, Default)]
pub struct TooManyRestarts {
    /// Pods with at least this many container restarts are evicted (`podRestartThreshold`, ≥ 1).
    pub threshold: i64,
    /// Init containers' restarts and waiting reasons count too.
    pub including_init_containers: bool,
    /// Only pods in one of these phases or container waiting reasons (empty: any).
    pub states: Vec<String>,
    /// `namespaces`, `labelSelector`.
    pub scope: PodScope,
}

/// HighNodeUtilization's arguments.
#[derive(Debug, Clone, Default)]
pub struct HighNodeUtilization {
    /// At or below every one of these a node is underutilized (missing resources: 100%).
    pub thresholds: Thresholds,
    /// The plugin runs only with more underutilized nodes than this.
    pub number_of_nodes: usize,
    /// Pods in these namespaces are not evicted (`evictableNamespaces.exclude`).
    pub exclude_namespaces: Vec<String>,
}

/// RemovePodsViolatingTopologySpreadConstraint's arguments.
#[derive(Debug, Clone)]
pub struct TopologySpread {
    /// The `whenUnsatisfiable` values whose constraints are balanced (default `DoNotSchedule`;
    /// the older `includeSoftConstraints: true` adds `ScheduleAnyway`).
    pub constraints: Vec<String>,
    /// A pod moves only when a node of a smaller domain would take it (default true).
    pub node_fit: bool,
    /// `namespaces`, `labelSelector`.
    pub scope: PodScope,
}

impl Default for TopologySpread {
    fn default() -> Self {
        TopologySpread {
            constraints: vec![DO_NOT_SCHEDULE.to_string()],
            node_fit: true,
            scope: PodScope::default(),
        }
    }
}

const DO_NOT_SCHEDULE: &str = "DoNotSchedule";
const SCHEDULE_ANYWAY: &str = "ScheduleAnyway";

/// A list of strings.
fn strings(plugin: &str, field: &str, v: &Value) -> FieldResult<Vec<String>> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, s)| {
                s.as_str().map(str::to_string).ok_or_else(|| {
                    FieldError::new(plugin, &format!("{field}[{i}]"), "must be a string")
                })
            })
            .collect(),
        _ => Err(FieldError::new(plugin, field, "must be a list of strings")),
    }
}

/// `namespaces` and `labelSelector`, with upstream's checks.
fn scope(plugin: &str, args: &Map<String, Value>) -> FieldResult<PodScope> {
    let mut s = PodScope::default();
    if let Some(ns) = args.get("namespaces").filter(|v| !v.is_null()) {
        let ns = mapping(plugin, "args.namespaces", ns)?;
        for (key, v) in ns {
            let at = format!("args.namespaces.{key}");
            match key.as_str() {
                "include" => s.include = strings(plugin, &at, v)?,
                "exclude" => s.exclude = strings(plugin, &at, v)?,
                _ => return Err(FieldError::new(plugin, &at, "unknown field")),
            }
        }
        if !s.include.is_empty() && !s.exclude.is_empty() {
            return Err(FieldError::new(
                plugin,
                "args.namespaces",
                "only one of Include/Exclude namespaces can be set",
            ));
        }
    }
    if let Some(sel) = args.get("labelSelector").filter(|v| !v.is_null()) {
        let parsed = Selector::from_label_selector(sel).map_err(|e| {
            FieldError::new(
                plugin,
                "args.labelSelector",
                format!("failed to get label selectors from strategy's params: {e}"),
            )
        })?;
        s.labels = Some(parsed);
    }
    Ok(s)
}

/// Refuses keys not in `known`.
fn known_fields(plugin: &str, args: &Map<String, Value>, known: &[&str]) -> FieldResult<()> {
    match args.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(FieldError::new(
            plugin,
            &format!("args.{k}"),
            "unknown field",
        )),
        None => Ok(()),
    }
}

/// `states` must name only `allowed` (upstream lists them in its message).
fn states(plugin: &str, args: &Map<String, Value>, allowed: &[&str]) -> FieldResult<Vec<String>> {
    let list = strings(
        plugin,
        "args.states",
        args.get("states").unwrap_or(&Value::Null),
    )?;
    if list.iter().any(|s| !allowed.contains(&s.as_str())) {
        return Err(FieldError::new(
            plugin,
            "args.states",
            format!("states must be one of [{}]", allowed.join(" ")),
        ));
    }
    Ok(list)
}

fn flag(plugin: &str, args: &Map<String, Value>, field: &str) -> FieldResult<bool> {
    match args.get(field) {
        None | Some(Value::Null) => Ok(false),
        Some(v) => boolean(plugin, &format!("args.{field}"), v),
    }
}

fn seconds(plugin: &str, args: &Map<String, Value>, field: &str) -> FieldResult<Option<i64>> {
    match args.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| i64::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| {
                FieldError::new(
                    plugin,
                    &format!("args.{field}"),
                    "must be a non-negative integer (seconds)",
                )
            }),
    }
}

/// PodLifeTime (upstream `ValidatePodLifeTimeArgs`).
pub(crate) fn pod_life_time(args: &Map<String, Value>) -> FieldResult<PodLifeTime> {
    const N: &str = "PodLifeTime";
    known_fields(
        N,
        args,
        &[
            "maxPodLifeTimeSeconds",
            "states",
            "namespaces",
            "labelSelector",
            "includingInitContainers",
            "includingEphemeralContainers",
        ],
    )?;
    let Some(max_seconds) = seconds(N, args, "maxPodLifeTimeSeconds")? else {
        return Err(FieldError::new(
            N,
            "args.maxPodLifeTimeSeconds",
            "MaxPodLifeTimeSeconds not set",
        ));
    };
    let scope = scope(N, args)?;
    let states = states(
        N,
        args,
        &["ContainerCreating", "Pending", "PodInitializing", "Running"],
    )?;
    Ok(PodLifeTime {
        max_seconds,
        states,
        scope,
    })
}

/// RemoveFailedPods (upstream `ValidateRemoveFailedPodsArgs`).
pub(crate) fn remove_failed_pods(args: &Map<String, Value>) -> FieldResult<RemoveFailedPods> {
    const N: &str = "RemoveFailedPods";
    known_fields(
        N,
        args,
        &[
            "namespaces",
            "labelSelector",
            "excludeOwnerKinds",
            "minPodLifetimeSeconds",
            "reasons",
            "includingInitContainers",
        ],
    )?;
    Ok(RemoveFailedPods {
        scope: scope(N, args)?,
        exclude_owner_kinds: strings(
            N,
            "args.excludeOwnerKinds",
            args.get("excludeOwnerKinds").unwrap_or(&Value::Null),
        )?,
        min_lifetime_seconds: seconds(N, args, "minPodLifetimeSeconds")?,
        reasons: strings(
            N,
            "args.reasons",
            args.get("reasons").unwrap_or(&Value::Null),
        )?,
        including_init_containers: flag(N, args, "includingInitContainers")?,
    })
}

/// RemovePodsHavingTooManyRestarts (upstream `ValidateRemovePodsHavingTooManyRestartsArgs`).
pub(crate) fn too_many_restarts(args: &Map<String, Value>) -> FieldResult<TooManyRestarts> {
    const N: &str = "RemovePodsHavingTooManyRestarts";
    known_fields(
        N,
        args,
        &[
            "namespaces",
            "labelSelector",
            "podRestartThreshold",
            "includingInitContainers",
            "states",
        ],
    )?;
    let scope = scope(N, args)?;
    let threshold = match args.get("podRestartThreshold") {
        None | Some(Value::Null) => 0,
        Some(v) => v
            .as_i64()
            .ok_or_else(|| FieldError::new(N, "args.podRestartThreshold", "must be an integer"))?,
    };
    if threshold < 1 {
        return Err(FieldError::new(
            N,
            "args.podRestartThreshold",
            "invalid PodsHavingTooManyRestarts threshold",
        ));
    }
    Ok(TooManyRestarts {
        threshold,
        including_init_containers: flag(N, args, "includingInitContainers")?,
        states: states(N, args, &["CrashLoopBackOff", "Running"])?,
        scope,
    })
}

/// HighNodeUtilization (upstream `ValidateHighNodeUtilizationArgs`, `setDefaultForThresholds`).
pub(crate) fn high_node_utilization(args: &Map<String, Value>) -> FieldResult<HighNodeUtilization> {
    const N: &str = "HighNodeUtilization";
    known_fields(
        N,
        args,
        &["thresholds", "numberOfNodes", "evictableNamespaces"],
    )?;
    let mut exclude_namespaces = Vec::new();
    if let Some(ns) = args.get("evictableNamespaces").filter(|v| !v.is_null()) {
        let ns = mapping(N, "args.evictableNamespaces", ns)?;
        for (key, v) in ns {
            let at = format!("args.evictableNamespaces.{key}");
            match key.as_str() {
                "exclude" => exclude_namespaces = strings(N, &at, v)?,
                "include" if !strings(N, &at, v)?.is_empty() => {
                    return Err(FieldError::new(
                        N,
                        &at,
                        "only Exclude namespaces can be set, inclusion is not supported",
                    ))
                }
                "include" => {}
                _ => return Err(FieldError::new(N, &at, "unknown field")),
            }
        }
    }
    let t = match args.get("thresholds") {
        None | Some(Value::Null) => Thresholds::default(),
        Some(v) => thresholds(N, "args.thresholds", v)?,
    };
    if t == Thresholds::default() {
        return Err(FieldError::new(
            N,
            "args.thresholds",
            "no resource threshold is configured",
        ));
    }
    for (r, v) in [("cpu", t.cpu), ("memory", t.memory), ("pods", t.pods)] {
        if v.is_some_and(|v| !(0.0..=100.0).contains(&v)) {
            return Err(FieldError::new(
                N,
                &format!("args.thresholds.{r}"),
                format!("{r} threshold not in [0, 100] range"),
            ));
        }
    }
    let number_of_nodes = match args.get("numberOfNodes") {
        None | Some(Value::Null) => 0,
        Some(v) => count(N, "args.numberOfNodes", v)? as usize,
    };
    Ok(HighNodeUtilization {
        thresholds: Thresholds {
            cpu: Some(t.cpu.unwrap_or(100.0)),
            memory: Some(t.memory.unwrap_or(100.0)),
            pods: Some(t.pods.unwrap_or(100.0)),
        },
        number_of_nodes,
        exclude_namespaces,
    })
}

/// RemovePodsViolatingTopologySpreadConstraint (upstream `ValidateRemovePodsViolatingTopologySpreadConstraintArgs`).
pub(crate) fn topology_spread(args: &Map<String, Value>) -> FieldResult<TopologySpread> {
    const N: &str = "RemovePodsViolatingTopologySpreadConstraint";
    known_fields(
        N,
        args,
        &[
            "namespaces",
            "labelSelector",
            "constraints",
            "topologyBalanceNodeFit",
            "includeSoftConstraints",
        ],
    )?;
    let mut t = TopologySpread {
        scope: scope(N, args)?,
        ..TopologySpread::default()
    };
    if let Some(v) = args.get("constraints").filter(|v| !v.is_null()) {
        let list = strings(N, "args.constraints", v)?;
        for (i, c) in list.iter().enumerate() {
            if c != DO_NOT_SCHEDULE && c != SCHEDULE_ANYWAY {
                return Err(FieldError::new(
                    N,
                    &format!("args.constraints[{i}]"),
                    format!(
                        "constraints elements must be one of [{DO_NOT_SCHEDULE} {SCHEDULE_ANYWAY}]"
                    ),
                ));
            }
        }
        if !list.is_empty() {
            t.constraints = list;
        }
    }
    // Before `constraints` upstream had this flag: soft constraints balanced too.
    if flag(N, args, "includeSoftConstraints")?
        && !t.constraints.iter().any(|c| c == SCHEDULE_ANYWAY)
    {
        t.constraints.push(SCHEDULE_ANYWAY.to_string());
    }
    if let Some(v) = args.get("topologyBalanceNodeFit").filter(|v| !v.is_null()) {
        t.node_fit = boolean(N, "args.topologyBalanceNodeFit", v)?;
    }
    Ok(t)
}
