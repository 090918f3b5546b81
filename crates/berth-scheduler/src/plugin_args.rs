//! The arguments of 1.35's plugins that change what the engine computes, as a KubeSchedulerConfiguration
//! profile gives them (`config::CompiledProfile::plugin_args`). A seed Policy has none of them:
//! [`PluginArgs::default`] changes nothing.
//!
//! Two of them act on the pod before it is scheduled ([`PluginArgs::apply_to_pod`]), so that the
//! filter, the score and preemption all see the same pod: NodeAffinity's `addedAffinity` is ANDed
//! into the pod's required node affinity and appended to its preferred terms (upstream evaluates
//! it beside the pod's own), and NodeResourcesFit's `ignoredResources`/`ignoredResourceGroups`
//! drop those extended resources from the request the filter checks.

use crate::cache::ClusterCache;
use crate::compiled::NodeTerm;
use crate::model::{NodeAffinity, Pod};
use crate::pod_info::PodInfo;

/// A profile's plugin arguments the engine reads.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PluginArgs {
    /// NodeResourcesFit's `scoringStrategy`, when it is not one the legacy resource priorities
    /// compute exactly (cpu and memory with equal weights, LeastAllocated or MostAllocated).
    pub resource_scoring: Option<ResourceScoring>,
    /// NodeResourcesFit's `ignoredResources`: extended resources the filter does not check.
    pub ignored_resources: Vec<String>,
    /// NodeResourcesFit's `ignoredResourceGroups`: extended resources whose group (the part
    /// before `/`) is listed are not checked by the filter.
    pub ignored_resource_groups: Vec<String>,
    /// NodeAffinity's `addedAffinity`: node affinity every pod of the profile also has.
    pub added_affinity: Option<NodeAffinity>,
    /// InterPodAffinity's `ignorePreferredTermsOfExistingPods`: the score is skipped for a pod
    /// without preferred (anti-)affinity terms of its own.
    pub ignore_preferred_terms_of_existing_pods: bool,
    /// DefaultPreemption's `(minCandidateNodesPercentage, minCandidateNodesAbsolute)`: preemption
    /// examines candidates from a random offset until it found that many. `None` (a Policy):
    /// every candidate, in name order.
    pub min_candidate_nodes: Option<(i64, i64)>,
}

/// NodeResourcesFit's scoring strategy over weighted resources (upstream's
/// `resourceAllocationScorer`): scores 0..100.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceScoring {
    /// How one resource's requested/allocatable becomes a score.
    pub strategy: Strategy,
    /// `resources`: `(name, weight)`.
    pub resources: Vec<(String, i64)>,
}

/// `scoringStrategy.type`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Strategy {
    /// `LeastAllocated`: `(allocatable - requested) * 100 / allocatable`.
    LeastAllocated,
    /// `MostAllocated`: `requested * 100 / allocatable` (requested capped at allocatable).
    MostAllocated,
    /// `RequestedToCapacityRatio`: the shape's broken line over utilization (0..100), its
    /// points' scores (0..10 in the file) multiplied by 10 as upstream does.
    RequestedToCapacityRatio(Vec<(i64, i64)>),
}

impl PluginArgs {
    /// True if the pod needs no change ([`PluginArgs::apply_to_pod`] would return it as is).
    fn changes_pods(&self) -> bool {
        self.added_affinity.is_some()
            || !self.ignored_resources.is_empty()
            || !self.ignored_resource_groups.is_empty()
    }

    /// Compiles `pod` for this profile: [`ClusterCache::compile_pod`], then `addedAffinity` and
    /// the ignored resources applied.
    pub fn compile_pod(&self, cache: &mut ClusterCache, pod: &Pod) -> PodInfo {
        let mut info = cache.compile_pod(pod);
        if self.changes_pods() {
            self.apply_to_pod(cache, &mut info);
        }
        info
    }

