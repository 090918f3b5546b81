use super::*;

/// Seed 004's worked example as a node: 32Gi capacity, kube-reserved 2Gi (and 500m cpu),
/// system-reserved 1Gi, eviction-hard 100Mi: 29596Mi allocatable memory, 7500m cpu.
const SEED_004_NODE: &str = r#"
pools:
  - name: seed
    count: 1
    capacity: {cpu: "8", memory: 32Gi, pods: "110"}
    kubeletArguments:
      kube-reserved: ["cpu=500m,memory=2Gi"]
      system-reserved: ["memory=1Gi"]
      eviction-hard: ["memory.available<100Mi"]
"#;

fn cluster(text: &str) -> ClusterCache {
    let mut cache = ClusterCache::new();
    for n in berth_kubelet::config::parse_cluster(text).unwrap().nodes {
        cache
            .upsert_node_json(node_object(&n).to_string().as_bytes())
            .unwrap();
    }
    cache
}

fn pod(cpu: &str, memory: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "small-pod"},
           "spec": {"containers": [{"name": "c", "image": "nginx",
               "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}})
}

fn default_scheduler() -> Scheduler {
    scheduler(None, None, 0).unwrap()
}

#[test]
fn seed_004s_node_holds_28_pods_of_1gi_by_hand() {
    // 29596Mi / 1024Mi = 28.9: memory runs out first (cpu would allow 7500m / 100m = 75).
    let mut cache = cluster(SEED_004_NODE);
    let answer = count(&mut cache, &mut default_scheduler(), &pod("100m", "1Gi"), 0);
    assert_eq!(answer.instances, 28);
    assert_eq!(answer.fail_type, "Unschedulable");
    assert_eq!(
        answer.fail_message,
        "0/1 nodes are available: 1 Insufficient memory."
    );
    assert_eq!(
        answer.text(false),
        "The cluster can schedule 28 instance(s) of the pod small-pod.\n\nTermination reason: Unschedulable: 0/1 nodes are available: 1 Insufficient memory.\n"
    );
}

#[test]
fn cpu_bound_pods_count_by_cpu_and_the_pods_limit_counts_too() {
    // 7500m / 1 cpu = 7.
    let mut cache = cluster(SEED_004_NODE);
    let answer = count(&mut cache, &mut default_scheduler(), &pod("1", "10Mi"), 0);
    assert_eq!(answer.instances, 7);
    assert!(answer.fail_message.contains("Insufficient cpu"));
    // Tiny pods stop at 110 pods per node.
    let mut cache = cluster(SEED_004_NODE);
    let answer = count(&mut cache, &mut default_scheduler(), &pod("1m", "1Mi"), 0);
    assert_eq!(answer.instances, 110);
    assert_eq!(
        answer.fail_message,
        "0/1 nodes are available: 1 Insufficient pods."
    );
}

#[test]
fn max_stops_the_count_with_limit_reached() {
    let mut cache = cluster(SEED_004_NODE);
    let answer = count(&mut cache, &mut default_scheduler(), &pod("100m", "1Gi"), 5);
    assert_eq!(answer.instances, 5);
    assert_eq!(
        (answer.fail_type, answer.fail_message.as_str()),
        ("LimitReached", "Limit reached")
    );
}

#[test]
fn instances_spread_over_nodes_and_taints_are_respected() {
    let text = r#"
pools:
  - name: a
    count: 2
    capacity: {cpu: "2", memory: 4Gi}
    kubeletArguments: {eviction-hard: []}
  - name: tainted
    count: 1
    capacity: {cpu: "2", memory: 4Gi}
    taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
"#;
    let mut cache = cluster(text);
    // 2000m / 150m = 13 per untainted node.
    let answer = count(
        &mut cache,
        &mut default_scheduler(),
        &pod("150m", "100Mi"),
        0,
    );
    assert_eq!(answer.instances, 26);
    assert_eq!(
        answer.per_node.values().copied().collect::<Vec<_>>(),
        vec![13, 13]
    );
    assert_eq!(
        answer.fail_message,
        "0/3 nodes are available: 1 node(s) had taints that the pod didn't tolerate, 2 Insufficient cpu."
    );
}
