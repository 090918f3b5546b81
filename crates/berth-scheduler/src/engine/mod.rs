//! The scheduling algorithm: filter (predicates) → score (priorities) → select.

mod build;

pub(crate) mod filter;
mod fit_error;
mod incremental;
mod memo;
mod plugin_samples;
#[cfg(test)]
mod tests;

pub(crate) use crate::ctx::{PodCtx, Scratch};
pub use build::{BuildError, SchedulerBuilder};
pub use fit_error::FitError;
pub use plugin_samples::PluginSample;

use crate::cache::ClusterCache;
use crate::pod_info::{CVolume, PodInfo};
use crate::predicates::{
    check_service_affinity, check_volume_binding, match_inter_pod_affinity,
    no_volume_zone_conflict, pod_topology_spread, Pred, PredicateName,
};
use crate::priorities::unit::Hot;
use crate::priorities::Prio;
use rand::Rng;
use serde::Serialize;

/// The outcome of one scheduling decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Decision {
    /// Bind the pod to `node`; `score` is its weighted total (0 when it was the only feasible node).
    Scheduled {
        /// Chosen node.
        node: String,
        /// Weighted score.
        score: i64,
        /// Nodes the filters ran on (fewer than all under `percentageOfNodesToScore`):
        /// upstream's `evaluatedNodes`.
        evaluated_nodes: usize,
        /// Nodes that passed them: upstream's `feasibleNodes`.
        feasible_nodes: usize,
    },
    /// No node fits.
    Unschedulable(FitError),
    /// The decision could not be made (no nodes, a predicate error); not a FitError, no preemption.
    Error(String),
}

/// The error when the cluster has no nodes (upstream's `ErrNoNodesAvailable`).
pub const NO_NODES_AVAILABLE: &str = "no nodes available to schedule pods";

/// A scheduler: a policy plus selection state (tie-breaking RNG, filtering start index) and
/// reusable buffers. Build with [`Scheduler::builder`].
#[derive(Debug)]
pub struct Scheduler {
    pub(crate) preds: Vec<Pred>,
    pub(crate) prios: Vec<(Prio, i64, String)>,
    pub(crate) arg_labels: Vec<Vec<String>>,
    pub(crate) always_check_all: bool,
    pub(crate) hard_weight: i64,
    percentage: u32,
    max_pd_vols: Option<i64>,
    parallel_threshold: usize,
    pub(crate) rng: rand::rngs::SmallRng,
    next_start: usize,
    pub(crate) scratch: Scratch,
    pub(crate) counts: Vec<i64>,
    memo: memo::Memo,
    pub(crate) memo_enabled: bool,
    incremental: bool,
    /// Preemption's per-node results reused across decisions (`preemption/memo.rs`).
    pub(crate) preemption_memo: crate::preemption::Memo,
    /// `preds` with PodTopologySpread added when the policy does not name it: used for pods
    /// with topology spread constraints of their own (other pods pay nothing for the feature).
    pub(crate) spread_preds: Vec<Pred>,
    /// `prios` with PodTopologySpread added likewise.
    pub(crate) spread_prios: Vec<(Prio, i64, String)>,
    /// PodTopologySpread's arguments (default constraints; none under a policy file).
    pub(crate) spread_args: crate::topology_spread::TopologySpreadArgs,
    /// PodTopologySpread's domain counts kept across decisions, for its filter (prepare) and
    /// its score (a lock, as the score reads it through the shared decision context).
    pub(crate) spread_memo: std::sync::Mutex<crate::spread_domains::SpreadMemo>,
    /// A profile's plugin arguments (`plugin_args.rs`; none under a policy file).
    pub(crate) plugin_args: crate::plugin_args::PluginArgs,
    /// The priorities' scale (0..10 under a policy file, 0..100 under a profile).
    pub(crate) scale: crate::priorities::ScoreScale,
}

/// The predicates and priorities one decision runs, taken out of the scheduler and put back
/// after it (see [`Scheduler::take_units`]).
pub(crate) struct Units {
    pub preds: Vec<Pred>,
    pub prios: Vec<(Prio, i64, String)>,
    spread: bool,
}

/// A pending pod nominated to a node (from preemption), considered by the two-pass filter.
#[derive(Debug, Clone, Copy)]
pub struct Nominated<'a> {
    /// The nominated pod.
    pub pod: &'a PodInfo,
    /// The node it is nominated to.
    pub node: &'a str,
}

