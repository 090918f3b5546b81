//! Test helpers: build objects from JSON and run one predicate or priority over a small cluster.

use crate::model::{Node, Pod};
use crate::policy::{Policy, PredicateConfig, PredicateKind, PriorityConfig, PriorityKind};
use crate::{ClusterCache, PredicateResult, Scheduler};
use serde_json::json;

pub use crate::policy::PredicateName as P;
pub use crate::policy::PriorityName as R;

pub fn pod(v: serde_json::Value) -> Pod {
    let mut p: Pod = serde_json::from_value(v).expect("pod json");
    if p.metadata.name.is_empty() {
        p.metadata.name = "incoming".into();
    }
    p
}

pub fn node_json(v: serde_json::Value) -> Node {
    let mut n: Node = serde_json::from_value(v).expect("node json");
    if n.status.allocatable.is_empty() {
        n.status.allocatable =
            serde_json::from_value(json!({"cpu": "4", "memory": "8Gi", "pods": "110"})).unwrap();
    }
    n
}

pub fn simple_node(name: &str, cpu: &str, mem: &str, pods: i64) -> Node {
    node_json(
        json!({"metadata": {"name": name}, "status": {"allocatable": {"cpu": cpu, "memory": mem, "pods": pods.to_string()}}}),
    )
}

pub fn cm(name: &str, cpu: &str, mem: &str) -> Node {
    simple_node(name, cpu, mem, 110)
}

pub fn builtin(n: P) -> PredicateKind {
    PredicateKind::Builtin(n)
}

pub fn builtin_prio(n: R) -> PriorityKind {
    PriorityKind::Builtin(n)
}

fn pred_policy(kind: PredicateKind) -> Policy {
    Policy {
        predicates: vec![PredicateConfig {
            name: "p".into(),
            kind,
        }],
        priorities: vec![],
        always_check_all_predicates: false,
        hard_pod_affinity_symmetric_weight: 1,
        extenders: vec![],
    }
}

fn cache_of(nodes: Vec<Node>, pods: Vec<Pod>) -> ClusterCache {
    let mut c = ClusterCache::new();
    for n in nodes {
        c.upsert_node(&n);
    }
    for p in pods {
        c.upsert_pod(&p);
    }
    c
}

pub fn results_in(kind: PredicateKind, cache: &mut ClusterCache, p: Pod) -> Vec<PredicateResult> {
    let info = cache.compile_pod(&p);
    let mut s = Scheduler::builder()
        .policy(pred_policy(kind))
        .build()
        .unwrap();
    // test the predicate alone: drop the mandatory CheckNodeCondition unless it is the subject
    if s.preds.len() > 1 {
        s.preds.retain(|p| p.name != P::CheckNodeCondition);
        s.spread_preds.retain(|p| p.name != P::CheckNodeCondition);
    }
    let ex = s.explain(cache, &info);
    if let Some(e) = ex.error {
        return vec![PredicateResult::Error(e)];
    }
    ex.nodes.into_iter().map(|n| n.result).collect()
}

/// Reasons per node (nodes in name order); empty = fit.
pub fn reasons_in(kind: PredicateKind, cache: &mut ClusterCache, p: Pod) -> Vec<Vec<String>> {
    results_in(kind, cache, p)
        .into_iter()
        .map(|r| match r {
            PredicateResult::Fit => vec![],
            PredicateResult::Unschedulable { reasons, .. } => reasons,
            PredicateResult::Error(e) => vec![format!("ERROR {e}")],
        })
        .collect()
}

pub fn reasons_of(
    kind: PredicateKind,
    nodes: Vec<Node>,
    pods: Vec<Pod>,
    p: Pod,
) -> Vec<Vec<String>> {
    reasons_in(kind, &mut cache_of(nodes, pods), p)
}

