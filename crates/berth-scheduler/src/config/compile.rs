//! A profile to what the engine runs: the filter plugins become the engine's predicates and the
//! score plugins its weighted priorities, in the engine's existing static dispatch (no per-node
//! dynamic calls). Compiled once when the scheduler starts.
//!
//! Scores: a profile's scheduler scores on [`ScoreScale::Plugin`] (the engine is built with
//! `framework_profile(true)`): each score plugin returns 0..100 with 1.35's own integer
//! arithmetic (`LeastAllocated`'s `(allocatable - requested) * 100 / allocatable`, the standard
//! deviation of BalancedAllocation, `DefaultNormalizeScore(100, ..)` of NodeAffinity and
//! TaintToleration, ...), and its weight is the profile's. Nothing is scaled from 1.11's 0..10,
//! which would lose precision and tie nodes upstream tells apart (a node of 4000m with 1300m
//! requested scores 67, not 60). A seed Policy keeps 1.11's 0..10 ([`ScoreScale::Priority`]).
//!
//! [`ScoreScale::Plugin`]: crate::ScoreScale::Plugin
//! [`ScoreScale::Priority`]: crate::ScoreScale::Priority

use super::field::{child, index, Errors};
use super::plugins::{self, Filter, Point, Score};
use super::*;
use crate::plugin_args::{PluginArgs, ResourceScoring, Strategy};
use crate::policy::{
    Policy, PredicateConfig, PredicateKind, PriorityConfig, PriorityKind, PriorityName,
};

/// RequestedToCapacityRatio's shape scores are 0..10 in the file and 0..100 in the score:
/// upstream's `MaxNodeScore` (100) over `MaxCustomPriorityScore` (10).
pub const SHAPE_SCORE_SCALE: i64 = 10;

/// One profile, ready for the engine and the driver.
#[derive(Debug, Clone, PartialEq)]
pub struct CompiledProfile {
    /// Pods whose `spec.schedulerName` is this are scheduled by this profile.
    pub scheduler_name: String,
    /// The filter plugins as predicates and the score plugins as priorities (scoring 0..100,
    /// weighted by the profile's weights); every name is the plugin's.
    pub policy: Policy,
    /// `percentageOfNodesToScore` (0: upstream's adaptive rule).
    pub percentage_of_nodes_to_score: u32,
    /// DefaultPreemption is enabled at `postFilter`.
    pub preemption: bool,
    /// DefaultPreemption's `(minCandidateNodesPercentage, minCandidateNodesAbsolute)`.
    pub min_candidate_nodes: (i64, i64),
    /// The plugin arguments the engine reads (NodeResourcesFit's scoring and ignored
    /// resources, NodeAffinity's `addedAffinity`, InterPodAffinity's
    /// `ignorePreferredTermsOfExistingPods`).
    pub plugin_args: PluginArgs,
    /// SchedulingGates is enabled at `preEnqueue`: gated pods wait outside the queue.
    pub scheduling_gates: bool,
    /// DynamicResources is enabled (its `postFilter` adds `no new claims to deallocate` to the
    /// FailedScheduling message, as 1.35 does for a pod without claims).
    pub dynamic_resources: bool,
    /// PodTopologySpread, when enabled at `filter` or `score`.
    pub topology_spread: Option<TopologySpreadWiring>,
    /// `podInitialBackoffSeconds` and `podMaxBackoffSeconds`.
    pub backoff_seconds: (i64, i64),
    /// The profile's plugins per extension point, for `berth explain` and the published profile.
    pub plugins: Vec<ProfilePlugin>,
}

impl CompiledProfile {
    /// PodTopologySpread's arguments for the engine (none when the profile does not enable it;
    /// a Policy has none either: only pods' own constraints).
    pub fn topology_spread_args(&self) -> crate::topology_spread::TopologySpreadArgs {
        use crate::topology_spread::{DefaultingType, TopologySpreadArgs};
        let Some(wiring) = &self.topology_spread else {
            return TopologySpreadArgs::none();
        };
        TopologySpreadArgs {
            default_constraints: wiring
                .default_constraints
                .iter()
                .filter_map(|c| serde_json::from_value(c.clone()).ok())
                .collect(),
            defaulting_type: if wiring.defaulting_type == "List" {
                DefaultingType::List
            } else {
                DefaultingType::System
            },
        }
    }
}

/// PodTopologySpread's configuration, for the engine's PodTopologySpread units.
#[derive(Debug, Clone, PartialEq)]
pub struct TopologySpreadWiring {
    /// Enabled at `filter`.
    pub filter: bool,
    /// Its score weight (0 when not enabled at `score`).
    pub weight: i64,
    /// `defaultConstraints`.
    pub default_constraints: Vec<Value>,
    /// `defaultingType`: `System` or `List`.
    pub defaulting_type: String,
}