impl Scheduler {
    /// A builder with defaults.
    pub fn builder() -> SchedulerBuilder {
        SchedulerBuilder::default()
    }

    /// The scale its priorities score on (0..10 under a policy file, 0..100 under a profile).
    pub fn score_scale(&self) -> crate::priorities::ScoreScale {
        self.scale
    }

    /// The profile's plugin arguments; compile the pods it schedules with
    /// [`crate::PluginArgs::compile_pod`].
    pub fn plugin_args(&self) -> &crate::plugin_args::PluginArgs {
        &self.plugin_args
    }

    /// `numFeasibleNodesToFind` for `n` nodes under the configured percentage.
    pub fn num_feasible_nodes_to_find(&self, n: usize) -> usize {
        if n < 100 || self.percentage >= 100 {
            return n;
        }
        let p = if self.percentage > 0 {
            self.percentage as usize
        } else {
            50usize.saturating_sub(n / 125).max(5)
        };
        (n * p / 100).max(100)
    }

    /// The units for `pod`: the configured ones, or with PodTopologySpread added for a pod with
    /// topology spread constraints. Put them back with [`Scheduler::put_units`].
    pub(crate) fn take_units(&mut self, pod: &PodInfo) -> Units {
        let spread = !pod.spread.is_empty();
        let (preds, prios) = if spread {
            (&mut self.spread_preds, &mut self.spread_prios)
        } else {
            (&mut self.preds, &mut self.prios)
        };
        Units {
            preds: std::mem::take(preds),
            prios: std::mem::take(prios),
            spread,
        }
    }

    /// Puts back units taken with [`Scheduler::take_units`].
    pub(crate) fn put_units(&mut self, u: Units) {
        if u.spread {
            self.spread_preds = u.preds;
            self.spread_prios = u.prios;
        } else {
            self.preds = u.preds;
            self.prios = u.prios;
        }
    }

