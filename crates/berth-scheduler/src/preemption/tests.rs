//! Preemption vectors PE-1..PE-7 (scheduler.md §7) and the seed scenarios (16.6.3.1: affinity to
//! lower-priority pods; budgets; nominated pods).

use super::*;
use crate::testutil::*;
use crate::{ClusterCache, Decision, Nominated, Scheduler};
use serde_json::json;

fn cpu_pod(name: &str, prio: i32, cpu: &str, node: &str) -> crate::model::Pod {
    pod(
        json!({"metadata": {"name": name, "namespace": "default", "uid": name,
        "labels": {"app": name}},
        "spec": {"priority": prio, "nodeName": node,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}),
    )
}

fn fit_error(s: &mut Scheduler, cache: &ClusterCache, pod: &PodInfo) -> FitError {
    match s.schedule(cache, pod) {
        Decision::Unschedulable(e) => e,
        other => panic!("expected a FitError, got {other:?}"),
    }
}

fn run(
    cache: &mut ClusterCache,
    pod: &PodInfo,
    nominated: &[Nominated],
    pdbs: &[Pdb],
) -> PreemptionOutcome {
    let mut s = Scheduler::builder().seed(1).build().unwrap();
    let err = fit_error(&mut s, cache, pod);
    let before = cache.pod_count();
    let input = PreemptionInput { nominated, pdbs };
    let out = s.preempt(cache, pod, &err, input);
    assert_eq!(cache.pod_count(), before, "cache restored");
    let reference = s.preempt_reference(cache, pod, &err, input);
    assert_eq!(out, reference, "the fast path agrees with the reference");
    out
}

fn victims_of(o: &PreemptionOutcome) -> (String, Vec<String>) {
    match o {
        PreemptionOutcome::Preempt(p) => (p.node.clone(), p.victims.clone()),
        other => panic!("expected a preemption, got {other:?}"),
    }
}

#[test]
fn pe_1_select_victims_reprieves_what_fits() {
    let mut cache = ClusterCache::new();
    cache.upsert_node(&simple_node("n1", "10", "10Gi", 110));
    cache.upsert_pod(&cpu_pod("p1", 1, "3", "n1"));
    cache.upsert_pod(&cpu_pod("p2", 2, "4", "n1"));
    cache.upsert_pod(&cpu_pod("p3", 10, "2", "n1"));
    let pre = cache.compile_pod(&cpu_pod("pre", 5, "5", ""));
    let out = run(&mut cache, &pre, &[], &[]);
    assert_eq!(victims_of(&out), ("n1".into(), vec!["default/p2".into()]));
}

fn nv(node: &str, prios: &[i32], pdb: usize) -> NodeVictims {
    NodeVictims {
        node: node.into(),
        victims: prios
            .iter()
            .enumerate()
            .map(|(i, p)| Victim {
                key: format!("{node}-{i}"),
                priority: *p,
                start: None,
            })
            .collect(),
        pdb_violations: pdb,
    }
}

#[test]
fn pe_2_to_5_pick_one_node() {
    let cases: Vec<(&str, Vec<NodeVictims>, &str)> = vec![
        ("PE-2", vec![nv("A", &[10], 0), nv("B", &[5, 5], 0)], "B"),
        ("PE-3", vec![nv("A", &[5], 1), nv("B", &[10, 10], 0)], "B"),
        ("PE-4", vec![nv("A", &[5, 3], 0), nv("B", &[5, 4], 0)], "A"),
        ("PE-5", vec![nv("A", &[5, -10], 0), nv("B", &[5], 0)], "B"),
        ("zero victims", vec![nv("A", &[1], 0), nv("B", &[], 0)], "B"),
        (
            "fewest victims",
            vec![nv("A", &[5, 5, 0], 0), nv("B", &[5, 5, 0], 0)],
            "A",
        ),
    ];
    for (id, results, want) in cases {
        assert_eq!(pick_one_node(&results).unwrap().node, want, "{id}");
    }
    assert!(pick_one_node(&[]).is_none());
}

#[test]
fn pick_prefers_latest_start_among_highest_victims() {
    let mut a = nv("A", &[5], 0);
    let mut b = nv("B", &[5], 0);
    a.victims[0].start = Some(100);
    b.victims[0].start = Some(200);
    assert_eq!(pick_one_node(&[a, b]).unwrap().node, "B");
}

#[test]
fn pe_6_candidates_use_the_1_13_unresolvable_set() {
    let mut cache = ClusterCache::new();
    for n in ["a", "b", "c", "d"] {
        cache.upsert_node(&simple_node(n, "1", "1Gi", 110));
    }
    let mut failed = std::collections::BTreeMap::new();
    failed.insert(
        "a".into(),
        vec!["node(s) didn't match node selector".into()],
    );
    failed.insert("b".into(), vec!["Insufficient cpu".into()]);
    failed.insert("c".into(), vec!["node(s) had memory pressure".into()]);
    let err = FitError {
        num_all_nodes: 4,
        failed_predicates: failed,
        resolvable_somewhere: true,
    };
    // d recorded no failure: also a candidate
    assert_eq!(candidate_nodes(&cache, &err), vec!["b", "d"]);
    // the fast path's merge agrees, also with failures of nodes the cache no longer has
    let mut err = err;
    err.failed_predicates
        .insert("0-gone".into(), vec!["Insufficient cpu".into()]);
    err.failed_predicates
        .insert("bb".into(), vec!["Insufficient cpu".into()]);
    let names: Vec<String> = candidate_slots(&cache, &err)
        .iter()
        .map(|&ix| cache.nodes[ix as usize].name.clone())
        .collect();
    assert_eq!(names, candidate_nodes(&cache, &err));
}

#[test]
fn pe_7_not_eligible_while_victims_terminate() {
    let mut cache = ClusterCache::new();
    cache.upsert_node(&simple_node("n1", "1", "1Gi", 110));
    let mut victim = cpu_pod("v", 0, "1", "n1");
    victim.metadata.deletion_timestamp = Some("2024-01-01T00:00:00Z".into());
    cache.upsert_pod(&victim);
    let mut pre = cpu_pod("pre", 100, "1", "");
    pre.status.nominated_node_name = "n1".into();
    let pre = cache.compile_pod(&pre);
    assert!(!eligible(&cache, &pre));
    assert_eq!(
        run(&mut cache, &pre, &[], &[]),
        PreemptionOutcome::NotEligible
    );
    let plain = cache.compile_pod(&cpu_pod("other", 100, "1", ""));
    assert!(eligible(&cache, &plain));
}

#[test]
fn no_candidates_when_every_node_is_unresolvable() {
    let mut cache = ClusterCache::new();
    cache.upsert_node(&simple_node("n1", "1", "1Gi", 110));
    cache.upsert_pod(&cpu_pod("low", 0, "1", "n1"));
    let mut p = cpu_pod("pre", 100, "1", "");
    p.spec.node_selector.insert("disk".into(), "ssd".into());
    let pre = cache.compile_pod(&p);
    assert_eq!(
        run(&mut cache, &pre, &[], &[]),
        PreemptionOutcome::NoCandidates
    );
}

#[test]
fn equal_or_higher_priority_pods_are_never_victims() {
    let mut cache = ClusterCache::new();
    cache.upsert_node(&simple_node("n1", "2", "1Gi", 110));
    cache.upsert_pod(&cpu_pod("same", 100, "1", "n1"));
    cache.upsert_pod(&cpu_pod("low", 1, "1", "n1"));
    let pre = cache.compile_pod(&cpu_pod("pre", 100, "2", ""));
    assert_eq!(run(&mut cache, &pre, &[], &[]), PreemptionOutcome::NoNode);
}

#[test]
fn picks_the_node_with_the_fewest_lowest_victims() {
    let mut cache = ClusterCache::new();
    for n in ["n1", "n2"] {
        cache.upsert_node(&simple_node(n, "4", "1Gi", 110));
    }
    for i in 0..4 {
        cache.upsert_pod(&cpu_pod(&format!("a{i}"), 10, "1", "n1"));
        cache.upsert_pod(&cpu_pod(&format!("b{i}"), 5, "1", "n2"));
    }
    let pre = cache.compile_pod(&cpu_pod("pre", 100, "3", ""));
    let (node, victims) = victims_of(&run(&mut cache, &pre, &[], &[]));
    assert_eq!(node, "n2");
    assert_eq!(victims.len(), 3);
}

#[test]
fn budgets_steer_the_choice_and_are_violated_only_as_a_last_resort() {
    let mut cache = ClusterCache::new();
    for n in ["n1", "n2"] {
        cache.upsert_node(&simple_node(n, "2", "1Gi", 110));
    }
    // n1 holds the lower-priority pod, but a budget protects it
    cache.upsert_pod(&cpu_pod("guarded", 1, "2", "n1"));
    cache.upsert_pod(&cpu_pod("free", 5, "2", "n2"));
    let pdb = Pdb {
        namespace: "default".into(),
        selector: Some(serde_json::from_value(json!({"matchLabels": {"app": "guarded"}})).unwrap()),
        disruptions_allowed: 0,
    };
    let pre = cache.compile_pod(&cpu_pod("pre", 100, "2", ""));
    let out = run(&mut cache, &pre, &[], std::slice::from_ref(&pdb));
    assert_eq!(victims_of(&out), ("n2".into(), vec!["default/free".into()]));
    // without a budget the lower victim wins
    let out = run(&mut cache, &pre, &[], &[]);
    assert_eq!(
        victims_of(&out),
        ("n1".into(), vec!["default/guarded".into()])
    );
    // only the guarded node: the budget is violated
    cache.remove_pod("default/free");
    cache.upsert_pod(&cpu_pod("high", 1000, "2", "n2"));
    let out = run(&mut cache, &pre, &[], std::slice::from_ref(&pdb));
    assert_eq!(
        victims_of(&out),
        ("n1".into(), vec!["default/guarded".into()])
    );
}

#[test]
fn affinity_to_lower_priority_pods_does_not_help_16_6_3_1() {
    let mut cache = ClusterCache::new();
    cache.upsert_node(&node_json(json!({"metadata": {"name": "n1",
        "labels": {"kubernetes.io/hostname": "n1"}}})));
    cache.upsert_pod(&cpu_pod("db", 0, "4", "n1"));
    let p = pod(
        json!({"metadata": {"name": "pre", "namespace": "default", "uid": "pre"},
        "spec": {"priority": 100, "affinity": {"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{
                "labelSelector": {"matchLabels": {"app": "db"}},
                "topologyKey": "kubernetes.io/hostname"}]}},
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}),
    );
    let pre = cache.compile_pod(&p);
    assert_eq!(run(&mut cache, &pre, &[], &[]), PreemptionOutcome::NoNode);
    assert!(cache.node("n1").unwrap().pods.len() == 1);
}