    /// Applies `addedAffinity` and the ignored resources to a compiled pod.
    pub(crate) fn apply_to_pod(&self, cache: &mut ClusterCache, info: &mut PodInfo) {
        if let Some(added) = &self.added_affinity {
            let i = &mut cache.interner;
            if let Some(required) = &added.required_during_scheduling_ignored_during_execution {
                info.enforced_node_terms = Some(
                    required
                        .node_selector_terms
                        .iter()
                        .map(|t| NodeTerm::compile(t, i))
                        .collect(),
                );
            }
            for p in &added.preferred_during_scheduling_ignored_during_execution {
                info.preferred_node_terms
                    .push((p.weight as i64, NodeTerm::compile(&p.preference, i)));
            }
        }
        if !self.ignored_resources.is_empty() || !self.ignored_resource_groups.is_empty() {
            let i = &cache.interner;
            info.request.scalars.retain(|(name, _)| {
                let name = i.resolve(*name);
                !(is_extended_resource(name) && self.ignored(name))
            });
        }
    }

    /// True if the filter ignores this extended resource (`fitsRequest`).
    fn ignored(&self, name: &str) -> bool {
        let group = name.split('/').next().unwrap_or_default();
        self.ignored_resources.iter().any(|r| r == name)
            || self.ignored_resource_groups.iter().any(|g| g == group)
    }
}

/// upstream's `IsExtendedResourceName`: a domain-qualified name outside `kubernetes.io/`
/// (API validation guarantees the rest of the form).
pub(crate) fn is_extended_resource(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/") && !name.starts_with("requests.")
}

/// upstream's `IsScalarResourceName`: extended, hugepages, `kubernetes.io/`-prefixed native
/// or attachable-volume resources.
pub(crate) fn is_scalar_resource(name: &str) -> bool {
    is_extended_resource(name)
        || name.starts_with("hugepages-")
        || name.contains("kubernetes.io/")
        || name.starts_with("attachable-volumes-")
}

impl Strategy {
    /// The score of one resource, `0..=100`.
    fn resource_score(&self, requested: i64, allocatable: i64) -> i64 {
        match self {
            Strategy::LeastAllocated => {
                if allocatable == 0 || requested > allocatable {
                    0
                } else {
                    (allocatable - requested).saturating_mul(100) / allocatable
                }
            }
            Strategy::MostAllocated => {
                if allocatable == 0 {
                    0
                } else {
                    requested.min(allocatable).saturating_mul(100) / allocatable
                }
            }
            Strategy::RequestedToCapacityRatio(shape) => {
                if allocatable == 0 || requested > allocatable {
                    broken_linear(shape, 100)
                } else {
                    broken_linear(shape, requested.saturating_mul(100) / allocatable)
                }
            }
        }
    }
}

/// upstream's `BuildBrokenLinearFunction`: the score at utilization `p`, interpolated linearly
/// (integer division) between the shape's points, flat before the first and after the last.
pub(crate) fn broken_linear(shape: &[(i64, i64)], p: i64) -> i64 {
    for (k, &(u, s)) in shape.iter().enumerate() {
        if p <= u {
            if k == 0 {
                return s;
            }
            let (u0, s0) = shape[k - 1];
            return s0 + (s - s0) * (p - u0) / (u - u0);
        }
    }
    shape.last().map_or(0, |&(_, s)| s)
}

