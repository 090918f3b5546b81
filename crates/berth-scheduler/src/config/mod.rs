//! KubeSchedulerConfiguration (`kubescheduler.config.k8s.io/v1`): today's way to configure a
//! scheduler, next to the seed's `kind: Policy` file ([`crate::policy`]).
//!
//! A configuration goes from text to an engine in four steps, one file each:
//! `parse.rs` reads the YAML or JSON document strictly (unknown fields are errors, as upstream's
//! strict decoding), `defaults.rs` applies upstream's defaults (`v1/defaults.go`,
//! `default_plugins.go`: the default plugin set and weights merged with the profile's, each
//! plugin's args), `validate.rs` checks it with upstream's field paths and words
//! (`validation.go`, `validation_pluginargs.go`), and `compile.rs` turns each profile into the
//! engine's predicate and priority lists ([`CompiledProfile`]). `plugins.rs` is the registry of
//! the in-tree plugins and what runs each one in berth; `messages.rs` words failures as 1.35 does.
//!
//! Which era applies is decided by the file given: a Policy keeps the seed's behaviour and words,
//! a KubeSchedulerConfiguration gets 1.35's plugins, weights (0..100 per plugin) and messages.
//!
//! ```
//! # use berth_scheduler::config::SchedulerConfiguration;
//! let config = SchedulerConfiguration::from_str(r#"
//! apiVersion: kubescheduler.config.k8s.io/v1
//! kind: KubeSchedulerConfiguration
//! profiles:
//!   - schedulerName: default-scheduler
//!   - schedulerName: packer
//!     pluginConfig:
//!       - name: NodeResourcesFit
//!         args: {scoringStrategy: {type: MostAllocated}}
//! "#).unwrap();
//! assert_eq!(config.profiles.len(), 2);
//! let packer = config.compile().unwrap().remove(1);
//! assert_eq!(packer.scheduler_name, "packer");
//! ```

mod compile;
mod defaults;
mod field;
pub mod messages;
mod parse;
pub mod plugins;
mod validate;

#[cfg(test)]
mod tests;

pub use compile::{CompiledProfile, ProfilePlugin, TopologySpreadWiring, SHAPE_SCORE_SCALE};
pub use field::{FieldError, FieldErrorKind};
pub use plugins::Point;

use serde_json::Value;
use std::time::Duration;

/// The only API version accepted.
pub const API_VERSION: &str = "kubescheduler.config.k8s.io/v1";
/// The kind accepted.
pub const KIND: &str = "KubeSchedulerConfiguration";

/// A loaded, defaulted and validated KubeSchedulerConfiguration.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedulerConfiguration {
    /// `parallelism` (default 16): berth filters on its own rayon pool and records this.
    pub parallelism: i64,
    /// `percentageOfNodesToScore` (default 0: upstream's adaptive rule).
    pub percentage_of_nodes_to_score: i64,
    /// `podInitialBackoffSeconds` (default 1).
    pub pod_initial_backoff_seconds: i64,
    /// `podMaxBackoffSeconds` (default 10).
    pub pod_max_backoff_seconds: i64,
    /// `enableProfiling` (default true; berth serves no pprof, recorded only).
    pub enable_profiling: bool,
    /// `enableContentionProfiling` (default true with profiling; recorded only).
    pub enable_contention_profiling: bool,
    /// `delayCacheUntilActive` (default false; berth's standby keeps its cache warm either way).
    pub delay_cache_until_active: bool,
    /// `leaderElection`.
    pub leader_election: LeaderElection,
    /// `clientConnection`.
    pub client_connection: ClientConnection,
    /// `profiles`: one per `schedulerName` this process serves.
    pub profiles: Vec<Profile>,
    /// `extenders`, accepted and validated; berth does not call extenders.
    pub extenders: Vec<Value>,
}