/// A plugin enabled at an extension point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfilePlugin {
    /// The extension point.
    pub point: Point,
    /// The plugin.
    pub name: String,
    /// Its score weight (`score` only).
    pub weight: i64,
}

/// Upstream's `expandMultiPointPlugins` for one point: the point's own plugins, then the
/// `multiPoint` plugins that implement it and are neither disabled there (`*` disables them
/// all) nor configured there already. Weights: the point's own, else `multiPoint`'s; 0 means 1.
fn expand(p: &Plugins, point: Point) -> Vec<(String, i64)> {
    let own = p.at(point);
    let mut out: Vec<(String, i64)> = own
        .enabled
        .iter()
        .map(|e| (e.name.clone(), e.weight.max(1)))
        .collect();
    if own.disabled.iter().any(|d| d == "*") {
        return out;
    }
    for e in &p.multi_point.enabled {
        let implements = plugins::lookup(&e.name).is_some_and(|pl| pl.implements(point));
        if !implements || own.disabled.contains(&e.name) || out.iter().any(|(n, _)| *n == e.name) {
            continue;
        }
        out.push((e.name.clone(), e.weight.max(1)));
    }
    out
}

/// Compiles profile `i` of `c`.
pub(crate) fn profile(
    c: &SchedulerConfiguration,
    i: usize,
    p: &Profile,
) -> Result<CompiledProfile, Errors> {
    let path = index("profiles", i);
    let mut listed = Vec::new();
    for point in Point::EVERY {
        for (name, weight) in expand(&p.plugins, point) {
            listed.push(ProfilePlugin {
                point,
                name,
                weight: if point == Point::Score { weight } else { 0 },
            });
        }
    }
    let enabled =
        |point: Point, name: &str| listed.iter().any(|pp| pp.point == point && pp.name == name);
    let args_of = |name: &str| {
        p.plugin_config
            .iter()
            .enumerate()
            .find(|(_, pc)| pc.name == name)
            .map(|(j, pc)| {
                (
                    child(&index(&child(&path, "pluginConfig"), j), "args"),
                    &pc.args,
                )
            })
    };
    let mut policy = Policy {
        predicates: Vec::new(),
        priorities: Vec::new(),
        always_check_all_predicates: false,
        hard_pod_affinity_symmetric_weight: 1,
        extenders: Vec::new(),
    };
    let mut topology_spread: Option<TopologySpreadWiring> = None;
    let mut resource_scoring = None;
    for pp in listed.iter().filter(|pp| pp.point == Point::Filter) {
        let Some(plugin) = plugins::lookup(&pp.name) else {
            continue;
        };
        match plugin.filter {
            Some(Filter::Predicate(pred)) => policy.predicates.push(PredicateConfig {
                name: pp.name.clone(),
                kind: PredicateKind::Builtin(pred),
            }),
            // The engine's PodTopologySpread filter unit; its args (default constraints) reach
            // the engine from `CompiledProfile::topology_spread` (see the scheduling loop).
            Some(Filter::TopologySpread) => {
                policy.predicates.push(PredicateConfig {
                    name: pp.name.clone(),
                    kind: PredicateKind::Builtin(
                        crate::predicates::PredicateName::PodTopologySpread,
                    ),
                });
                topology_spread
                    .get_or_insert_with(|| spread(args_of("PodTopologySpread")))
                    .filter = true
            }
            Some(Filter::Nothing) | None => {}
        }
    }
    for pp in listed.iter().filter(|pp| pp.point == Point::Score) {
        let Some(plugin) = plugins::lookup(&pp.name) else {
            continue;
        };
        let weight = pp.weight;
        let prio = match plugin.score {
            Some(Score::Priority(prio)) => prio,
            Some(Score::ResourcesFit) => match resources_fit_priority(args_of(&pp.name)) {
                Ok(prio) => prio,
                Err(scoring) => {
                    resource_scoring = Some(scoring);
                    PriorityName::NodeResourcesFit
                }
            },
            // The engine's PodTopologySpread score unit, weighted as any plugin.
            Some(Score::TopologySpread) => {
                topology_spread
                    .get_or_insert_with(|| spread(args_of("PodTopologySpread")))
                    .weight = pp.weight;
                crate::priorities::PriorityName::PodTopologySpread
            }
            Some(Score::Uniform) | None => continue,
        };
        policy.priorities.push(PriorityConfig {
            name: pp.name.clone(),
            weight,
            kind: PriorityKind::Builtin(prio),
        });
    }
    let mut plugin_args = PluginArgs {
        resource_scoring,
        ..PluginArgs::default()
    };
    if let Some((
        _,
        Args::InterPodAffinity {
            hard_pod_affinity_weight,
            ignore_preferred_terms_of_existing_pods,
        },
    )) = args_of("InterPodAffinity")
    {
        policy.hard_pod_affinity_symmetric_weight = *hard_pod_affinity_weight as i32;
        plugin_args.ignore_preferred_terms_of_existing_pods =
            *ignore_preferred_terms_of_existing_pods;
    }
    // NodeAffinity's addedAffinity applies where the plugin runs: its filter and its score.
    if let Some((_, Args::NodeAffinity { added_affinity })) = args_of("NodeAffinity") {
        if enabled(Point::Filter, "NodeAffinity") || enabled(Point::Score, "NodeAffinity") {
            plugin_args.added_affinity = added_affinity.clone();
        }
    }
    if let Some((
        _,
        Args::NodeResourcesFit {
            ignored_resources,
            ignored_resource_groups,
            ..
        },
    )) = args_of("NodeResourcesFit")
    {
        plugin_args.ignored_resources = ignored_resources.clone();
        plugin_args.ignored_resource_groups = ignored_resource_groups.clone();
    }
    let min_candidate_nodes = match args_of("DefaultPreemption") {
        Some((
            _,
            Args::DefaultPreemption {
                min_candidate_nodes_percentage,
                min_candidate_nodes_absolute,
            },
        )) => (
            *min_candidate_nodes_percentage,
            *min_candidate_nodes_absolute,
        ),
        _ => (10, 100),
    };
    plugin_args.min_candidate_nodes = Some(min_candidate_nodes);
    let percentage = p
        .percentage_of_nodes_to_score
        .unwrap_or(c.percentage_of_nodes_to_score)
        .clamp(0, 100) as u32;
    Ok(CompiledProfile {
        scheduler_name: p.scheduler_name.clone(),
        preemption: enabled(Point::PostFilter, "DefaultPreemption"),
        scheduling_gates: enabled(Point::PreEnqueue, "SchedulingGates"),
        dynamic_resources: enabled(Point::PostFilter, "DynamicResources"),
        policy,
        percentage_of_nodes_to_score: percentage,
        min_candidate_nodes,
        topology_spread,
        plugin_args,
        backoff_seconds: (c.pod_initial_backoff_seconds, c.pod_max_backoff_seconds),
        plugins: listed,
    })
}