    pub(crate) fn prepare<'a>(
        &'a mut self,
        preds: &[Pred],
        cache: &'a ClusterCache,
        pod: &'a PodInfo,
    ) -> Result<PodCtx<'a>, String> {
        let i = &cache.interner;
        let has_pred = |p: fn(&Pred) -> bool| preds.iter().any(p);
        self.scratch
            .reset(cache.nodes.len(), !pod.affinity.is_empty());
        let (all_terms, first_pod) = if has_pred(|p| p.name == PredicateName::MatchInterPodAffinity)
        {
            match_inter_pod_affinity::prepare(cache, pod, &mut self.scratch)?
        } else {
            (0, false)
        };
        let spread = if has_pred(|p| p.name == PredicateName::PodTopologySpread)
            && (!pod.spread.is_empty() || self.spread_args.has_hard_defaults())
        {
            let memo = self
                .spread_memo
                .get_mut()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            pod_topology_spread::prepare(cache, pod, &self.spread_args, memo)
        } else {
            Default::default()
        };
        let has_vols = !pod.volumes.is_empty();
        let zones = if has_vols && has_pred(|p| p.name == PredicateName::NoVolumeZoneConflict) {
            no_volume_zone_conflict::prepare(cache, pod)
        } else {
            Default::default()
        };
        let binding = if has_vols && has_pred(|p| p.name == PredicateName::CheckVolumeBinding) {
            check_volume_binding::prepare(cache, pod)
        } else {
            Default::default()
        };
        if let Some(e) = &binding.error {
            return Err(e.clone());
        }
        let label_args: Vec<Vec<Option<crate::intern::Sym>>> = self
            .arg_labels
            .iter()
            .map(|ls| ls.iter().map(|l| i.get(l)).collect())
            .collect();
        let service_affinity = self
            .arg_labels
            .iter()
            .enumerate()
            .map(|(slot, _)| {
                if preds
                    .iter()
                    .any(|p| p.name == PredicateName::CheckServiceAffinity && p.slot == slot)
                {
                    check_service_affinity::prepare(cache, pod, &label_args[slot])
                } else {
                    Vec::new()
                }
            })
            .collect();
        let mut csi_drivers = Vec::new();
        for v in &pod.volumes {
            if let CVolume::Csi { driver, .. } = v {
                if !csi_drivers.contains(driver) {
                    csi_drivers.push(*driver);
                }
            }
        }
        let csi_limits = csi_drivers
            .iter()
            .map(|d| i.get(&format!("attachable-volumes-csi-{}", i.resolve(*d))))
            .collect();
        let attach = if has_vols {
            cache.attach_ids(pod)
        } else {
            Vec::new()
        };
        Ok(PodCtx {
            pod,
            cache,
            i,
            affinity: match_inter_pod_affinity::State {
                flagged: &self.scratch.flagged,
                flags: &self.scratch.aff_flags,
                sat: &self.scratch.aff_sat,
                all_terms,
                first_pod,
            },
            zones,
            binding,
            attach,
            max_pd_vols: self.max_pd_vols,
            label_args,
            hard_weight: self.hard_weight,
            csi_drivers,
            csi_limits,
            service_affinity,
            spread,
            spread_args: &self.spread_args,
            spread_memo: &self.spread_memo,
            plugin_args: &self.plugin_args,
            scale: self.scale,
        })
    }

    /// Schedules `pod` (compiled with [`ClusterCache::compile_pod`]) against the cache.
    pub fn schedule(&mut self, cache: &ClusterCache, pod: &PodInfo) -> Decision {
        self.schedule_with_nominated(cache, pod, &[])
    }

    /// Schedules with nominated pods taken into account (two-pass rule, scheduler.md §2.3).
    pub fn schedule_with_nominated(
        &mut self,
        cache: &ClusterCache,
        pod: &PodInfo,
        nominated: &[Nominated],
    ) -> Decision {
        if cache.order.is_empty() {
            return Decision::Error(NO_NODES_AVAILABLE.into());
        }
        let n = cache.order.len();
        let to_find = self.num_feasible_nodes_to_find(n);
        let start = if to_find < n { self.next_start % n } else { 0 };
        let parallel = to_find == n && n >= self.parallel_threshold;
        let always = self.always_check_all;
        let units = self.take_units(pod);
        let (preds, prios) = (&units.preds, &units.prios);
        let mut counts = std::mem::take(&mut self.counts);
        let mut memo = std::mem::take(&mut self.memo);
        let (memo_enabled, incremental) = (self.memo_enabled, self.incremental);
        let mut rng = std::mem::replace(&mut self.rng, rand::SeedableRng::seed_from_u64(0));
        let result = (|| {
            let ctx = self.prepare(preds, cache, pod).map_err(Decision::Error)?;
            if memo_enabled && to_find == n && nominated.is_empty() && ctx.affinity.all_terms == 0 {
                if let Some((plan, weights, constant)) = memo_plan(&ctx, preds, prios, incremental)
                {
                    if incremental {
                        let key = memo::MemoKey::new(&ctx, plan, weights);
                        let (r, chosen) = incremental::run(
                            &ctx,
                            preds,
                            always,
                            plan,
                            key,
                            weights,
                            &mut memo.inc,
                            &mut rng,
                        )
                        .map_err(Decision::Error)?;
                        let feasible = n.saturating_sub(r.failed.len());
                        return match chosen {
                            None => {
                                Err(Decision::Unschedulable(FitError::new(cache, n, &r.failed)))
                            }
                            Some((ix, true)) => Ok((ix, 0, n, feasible)),
                            Some((ix, false)) => Ok((ix, r.max + constant, n, feasible)),
                        };
                    }
                    let r = memo::run(&ctx, preds, always, plan, weights, &mut memo)
                        .map_err(Decision::Error)?;
                    if memo.feasible.is_empty() {
                        return Err(Decision::Unschedulable(FitError::new(cache, n, &r.failed)));
                    }
                    if memo.feasible.len() == 1 {
                        return Ok((memo.feasible[0], 0, n, 1));
                    }
                    let k = if r.ties > 1 {
                        rng.random_range(0..r.ties)
                    } else {
                        0
                    };
                    let pos = memo
                        .scores
                        .iter()
                        .enumerate()
                        .filter(|(_, s)| **s == r.max)
                        .nth(k)
                        .map_or(0, |(j, _)| j);
                    return Ok((memo.feasible[pos], r.max + constant, n, memo.feasible.len()));
                }
            }
            let f = filter::run(&ctx, preds, always, nominated, start, to_find, parallel)
                .map_err(Decision::Error)?;
            if f.feasible.is_empty() {
                return Err(Decision::Unschedulable(FitError::new(cache, n, &f.failed)));
            }
            if f.feasible.len() == 1 {
                return Ok((f.feasible[0], 0, f.visited, 1));
            }
            let totals = score_all(&ctx, prios, &f.feasible, &mut counts);
            let max = totals.iter().copied().max().unwrap_or(0);
            let chosen = pick(&mut rng, &f.feasible, &totals, max);
            Ok((chosen, max, f.visited, f.feasible.len()))
        })();
        self.put_units(units);
        self.counts = counts;
        self.memo = memo;
        self.rng = rng;
        match result {
            Ok((node, score, visited, feasible)) => {
                if to_find < n {
                    self.next_start = (start + visited) % n;
                }
                Decision::Scheduled {
                    node: cache.nodes[node as usize].name.clone(),
                    score,
                    evaluated_nodes: visited,
                    feasible_nodes: feasible,
                }
            }
            Err(d) => d,
        }
    }
}