/// `leaderElection` (component-base's LeaderElectionConfiguration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderElection {
    /// `leaderElect` (default true).
    pub leader_elect: bool,
    /// `leaseDuration` (default 15s).
    pub lease_duration: Duration,
    /// `renewDeadline` (default 10s).
    pub renew_deadline: Duration,
    /// `retryPeriod` (default 2s).
    pub retry_period: Duration,
    /// `resourceLock` (default and only value: `leases`).
    pub resource_lock: String,
    /// `resourceName` (default `kube-scheduler`).
    pub resource_name: String,
    /// `resourceNamespace` (default `kube-system`).
    pub resource_namespace: String,
}

/// `clientConnection` (component-base's ClientConnectionConfiguration).
#[derive(Debug, Clone, PartialEq)]
pub struct ClientConnection {
    /// `kubeconfig`: the kubeconfig to use when the command line gives none.
    pub kubeconfig: String,
    /// `acceptContentTypes`.
    pub accept_content_types: String,
    /// `contentType` (default `application/vnd.kubernetes.protobuf`; berth speaks JSON).
    pub content_type: String,
    /// `qps` (default 50).
    pub qps: f64,
    /// `burst` (default 100).
    pub burst: i64,
}

/// One profile: a `schedulerName` and its plugins.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// `schedulerName`: pods naming it are scheduled by this profile.
    pub scheduler_name: String,
    /// `percentageOfNodesToScore` of this profile, overriding the top-level one.
    pub percentage_of_nodes_to_score: Option<i64>,
    /// `plugins` after merging with the default set.
    pub plugins: Plugins,
    /// `pluginConfig`: the profile's entries, then defaults for every enabled plugin with args.
    pub plugin_config: Vec<PluginConfig>,
}

/// A profile's `plugins`: `multiPoint` and one set per extension point.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plugins {
    /// `multiPoint`: plugins enabled at every point they implement.
    pub multi_point: PluginSet,
    /// The sets of the extension points, indexed by [`Point`] (`Point::EVERY` order).
    pub points: [PluginSet; 12],
}

impl Plugins {
    /// The set of `point`.
    pub fn at(&self, point: Point) -> &PluginSet {
        &self.points[point as usize]
    }
}

/// `enabled` and `disabled` plugins of one extension point.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PluginSet {
    /// `enabled`, in order.
    pub enabled: Vec<PluginRef>,
    /// `disabled` names (`*` disables every default plugin of the point).
    pub disabled: Vec<String>,
}

/// One `enabled` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginRef {
    /// `name`.
    pub name: String,
    /// `weight` (scores only; 0 when not given, which means 1).
    pub weight: i64,
}

/// One `pluginConfig` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginConfig {
    /// `name`: the plugin.
    pub name: String,
    /// `args`, decoded.
    pub args: Args,
}

/// A plugin's decoded `args`, with upstream's defaults applied.
#[derive(Debug, Clone, PartialEq)]
pub enum Args {
    /// `DefaultPreemptionArgs`.
    DefaultPreemption {
        /// `minCandidateNodesPercentage` (default 10).
        min_candidate_nodes_percentage: i64,
        /// `minCandidateNodesAbsolute` (default 100).
        min_candidate_nodes_absolute: i64,
    },
    /// `InterPodAffinityArgs`.
    InterPodAffinity {
        /// `hardPodAffinityWeight` (default 1, 0..=100).
        hard_pod_affinity_weight: i64,
        /// `ignorePreferredTermsOfExistingPods` (default false).
        ignore_preferred_terms_of_existing_pods: bool,
    },
    /// `NodeAffinityArgs`.
    NodeAffinity {
        /// `addedAffinity`: node affinity every pod of the profile must also satisfy.
        added_affinity: Option<crate::model::NodeAffinity>,
    },
    /// `NodeResourcesFitArgs`.
    NodeResourcesFit {
        /// `ignoredResources`: resources the filter ignores.
        ignored_resources: Vec<String>,
        /// `ignoredResourceGroups`: resource groups (the part before `/`) the filter ignores.
        ignored_resource_groups: Vec<String>,
        /// `scoringStrategy` (default LeastAllocated over cpu and memory, weight 1 each).
        scoring_strategy: ScoringStrategy,
    },
    /// `NodeResourcesBalancedAllocationArgs`.
    NodeResourcesBalancedAllocation {
        /// `resources` (default cpu and memory, weight 1).
        resources: Vec<ResourceSpec>,
    },
    /// `PodTopologySpreadArgs`.
    PodTopologySpread {
        /// `defaultConstraints`, as written (each a TopologySpreadConstraint without selector).
        default_constraints: Vec<Value>,
        /// `defaultingType` (default `System`).
        defaulting_type: String,
    },
    /// `VolumeBindingArgs`.
    VolumeBinding {
        /// `bindTimeoutSeconds` (default 600).
        bind_timeout_seconds: i64,
        /// `shape` (refused: the StorageCapacityScoring feature is off, as upstream's default).
        shape: Option<Vec<ShapePoint>>,
    },
    /// `DynamicResourcesArgs`: accepted; berth has no resource claims.
    DynamicResources,
}