#[test]
fn anti_affinity_victims_are_evaluated_through_the_cache() {
    let mut cache = ClusterCache::new();
    cache.upsert_node(&node_json(json!({"metadata": {"name": "n1",
        "labels": {"kubernetes.io/hostname": "n1"}}})));
    // a low-priority pod that repels app=pre
    cache.upsert_pod(&pod(
        json!({"metadata": {"name": "rep", "namespace": "default", "uid": "rep"},
        "spec": {"priority": 0, "nodeName": "n1", "affinity": {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{
                "labelSelector": {"matchLabels": {"app": "pre"}},
                "topologyKey": "kubernetes.io/hostname"}]}},
        "containers": [{"name": "c"}]}}),
    ));
    cache.upsert_pod(&cpu_pod("small", 0, "100m", "n1"));
    let pre = cache.compile_pod(&cpu_pod("pre", 100, "1", ""));
    let (node, victims) = victims_of(&run(&mut cache, &pre, &[], &[]));
    assert_eq!(
        (node.as_str(), victims),
        ("n1", vec!["default/rep".to_string()])
    );
}

#[test]
fn nominated_pods_count_and_lower_nominations_are_cleared() {
    let mut cache = ClusterCache::new();
    for n in ["n1", "n2"] {
        cache.upsert_node(&simple_node(n, "2", "1Gi", 110));
    }
    cache.upsert_pod(&cpu_pod("l1", 0, "2", "n1"));
    cache.upsert_pod(&cpu_pod("l2", 1, "2", "n2"));
    // a higher nominated pod reserves n1; a lower one sits nominated on n2
    let high = cache.compile_pod(&cpu_pod("high", 500, "1", ""));
    let low = cache.compile_pod(&cpu_pod("low", 50, "2", ""));
    let nominated = [
        Nominated {
            pod: &high,
            node: "n1",
        },
        Nominated {
            pod: &low,
            node: "n2",
        },
    ];
    let pre = cache.compile_pod(&cpu_pod("pre", 100, "2", ""));
    match run(&mut cache, &pre, &nominated, &[]) {
        PreemptionOutcome::Preempt(p) => {
            assert_eq!(p.node, "n2");
            assert_eq!(p.victims, vec!["default/l2".to_string()]);
            assert_eq!(p.lower_nominated, vec!["default/low".to_string()]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn preemption_policy_never_keeps_the_pod_waiting() {
    // the pod as an informer delivers it: admission copied the class's policy onto the spec
    let mut cache = ClusterCache::new();
    cache.upsert_node(&simple_node("n1", "1", "1Gi", 110));
    cache.upsert_pod(&cpu_pod("low", 0, "1", "n1"));
    let bytes = |policy: &str| {
        json!({"metadata": {"name": "pre", "namespace": "default", "uid": "pre"},
            "spec": {"priority": 100, "preemptionPolicy": policy,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}})
        .to_string()
    };
    let never = cache.compile_pod_json(bytes("Never").as_bytes()).unwrap();
    assert!(never.preempt_never);
    assert!(!eligible(&cache, &never));
    assert_eq!(
        run(&mut cache, &never, &[], &[]),
        PreemptionOutcome::NotEligible
    );
    let lower = cache
        .compile_pod_json(bytes("PreemptLowerPriority").as_bytes())
        .unwrap();
    assert!(!lower.preempt_never);
    assert_eq!(
        victims_of(&run(&mut cache, &lower, &[], &[])),
        ("n1".into(), vec!["default/low".into()])
    );
}

fn started(name: &str, prio: i32, cpu: &str, node: &str, start: Option<&str>) -> crate::model::Pod {
    let mut p = cpu_pod(name, prio, cpu, node);
    p.status.start_time = start.map(str::to_string);
    p
}

#[test]
fn victims_start_times_come_from_status() {
    let mut cache = ClusterCache::new();
    let v = cache.compile_pod(&started("v", 0, "1", "n1", Some("2024-05-01T10:00:00Z")));
    let w = cache.compile_pod(&started("w", 0, "1", "n1", None));
    assert_eq!((v.start, w.start), (Some(1_714_557_600), None));
}

#[test]
fn pe_8_latest_start_among_the_highest_victims_wins() {
    // 1.16 criterion 6, with status.startTime: two nodes tie on everything before it; the
    // node whose (only, highest-priority) victim started later is chosen, whatever the names
    let mut cache = ClusterCache::new();
    for n in ["a", "b"] {
        cache.upsert_node(&simple_node(n, "1", "1Gi", 110));
    }
    cache.upsert_pod(&started("on-a", 0, "1", "a", Some("2024-05-01T11:00:00Z")));
    cache.upsert_pod(&started("on-b", 0, "1", "b", Some("2024-05-01T10:00:00Z")));
    let pre = cache.compile_pod(&cpu_pod("pre", 100, "1", ""));
    assert_eq!(
        victims_of(&run(&mut cache, &pre, &[], &[])),
        ("a".into(), vec!["default/on-a".into()])
    );
    // a victim without a start time counts as started now: later than any recorded start
    cache.remove_pod("default/on-b");
    cache.upsert_pod(&started("on-b", 0, "1", "b", None));
    assert_eq!(
        victims_of(&run(&mut cache, &pre, &[], &[])),
        ("b".into(), vec!["default/on-b".into()])
    );
    // only the highest-priority victims' start times count: by every victim's a would win
    let mut cache = ClusterCache::new();
    for n in ["a", "b"] {
        cache.upsert_node(&simple_node(n, "2", "1Gi", 110));
    }
    let at = |h: u32| format!("2024-05-01T{h:02}:00:00Z");
    cache.upsert_pod(&started("a-high", 5, "1", "a", Some(&at(9))));
    cache.upsert_pod(&started("a-low", 1, "1", "a", Some(&at(12))));
    cache.upsert_pod(&started("b-high", 5, "1", "b", Some(&at(11))));
    cache.upsert_pod(&started("b-low", 1, "1", "b", Some(&at(8))));
    let pre = cache.compile_pod(&cpu_pod("pre", 100, "2", ""));
    let (node, victims) = victims_of(&run(&mut cache, &pre, &[], &[]));
    assert_eq!(
        node, "b",
        "b's priority-5 victim started later (11:00 > 09:00)"
    );
    assert_eq!(victims.len(), 2);
}

#[test]
fn equal_priority_victims_are_reprieved_oldest_first() {
    // 1.16 MoreImportantPod: among equal priorities the earlier start is reprieved first, so
    // the younger pod is the victim (by name alone it would be the other way round)
    let mut cache = ClusterCache::new();
    cache.upsert_node(&simple_node("n1", "2", "1Gi", 110));
    cache.upsert_pod(&started(
        "z-old",
        0,
        "1",
        "n1",
        Some("2024-05-01T10:00:00Z"),
    ));
    cache.upsert_pod(&started(
        "a-young",
        0,
        "1",
        "n1",
        Some("2024-05-01T11:00:00Z"),
    ));
    let pre = cache.compile_pod(&cpu_pod("pre", 100, "1", ""));
    assert_eq!(
        victims_of(&run(&mut cache, &pre, &[], &[])),
        ("n1".into(), vec!["default/a-young".into()])
    );
}

#[test]
fn start_times_parse_as_rfc3339() {
    use crate::pod_info::unix_seconds;
    assert_eq!(unix_seconds("1970-01-01T00:00:00Z"), Some(0));
    assert_eq!(unix_seconds("2024-05-01T10:00:00Z"), Some(1_714_557_600));
    assert_eq!(
        unix_seconds("2024-05-01T10:00:00.123456Z"),
        Some(1_714_557_600)
    );
    assert_eq!(
        unix_seconds("2024-05-01T12:00:00+02:00"),
        Some(1_714_557_600)
    );
    assert_eq!(unix_seconds("2000-02-29T00:00:00Z"), Some(951_782_400));
    for bad in [
        "",
        "2024-05-01",
        "2024-13-01T00:00:00Z",
        "2024-05-01T10:00:00",
        "yesterday",
    ] {
        assert_eq!(unix_seconds(bad), None, "{bad}");
    }
}

#[test]
fn equal_victims_of_different_sizes_are_reprieved_in_key_order() {
    // priority and start time tie; the key decides who is reprieved first, so a fast path
    // that orders victims cheaply must not treat pods of different sizes as interchangeable
    let mut cache = ClusterCache::new();
    cache.upsert_node(&simple_node("n1", "2", "1Gi", 110));
    for (name, cpu) in [("c", "500m"), ("b", "500m"), ("a", "1")] {
        cache.upsert_pod(&cpu_pod(name, 0, cpu, "n1"));
    }
    let pre = cache.compile_pod(&cpu_pod("pre", 100, "1", ""));
    assert_eq!(
        victims_of(&run(&mut cache, &pre, &[], &[])),
        ("n1".into(), vec!["default/b".into(), "default/c".into()])
    );
}