/// The memo path applies when the fast filter plan exists and every priority is uniform for this
/// pod or one of the resource priorities; returns (plan, (least, most, balanced) weights,
/// constant from the uniform priorities).
fn memo_plan(
    ctx: &PodCtx,
    preds: &[Pred],
    prios: &[(Prio, i64, String)],
    incremental: bool,
) -> Option<(filter::FastPlan, (i64, i64, i64), i64)> {
    if prios.is_empty() {
        return None;
    }
    // Topology spread is decided per domain by the incremental layer, which needs every node to
    // carry the constraints' keys (a node without one fails with its own reason).
    let spread = incremental && {
        let nodes = ctx.cache.order.len() as u32;
        ctx.spread
            .constraints
            .iter()
            .all(|c| ctx.cache.key_nodes.get(&c.key).copied().unwrap_or(0) == nodes)
    };
    let plan = filter::plan_for(ctx, preds, &[], spread)?;
    let (mut w, mut constant) = ((0, 0, 0), 0);
    for (p, weight, _) in prios {
        match p.name.unit().hot {
            Some(Hot::Least) => w.0 += weight,
            Some(Hot::Most) => w.1 += weight,
            Some(Hot::Balanced) => w.2 += weight,
            None => constant += p.uniform(ctx)? * weight,
        }
    }
    Some((plan, w, constant))
}

/// Weighted totals per feasible node.
pub(crate) fn score_all(
    ctx: &PodCtx,
    prios: &[(Prio, i64, String)],
    feasible: &[u32],
    counts: &mut Vec<i64>,
) -> Vec<i64> {
    let mut totals = vec![0i64; feasible.len()];
    if prios.is_empty() {
        totals.fill(1);
        return totals;
    }
    let mut raw = Vec::new();
    let mut constant = 0i64;
    let (mut least, mut most, mut balanced) = (0i64, 0i64, 0i64);
    for (p, w, _) in prios {
        if let Some(u) = p.uniform(ctx) {
            constant += u * w;
            continue;
        }
        match p.name.unit().hot {
            Some(Hot::Least) => least += w,
            Some(Hot::Most) => most += w,
            Some(Hot::Balanced) => balanced += w,
            None => {
                raw.resize(feasible.len(), 0);
                p.score(ctx, feasible, counts, &mut raw);
                for (t, r) in totals.iter_mut().zip(&raw) {
                    *t += r * w;
                }
            }
        }
    }
    // the resource priorities in one pass over the dense node data
    if least != 0 || most != 0 || balanced != 0 {
        let hot = &ctx.cache.hot;
        let w = (least, most, balanced);
        for (t, &ix) in totals.iter_mut().zip(feasible) {
            *t += constant + memo::fused(ctx, w, &hot[ix as usize]);
        }
    } else if constant != 0 {
        totals.iter_mut().for_each(|t| *t += constant);
    }
    totals
}

fn pick(rng: &mut rand::rngs::SmallRng, feasible: &[u32], totals: &[i64], max: i64) -> u32 {
    let ties = totals.iter().filter(|t| **t == max).count();
    let k = if ties > 1 {
        rng.random_range(0..ties)
    } else {
        0
    };
    let pos = totals
        .iter()
        .enumerate()
        .filter(|(_, t)| **t == max)
        .nth(k)
        .map_or(0, |(j, _)| j);
    feasible[pos]
}
