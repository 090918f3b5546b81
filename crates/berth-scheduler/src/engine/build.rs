//! `Scheduler::builder()`: turns a policy into the ordered predicate and priority lists.

use super::Scheduler;
use crate::plugin_args::PluginArgs;
use crate::policy::{Policy, PredicateKind, PriorityKind};
use crate::predicates::{Pred, PredicateName};
use crate::priorities::{pod_topology_spread_priority, Prio, PriorityName, ScoreScale};
use crate::topology_spread::TopologySpreadArgs;
use rand::SeedableRng;
use thiserror::Error;

/// Errors from [`SchedulerBuilder::build`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BuildError {
    /// hardPodAffinitySymmetricWeight outside 1..100.
    #[error("invalid hardPodAffinitySymmetricWeight: {0}, must be in the range 1-100")]
    HardPodAffinityWeight(i32),
    /// A priority weight ≤ 0.
    #[error("Priority {0} should have a positive weight applied to it or it has overflown")]
    Weight(String),
}

/// Builds a [`Scheduler`]; defaults: the default policy, seed 0, score every node.
#[derive(Debug, Clone)]
pub struct SchedulerBuilder {
    policy: Option<Policy>,
    seed: u64,
    percentage: u32,
    max_pd_vols: Option<i64>,
    parallel_threshold: usize,
    memo: bool,
    incremental: bool,
    spread_args: TopologySpreadArgs,
    plugin_args: PluginArgs,
    framework: bool,
}

impl Default for SchedulerBuilder {
    fn default() -> Self {
        SchedulerBuilder {
            policy: None,
            seed: 0,
            percentage: 100,
            max_pd_vols: None,
            parallel_threshold: 4096,
            memo: true,
            incremental: true,
            spread_args: TopologySpreadArgs::none(),
            plugin_args: PluginArgs::default(),
            framework: false,
        }
    }
}

impl SchedulerBuilder {
    /// The policy (default: [`Policy::default_policy`]).
    pub fn policy(mut self, p: Policy) -> Self {
        self.policy = Some(p);
        self
    }
    /// Seed of the tie-breaking RNG.
    pub fn seed(mut self, s: u64) -> Self {
        self.seed = s;
        self
    }
    /// `percentageOfNodesToScore`: 100 (default) evaluates every node; 1..99 stops filtering after
    /// `max(100, N*p/100)` feasible nodes; 0 is the adaptive 1.14+ rule.
    pub fn percentage_of_nodes_to_score(mut self, p: u32) -> Self {
        self.percentage = p;
        self
    }
    /// `KUBE_MAX_PD_VOLS`: overrides the default attach limits of the volume-count predicates.
    pub fn max_pd_vols(mut self, v: Option<i64>) -> Self {
        self.max_pd_vols = v.filter(|v| *v > 0);
        self
    }
    /// Node count from which filtering is split over rayon (default 4096; `usize::MAX` disables).
    pub fn parallel_threshold(mut self, n: usize) -> Self {
        self.parallel_threshold = n;
        self
    }

    /// Reuse per-node results across pods of the same shape (default on). Off: every decision
    /// evaluates every node (the reference path, for tests and measurements).
    pub fn reuse_across_pods(mut self, on: bool) -> Self {
        self.memo = on;
        self
    }
    /// Maintain reused results incrementally from the cache's change log (default on; needs
    /// `reuse_across_pods`).
    pub fn incremental(mut self, on: bool) -> Self {
        self.incremental = on;
        self
    }

    /// PodTopologySpread's arguments (default: none, as under a policy file, where only the
    /// constraints written on pods apply). A KubeSchedulerConfiguration profile sets its
    /// `PodTopologySpreadArgs` here.
    pub fn topology_spread_args(mut self, args: TopologySpreadArgs) -> Self {
        self.spread_args = args;
        self
    }

    /// A KubeSchedulerConfiguration profile's plugin arguments (default: none, as under a
    /// policy file). Pods are compiled for the profile with [`PluginArgs::compile_pod`].
    pub fn plugin_args(mut self, args: PluginArgs) -> Self {
        self.plugin_args = args;
        self
    }

