//! Node pools: the `cluster.yaml` that `berth serve --cluster` reads (see `examples/cluster.yaml`).
//!
//! Each pool names how many nodes to start and what they look like: capacity (including
//! extended resources such as `nvidia.com/gpu`), labels, taints, images present, and kubelet
//! settings in the seed's `node-config.yaml` shape (`kubeletArguments`, lists of strings) or the
//! seed's `KubeletConfig` form (`systemReserved`, `kubeReserved`, `evictionHard`...). Parsing
//! validates everything; an error names the pool and the field.

use crate::allocatable::{allocatable, ResourceList};
use crate::eviction::thresholds::{parse_duration, parse_thresholds, EvictionSettings};
use crate::eviction::EvictionConfig;
use berth_core::quantity::Quantity;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

pub mod imported;

/// An invalid cluster file: which pool, which field, why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("cluster file: {0}")]
    File(String),
    #[error("pool {pool}: {field}: {reason}")]
    Pool {
        pool: String,
        field: String,
        reason: String,
    },
    /// A kubelet configuration file (a machine config's) the node cannot run with.
    #[error("kubelet configuration: {field}: {reason}")]
    Kubelet { field: String, reason: String },
}

/// A taint as the node spec carries it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Taint {
    pub key: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
    pub effect: String,
}

/// An image present on the node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    pub name: String,
    pub size_bytes: i64,
    pub inodes: i64,
}

/// A file system's size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FsCapacity {
    pub bytes: i64,
    pub inodes: i64,
}

/// What the node's own daemons (kubelet, runtime, system) use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SystemUsage {
    pub cpu_milli: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    pub pids: i64,
}

impl Default for SystemUsage {
    fn default() -> Self {
        SystemUsage {
            cpu_milli: 100,
            memory: 256 << 20,
            ephemeral_storage: 0,
            pids: 200,
        }
    }
}

/// One simulated node, fully resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeConfig {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    pub images: Vec<Image>,
    /// `status.capacity` (schedulable resources; inodes are not among them).
    pub capacity: ResourceList,
    /// `status.allocatable`.
    pub allocatable: ResourceList,
    pub kube_reserved: ResourceList,
    pub system_reserved: ResourceList,
    pub eviction: EvictionConfig,
    pub nodefs_inodes: i64,
    /// A dedicated image file system, else images live on nodefs.
    pub imagefs: Option<FsCapacity>,
    pub max_pids: i64,
    pub system_usage: SystemUsage,
    /// When the node fails on purpose (the pool's `failures`).
    pub failures: Vec<crate::failures::Failure>,
    /// The pool's static pods (its `staticPods`: pod manifests, as a kubelet's
    /// `staticPodPath` holds them); the kubelet runs them and mirrors each in the API.
    pub static_pods: Vec<Value>,
    /// The kubelet settings the node was configured with, as `kubeletArguments` entries: what
    /// a KubeletConfig is laid over ([`NodeConfig::reconfigured`]).
    pub kubelet_args: BTreeMap<String, Vec<String>>,
    /// The machine's capacity before the kubelet settings (`max-pods`, `pods-per-core`).
    pub machine_capacity: ResourceList,
}

impl NodeConfig {
    /// The quick form (`--nodes N`): `node-1`..`node-N` with 4 CPU, 16Gi, 100Gi disk, 110
    /// pods, no reservations and upstream's default hard eviction thresholds
    /// ([`DEFAULT_EVICTION_HARD`]), so allocatable is capacity less those thresholds.
    pub fn quick(count: usize) -> Vec<NodeConfig> {
        let pool = RawPool {
            name: Some("node".into()),
            count,
            labels: BTreeMap::from([(
                "node-role.kubernetes.io/worker".to_string(),
                Scalar::Text(String::new()),
            )]),
            ..RawPool::default()
        };
        let err = |field: &str, reason: String| ConfigError::Pool {
            pool: "node".into(),
            field: field.into(),
            reason,
        };
        resolve_pool(&pool, 0, &err, &mut Vec::new()).expect("the quick form is valid")
    }