fn spread(args: Option<(String, &Args)>) -> TopologySpreadWiring {
    let (default_constraints, defaulting_type) = match args {
        Some((
            _,
            Args::PodTopologySpread {
                default_constraints,
                defaulting_type,
            },
        )) => (default_constraints.clone(), defaulting_type.clone()),
        _ => (Vec::new(), "System".to_string()),
    };
    TopologySpreadWiring {
        filter: false,
        weight: 0,
        default_constraints,
        defaulting_type,
    }
}

/// NodeResourcesFit's score: the engine's fused resource score of its strategy when that computes
/// it (cpu and memory with equal weights, LeastAllocated or MostAllocated, which the fused pass
/// scores with 1.35's formulas on a profile's scale), else the strategy over its weighted
/// resources for the `NodeResourcesFit` priority.
fn resources_fit_priority(args: Option<(String, &Args)>) -> Result<PriorityName, ResourceScoring> {
    let Some((
        _,
        Args::NodeResourcesFit {
            scoring_strategy, ..
        },
    )) = args
    else {
        return Ok(PriorityName::LeastRequestedPriority);
    };
    let s = scoring_strategy;
    let cpu_and_memory = s.resources.len() == 2
        && s.resources
            .iter()
            .all(|r| (r.name == "cpu" || r.name == "memory") && r.weight == s.resources[0].weight)
        && s.resources[0].name != s.resources[1].name;
    let strategy = match s.type_.as_str() {
        "LeastAllocated" if cpu_and_memory => return Ok(PriorityName::LeastRequestedPriority),
        "MostAllocated" if cpu_and_memory => return Ok(PriorityName::MostRequestedPriority),
        "MostAllocated" => Strategy::MostAllocated,
        "RequestedToCapacityRatio" => Strategy::RequestedToCapacityRatio(
            // upstream scales the file's 0..10 scores to 0..100 (MaxNodeScore / MaxCustomPriorityScore).
            s.shape
                .iter()
                .flatten()
                .map(|p| (p.utilization, p.score * SHAPE_SCORE_SCALE))
                .collect(),
        ),
        _ => Strategy::LeastAllocated,
    };
    Err(ResourceScoring {
        strategy,
        resources: s
            .resources
            .iter()
            .map(|r| (r.name.clone(), r.weight))
            .collect(),
    })
}
