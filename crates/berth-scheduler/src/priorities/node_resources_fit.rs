//! NodeResourcesFit (score) with a configured `scoringStrategy` (1.35's `resourceAllocationScorer`):
//! LeastAllocated, MostAllocated or RequestedToCapacityRatio over any weighted resources,
//! extended ones included, scoring 0..100 (upstream's scale, as every priority does under a
//! profile).
//!
//! Per resource: cpu and memory count the non-zero requests of the node's pods and of the pod
//! (100m and 200Mi for a container without requests); other resources count real requests. A
//! scalar resource (extended, hugepages, attachable volumes) the pod does not request, or one the
//! node does not offer, is left out of the mean.
//!
//! Not a 1.11 priority: no policy file names it. A KubeSchedulerConfiguration profile whose
//! strategy the legacy Least/MostRequestedPriority do not compute exactly (cpu and memory with
//! equal weights) runs it (see `config/compile.rs`).

use super::unit::{Argument, PriorityUnit};
use super::Prio;
use crate::ctx::PodCtx;
use crate::intern::Sym;
use crate::plugin_args::is_scalar_resource;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PriorityUnit = PriorityUnit {
    name: "NodeResourcesFit",
    argument: Some(Argument::Implicit),
    hot: None,
};

/// The score every node gets when it does not depend on the node: 0 without a configured
/// strategy.
pub(crate) fn uniform(c: &PodCtx, _p: &Prio) -> Option<i64> {
    c.plugin_args.resource_scoring.is_none().then_some(0)
}

/// One configured resource, resolved against the cache's symbols once per decision.
#[derive(Clone, Copy)]
enum Resource {
    Cpu,
    Memory,
    Ephemeral,
    /// A scalar resource; `None` when no object names it (allocatable 0 everywhere).
    Scalar(Option<Sym>, bool),
}

/// The registry's entry point: 0..100 per feasible node.
pub(crate) fn score_nodes(
    c: &PodCtx,
    _p: &Prio,
    feasible: &[u32],
    _counts: &mut Vec<i64>,
    out: &mut [i64],
) {
    let Some(scoring) = &c.plugin_args.resource_scoring else {
        out.fill(0);
        return;
    };
    let resources: Vec<Resource> = scoring
        .resources
        .iter()
        .map(|(name, _)| match name.as_str() {
            "cpu" => Resource::Cpu,
            "memory" => Resource::Memory,
            "ephemeral-storage" => Resource::Ephemeral,
            other => Resource::Scalar(c.i.get(other), is_scalar_resource(other)),
        })
        .collect();
    let pod = c.pod;
    let mut per_resource = vec![(0i64, 0i64); resources.len()];
    for (o, &ix) in out.iter_mut().zip(feasible) {
        let n = &c.cache.nodes[ix as usize];
        for (slot, r) in per_resource.iter_mut().zip(&resources) {
            *slot = match *r {
                Resource::Cpu => (n.nonzero.0 + pod.nonzero.0, n.alloc.cpu),
                Resource::Memory => (n.nonzero.1 + pod.nonzero.1, n.alloc.memory),
                Resource::Ephemeral => (
                    n.requested.ephemeral + pod.request.ephemeral,
                    n.alloc.ephemeral,
                ),
                Resource::Scalar(None, _) => (0, 0),
                Resource::Scalar(Some(name), scalar) => {
                    let wanted = pod.request.scalar(name);
                    if wanted == 0 && scalar {
                        (0, 0)
                    } else {
                        (n.requested.scalar(name) + wanted, n.alloc.scalar(name))
                    }
                }
            };
        }
        *o = scoring.score(&per_resource);
    }
}

#[cfg(test)]
mod tests {
    use crate::plugin_args::{PluginArgs, ResourceScoring, Strategy};
    use crate::testutil::*;
    use serde_json::{json, Value};

    fn node(name: &str, cpu: &str, mem: &str, extended: Value) -> crate::model::Node {
        let mut alloc = json!({"cpu": cpu, "memory": mem, "pods": "110"});
        for (k, v) in extended.as_object().unwrap() {
            alloc[k] = v.clone();
        }
        node_json(json!({"metadata": {"name": name}, "status": {"allocatable": alloc}}))
    }

    fn req(name: &str, node: &str, requests: Value) -> crate::model::Pod {
        let mut spec = json!({"containers": [{"name": "c", "resources": {"requests": requests}}]});
        if !node.is_empty() {
            spec["nodeName"] = json!(node);
        }
        pod(json!({"metadata": {"name": name}, "spec": spec}))
    }

    fn scores(
        strategy: Strategy,
        resources: &[(&str, i64)],
        nodes: Vec<crate::model::Node>,
        pods: Vec<crate::model::Pod>,
        p: crate::model::Pod,
    ) -> Vec<i64> {
        let args = PluginArgs {
            resource_scoring: Some(ResourceScoring {
                strategy,
                resources: resources.iter().map(|(n, w)| (n.to_string(), *w)).collect(),
            }),
            ..Default::default()
        };
        fit_scores_of(args, nodes, pods, p)
    }

    const CPU_MEM: &[(&str, i64)] = &[("cpu", 1), ("memory", 1)];