    /// The node as its kubelet runs after `kubelet_config` (a `KubeletConfiguration`, the
    /// file `/etc/kubernetes/kubelet.conf` of a machine config) is laid over the node's own
    /// settings: fields it sets replace the node's, the others stay. Capacity (`maxPods`,
    /// `podsPerCore`), reservations, eviction thresholds and so allocatable follow. An empty
    /// one gives the node back its own settings.
    pub fn reconfigured(&self, kubelet_config: &Value) -> Result<NodeConfig, ConfigError> {
        let err = |field: &str, reason: String| ConfigError::Kubelet {
            field: field.to_string(),
            reason,
        };
        let mut args = self.kubelet_args.clone();
        args.extend(kubelet_config_args(kubelet_config, &err)?);
        let field = |k: &str| k.to_string();
        let settings = kubelet_settings(&args, self.machine_capacity.clone(), &field, &err)?;
        let mut node = self.clone();
        node.capacity = settings.capacity;
        node.allocatable = settings.allocatable;
        node.kube_reserved = settings.kube_reserved;
        node.system_reserved = settings.system_reserved;
        node.eviction = settings.eviction;
        node.kubelet_args = args;
        Ok(node)
    }

    /// The directory of static pod manifests (`staticPodPath`, the seed era's
    /// `pod-manifest-path`), if the kubelet reads one ([`crate::static_pod_files`]).
    pub fn static_pod_path(&self) -> Option<&str> {
        self.kubelet_args
            .get(STATIC_POD_PATH_ARG)
            .and_then(|v| v.last())
            .map(String::as_str)
            .filter(|p| !p.is_empty())
    }

    /// The node's memory capacity in bytes.
    pub fn memory_capacity(&self) -> i64 {
        self.capacity.get("memory").map_or(0, Quantity::value)
    }

    /// The node's nodefs capacity in bytes.
    pub fn nodefs_bytes(&self) -> i64 {
        self.capacity
            .get("ephemeral-storage")
            .map_or(0, Quantity::value)
    }
}

const DEFAULT_INODES: i64 = 1_000_000;

/// The prefix of the node role labels (`node-role.kubernetes.io/worker: ""`).
pub const ROLE_LABEL_PREFIX: &str = "node-role.kubernetes.io/";

/// The labels a pool's `zone` sets: today's and the seed era's name of the node's zone.
pub const ZONE_LABELS: [&str; 2] = [
    "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/zone",
];

/// Upstream's `--eviction-hard` default on Linux (control-loops §2.2), used when a pool sets no
/// hard thresholds at all. Setting `eviction-hard` (even to an empty list) replaces it whole.
pub const DEFAULT_EVICTION_HARD: [&str; 4] = [
    "memory.available<100Mi",
    "nodefs.available<10%",
    "nodefs.inodesFree<5%",
    "imagefs.available<15%",
];
const DEFAULT_MAX_PIDS: i64 = 32768;
const DEFAULT_IMAGE_INODES: i64 = 1000;

fn default_labels(name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("kubernetes.io/hostname".to_string(), name.to_string()),
        ("kubernetes.io/os".to_string(), "linux".to_string()),
        ("kubernetes.io/arch".to_string(), "amd64".to_string()),
    ])
}

