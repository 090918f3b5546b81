//! PodTopologySpread's counting over the cluster: which nodes a constraint counts, which pods
//! it counts on them, and the constraints (own or default) that apply to a pod. The filter and
//! the score share it; the constraint types are `crate::topology_spread`'s.

use crate::cache::ClusterCache;
use crate::compiled::{tolerated, Effect, Req, Selector};
use crate::intern::Interner;
use crate::model::TopologySpreadConstraint;
use crate::node_info::NodeInfo;
use crate::pod_info::PodInfo;
use crate::topology_spread::{
    SpreadConstraint, TopologySpreadArgs, DO_NOT_SCHEDULE, SCHEDULE_ANYWAY,
};

/// The node inclusion policies: whether `node` counts for this constraint of `pod`.
pub(crate) fn includes(c: &SpreadConstraint, pod: &PodInfo, node: &NodeInfo, i: &Interner) -> bool {
    if c.honor_affinity && !super::match_node_selector::matches(pod, &node.labels, node.name_sym, i)
    {
        return false;
    }
    if c.honor_taints && node.hard_taints {
        let untolerated = node.taints.iter().any(|t| {
            matches!(t.effect, Effect::NoSchedule | Effect::NoExecute)
                && !tolerated(&pod.tolerations, t)
        });
        if untolerated {
            return false;
        }
    }
    true
}

/// True if `other` (a pod on some node) counts toward this constraint for `pod`.
#[inline]
pub(crate) fn counts(c: &SpreadConstraint, pod: &PodInfo, other: &PodInfo, i: &Interner) -> bool {
    !other.terminating && other.ns == pod.ns && c.selector.matches(&other.labels, i)
}

/// True if the node carries every constraint's topology key.
pub(crate) fn has_all_keys(node: &NodeInfo, cs: &[SpreadConstraint]) -> bool {
    cs.iter().all(|c| node.labels.has(c.key))
}

/// The constraints of one kind (`hard`: `DoNotSchedule`) that apply to `pod`, and whether they
/// are the pod's own (else defaults).
pub(crate) fn constraints(
    pod: &PodInfo,
    args: &TopologySpreadArgs,
    cache: &ClusterCache,
    hard: bool,
) -> (Vec<SpreadConstraint>, bool) {
    if !pod.spread.is_empty() {
        let own = pod.spread.iter().filter(|c| c.hard == hard).cloned();
        return (own.collect(), true);
    }
    if !args.has_defaults() {
        return (Vec::new(), false);
    }
    let wanted = if hard {
        DO_NOT_SCHEDULE
    } else {
        SCHEDULE_ANYWAY
    };
    let defaults: Vec<TopologySpreadConstraint> = args
        .defaults()
        .into_iter()
        .filter(|c| c.when_unsatisfiable == wanted)
        .collect();
    if defaults.is_empty() {
        return (Vec::new(), false);
    }
    let selector = workload_selector(pod, cache);
    if selector.reqs.is_empty() {
        return (Vec::new(), false);
    }
    let i = &cache.interner;
    let cs = defaults
        .iter()
        .map(|c| SpreadConstraint::default_with(c, &selector, i))
        .collect();
    (cs, false)
}

/// Upstream's `DefaultSelector`: every requirement of the services, replication controllers,
/// replica sets and stateful sets in the pod's namespace that select it, together (empty when
/// none selects it).
fn workload_selector(pod: &PodInfo, cache: &ClusterCache) -> Selector {
    let i = &cache.interner;
    let mut reqs: Vec<Req> = cache
        .matching_services(pod)
        .chain(
            cache
                .controllers
                .values()
                .filter(|w| w.ns == pod.ns && w.selector.matches(&pod.labels, i))
                .map(|w| &w.selector),
        )
        .flat_map(|s| s.reqs.iter().cloned())
        .collect();
    reqs.sort();
    reqs.dedup();
    Selector {
        reqs,
        nothing: false,
    }
}

/// Matching pods per node slot for one constraint (one pass over the namespace's pods).
pub(crate) fn per_node(cache: &ClusterCache, pod: &PodInfo, c: &SpreadConstraint) -> Vec<i64> {
    let mut per_slot = vec![0i64; cache.nodes.len()];
    if c.selector.nothing {
        return per_slot;
    }
    let i = &cache.interner;
    for &ix in cache.ns_pods.get(&pod.ns).into_iter().flatten() {
        if let Some(s) = cache.pod_slot(ix) {
            if let Some(n) = per_slot.get_mut(s.node as usize) {
                if self::counts(c, pod, &s.info, i) {
                    *n += 1;
                }
            }
        }
    }
    per_slot
}