    /// Runs a KubeSchedulerConfiguration profile (`config::CompiledProfile::policy`) instead of
    /// a seed Policy: no mandatory `CheckNodeCondition` (1.35 filters not-ready nodes by their
    /// taints), `hardPodAffinityWeight` may be 0 as InterPodAffinityArgs allow, and the
    /// priorities score 0..100 with 1.35's plugin formulas ([`ScoreScale::Plugin`]); the
    /// weights are the profile's own.
    pub fn framework_profile(mut self, on: bool) -> Self {
        self.framework = on;
        self
    }

    /// Validates and builds.
    pub fn build(self) -> Result<Scheduler, BuildError> {
        let policy = self.policy.unwrap_or_else(Policy::default_policy);
        let hw = policy.hard_pod_affinity_symmetric_weight;
        let lowest = if self.framework { 0 } else { 1 };
        if !(lowest..=100).contains(&hw) {
            return Err(BuildError::HardPodAffinityWeight(hw));
        }
        let mut arg_labels: Vec<Vec<String>> = Vec::new();
        let mut preds: Vec<Pred> = Vec::new();
        for p in policy.ordered_predicates() {
            let mandatory =
                p.kind == PredicateKind::Builtin(crate::policy::PredicateName::CheckNodeCondition);
            if self.framework && mandatory && !policy.predicates.contains(p) {
                continue;
            }
            let mut pred = Pred::of(p.kind.predicate());
            match &p.kind {
                PredicateKind::Builtin(_) => {}
                PredicateKind::LabelsPresence { labels, presence } => {
                    arg_labels.push(labels.clone());
                    pred.slot = arg_labels.len() - 1;
                    pred.presence = *presence;
                }
                PredicateKind::ServiceAffinity { labels } => {
                    arg_labels.push(labels.clone());
                    pred.slot = arg_labels.len() - 1;
                }
            }
            if !preds.contains(&pred) {
                preds.push(pred);
            }
        }
        preds.sort_by_key(|p| p.rank());
        let mut prios = Vec::new();
        for p in &policy.priorities {
            if p.weight <= 0 {
                return Err(BuildError::Weight(p.name.clone()));
            }
            let mut prio = Prio::of(p.kind.priority());
            match &p.kind {
                PriorityKind::Builtin(_) => {}
                PriorityKind::ServiceAntiAffinity { label } => {
                    arg_labels.push(vec![label.clone()]);
                    prio.slot = arg_labels.len() - 1;
                }
                PriorityKind::LabelPreference { label, presence } => {
                    arg_labels.push(vec![label.clone()]);
                    prio.slot = arg_labels.len() - 1;
                    prio.presence = *presence;
                }
            }
            prios.push((prio, p.weight, p.name.clone()));
        }
        // PodTopologySpread is honoured for pods that carry constraints even when the policy
        // does not name it (no 1.11 policy can): last among the predicates, upstream's default
        // weight among the priorities.
        let mut spread_preds = preds.clone();
        if !spread_preds
            .iter()
            .any(|p| p.name == PredicateName::PodTopologySpread)
        {
            spread_preds.push(Pred::of(PredicateName::PodTopologySpread));
            spread_preds.sort_by_key(|p| p.rank());
        }
        let mut spread_prios = prios.clone();
        if !spread_prios
            .iter()
            .any(|(p, _, _)| p.name == PriorityName::PodTopologySpread)
        {
            spread_prios.push((
                Prio::of(PriorityName::PodTopologySpread),
                pod_topology_spread_priority::IMPLICIT_WEIGHT,
                PriorityName::PodTopologySpread.unit().name.to_string(),
            ));
        }
        Ok(Scheduler {
            spread_preds,
            spread_prios,
            spread_args: self.spread_args,
            spread_memo: Default::default(),
            plugin_args: self.plugin_args,
            scale: if self.framework {
                ScoreScale::Plugin
            } else {
                ScoreScale::Priority
            },
            preds,
            prios,
            arg_labels,
            always_check_all: policy.always_check_all_predicates,
            hard_weight: hw as i64,
            percentage: self.percentage,
            max_pd_vols: self.max_pd_vols,
            parallel_threshold: self.parallel_threshold.max(2),
            rng: rand::rngs::SmallRng::seed_from_u64(self.seed),
            next_start: 0,
            scratch: Default::default(),
            counts: Vec::new(),
            memo: Default::default(),
            memo_enabled: self.memo,
            incremental: self.incremental,
            preemption_memo: Default::default(),
        })
    }
}
