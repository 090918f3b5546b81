//! The fast path against the reference on random clusters: same outcome (node, victims in
//! reprieve order, cleared nominations) for every preemptor, under several policies.
//!
//! A cluster is drawn from a seed so that a failing case is one number to replay. The draws
//! cover what the fast path decides differently: resource shapes (with an extended resource),
//! taints and node selectors (static predicates), host ports (fallback to the copy), required
//! anti-affinity and services (fallback to the cache), budgets, start times, nominated pods and
//! terminating pods.

use super::*;
use crate::model::Service;
use crate::policy::{Policy, PredicateConfig, PredicateKind, PredicateName as P};
use crate::testutil::{node_json, pod};
use crate::{ClusterCache, Decision, Scheduler};
use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

fn policy(variant: u8) -> Option<Policy> {
    let preds = |names: &[P]| Policy {
        predicates: names
            .iter()
            .map(|n| PredicateConfig {
                name: n.as_str().into(),
                kind: PredicateKind::Builtin(*n),
            })
            .collect(),
        priorities: vec![],
        always_check_all_predicates: variant == 3,
        hard_pod_affinity_symmetric_weight: 1,
        extenders: vec![],
    };
    match variant {
        // the default policy (with the Region serviceAffinity)
        0 => None,
        1 => Some(preds(&[P::PodFitsResources, P::PodToleratesNodeTaints])),
        // no resource predicate: every fitting node keeps all its pods
        2 => Some(preds(&[P::MatchNodeSelector, P::PodFitsHostPorts])),
        _ => Some(preds(&[
            P::GeneralPredicates,
            P::PodToleratesNodeTaints,
            P::MatchInterPodAffinity,
            P::NoDiskConflict,
        ])),
    }
}

fn pick<T: Copy>(r: &mut SmallRng, xs: &[T]) -> T {
    xs[r.random_range(0..xs.len())]
}

fn pod_json(r: &mut SmallRng, name: &str, node: &str, prio: i32) -> Value {
    let mut requests = json!({"cpu": pick(r, &["100m", "300m", "500m", "1", "2"]),
        "memory": pick(r, &["100Mi", "1Gi", "2Gi"])});
    if r.random_bool(0.15) {
        requests["example.com/gpu"] = json!(pick(r, &["1", "2"]));
    }
    let mut c = json!({"name": "c", "resources": {"requests": requests}});
    if r.random_bool(0.1) {
        c["ports"] = json!([{"containerPort": 80, "hostPort": 80}]);
    }
    let mut p = json!({"metadata": {"name": name, "namespace": "default", "uid": name,
            "labels": {"app": pick(r, &["a", "b", "c"])}},
        "spec": {"priority": prio, "nodeName": node, "containers": [c]},
        "status": {}});
    // few distinct start times and priorities: ties that the key must break are common
    if r.random_bool(0.5) {
        p["status"]["startTime"] = json!(format!("2024-01-01T00:00:0{}Z", r.random_range(0..2)));
    }
    if r.random_bool(0.05) {
        p["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
    }
    p
}

struct Case {
    cache: ClusterCache,
    pending: Vec<(PodInfo, String)>,
    pdbs: Vec<Pdb>,
    preemptors: Vec<PodInfo>,
}

fn cluster(seed: u64) -> Case {
    let r = &mut SmallRng::seed_from_u64(seed);
    let mut cache = ClusterCache::new();
    let n = r.random_range(1..9);
    let names: Vec<String> = (0..n).map(|i| format!("n{i}")).collect();
    for name in &names {
        let mut alloc = json!({"cpu": pick(r, &["2", "3", "4"]), "memory": pick(r, &["4Gi", "8Gi"]),
            "pods": pick(r, &["3", "5", "110"])});
        if r.random_bool(0.3) {
            alloc["example.com/gpu"] = json!("2");
        }
        let mut node = json!({"metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name, "region": pick(r, &["r1", "r2"])}},
            "status": {"allocatable": alloc}});
        if r.random_bool(0.15) {
            node["spec"] = json!({"taints": [{"key": "t", "value": "x", "effect": "NoSchedule"}]});
        }
        cache.upsert_node(&node_json(node));
    }
    let mut k = 0;
    for name in &names {
        for _ in 0..r.random_range(0..6) {
            k += 1;
            let prio = pick(r, &[-5, 0, 0, 0, 1, 5, 100]);
            let mut p = pod_json(r, &format!("p{k}"), name, prio);
            if r.random_bool(0.04) {
                p["spec"]["affinity"] = json!({"podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [{
                        "labelSelector": {"matchLabels": {"role": "pre"}},
                        "topologyKey": "kubernetes.io/hostname"}]}});
            }
            cache.upsert_pod(&pod(p));
        }
    }
    if r.random_bool(0.1) {
        let svc: Service = serde_json::from_value(json!({"metadata": {"name": "s",
            "namespace": "default"}, "spec": {"selector": {"role": "pre"}}}))
        .unwrap();
        cache.upsert_service(&svc);
    }
    let pdbs = (0..r.random_range(0..3))
        .map(|_| Pdb {
            namespace: "default".into(),
            selector: Some(
                serde_json::from_value(json!({"matchLabels": {"app": pick(r, &["a", "b"])}}))
                    .unwrap(),
            ),
            disruptions_allowed: pick(r, &[0, 0, 1]),
        })
        .collect();
    let pending = (0..r.random_range(0..3))
        .map(|i| {
            let prio = pick(r, &[0, 5, 50]);
            let p = pod_json(r, &format!("nom{i}"), "", prio);
            (
                cache.compile_pod(&pod(p)),
                names[r.random_range(0..names.len())].clone(),
            )
        })
        .collect();
    let preemptors = (0..3)
        .map(|i| {
            let prio = pick(r, &[5, 10, 50]);
            let mut p = pod_json(r, &format!("pre{i}"), "", prio);
            p["metadata"]["labels"]["role"] = json!("pre");
            if r.random_bool(0.2) {
                p["spec"]["nodeSelector"] = json!({"region": "r1"});
            }
            if r.random_bool(0.2) {
                p["spec"]["tolerations"] = json!([{"key": "t", "operator": "Exists"}]);
            }
            if r.random_bool(0.1) {
                p["status"]["nominatedNodeName"] = json!(names[r.random_range(0..names.len())]);
            }
            cache.compile_pod(&pod(p))
        })
        .collect();
    Case {
        cache,
        pending,
        pdbs,
        preemptors,
    }
}

