//! Per-plugin durations for upstream's `scheduler_plugin_execution_duration_seconds`.
//!
//! The decision path runs the predicates fused per node and the resource priorities in one
//! pass (and mostly from memo), so it has no per-plugin time to report and must not pay for
//! measuring one. Upstream measures plugins only in a sample of its scheduling cycles; a
//! sampled cycle here runs, after the decision, each Filter plugin on each of the first
//! [`SAMPLED_NODES`] nodes and each Score plugin on each of those that pass, and reports one
//! duration per call, as upstream's framework observes one per node and plugin. The engine reads
//! no clock: the caller hands it `elapsed`, a monotonic reading.

use super::{PodCtx, Scheduler};
use crate::cache::ClusterCache;
use crate::pod_info::PodInfo;
use crate::predicates::NodeView;
use crate::priorities::unit::Hot;
use std::sync::Arc;
use std::time::Duration;

/// The nodes a sampled cycle times its plugins on: upstream's minimum of nodes to find
/// feasible (100), so the sample costs at most what a cycle on 100 nodes costs.
pub const SAMPLED_NODES: usize = 100;

/// One plugin call's duration, labelled as upstream's metric.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginSample {
    /// The plugin's name in profiles (`NodeResourcesFit`), or the policy file's predicate or
    /// priority name where no plugin has its semantics.
    pub plugin: Arc<str>,
    /// `Filter` or `Score`.
    pub extension_point: &'static str,
    /// Upstream's status code: `Success`, `Unschedulable`, `UnschedulableAndUnresolvable`,
    /// `Error`.
    pub status: &'static str,
    /// How long the call took.
    pub duration: Duration,
}

/// The profile plugin with a legacy unit's semantics (`config/plugins.rs` maps them the other
/// way); units no plugin has keep their policy names.
fn plugin_of(unit: &str) -> &str {
    match unit {
        "CheckNodeUnschedulable" => "NodeUnschedulable",
        "HostName" => "NodeName",
        "PodToleratesNodeTaints" | "TaintTolerationPriority" => "TaintToleration",
        "MatchNodeSelector" | "NodeAffinityPriority" => "NodeAffinity",
        "PodFitsHostPorts" => "NodePorts",
        "PodFitsResources" | "LeastRequestedPriority" | "MostRequestedPriority" => {
            "NodeResourcesFit"
        }
        "NoDiskConflict" => "VolumeRestrictions",
        "MaxCSIVolumeCountPred" => "NodeVolumeLimits",
        "CheckVolumeBinding" => "VolumeBinding",
        "NoVolumeZoneConflict" => "VolumeZone",
        "MatchInterPodAffinity" | "InterPodAffinityPriority" => "InterPodAffinity",
        "BalancedResourceAllocation" => "NodeResourcesBalancedAllocation",
        "ImageLocalityPriority" => "ImageLocality",
        other => other,
    }
}

impl Scheduler {
    /// Times each Filter and Score plugin of `pod`'s cycle on up to [`SAMPLED_NODES`] nodes,
    /// one [`PluginSample`] per call; `elapsed` is a monotonic clock reading. Changes no
    /// state a decision depends on.
    pub fn sample_plugins(
        &mut self,
        cache: &ClusterCache,
        pod: &PodInfo,
        elapsed: &dyn Fn() -> Duration,
    ) -> Vec<PluginSample> {
        let mut out = Vec::new();
        let units = self.take_units(pod);
        let mut counts = std::mem::take(&mut self.counts);
        if let Ok(ctx) = self.prepare(&units.preds, cache, pod) {
            sample(&ctx, &units, &mut counts, elapsed, &mut out);
        }
        self.put_units(units);
        self.counts = counts;
        out
    }
}