    /// upstream's `TestRequestedToCapacityRatioScoringStrategy`.
    #[test]
    fn requested_to_capacity_ratio_over_cpu_and_memory() {
        let shape = || Strategy::RequestedToCapacityRatio(vec![(0, 100), (100, 0)]);
        let nodes = |c2: &str| {
            vec![
                node("node1", "4000", "10000", json!({})),
                node("node2", c2, "10000", json!({})),
            ]
        };
        // upstream's `st.MakePod()`: no containers at all (so no non-zero defaults either)
        let empty = |n: &str, on: &str| {
            let mut spec = json!({"containers": []});
            if !on.is_empty() {
                spec["nodeName"] = json!(on);
            }
            pod(json!({"metadata": {"name": n}, "spec": spec}))
        };
        assert_eq!(
            scores(
                shape(),
                CPU_MEM,
                nodes("4000"),
                vec![empty("a", "node1"), empty("b", "node1")],
                empty("p", "")
            ),
            vec![100, 100]
        );
        let two = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "1000", "memory": "2000"}}},
            {"name": "b", "resources": {"requests": {"cpu": "2000", "memory": "3000"}}}]}}));
        assert_eq!(
            scores(
                shape(),
                CPU_MEM,
                nodes("6000"),
                vec![empty("a", "node1"), empty("b", "node1")],
                two
            ),
            vec![38, 50]
        );
        let used = |n: &str, on: &str| req(n, on, json!({"cpu": "3000", "memory": "5000"}));
        assert_eq!(
            scores(
                shape(),
                CPU_MEM,
                nodes("6000"),
                vec![used("a", "node1"), used("b", "node2")],
                empty("p", "")
            ),
            vec![38, 50]
        );
    }

    /// upstream's `TestResourceBinPackingSingleExtended` (shape 0→0, 100→1, i.e. 0..10 scaled).
    #[test]
    fn bin_packing_one_extended_resource() {
        let shape = || Strategy::RequestedToCapacityRatio(vec![(0, 0), (100, 10)]);
        let foo = &[("intel.com/foo", 1)];
        let nodes = || {
            vec![
                node("node1", "4", "10000Mi", json!({"intel.com/foo": "8"})),
                node("node2", "4", "10000Mi", json!({"intel.com/foo": "4"})),
            ]
        };
        let want2 = req("p", "", json!({"intel.com/foo": "2"}));
        let want4 = req("p", "", json!({"intel.com/foo": "4"}));
        let plain = req("e", "node1", json!({}));
        assert_eq!(
            scores(shape(), foo, nodes(), vec![], req("p", "", json!({}))),
            vec![0, 0]
        );
        assert_eq!(
            scores(shape(), foo, nodes(), vec![plain.clone()], want2.clone()),
            vec![2, 5]
        );
        let on2 = req("e", "node2", json!({"intel.com/foo": "2"}));
        assert_eq!(scores(shape(), foo, nodes(), vec![on2], want2), vec![2, 10]);
        assert_eq!(
            scores(shape(), foo, nodes(), vec![plain], want4),
            vec![5, 10]
        );
    }

    /// upstream's `TestResourceBinPackingMultipleExtended` (weights 3 and 5).
    #[test]
    fn bin_packing_two_weighted_extended_resources() {
        let shape = || Strategy::RequestedToCapacityRatio(vec![(0, 0), (100, 10)]);
        let res = &[("intel.com/foo", 3), ("intel.com/bar", 5)];
        let nodes = || {
            vec![
                node(
                    "node1",
                    "4",
                    "10000Mi",
                    json!({"intel.com/foo": "8", "intel.com/bar": "4"}),
                ),
                node(
                    "node2",
                    "4",
                    "10000Mi",
                    json!({"intel.com/foo": "4", "intel.com/bar": "8"}),
                ),
            ]
        };
        let p1 = || req("p", "", json!({"intel.com/foo": "2", "intel.com/bar": "2"}));
        assert_eq!(
            scores(shape(), res, nodes(), vec![], req("p", "", json!({}))),
            vec![0, 0]
        );
        assert_eq!(scores(shape(), res, nodes(), vec![], p1()), vec![4, 3]);
    }

    /// upstream's `TestLeastAllocatedScoringStrategy` / `TestMostAllocatedScoringStrategy`
    /// cases with weights other than one each.
    #[test]
    fn least_and_most_allocated_with_weights() {
        let nodes = || {
            vec![
                node("node1", "4000m", "10000", json!({})),
                node("node2", "6000m", "10000", json!({})),
            ]
        };
        let p = || req("p", "", json!({"cpu": "3000m", "memory": "5000"}));
        // cpu (4000-3000)*100/4000 = 25, (6000-3000)*100/6000 = 50; memory 50 both.
        assert_eq!(
            scores(
                Strategy::LeastAllocated,
                &[("cpu", 2), ("memory", 1)],
                nodes(),
                vec![],
                p()
            ),
            vec![33, 50]
        );
        // cpu 75 and 50, memory 50.
        assert_eq!(
            scores(
                Strategy::MostAllocated,
                &[("cpu", 2), ("memory", 1)],
                nodes(),
                vec![],
                p()
            ),
            vec![66, 50]
        );
        // requested above allocatable: 0 for least, capped at 100 for most.
        let big = || req("p", "", json!({"cpu": "8000m", "memory": "5000"}));
        assert_eq!(
            scores(
                Strategy::LeastAllocated,
                &[("cpu", 1), ("memory", 1)],
                nodes(),
                vec![],
                big()
            ),
            vec![25, 25]
        );
        assert_eq!(
            scores(
                Strategy::MostAllocated,
                &[("cpu", 1), ("memory", 1)],
                nodes(),
                vec![],
                big()
            ),
            vec![75, 75]
        );
    }
}