/// `scoringStrategy` of NodeResourcesFit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScoringStrategy {
    /// `type`: `LeastAllocated`, `MostAllocated` or `RequestedToCapacityRatio`.
    pub type_: String,
    /// `resources` and their weights.
    pub resources: Vec<ResourceSpec>,
    /// `requestedToCapacityRatio.shape`, for that type.
    pub shape: Option<Vec<ShapePoint>>,
}

/// A resource and its weight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceSpec {
    /// `name`.
    pub name: String,
    /// `weight`.
    pub weight: i64,
}

/// A point of a utilization → score shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShapePoint {
    /// `utilization` (0..=100).
    pub utilization: i64,
    /// `score` (0..=10).
    pub score: i64,
}

/// A configuration could not be loaded; lists every problem found.
///
/// Displays as `invalid KubeSchedulerConfiguration[ file F]: ` and the one error, or `[e1, e2]`
/// for several (upstream's aggregate format).
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file, when loaded with [`SchedulerConfiguration::from_file`].
    pub file: Option<String>,
    /// Every problem, in document order.
    pub errors: Vec<FieldError>,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("invalid KubeSchedulerConfiguration")?;
        if let Some(file) = &self.file {
            write!(f, " file {file}")?;
        }
        f.write_str(": ")?;
        match self.errors.as_slice() {
            [one] => write!(f, "{one}"),
            many => {
                let list: Vec<String> = many.iter().map(|e| e.to_string()).collect();
                write!(f, "[{}]", list.join(", "))
            }
        }
    }
}

impl SchedulerConfiguration {
    /// Loads a configuration from YAML or JSON text: strict decoding, upstream's defaults, then
    /// upstream's validation. Every problem is reported together.
    #[allow(clippy::should_implement_trait)]
    pub fn from_str(text: &str) -> Result<SchedulerConfiguration, ConfigError> {
        let fail = |errors| ConfigError { file: None, errors };
        let document = parse::document(text).map_err(|e| fail(vec![e]))?;
        let mut config = parse::configuration(&document).map_err(fail)?;
        defaults::apply(&mut config);
        let errors = validate::configuration(&config);
        if errors.is_empty() {
            Ok(config)
        } else {
            Err(fail(errors))
        }
    }

    /// Reads and loads a configuration file; errors name the file.
    pub fn from_file(path: &std::path::Path) -> Result<SchedulerConfiguration, ConfigError> {
        let file = Some(path.display().to_string());
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: file.clone(),
            errors: vec![FieldError::invalid("file", "", format!("cannot read: {e}"))],
        })?;
        SchedulerConfiguration::from_str(&text).map_err(|e| ConfigError {
            file,
            errors: e.errors,
        })
    }

    /// Turns every profile into what the engine runs, in profile order.
    pub fn compile(&self) -> Result<Vec<CompiledProfile>, ConfigError> {
        self.profiles
            .iter()
            .enumerate()
            .map(|(i, p)| compile::profile(self, i, p))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|errors| ConfigError { file: None, errors })
    }
}

/// True if `text` looks like a KubeSchedulerConfiguration (its `kind`), for tools that accept
/// either file.
pub fn is_scheduler_configuration(text: &str) -> bool {
    parse::document(text)
        .ok()
        .and_then(|d| d.get("kind").and_then(|k| k.as_str()).map(|k| k == KIND))
        .unwrap_or(false)
}