fn sample(
    ctx: &PodCtx,
    units: &super::Units,
    counts: &mut Vec<i64>,
    elapsed: &dyn Fn() -> Duration,
    out: &mut Vec<PluginSample>,
) {
    let filters: Vec<Arc<str>> = units
        .preds
        .iter()
        .map(|p| Arc::from(plugin_of(&format!("{:?}", p.name))))
        .collect();
    let mut feasible = Vec::new();
    let mut reasons = Vec::new();
    for ix in 0..ctx.cache.nodes.len().min(SAMPLED_NODES) as u32 {
        let view = NodeView {
            info: &ctx.cache.nodes[ix as usize],
            ix,
            added: &[],
        };
        let mut fits = true;
        for (p, plugin) in units.preds.iter().zip(&filters) {
            reasons.clear();
            let start = elapsed();
            let r = p.check(ctx, &view, &mut reasons);
            let took = elapsed().saturating_sub(start);
            let status = match r {
                Ok(true) => "Success",
                Ok(false) if reasons.iter().all(|r| r.resolvable()) => "Unschedulable",
                Ok(false) => "UnschedulableAndUnresolvable",
                Err(_) => "Error",
            };
            out.push(PluginSample {
                plugin: plugin.clone(),
                extension_point: "Filter",
                status,
                duration: took,
            });
            if status != "Success" {
                // Upstream's framework stops at the first plugin that rejects a node.
                fits = false;
                break;
            }
        }
        if fits {
            feasible.push(ix);
        }
    }
    let mut raw = [0i64];
    for (p, _, _) in &units.prios {
        let plugin: Arc<str> = Arc::from(plugin_of(&format!("{:?}", p.name)));
        for &ix in &feasible {
            let start = elapsed();
            match p.name.unit().hot {
                Some(Hot::Least) => {
                    std::hint::black_box(crate::priorities::least_requested(
                        ctx.pod,
                        &ctx.cache.hot[ix as usize],
                    ));
                }
                Some(Hot::Most) => {
                    std::hint::black_box(crate::priorities::most_requested(
                        ctx.pod,
                        &ctx.cache.hot[ix as usize],
                    ));
                }
                Some(Hot::Balanced) => {
                    std::hint::black_box(crate::priorities::balanced(
                        ctx.pod,
                        &ctx.cache.hot[ix as usize],
                    ));
                }
                None => p.score(ctx, &[ix], counts, &mut raw),
            }
            out.push(PluginSample {
                plugin: plugin.clone(),
                extension_point: "Score",
                status: "Success",
                duration: elapsed().saturating_sub(start),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_units_are_labelled_by_the_plugin_with_their_semantics() {
        assert_eq!(plugin_of("PodFitsResources"), "NodeResourcesFit");
        assert_eq!(plugin_of("LeastRequestedPriority"), "NodeResourcesFit");
        assert_eq!(plugin_of("PodToleratesNodeTaints"), "TaintToleration");
        assert_eq!(
            plugin_of("BalancedResourceAllocation"),
            "NodeResourcesBalancedAllocation"
        );
        // A policy-only predicate keeps its policy name.
        assert_eq!(
            plugin_of("CheckNodeLabelPresence"),
            "CheckNodeLabelPresence"
        );
    }

    #[test]
    fn a_sampled_cycle_times_each_filter_per_node_and_scores_the_nodes_that_pass() {
        use crate::testutil::*;
        use crate::{ClusterCache, Scheduler};
        let mut cache = ClusterCache::new();
        cache.upsert_node(&simple_node("small", "100m", "1Gi", 10));
        cache.upsert_node(&simple_node("big", "4000m", "1Gi", 10));
        let p = cache.compile_pod(&pod(serde_json::json!({
            "metadata": {"name": "p", "uid": "p"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
        })));
        let mut s = Scheduler::builder().build().unwrap();
        let ticks = std::cell::Cell::new(0u64);
        let elapsed = || {
            ticks.set(ticks.get() + 1);
            Duration::from_micros(ticks.get())
        };
        let samples = s.sample_plugins(&cache, &p, &elapsed);
        let fit: Vec<_> = samples
            .iter()
            // The default policy's resources check: GeneralPredicates, which no plugin has.
            .filter(|s| &*s.plugin == "GeneralPredicates" && s.extension_point == "Filter")
            .map(|s| s.status)
            .collect();
        // Insufficient cpu can be resolved by preemption: Unschedulable, not Unresolvable.
        assert_eq!(fit, ["Unschedulable", "Success"]);
        // Every call took one tick of the injected clock.
        assert!(samples
            .iter()
            .all(|s| s.duration == Duration::from_micros(1)));
        // Only the node that passed is scored, once per Score plugin.
        let scored: Vec<_> = samples
            .iter()
            .filter(|s| s.extension_point == "Score")
            .collect();
        assert!(!scored.is_empty());
        assert!(scored.iter().all(|s| s.status == "Success"));
        let least = scored
            .iter()
            .filter(|s| &*s.plugin == "NodeResourcesFit")
            .count();
        assert_eq!(least, 1);
        // Sampling changed nothing the decision reads.
        assert!(
            matches!(s.schedule(&cache, &p), crate::Decision::Scheduled { node, .. } if node == "big")
        );
    }
}
