//! Engine vectors: nominated pods (§2.3), numFeasibleNodesToFind (§2.4), single feasible node.

use crate::testutil::*;
use crate::{ClusterCache, Decision, Nominated, Scheduler};
use serde_json::json;

fn cpu_pod(name: &str, prio: i32, cpu: &str) -> crate::model::Pod {
    pod(
        json!({"metadata": {"name": name, "uid": name}, "spec": {"priority": prio,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}),
    )
}

#[test]
fn nominated_pods_two_pass_np_1() {
    let mut cache = ClusterCache::new();
    cache.upsert_node(&simple_node("n1", "1000m", "1Gi", 10));
    let a = cache.compile_pod(&cpu_pod("a", 100, "600m"));
    let b = cache.compile_pod(&cpu_pod("b", 50, "500m"));
    let c = cache.compile_pod(&cpu_pod("c", 200, "500m"));
    let nominated = [Nominated {
        pod: &a,
        node: "n1",
    }];
    for reuse in [true, false] {
        let mut s = Scheduler::builder()
            .reuse_across_pods(reuse)
            .build()
            .unwrap();
        match s.schedule_with_nominated(&cache, &b, &nominated) {
            Decision::Unschedulable(e) => {
                assert_eq!(e.message(), "0/1 nodes are available: 1 Insufficient cpu.")
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            s.schedule_with_nominated(&cache, &c, &nominated),
            Decision::Scheduled { .. }
        ));
        // without nominations b fits
        assert!(matches!(s.schedule(&cache, &b), Decision::Scheduled { .. }));
    }
}

#[test]
fn num_feasible_nodes_to_find_pn_vectors() {
    let adaptive = Scheduler::builder()
        .percentage_of_nodes_to_score(0)
        .build()
        .unwrap();
    let all = Scheduler::builder().build().unwrap();
    let thirty = Scheduler::builder()
        .percentage_of_nodes_to_score(30)
        .build()
        .unwrap();
    for (n, want) in [(50, 50), (150, 100), (1000, 420), (5000, 500), (6000, 300)] {
        assert_eq!(adaptive.num_feasible_nodes_to_find(n), want, "{n}");
        assert_eq!(all.num_feasible_nodes_to_find(n), n);
    }
    assert_eq!(thirty.num_feasible_nodes_to_find(1000), 300);
}

#[test]
fn percentage_stops_early_and_rotates() {
    let mut cache = ClusterCache::new();
    for i in 0..300 {
        cache.upsert_node(&simple_node(&format!("n{i:03}"), "4", "8Gi", 110));
    }
    let p = cache.compile_pod(&cpu_pod("p", 0, "100m"));
    let mut s = Scheduler::builder()
        .percentage_of_nodes_to_score(10)
        .seed(1)
        .build()
        .unwrap();
    // 100 nodes are scored per decision (min 100); all tie, so the pick lies in the visited window
    let Decision::Scheduled { node: first, .. } = s.schedule(&cache, &p) else {
        panic!()
    };
    assert!(first.as_str() < "n100", "{first}");
    let Decision::Scheduled { node: second, .. } = s.schedule(&cache, &p) else {
        panic!()
    };
    assert!(
        second.as_str() >= "n100" && second.as_str() < "n200",
        "{second}"
    );
}

#[test]
fn single_feasible_node_scores_zero_and_no_nodes_is_an_error() {
    let mut cache = ClusterCache::new();
    let p = cache.compile_pod(&cpu_pod("p", 0, "100m"));
    let mut s = Scheduler::builder().build().unwrap();
    assert_eq!(
        s.schedule(&cache, &p),
        Decision::Error("no nodes available to schedule pods".into())
    );
    cache.upsert_node(&simple_node("only", "1", "1Gi", 10));
    assert_eq!(
        s.schedule(&cache, &p),
        Decision::Scheduled {
            node: "only".into(),
            score: 0,
            evaluated_nodes: 1,
            feasible_nodes: 1
        }
    );
}

#[test]
fn a_decision_counts_the_nodes_evaluated_and_feasible_as_upstreams_log_line() {
    // kube-scheduler's `evaluatedNodes` and `feasibleNodes`.
    let mut cache = ClusterCache::new();
    cache.upsert_node(&simple_node("a", "1", "1Gi", 10));
    cache.upsert_node(&simple_node("b", "1", "1Gi", 10));
    cache.upsert_node(&simple_node("small", "100m", "1Gi", 10));
    let p = cache.compile_pod(&cpu_pod("p", 0, "500m"));
    let mut s = Scheduler::builder().build().unwrap();
    match s.schedule(&cache, &p) {
        Decision::Scheduled {
            evaluated_nodes,
            feasible_nodes,
            ..
        } => assert_eq!((evaluated_nodes, feasible_nodes), (3, 2)),
        d => panic!("{d:?}"),
    }
}

#[test]
fn builder_rejects_bad_hard_weight() {
    let mut p = crate::policy::Policy::default_policy();
    p.hard_pod_affinity_symmetric_weight = 0;
    let e = Scheduler::builder().policy(p).build().unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid hardPodAffinitySymmetricWeight: 0, must be in the range 1-100"
    );
}