fn scheduler(variant: u8) -> Scheduler {
    let b = Scheduler::builder().seed(7);
    match policy(variant) {
        Some(p) => b.policy(p),
        None => b,
    }
    .build()
    .unwrap()
}

/// Outcomes of both paths for each preemptor that fits nowhere.
fn compare(seed: u64, variant: u8) -> Result<usize, TestCaseError> {
    let case = cluster(seed);
    let nominated: Vec<crate::Nominated> = case
        .pending
        .iter()
        .map(|(p, n)| crate::Nominated { pod: p, node: n })
        .collect();
    let mut compared = 0;
    for pre in &case.preemptors {
        let mut s = scheduler(variant);
        let err = match s.schedule_with_nominated(&case.cache, pre, &nominated) {
            Decision::Unschedulable(e) => e,
            _ => continue,
        };
        let input = PreemptionInput {
            nominated: &nominated,
            pdbs: &case.pdbs,
        };
        let mut fast_cache = case.cache.clone();
        let fast = s.preempt(&mut fast_cache, pre, &err, input);
        let mut ref_cache = case.cache.clone();
        let reference = scheduler(variant).preempt_reference(&mut ref_cache, pre, &err, input);
        prop_assert_eq!(
            &fast,
            &reference,
            "seed {} variant {} pod {}",
            seed,
            variant,
            pre.key
        );
        prop_assert_eq!(fast_cache.pod_count(), case.cache.pod_count());
        compared += 1;
    }
    Ok(compared)
}

/// One scheduler through a sequence of decisions, carrying each out (victims deleted, the
/// preemptor placed) and changing the cluster in between, so results remembered across
/// decisions are reused and must be dropped when a node changes.
fn sequence(seed: u64, variant: u8) -> Result<(), TestCaseError> {
    let mut case = cluster(seed);
    let r = &mut SmallRng::seed_from_u64(seed ^ 0x5eed);
    let mut s = scheduler(variant);
    // preemptors of one shape (what the memo is for), under new names
    let shapes = case.preemptors.clone();
    for step in 0..6 {
        let mut pre = shapes[r.random_range(0..shapes.len())].clone();
        pre.key = format!("default/seq{step}");
        pre.name = format!("seq{step}");
        pre.nominated_node.clear();
        if r.random_bool(0.3) {
            // a cluster change the next decision must see
            let nodes: Vec<String> = case
                .cache
                .order
                .iter()
                .map(|&ix| case.cache.nodes[ix as usize].name.clone())
                .collect();
            let node = &nodes[r.random_range(0..nodes.len())];
            let prio = pick(r, &[0, 1, 5]);
            case.cache
                .upsert_pod(&pod(pod_json(r, &format!("new{step}"), node, prio)));
        }
        if r.random_bool(0.2) {
            case.pdbs
                .iter_mut()
                .for_each(|b| b.disruptions_allowed = 1 - b.disruptions_allowed);
        }
        let err = match s.schedule(&case.cache, &pre) {
            Decision::Unschedulable(e) => e,
            _ => continue,
        };
        let input = PreemptionInput {
            nominated: &[],
            pdbs: &case.pdbs,
        };
        let fast = s.preempt(&mut case.cache, &pre, &err, input);
        let mut ref_cache = case.cache.clone();
        let reference = scheduler(variant).preempt_reference(&mut ref_cache, &pre, &err, input);
        prop_assert_eq!(
            &fast,
            &reference,
            "seed {} variant {} step {}",
            seed,
            variant,
            step
        );
        if let PreemptionOutcome::Preempt(p) = fast {
            for v in &p.victims {
                case.cache.remove_pod(v);
            }
            case.cache.assume(pre, &p.node).unwrap();
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn fast_path_agrees_with_the_reference(seed in any::<u64>(), variant in 0u8..4) {
        compare(seed, variant)?;
    }

    #[test]
    fn remembered_results_agree_with_the_reference(seed in any::<u64>(), variant in 0u8..4) {
        sequence(seed, variant)?;
    }
}

/// The draws do reach preemption: enough preemptors fit nowhere and get a node.
#[test]
fn the_random_clusters_exercise_preemption() {
    let (mut compared, mut preempted) = (0, 0);
    for seed in 0..300 {
        for variant in 0..4 {
            compared += compare(seed, variant).unwrap();
            let case = cluster(seed);
            for pre in &case.preemptors {
                let mut s = scheduler(variant);
                if let Decision::Unschedulable(e) = s.schedule(&case.cache, pre) {
                    let mut c = case.cache.clone();
                    let input = PreemptionInput {
                        nominated: &[],
                        pdbs: &case.pdbs,
                    };
                    if let PreemptionOutcome::Preempt(p) = s.preempt(&mut c, pre, &e, input) {
                        preempted += (!p.victims.is_empty()) as usize;
                    }
                }
            }
        }
    }
    assert!(compared > 500, "compared {compared}");
    assert!(preempted > 200, "preempted {preempted}");
}