/// Raw 0..10 scores of one priority (weight 1, no predicates) per node in name order.
pub fn scores_in(kind: PriorityKind, cache: &mut ClusterCache, p: Pod) -> Vec<i64> {
    let info = cache.compile_pod(&p);
    let policy = Policy {
        predicates: vec![],
        priorities: vec![PriorityConfig {
            name: "r".into(),
            weight: 1,
            kind,
        }],
        always_check_all_predicates: false,
        hard_pod_affinity_symmetric_weight: 1,
        extenders: vec![],
    };
    let mut s = Scheduler::builder().policy(policy).build().unwrap();
    s.explain(cache, &info)
        .nodes
        .into_iter()
        .map(|n| n.priorities[0].score)
        .collect()
}

/// NodeResourcesFit's configured scores (0..100) per node in name order.
pub fn fit_scores_of(
    args: crate::plugin_args::PluginArgs,
    nodes: Vec<Node>,
    pods: Vec<Pod>,
    p: Pod,
) -> Vec<i64> {
    let mut cache = cache_of(nodes, pods);
    let info = args.compile_pod(&mut cache, &p);
    let policy = Policy {
        predicates: vec![],
        priorities: vec![PriorityConfig {
            name: "NodeResourcesFit".into(),
            weight: 1,
            kind: PriorityKind::Builtin(R::NodeResourcesFit),
        }],
        always_check_all_predicates: false,
        hard_pod_affinity_symmetric_weight: 1,
        extenders: vec![],
    };
    let mut s = Scheduler::builder()
        .policy(policy)
        .plugin_args(args)
        .build()
        .unwrap();
    s.explain(&cache, &info)
        .nodes
        .into_iter()
        .map(|n| n.priorities[0].score)
        .collect()
}

pub fn scores_of(kind: PriorityKind, nodes: Vec<Node>, pods: Vec<Pod>, p: Pod) -> Vec<i64> {
    scores_in(kind, &mut cache_of(nodes, pods), p)
}

/// The first profile a KubeSchedulerConfiguration YAML compiles to (tests outside `config`
/// reach the compiler through here).
pub fn compiled_profile(yaml: &str) -> crate::config::CompiledProfile {
    crate::config::SchedulerConfiguration::from_str(yaml)
        .unwrap_or_else(|e| panic!("{yaml}\n{e}"))
        .compile()
        .unwrap()
        .remove(0)
}

/// The scores of score plugin `plugin` of a compiled KubeSchedulerConfiguration profile whose
/// only score plugin it is (every filter disabled, so every node is scored), with its
/// `pluginConfig` given as YAML lines under the profile (`""` for none), per node in name order.
pub fn plugin_scores_of(
    plugin: &str,
    plugin_config: &str,
    nodes: Vec<Node>,
    pods: Vec<Pod>,
    p: Pod,
) -> Vec<i64> {
    let yaml = format!(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
         profiles:\n- plugins:\n    filter:\n      disabled: [{{name: '*'}}]\n    \
         score:\n      disabled: [{{name: '*'}}]\n      enabled: [{{name: {plugin}}}]\n\
         {plugin_config}"
    );
    let profile = crate::config::SchedulerConfiguration::from_str(&yaml)
        .unwrap_or_else(|e| panic!("{yaml}\n{e}"))
        .compile()
        .unwrap()
        .remove(0);
    let mut cache = cache_of(nodes, pods);
    let info = profile.plugin_args.compile_pod(&mut cache, &p);
    let mut s = Scheduler::builder()
        .policy(profile.policy.clone())
        .topology_spread_args(profile.topology_spread_args())
        .framework_profile(true)
        .plugin_args(profile.plugin_args.clone())
        .build()
        .unwrap();
    assert_eq!(s.score_scale(), crate::priorities::ScoreScale::Plugin);
    s.explain(&cache, &info)
        .nodes
        .into_iter()
        .map(|n| {
            n.priorities
                .iter()
                .find(|x| x.name == plugin)
                .unwrap_or_else(|| panic!("{plugin} did not score {}", n.node))
                .score
        })
        .collect()
}