impl ResourceScoring {
    /// The node's score from `(requested, allocatable)` per resource of [`Self::resources`] (an
    /// allocatable of 0 leaves the resource out): the weighted mean, rounded for
    /// RequestedToCapacityRatio (which also leaves out resources scoring 0), truncated otherwise.
    pub(crate) fn score(&self, per_resource: &[(i64, i64)]) -> i64 {
        let (mut sum, mut weights) = (0i64, 0i64);
        let ratio = matches!(self.strategy, Strategy::RequestedToCapacityRatio(_));
        for (&(requested, allocatable), (_, weight)) in per_resource.iter().zip(&self.resources) {
            if allocatable == 0 {
                continue;
            }
            let s = self.strategy.resource_score(requested, allocatable);
            if ratio && s <= 0 {
                continue;
            }
            sum += s * weight;
            weights += weight;
        }
        if weights == 0 {
            0
        } else if ratio {
            (sum as f64 / weights as f64).round() as i64
        } else {
            sum / weights
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// upstream's `TestBrokenLinearFunction` (requested_to_capacity_ratio_test.go).
    #[test]
    fn broken_linear_interpolates_between_points() {
        type Case = (Vec<(i64, i64)>, Vec<(i64, i64)>);
        let cases: Vec<Case> = vec![
            (
                vec![(10, 1), (90, 9)],
                vec![
                    (-10, 1),
                    (0, 1),
                    (9, 1),
                    (10, 1),
                    (15, 1),
                    (19, 1),
                    (20, 2),
                    (89, 8),
                    (90, 9),
                    (99, 9),
                    (100, 9),
                    (110, 9),
                ],
            ),
            (
                vec![(0, 2), (40, 10), (100, 0)],
                vec![
                    (-10, 2),
                    (0, 2),
                    (20, 6),
                    (30, 8),
                    (40, 10),
                    (70, 5),
                    (100, 0),
                    (110, 0),
                ],
            ),
            (
                vec![(0, 2), (40, 2), (100, 2)],
                vec![
                    (-10, 2),
                    (0, 2),
                    (20, 2),
                    (40, 2),
                    (70, 2),
                    (100, 2),
                    (110, 2),
                ],
            ),
        ];
        for (shape, want) in cases {
            for (p, s) in want {
                assert_eq!(broken_linear(&shape, p), s, "shape={shape:?} p={p}");
            }
        }
    }

    #[test]
    fn extended_resources_are_domain_qualified_outside_kubernetes_io() {
        assert!(is_extended_resource("example.com/foo"));
        assert!(!is_extended_resource("cpu"));
        assert!(!is_extended_resource("kubernetes.io/foo"));
        assert!(!is_extended_resource("hugepages-2Mi"));
        assert!(is_scalar_resource("hugepages-2Mi"));
        assert!(is_scalar_resource("attachable-volumes-aws-ebs"));
        assert!(!is_scalar_resource("memory"));
    }

    use crate::policy::{Policy, PredicateConfig, PredicateKind, PriorityConfig, PriorityKind};
    use crate::testutil::{node_json, pod as pod_of, P, R};
    use crate::{ClusterCache, PredicateResult, Scheduler};
    use serde_json::{json, Value};

    /// Fits per node (name order) and, for feasible nodes, the one priority's raw score, with
    /// `args` applied as a profile does.
    fn run(
        args: PluginArgs,
        pred: Option<P>,
        prio: Option<R>,
        nodes: Vec<Value>,
        existing: Vec<Value>,
        pod: Value,
    ) -> Vec<(Vec<String>, Option<i64>)> {
        let mut cache = ClusterCache::new();
        for n in nodes {
            cache.upsert_node(&node_json(n));
        }
        for p in existing {
            cache.upsert_pod(&pod_of(p));
        }
        let info = args.compile_pod(&mut cache, &pod_of(pod));
        let policy = Policy {
            predicates: pred
                .map(|p| PredicateConfig {
                    name: "p".into(),
                    kind: PredicateKind::Builtin(p),
                })
                .into_iter()
                .collect(),
            priorities: prio
                .map(|r| PriorityConfig {
                    name: "r".into(),
                    weight: 1,
                    kind: PriorityKind::Builtin(r),
                })
                .into_iter()
                .collect(),
            always_check_all_predicates: false,
            hard_pod_affinity_symmetric_weight: 1,
            extenders: vec![],
        };
        let mut s = Scheduler::builder()
            .policy(policy)
            .framework_profile(true)
            .plugin_args(args)
            .build()
            .unwrap();
        s.explain(&cache, &info)
            .nodes
            .into_iter()
            .map(|n| {
                let reasons = match n.result {
                    PredicateResult::Unschedulable { reasons, .. } => reasons,
                    _ => vec![],
                };
                (reasons, n.priorities.first().map(|p| p.score))
            })
            .collect()
    }

    fn labelled(name: &str, labels: Value) -> Value {
        json!({"metadata": {"name": name, "labels": labels}})
    }

    fn added(v: Value) -> PluginArgs {
        PluginArgs {
            added_affinity: Some(serde_json::from_value(v).unwrap()),
            ..Default::default()
        }
    }

    fn term(key: &str, values: &[&str]) -> Value {
        json!({"matchExpressions": [{"key": key, "operator": "In", "values": values}]})
    }

    fn fits(r: Vec<(Vec<String>, Option<i64>)>) -> Vec<bool> {
        r.into_iter()
            .map(|(reasons, _)| reasons.is_empty())
            .collect()
    }

    /// upstream's NodeAffinity filter: a node failing the added affinity reads
    /// `errReasonEnforced`, checked before (and instead of) the pod's own reason.
    #[test]
    fn added_affinity_has_its_own_reason() {
        let args = added(json!({"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [term("zone", &["foo"])]}}));
        let nodes = vec![
            labelled("n1", json!({"zone": "foo"})),
            labelled("n2", json!({"zone": "bar", "foo": "bar"})),
        ];
        let own = json!({"spec": {"nodeSelector": {"foo": "bar"}}});
        let reasons: Vec<Vec<String>> =
            run(args, Some(P::MatchNodeSelector), None, nodes, vec![], own)
                .into_iter()
                .map(|(r, _)| r)
                .collect();
        assert_eq!(
            reasons,
            [
                vec!["node(s) didn't match node selector".to_string()],
                vec!["node(s) didn't match scheduler-enforced node affinity".to_string()],
            ]
        );
    }

    /// After upstream's node_affinity_test.go `addedAffinity` filter cases.
    #[test]
    fn added_affinity_is_anded_with_the_pods_own() {
        let args = || {
            added(json!({"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [term("zone", &["foo"])]}}))
        };
        let nodes = || {
            vec![
                labelled("n1", json!({"zone": "foo"})),
                labelled("n2", json!({"zone": "bar"})),
                labelled("n3", json!({"zone": "foo", "foo": "bar"})),
            ]
        };
        let plain = json!({});
        assert_eq!(
            fits(run(
                args(),
                Some(P::MatchNodeSelector),
                None,
                nodes(),
                vec![],
                plain
            )),
            [true, false, true]
        );
        // the pod's own affinity still applies: both must match
        let own = json!({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [term("foo", &["bar"])]}}}}});
        assert_eq!(
            fits(run(
                args(),
                Some(P::MatchNodeSelector),
                None,
                nodes(),
                vec![],
                own
            )),
            [false, false, true]
        );
        // several terms on each side: any of the pod's with any of the added ones
        let two = added(json!({"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [term("zone", &["foo"]), term("zone", &["bar"])]}}));
        let own = json!({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [term("foo", &["bar"]), term("zone", &["bar"])]}}}}});
        assert_eq!(
            fits(run(
                two,
                Some(P::MatchNodeSelector),
                None,
                nodes(),
                vec![],
                own
            )),
            [false, true, true]
        );
        // the pod's nodeSelector is ANDed as well
        let sel = json!({"spec": {"nodeSelector": {"foo": "bar"}}});
        assert_eq!(
            fits(run(
                args(),
                Some(P::MatchNodeSelector),
                None,
                nodes(),
                vec![],
                sel
            )),
            [false, false, true]
        );
    }

    /// After upstream's node_affinity_test.go `addedAffinity` score case: the added preferred terms
    /// add to the pod's own before normalising.
    #[test]
    fn added_preferred_terms_score_beside_the_pods_own() {
        let args = added(json!({"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 3, "preference": term("zone", &["foo"])}]}));
        let own = json!({"spec": {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": term("key", &["value"])}]}}}});
        let nodes = vec![
            labelled("n1", json!({"key": "value"})),
            labelled("n2", json!({"zone": "foo"})),
            labelled("n3", json!({"key": "value", "zone": "foo"})),
        ];
        let scores: Vec<Option<i64>> = run(
            args,
            None,
            Some(R::NodeAffinityPriority),
            nodes,
            vec![],
            own,
        )
        .into_iter()
        .map(|(_, s)| s)
        .collect();
        // raw 1, 3, 4 normalised to 0..100, as upstream expects
        assert_eq!(scores, [Some(25), Some(75), Some(100)]);
    }

    /// After upstream's fit_test.go `ignoredResources` / `ignoredResourceGroups` cases.
    #[test]
    fn ignored_extended_resources_are_not_checked() {
        let node = || {
            vec![
                json!({"metadata": {"name": "n1"}, "status": {"allocatable": {
                "cpu": "10", "memory": "20Gi", "pods": "32", "example.com/aaa": "1"}}}),
            ]
        };
        let wants = |res: Value| json!({"spec": {"containers": [{"name": "c", "resources": {"requests": res}}]}});
        let fit = |args: PluginArgs, res: Value| {
            fits(run(
                args,
                Some(P::PodFitsResources),
                None,
                node(),
                vec![],
                wants(res),
            ))[0]
        };
        let none = PluginArgs::default;
        assert!(!fit(none(), json!({"example.com/bbb": "1"})));
        let by_name = || PluginArgs {
            ignored_resources: vec!["example.com/bbb".into()],
            ..Default::default()
        };
        assert!(fit(by_name(), json!({"example.com/bbb": "1"})));
        assert!(!fit(by_name(), json!({"example.com/aaa": "2"})));
        let by_group = || PluginArgs {
            ignored_resource_groups: vec!["example.com".into()],
            ..Default::default()
        };
        assert!(fit(
            by_group(),
            json!({"example.com/aaa": "2", "example.com/bbb": "1"})
        ));
        // only extended resources are ignored: cpu still counts
        assert!(!fit(
            by_group(),
            json!({"example.com/aaa": "2", "cpu": "11"})
        ));
    }

    /// After upstream's scoring_test.go `ignorePreferredTermsOfExistingPods` cases: an existing pod's
    /// preferred term towards the incoming pod counts only without the option, or when the
    /// incoming pod has preferred terms of its own.
    #[test]
    fn preferred_terms_of_existing_pods_can_be_ignored() {
        let nodes = || {
            vec![
                labelled("n1", json!({"kubernetes.io/hostname": "n1"})),
                labelled("n2", json!({"kubernetes.io/hostname": "n2"})),
            ]
        };
        let liking_security_s1 = || {
            json!({"metadata": {"name": "e", "labels": {"app": "other"}}, "spec": {"nodeName": "n1",
                "affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 5, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                        "labelSelector": {"matchLabels": {"security": "S1"}}}}]}}}})
        };
        let incoming = || json!({"metadata": {"labels": {"security": "S1"}}});
        let score = |ignore: bool, pod: Value| -> Vec<Option<i64>> {
            let args = PluginArgs {
                ignore_preferred_terms_of_existing_pods: ignore,
                ..Default::default()
            };
            run(
                args,
                None,
                Some(R::InterPodAffinityPriority),
                nodes(),
                vec![liking_security_s1()],
                pod,
            )
            .into_iter()
            .map(|(_, s)| s)
            .collect()
        };
        // a profile's scheduler: 0..100
        assert_eq!(score(false, incoming()), [Some(100), Some(0)]);
        assert_eq!(score(true, incoming()), [Some(0), Some(0)]);
        // with a preferred term of its own the existing pods' terms count again
        let mut own = incoming();
        own["spec"] = json!({"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                "labelSelector": {"matchLabels": {"app": "none"}}}}]}}});
        assert_eq!(score(true, own), [Some(100), Some(0)]);
    }
}
