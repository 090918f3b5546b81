//! The seed documents' scheduling examples (seed 002), end to end through the engine.

use berth_scheduler::model::{Node, Pod};
use berth_scheduler::policy::{
    Policy, PredicateConfig, PredicateKind, PriorityConfig, PriorityKind,
};
use berth_scheduler::{ClusterCache, Decision, Scheduler};
use serde_json::{json, Value};
use std::collections::BTreeMap;

fn node(name: &str, labels: Value, taints: Value) -> Node {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints},
        "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}, "conditions": [{"type": "Ready", "status": "True"}]}}))
    .unwrap()
}

fn pod(v: Value) -> Pod {
    serde_json::from_value(v).unwrap()
}

fn schedule(cache: &mut ClusterCache, sched: &mut Scheduler, p: &Pod) -> Decision {
    let info = cache.compile_pod(p);
    let d = sched.schedule(cache, &info);
    if let Decision::Scheduled { node, .. } = &d {
        cache.assume(info, node).unwrap();
    }
    d
}

fn message(d: &Decision) -> String {
    match d {
        Decision::Unschedulable(e) => e.message(),
        other => format!("{other:?}"),
    }
}

const ZONE_US: &str = r#"{"metadata": {"name": "pod-s1"}, "spec": {"containers": [{"image": "docker.io/ocpqe/hello-pod", "name": "hello-pod"}],
  "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["us"]}]}]}}}}}"#;

#[test]
fn node_affinity_with_matching_labels_16_8_3_1() {
    let mut cache = ClusterCache::new();
    cache.upsert_node(&node("node1", json!({"zone": "us"}), json!([])));
    let mut s = Scheduler::builder().build().unwrap();
    let d = schedule(&mut cache, &mut s, &serde_json::from_str(ZONE_US).unwrap());
    assert!(
        matches!(d, Decision::Scheduled { ref node, .. } if node == "node1"),
        "{d:?}"
    );
}

#[test]
fn node_affinity_without_matching_labels_16_8_3_2() {
    let mut cache = ClusterCache::new();
    cache.upsert_node(&node("node1", json!({"zone": "emea"}), json!([])));
    let mut s = Scheduler::builder().build().unwrap();
    let d = schedule(&mut cache, &mut s, &serde_json::from_str(ZONE_US).unwrap());
    assert_eq!(
        message(&d),
        "0/1 nodes are available: 1 node(s) didn't match node selector."
    );
}

#[test]
fn pod_affinity_and_anti_affinity_16_9_3() {
    let mut cache = ClusterCache::new();
    for n in ["node1", "node2", "node3"] {
        cache.upsert_node(&node(n, json!({"kubernetes.io/hostname": n}), json!([])));
    }
    let mut s = Scheduler::builder().seed(7).build().unwrap();
    let team4 = pod(
        json!({"metadata": {"name": "team4", "labels": {"team": "4"}}, "spec": {"containers": [{"name": "ocp"}]}}),
    );
    let Decision::Scheduled { node: t4, .. } = schedule(&mut cache, &mut s, &team4) else {
        panic!()
    };
    let term = |k: &str, v: &str| json!([{"labelSelector": {"matchExpressions": [{"key": k, "operator": "In", "values": [v]}]}, "topologyKey": "kubernetes.io/hostname"}]);
    // 16.9.3.1: team4a joins team4
    let team4a = pod(
        json!({"metadata": {"name": "team4a"}, "spec": {"containers": [{"name": "c"}],
        "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": term("team", "4")}}}}),
    );
    assert!(
        matches!(schedule(&mut cache, &mut s, &team4a), Decision::Scheduled { ref node, .. } if *node == t4)
    );
    // 16.9.3.2: pod-s2 avoids pod-s1
    let s1 = pod(
        json!({"metadata": {"name": "pod-s1", "labels": {"security": "s1"}}, "spec": {"containers": [{"name": "ocp"}]}}),
    );
    let Decision::Scheduled { node: n1, .. } = schedule(&mut cache, &mut s, &s1) else {
        panic!()
    };
    let s2 = pod(
        json!({"metadata": {"name": "pod-s2"}, "spec": {"containers": [{"name": "c"}],
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": term("security", "s1")}}}}),
    );
    assert!(
        matches!(schedule(&mut cache, &mut s, &s2), Decision::Scheduled { ref node, .. } if *node != n1)
    );
    // 16.9.3.3: no pod with security=s2 -> pending
    let s3 = pod(
        json!({"metadata": {"name": "pod-s3"}, "spec": {"containers": [{"name": "c"}],
        "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": term("security", "s2")}}}}),
    );
    assert_eq!(
        message(&schedule(&mut cache, &mut s, &s3)),
        "0/3 nodes are available: 3 node(s) didn't match pod affinity rules, 3 node(s) didn't match pod affinity/anti-affinity."
    );
}