/// A YAML scalar read as text (`cpu: 8` and `cpu: "8"` alike).
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
enum Scalar {
    Text(String),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl Scalar {
    fn text(&self) -> String {
        match self {
            Scalar::Text(s) => s.clone(),
            Scalar::Int(i) => i.to_string(),
            Scalar::Float(f) => f.to_string(),
            Scalar::Bool(b) => b.to_string(),
        }
    }
}

/// A `kubeletArguments` value: a list of strings, or a single one.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
enum Args {
    List(Vec<Scalar>),
    One(Scalar),
}

impl Args {
    fn list(&self) -> Vec<String> {
        match self {
            Args::List(v) => v.iter().map(Scalar::text).collect(),
            Args::One(s) => vec![s.text()],
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawImage {
    name: String,
    #[serde(default)]
    names: Vec<String>,
    size: Scalar,
    inodes: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawFs {
    capacity: Scalar,
    inodes: Option<Scalar>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawSystemUsage {
    cpu: Option<Scalar>,
    memory: Option<Scalar>,
    #[serde(rename = "ephemeral-storage")]
    ephemeral_storage: Option<Scalar>,
    pids: Option<i64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawPool {
    name: Option<String>,
    #[serde(default = "one")]
    count: usize,
    name_prefix: Option<String>,
    #[serde(default)]
    capacity: BTreeMap<String, Scalar>,
    #[serde(default)]
    labels: BTreeMap<String, Scalar>,
    /// The pool's failure domain: sets `topology.kubernetes.io/zone` and the seed era's
    /// `failure-domain.beta.kubernetes.io/zone` (the node lifecycle controller's zones).
    zone: Option<String>,
    #[serde(default)]
    taints: Vec<Taint>,
    #[serde(default)]
    images: Vec<RawImage>,
    imagefs: Option<RawFs>,
    max_pids: Option<i64>,
    system_usage: Option<RawSystemUsage>,
    #[serde(default)]
    kubelet_arguments: BTreeMap<String, Args>,
    kubelet_config: Option<Value>,
    /// The failure schedule (see [`crate::failures`]).
    #[serde(default)]
    failures: Vec<RawFailure>,
    /// Static pod manifests (see [`crate::static_pods`]).
    #[serde(default)]
    static_pods: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFailure {
    /// One node of the pool; every node of the pool without it.
    node: Option<String>,
    stop: Scalar,
    #[serde(rename = "for")]
    duration: Option<Scalar>,
    mode: Option<String>,
}

/// The pool's failures of each of its nodes, in the order of `names`.
fn resolve_failures(
    raw: &[RawFailure],
    names: &[String],
    err: &dyn Fn(&str, String) -> ConfigError,
) -> Result<Vec<Vec<crate::failures::Failure>>, ConfigError> {
    use crate::simulate::Simulate;
    let mut out = vec![Vec::new(); names.len()];
    for (i, f) in raw.iter().enumerate() {
        let field = |name: &str| format!("failures[{i}].{name}");
        let duration = |name: &str, v: &Scalar| {
            parse_duration(&v.text()).map_err(|e| err(&field(name), e.to_string()))
        };
        let stop = duration("stop", &f.stop)?;
        let lasts = f
            .duration
            .as_ref()
            .map(|d| duration("for", d))
            .transpose()?;
        if lasts.is_some_and(|d| d.is_zero()) {
            return Err(err(&field("for"), "must be longer than 0s".into()));
        }
        let mode = match f.mode.as_deref() {
            None => Simulate::Stopped,
            Some(m) => match Simulate::parse(m) {
                Ok(Simulate::Running) | Err(_) => {
                    return Err(err(
                        &field("mode"),
                        format!("{m:?} is not a failure (stopped, partitioned or not-ready)"),
                    ))
                }
                Ok(mode) => mode,
            },
        };
        let failure = crate::failures::Failure {
            stop,
            duration: lasts,
            mode,
        };
        match &f.node {
            None => out.iter_mut().for_each(|v| v.push(failure.clone())),
            Some(node) => {
                let Some(at) = names.iter().position(|n| n == node) else {
                    return Err(err(
                        &field("node"),
                        format!(
                            "no node {node:?} in this pool (its nodes: {})",
                            names.join(", ")
                        ),
                    ));
                };
                out[at].push(failure);
            }
        }
    }
    Ok(out)
}

fn one() -> usize {
    1
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCluster {
    pools: Vec<Value>,
}

/// Kubelet arguments berth understands; others are accepted and ignored (reported back).
const EVICTION_ARGS: [&str; 10] = [
    "kube-reserved",
    "system-reserved",
    "eviction-hard",
    "eviction-soft",
    "eviction-soft-grace-period",
    "eviction-max-pod-grace-period",
    "eviction-pressure-transition-period",
    "eviction-minimum-reclaim",
    "experimental-allocatable-ignore-eviction",
    "enforce-node-allocatable",
];

/// A parsed cluster file: the nodes to start, and settings that were accepted but ignored.
#[derive(Clone, Debug, PartialEq)]
pub struct Cluster {
    pub nodes: Vec<NodeConfig>,
    /// `pool: argument` for kubelet arguments berth does not simulate.
    pub ignored: Vec<String>,
}

/// Parses a cluster file (YAML or JSON).
pub fn parse_cluster(text: &str) -> Result<Cluster, ConfigError> {
    let value: Value =
        serde_saphyr::from_str(text).map_err(|e| ConfigError::File(e.to_string()))?;
    let raw: RawCluster =
        serde_json::from_value(value).map_err(|e| ConfigError::File(e.to_string()))?;
    if raw.pools.is_empty() {
        return Err(ConfigError::File(
            "pools: at least one pool is required".into(),
        ));
    }
    let mut cluster = Cluster {
        nodes: vec![],
        ignored: vec![],
    };
    let mut names = std::collections::BTreeSet::new();
    for (i, pool) in raw.pools.into_iter().enumerate() {
        let label = pool
            .get("name")
            .and_then(Value::as_str)
            .map_or_else(|| format!("#{}", i + 1), str::to_string);
        let err = |field: &str, reason: String| ConfigError::Pool {
            pool: label.clone(),
            field: field.to_string(),
            reason,
        };
        let raw: RawPool = serde_json::from_value(pool).map_err(|e| err("pool", e.to_string()))?;
        let nodes = resolve_pool(&raw, i, &err, &mut cluster.ignored)?;
        for n in nodes {
            if !names.insert(n.name.clone()) {
                return Err(err(
                    "namePrefix",
                    format!("node name {} is used twice", n.name),
                ));
            }
            cluster.nodes.push(n);
        }
    }
    Ok(cluster)
}

fn parse_quantity(
    v: &str,
    field: &str,
    err: &dyn Fn(&str, String) -> ConfigError,
) -> Result<Quantity, ConfigError> {
    let q = Quantity::parse(v.trim())
        .map_err(|e| err(field, format!("invalid quantity {v:?}: {e}")))?;
    if q.milli_value() < 0 {
        return Err(err(field, format!("must not be negative: {v}")));
    }
    Ok(q)
}

/// `cpu=500m,memory=1Gi` statements into a resource list.
fn parse_reserved(
    list: &[String],
    field: &str,
    err: &dyn Fn(&str, String) -> ConfigError,
) -> Result<ResourceList, ConfigError> {
    let mut out = ResourceList::new();
    for st in list.iter().flat_map(|s| s.split(',')).map(str::trim) {
        if st.is_empty() {
            continue;
        }
        let (k, v) = st
            .split_once('=')
            .ok_or_else(|| err(field, format!("expected resource=quantity, got {st:?}")))?;
        out.insert(k.trim().to_string(), parse_quantity(v, field, err)?);
    }
    Ok(out)
}

/// The kubelet argument of the static pod directory (`staticPodPath` in a KubeletConfiguration).
const STATIC_POD_PATH_ARG: &str = "pod-manifest-path";

/// The `KubeletConfig` form, as `kubeletArguments` entries. Accepts the inner map or a whole
/// `kind: KubeletConfig` object (its `spec.kubeletConfig`).
fn kubelet_config_args(
    v: &Value,
    err: &dyn Fn(&str, String) -> ConfigError,
) -> Result<BTreeMap<String, Vec<String>>, ConfigError> {
    let inner = v
        .pointer("/spec/kubeletConfig")
        .unwrap_or(v)
        .as_object()
        .ok_or_else(|| err("kubeletConfig", "must be a map".into()))?;
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut out = BTreeMap::new();
    for (k, v) in inner {
        let field = format!("kubeletConfig.{k}");
        let map_entries = |sep: &str| -> Result<Vec<String>, ConfigError> {
            let m = v
                .as_object()
                .ok_or_else(|| err(&field, "must be a map".into()))?;
            Ok(m.iter()
                .map(|(k, v)| format!("{k}{sep}{}", text(v)))
                .collect())
        };
        let (arg, values) = match k.as_str() {
            "systemReserved" => ("system-reserved", map_entries("=")?),
            "kubeReserved" => ("kube-reserved", map_entries("=")?),
            "evictionHard" => ("eviction-hard", map_entries("<")?),
            "evictionSoft" => ("eviction-soft", map_entries("<")?),
            "evictionSoftGracePeriod" => ("eviction-soft-grace-period", map_entries("=")?),
            "evictionMinimumReclaim" => ("eviction-minimum-reclaim", map_entries("=")?),
            "evictionMaxPodGracePeriod" => ("eviction-max-pod-grace-period", vec![text(v)]),
            "evictionPressureTransitionPeriod" => {
                ("eviction-pressure-transition-period", vec![text(v)])
            }
            "enforceNodeAllocatable" => (
                "enforce-node-allocatable",
                v.as_array()
                    .map(|a| a.iter().map(text).collect::<Vec<_>>())
                    .map(|a| vec![a.join(",")])
                    .unwrap_or_else(|| vec![text(v)]),
            ),
            "maxPods" => ("max-pods", vec![text(v)]),
            "featureGates" => ("feature-gates", map_entries("=")?),
            "podsPerCore" => ("pods-per-core", vec![text(v)]),
            "staticPodPath" => (STATIC_POD_PATH_ARG, vec![text(v)]),
            _ => continue,
        };
        out.insert(arg.to_string(), values);
    }
    Ok(out)
}

/// Whether the `PodPriority` feature gate is on, from `feature-gates` statements
/// (`PodPriority=false`, comma-separated or one per entry). Upstream's default: on. Other gates
/// are accepted and change nothing here.
fn pod_priority_gate(statements: &[String]) -> Result<bool, String> {
    let mut on = true;
    for st in statements.iter().flat_map(|s| s.split(',')).map(str::trim) {
        if st.is_empty() {
            continue;
        }
        let Some((gate, value)) = st.split_once('=') else {
            return Err(format!("expected Gate=true|false, got {st:?}"));
        };
        let value = value.trim().parse::<bool>().map_err(|_| {
            format!(
                "invalid value of {}: {:?}, expected true or false",
                gate.trim(),
                value.trim()
            )
        })?;
        if gate.trim() == "PodPriority" {
            on = value;
        }
    }
    Ok(on)
}

/// What a node's kubelet settings make of it.
struct KubeletSettings {
    capacity: ResourceList,
    allocatable: ResourceList,
    kube_reserved: ResourceList,
    system_reserved: ResourceList,
    eviction: EvictionConfig,
}

/// The node's capacity (`max-pods`), reservations, eviction settings and allocatable from its
/// kubelet settings (`kubeletArguments` entries); `kubelet_field` names a setting in errors.
fn kubelet_settings(
    args: &BTreeMap<String, Vec<String>>,
    mut capacity: ResourceList,
    kubelet_field: &dyn Fn(&str) -> String,
    err: &dyn Fn(&str, String) -> ConfigError,
) -> Result<KubeletSettings, ConfigError> {
    let arg = |k: &str| args.get(k).cloned().unwrap_or_default();

    if let Some(mp) = arg("max-pods").first() {
        let q = parse_quantity(mp, &kubelet_field("max-pods"), err)?;
        capacity.insert("pods".into(), q);
    }
    // Upstream: pods = min(maxPods, podsPerCore x cores) when podsPerCore is set.
    if let Some(ppc) = arg("pods-per-core").first() {
        let per_core = parse_quantity(ppc, &kubelet_field("pods-per-core"), err)?.value();
        let cores = capacity.get("cpu").map_or(0, Quantity::value);
        let pods = capacity.get("pods").map_or(0, Quantity::value);
        if per_core > 0 && per_core * cores < pods {
            capacity.insert("pods".into(), Quantity::from_int(per_core * cores));
        }
    }
    let kube_reserved =
        parse_reserved(&arg("kube-reserved"), &kubelet_field("kube-reserved"), err)?;
    let system_reserved = parse_reserved(
        &arg("system-reserved"),
        &kubelet_field("system-reserved"),
        err,
    )?;
    let hard = if args.contains_key("eviction-hard") {
        arg("eviction-hard")
    } else {
        DEFAULT_EVICTION_HARD.map(String::from).to_vec()
    };
    let settings = EvictionSettings {
        hard,
        soft: arg("eviction-soft"),
        soft_grace_period: arg("eviction-soft-grace-period"),
        minimum_reclaim: arg("eviction-minimum-reclaim"),
    };
    let enforce = arg("enforce-node-allocatable");
    let enforce_pods = enforce.is_empty()
        || enforce
            .iter()
            .any(|s| s.split(',').any(|t| t.trim() == "pods"));
    use crate::eviction::thresholds::parse_statements;
    parse_statements(&settings.hard)
        .map_err(|e| err(&kubelet_field("eviction-hard"), e.to_string()))?;
    parse_statements(&settings.soft)
        .map_err(|e| err(&kubelet_field("eviction-soft"), e.to_string()))?;
    let thresholds = parse_thresholds(&settings, enforce_pods).map_err(|e| {
        let field = match &e {
            crate::eviction::thresholds::ThresholdError::NoGracePeriod(_) => "eviction-soft",
            crate::eviction::thresholds::ThresholdError::BadGracePeriod(_) => {
                "eviction-soft-grace-period"
            }
            crate::eviction::thresholds::ThresholdError::MinReclaimNegative(_)
            | crate::eviction::thresholds::ThresholdError::MinReclaimPercent(..) => {
                "eviction-minimum-reclaim"
            }
            _ => "eviction-soft-grace-period",
        };
        err(&kubelet_field(field), e.to_string())
    })?;
    let max_pod_grace_period = match arg("eviction-max-pod-grace-period").first() {
        None => 0,
        Some(s) => s.trim().parse::<i64>().map_err(|_| {
            err(
                &kubelet_field("eviction-max-pod-grace-period"),
                format!("expected a number of seconds, got {s:?}"),
            )
        })?,
    };
    let pressure_transition_period = match arg("eviction-pressure-transition-period").first() {
        None => Duration::from_secs(300),
        Some(s) => parse_duration(s).map_err(|e| {
            err(
                &kubelet_field("eviction-pressure-transition-period"),
                e.to_string(),
            )
        })?,
    };
    let pod_priority = pod_priority_gate(&arg("feature-gates"))
        .map_err(|reason| err(&kubelet_field("feature-gates"), reason))?;
    let ignore_eviction = match arg("experimental-allocatable-ignore-eviction").first() {
        None => false,
        Some(s) => s.trim().parse::<bool>().map_err(|_| {
            err(
                &kubelet_field("experimental-allocatable-ignore-eviction"),
                format!("expected true or false, got {s:?}"),
            )
        })?,
    };
    let alloc = allocatable(
        &capacity,
        &kube_reserved,
        &system_reserved,
        &thresholds,
        ignore_eviction,
    );

    Ok(KubeletSettings {
        capacity,
        allocatable: alloc,
        kube_reserved,
        system_reserved,
        eviction: EvictionConfig {
            thresholds,
            max_pod_grace_period,
            pressure_transition_period,
            pod_priority,
        },
    })
}

fn resolve_pool(
    raw: &RawPool,
    index: usize,
    err: &dyn Fn(&str, String) -> ConfigError,
    ignored: &mut Vec<String>,
) -> Result<Vec<NodeConfig>, ConfigError> {
    let pool_name = raw
        .name
        .clone()
        .unwrap_or_else(|| format!("pool-{}", index + 1));
    // Kubelet settings: kubeletArguments, then the KubeletConfig form on top.
    let mut args: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (k, v) in &raw.kubelet_arguments {
        if EVICTION_ARGS.contains(&k.as_str())
            || [
                "max-pods",
                "pods-per-core",
                "feature-gates",
                STATIC_POD_PATH_ARG,
            ]
            .contains(&k.as_str())
        {
            args.insert(k.clone(), v.list());
        } else {
            ignored.push(format!("{pool_name}: {k}"));
        }
    }
    if let Some(kc) = &raw.kubelet_config {
        args.extend(kubelet_config_args(kc, err)?);
    }
    let mut capacity = ResourceList::new();
    let mut nodefs_inodes = DEFAULT_INODES;
    for (k, v) in &raw.capacity {
        let field = format!("capacity.{k}");
        let q = parse_quantity(&v.text(), &field, err)?;
        if k == "inodes" {
            nodefs_inodes = q.value();
        } else {
            capacity.insert(k.clone(), q);
        }
    }
    for (k, v) in [
        ("cpu", "4"),
        ("memory", "16Gi"),
        ("pods", "110"),
        ("ephemeral-storage", "100Gi"),
    ] {
        capacity
            .entry(k.to_string())
            .or_insert_with(|| Quantity::parse(v).expect("valid"));
    }
    let kubelet_field = |k: &str| {
        if raw.kubelet_arguments.contains_key(k) {
            format!("kubeletArguments.{k}")
        } else {
            format!("kubeletConfig ({k})")
        }
    };
    let settings = kubelet_settings(&args, capacity.clone(), &kubelet_field, err)?;
    let mut images = Vec::new();
    for (i, im) in raw.images.iter().enumerate() {
        let field = format!("images[{i}].size");
        let size = parse_quantity(&im.size.text(), &field, err)?.value();
        for name in std::iter::once(&im.name).chain(&im.names) {
            images.push(Image {
                name: name.clone(),
                size_bytes: size,
                inodes: im.inodes.unwrap_or(DEFAULT_IMAGE_INODES),
            });
        }
    }
    let imagefs = match &raw.imagefs {
        None => None,
        Some(fs) => Some(FsCapacity {
            bytes: parse_quantity(&fs.capacity.text(), "imagefs.capacity", err)?.value(),
            inodes: match &fs.inodes {
                Some(i) => parse_quantity(&i.text(), "imagefs.inodes", err)?.value(),
                None => DEFAULT_INODES,
            },
        }),
    };
    let mut system_usage = SystemUsage::default();
    if let Some(su) = &raw.system_usage {
        if let Some(c) = &su.cpu {
            system_usage.cpu_milli =
                parse_quantity(&c.text(), "systemUsage.cpu", err)?.milli_value();
        }
        if let Some(m) = &su.memory {
            system_usage.memory = parse_quantity(&m.text(), "systemUsage.memory", err)?.value();
        }
        if let Some(e) = &su.ephemeral_storage {
            system_usage.ephemeral_storage =
                parse_quantity(&e.text(), "systemUsage.ephemeral-storage", err)?.value();
        }
        if let Some(p) = su.pids {
            system_usage.pids = p.max(0);
        }
    }
    for t in &raw.taints {
        if !matches!(
            t.effect.as_str(),
            "NoSchedule" | "PreferNoSchedule" | "NoExecute"
        ) {
            return Err(err(
                "taints",
                format!(
                    "effect {:?} must be NoSchedule, PreferNoSchedule or NoExecute",
                    t.effect
                ),
            ));
        }
    }
    let prefix = raw
        .name_prefix
        .clone()
        .unwrap_or_else(|| format!("{pool_name}-"));
    let names: Vec<String> = (1..=raw.count).map(|i| format!("{prefix}{i}")).collect();
    let failures = resolve_failures(&raw.failures, &names, err)?;
    for (i, manifest) in raw.static_pods.iter().enumerate() {
        crate::static_pods::check(manifest)
            .map_err(|reason| err(&format!("staticPods[{i}]"), reason))?;
    }
    let nodes = names
        .into_iter()
        .zip(failures)
        .map(|(name, failures)| {
            let mut labels = default_labels(&name);
            if let Some(zone) = &raw.zone {
                for key in ZONE_LABELS {
                    labels.insert(key.to_string(), zone.clone());
                }
            }
            labels.extend(raw.labels.iter().map(|(k, v)| (k.clone(), v.text())));
            // Every OpenShift node has a role, and its machine config pool goes by it: a
            // pool that names none is of workers.
            if !labels.keys().any(|k| k.starts_with(ROLE_LABEL_PREFIX)) {
                labels.insert(format!("{ROLE_LABEL_PREFIX}worker"), String::new());
            }
            NodeConfig {
                name,
                labels,
                taints: raw.taints.clone(),
                images: images.clone(),
                capacity: settings.capacity.clone(),
                allocatable: settings.allocatable.clone(),
                kube_reserved: settings.kube_reserved.clone(),
                system_reserved: settings.system_reserved.clone(),
                eviction: settings.eviction.clone(),
                nodefs_inodes,
                imagefs,
                max_pids: raw.max_pids.unwrap_or(DEFAULT_MAX_PIDS),
                system_usage,
                failures,
                static_pods: raw.static_pods.clone(),
                kubelet_args: args.clone(),
                machine_capacity: capacity.clone(),
            }
        })
        .collect();
    Ok(nodes)
}

#[cfg(test)]
mod tests;