#[test]
fn multiple_taints_and_tolerations_16_11_2_1() {
    let mut cache = ClusterCache::new();
    let taints = json!([{"key": "key1", "value": "value1", "effect": "NoSchedule"}, {"key": "key1", "value": "value1", "effect": "NoExecute"},
        {"key": "key2", "value": "value2", "effect": "NoSchedule"}]);
    cache.upsert_node(&node("node1", json!({}), taints));
    let p = pod(
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}], "tolerations": [
        {"key": "key1", "operator": "Equal", "value": "value1", "effect": "NoSchedule"},
        {"key": "key1", "operator": "Equal", "value": "value1", "effect": "NoExecute"}]}}),
    );
    let mut s = Scheduler::builder().build().unwrap();
    assert_eq!(
        message(&schedule(&mut cache, &mut s, &p)),
        "0/1 nodes are available: 1 node(s) had taints that the pod didn't tolerate."
    );
}

/// 16.2.7 / 16.2.8: region and zone affinity (serviceAffinity) with rack spreading
/// (serviceAntiAffinity): a service's pods stay in the first pod's region and zone and spread
/// over its racks.
#[test]
fn topology_levels_16_2_7_and_16_2_8() {
    let mut policy = Policy::default_policy();
    policy.predicates.push(PredicateConfig {
        name: "RegionZoneAffinity".into(),
        kind: PredicateKind::ServiceAffinity {
            labels: vec!["region".into(), "zone".into()],
        },
    });
    policy.priorities.push(PriorityConfig {
        name: "RackSpread".into(),
        weight: 1,
        kind: PriorityKind::ServiceAntiAffinity {
            label: "rack".into(),
        },
    });
    let mut cache = ClusterCache::new();
    let mut racks_of = BTreeMap::new();
    for r in 0..2 {
        for z in 0..2 {
            for k in 0..3 {
                for i in 0..2 {
                    let name = format!("n-r{r}-z{z}-k{k}-{i}");
                    let labels = json!({"region": format!("r{r}"), "zone": format!("r{r}z{z}"), "rack": format!("r{r}z{z}k{k}")});
                    racks_of.insert(
                        name.clone(),
                        (
                            format!("r{r}"),
                            format!("r{r}z{z}"),
                            format!("r{r}z{z}k{k}"),
                        ),
                    );
                    cache.upsert_node(&node(&name, labels, json!([])));
                }
            }
        }
    }
    cache.upsert_service(&serde_json::from_value(json!({"metadata": {"name": "web", "namespace": "default"}, "spec": {"selector": {"app": "web"}}})).unwrap());
    let mut s = Scheduler::builder().policy(policy).seed(3).build().unwrap();
    let mut placed = Vec::new();
    for i in 0..6 {
        let p = pod(
            json!({"metadata": {"name": format!("web-{i}"), "namespace": "default", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m", "memory": "100Mi"}}}]}}),
        );
        match schedule(&mut cache, &mut s, &p) {
            Decision::Scheduled { node, .. } => placed.push(racks_of[&node].clone()),
            other => panic!("{other:?}"),
        }
    }
    let (region, zone, _) = placed[0].clone();
    assert!(
        placed.iter().all(|(r, z, _)| *r == region && *z == zone),
        "affinity to the first pod's region and zone: {placed:?}"
    );
    let mut per_rack: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, _, k) in &placed {
        *per_rack.entry(k.as_str()).or_default() += 1;
    }
    assert_eq!(
        per_rack.len(),
        3,
        "spread over the zone's three racks: {placed:?}"
    );
    assert!(per_rack.values().all(|&c| c == 2), "{per_rack:?}");
}

#[test]
fn fit_error_counts_and_json_objects() {
    let mut cache = ClusterCache::new();
    for i in 0..3 {
        cache
            .upsert_node_json(format!(r#"{{"metadata":{{"name":"small-{i}","labels":{{"disk":"ssd"}}}},"status":{{"allocatable":{{"cpu":"1","memory":"1Gi","pods":"10"}}}}}}"#).as_bytes())
            .unwrap();
    }
    for i in 0..2 {
        cache
            .upsert_node_json(format!(r#"{{"metadata":{{"name":"other-{i}","labels":{{"disk":"hdd"}}}},"status":{{"allocatable":{{"cpu":"8","memory":"8Gi","pods":"10"}}}}}}"#).as_bytes())
            .unwrap();
    }
    let p = cache
        .compile_pod_json(br#"{"metadata":{"name":"big"},"spec":{"nodeSelector":{"disk":"ssd"},"containers":[{"name":"c","resources":{"requests":{"cpu":"2"}}}]}}"#)
        .unwrap();
    let mut s = Scheduler::builder().build().unwrap();
    assert_eq!(
        message(&s.schedule(&cache, &p)),
        "0/5 nodes are available: 2 node(s) didn't match node selector, 3 Insufficient cpu."
    );
    let ex = s.explain(&cache, &p);
    assert!(serde_json::to_string(&ex)
        .unwrap()
        .contains("Insufficient cpu"));
}
