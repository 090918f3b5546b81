use super::*;
use serde_json::json;

fn now() -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000, 0).unwrap()
}

fn ds(spec: Value) -> DaemonSet {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "kube-system", "uid": "ds-1", "generation": 1},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
                 "template": {"metadata": {"labels": {"app": "agent"}}, "spec": spec}},
    }))
    .unwrap()
}

fn plain() -> DaemonSet {
    ds(json!({"containers": [{"name": "c", "image": "agent:1"}]}))
}

fn node(name: &str, labels: Value, taints: Value) -> Node {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints},
               "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}),
    )
    .unwrap()
}

fn daemon(name: &str, on: &str, generation: i64, phase: &str, ready: bool) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "kube-system", "uid": name,
            "labels": {"app": "agent", TEMPLATE_GENERATION: generation.to_string()},
            "creationTimestamp": "2026-11-22T10:00:00Z",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "ds-1", "controller": true}]},
        "spec": {"nodeName": on, "containers": [{"name": "c", "image": "agent:1"}]},
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]},
    }))
    .unwrap()
}

fn created_nodes(s: &DaemonSetSync) -> Vec<&str> {
    s.create.iter().map(|(n, _)| n.as_str()).collect()
}

fn deleted(s: &DaemonSetSync) -> Vec<&str> {
    s.delete.iter().map(|p| p.name.as_str()).collect()
}

#[test]
fn one_pod_per_node_bound_there_with_the_daemon_tolerations() {
    let n1 = node("n1", json!({}), json!([]));
    let n2 = node("n2", json!({}), json!([]));
    let mut exp = Expectations::default();
    let s = reconcile(
        &plain(),
        &[&n1, &n2],
        &[],
        &BTreeMap::new(),
        &mut exp,
        now(),
    );
    assert_eq!(created_nodes(&s), ["n1", "n2"]);
    let pod = &s.create[0].1;
    assert_eq!(pod["metadata"]["generateName"], "agent-");
    assert_eq!(pod["metadata"]["labels"][TEMPLATE_GENERATION], "1");
    assert_eq!(pod["metadata"]["ownerReferences"][0]["uid"], "ds-1");
    assert_eq!(pod["spec"]["nodeName"], "n1");
    let keys: Vec<(&str, &str)> = pod["spec"]["tolerations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["key"].as_str().unwrap(), t["effect"].as_str().unwrap()))
        .collect();
    assert_eq!(
        keys,
        [
            ("node.kubernetes.io/not-ready", "NoExecute"),
            ("node.kubernetes.io/unreachable", "NoExecute"),
            ("node.kubernetes.io/disk-pressure", "NoSchedule"),
            ("node.kubernetes.io/memory-pressure", "NoSchedule"),
            ("node.kubernetes.io/pid-pressure", "NoSchedule"),
            ("node.kubernetes.io/unschedulable", "NoSchedule"),
        ]
    );
    assert!(pod["spec"]["tolerations"][0]
        .get("tolerationSeconds")
        .is_none());
    assert_eq!(s.status.as_ref().unwrap()["desiredNumberScheduled"], 2);
    // Created but not yet seen: the next pass does not create them again.
    for (n, _) in &s.create {
        exp.created("ds-1", n, now());
    }
    let again = reconcile(
        &plain(),
        &[&n1, &n2],
        &[],
        &BTreeMap::new(),
        &mut exp,
        now(),
    );
    assert!(again.create.is_empty());
    let later = now() + Duration::seconds(EXPECTATION_TIMEOUT + 1);
    assert_eq!(
        reconcile(
            &plain(),
            &[&n1, &n2],
            &[],
            &BTreeMap::new(),
            &mut exp,
            later
        )
        .create
        .len(),
        2
    );
}

#[test]
fn pressure_and_cordon_taints_are_tolerated_other_taints_are_not() {
    let pressure = node(
        "p",
        json!({}),
        json!([{"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"},
               {"key": "node.kubernetes.io/disk-pressure", "effect": "NoSchedule"},
               {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]),
    );
    let dedicated = node(
        "d",
        json!({}),
        json!([{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]),
    );
    let evicting = node(
        "e",
        json!({}),
        json!([{"key": "dedicated", "value": "db", "effect": "NoExecute"}]),
    );
    assert_eq!(node_should_run(&plain(), &pressure), (true, true));
    assert_eq!(node_should_run(&plain(), &dedicated), (false, true));
    assert_eq!(node_should_run(&plain(), &evicting), (false, false));
    // A pod already on the NoSchedule-tainted node stays; one on the NoExecute node goes.
    let pods = [
        daemon("a", "d", 1, "Running", true),
        daemon("b", "e", 1, "Running", true),
    ];
    let refs: Vec<&Pod> = pods.iter().collect();
    let s = reconcile(
        &plain(),
        &[&dedicated, &evicting],
        &refs,
        &BTreeMap::new(),
        &mut Expectations::default(),
        now(),
    );
    assert!(s.create.is_empty());
    assert_eq!(deleted(&s), ["b"]);
    // 'a' stays but, as upstream counts it, is misscheduled: d would not get a daemon now.
    let st = s.status.unwrap();
    assert_eq!(
        (
            st["desiredNumberScheduled"].as_i64(),
            st["currentNumberScheduled"].as_i64(),
            st["numberMisscheduled"].as_i64()
        ),
        (Some(0), Some(0), Some(2))
    );
}

#[test]
fn node_selector_and_required_affinity_choose_the_nodes() {
    let ssd = node("ssd", json!({"disktype": "ssd", "cores": "16"}), json!([]));
    let hdd = node("hdd", json!({"disktype": "hdd", "cores": "4"}), json!([]));
    let by_selector = ds(
        json!({"nodeSelector": {"disktype": "ssd"}, "containers": [{"name": "c", "image": "i"}]}),
    );
    let by_affinity = ds(
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["8"]}]}]}}},
        "containers": [{"name": "c", "image": "i"}]}),
    );
    for d in [by_selector, by_affinity] {
        let s = reconcile(
            &d,
            &[&ssd, &hdd],
            &[],
            &BTreeMap::new(),
            &mut Expectations::default(),
            now(),
        );
        assert_eq!(created_nodes(&s), ["ssd"]);
    }
}

#[test]
fn failed_pods_are_replaced_and_duplicates_removed() {
    let n1 = node("n1", json!({}), json!([]));
    let n2 = node("n2", json!({}), json!([]));
    let pods = [
        daemon("evicted", "n1", 1, "Failed", false),
        daemon("a", "n2", 1, "Running", true),
        daemon("b", "n2", 1, "Running", true),
    ];
    let refs: Vec<&Pod> = pods.iter().collect();
    let mut exp = Expectations::default();
    let s = reconcile(
        &plain(),
        &[&n1, &n2],
        &refs,
        &BTreeMap::new(),
        &mut exp,
        now(),
    );
    assert_eq!(deleted(&s), ["evicted", "b"]);
    // Upstream's warning names the failed pod and its node (not the duplicate).
    let said: Vec<(&str, &str, &str)> = s
        .events
        .iter()
        .map(|e| (e.type_, e.reason, e.message.as_str()))
        .collect();
    assert_eq!(
        said,
        [(
            "Warning",
            "FailedDaemonPod",
            "Found failed daemon pod kube-system/evicted on node n1, will try to kill it"
        )]
    );
    // The replacement comes after the backoff (1s, then 2s, ...).
    assert!(s.create.is_empty());
    assert_eq!(exp.next_retry(now()), Some(now() + Duration::seconds(1)));
    let later = now() + Duration::seconds(1);
    let s = reconcile(
        &plain(),
        &[&n1, &n2],
        &refs[1..],
        &BTreeMap::new(),
        &mut exp,
        later,
    );
    assert_eq!(created_nodes(&s), ["n1"]);
    let again = now() + Duration::seconds(2);
    let _ = reconcile(
        &plain(),
        &[&n1, &n2],
        &refs,
        &BTreeMap::new(),
        &mut exp,
        again,
    );
    assert_eq!(exp.next_retry(again), Some(now() + Duration::seconds(4)));
}

#[test]
fn rolling_update_replaces_one_old_pod_at_a_time() {
    let mut d = plain();
    d.metadata.generation = Some(2);
    let nodes: Vec<Node> = (1..=3)
        .map(|i| node(&format!("n{i}"), json!({}), json!([])))
        .collect();
    let nodes: Vec<&Node> = nodes.iter().collect();
    let pods = [
        daemon("a", "n1", 1, "Running", true),
        daemon("b", "n2", 1, "Running", true),
        daemon("c", "n3", 1, "Running", true),
    ];
    let refs: Vec<&Pod> = pods.iter().collect();
    let s = reconcile(
        &d,
        &nodes,
        &refs,
        &BTreeMap::new(),
        &mut Expectations::default(),
        now(),
    );
    assert_eq!(deleted(&s), ["a"]);
    let st = s.status.unwrap();
    assert_eq!(st["updatedNumberScheduled"], 0);
    assert_eq!(st["observedGeneration"], 2);
    // One node already without its pod: no further deletion until it is back.
    let s = reconcile(
        &d,
        &nodes,
        &refs[1..],
        &BTreeMap::new(),
        &mut Expectations::default(),
        now(),
    );
    assert_eq!(created_nodes(&s), ["n1"]);
    assert!(s.delete.is_empty());
    // OnDelete: old pods stay.
    let mut on_delete = d.clone();
    on_delete.spec.as_mut().unwrap().update_strategy =
        Some(serde_json::from_value(json!({"type": "OnDelete"})).unwrap());
    assert!(reconcile(
        &on_delete,
        &nodes,
        &refs,
        &BTreeMap::new(),
        &mut Expectations::default(),
        now()
    )
    .delete
    .is_empty());
}

#[test]
fn status_is_written_only_when_it_changes() {
    let n1 = node("n1", json!({}), json!([]));
    let pods = [daemon("a", "n1", 1, "Running", true)];
    let refs: Vec<&Pod> = pods.iter().collect();
    let mut d = plain();
    let s = reconcile(
        &d,
        &[&n1],
        &refs,
        &BTreeMap::new(),
        &mut Expectations::default(),
        now(),
    );
    let status = s.status.unwrap();
    assert_eq!(status["numberReady"], 1);
    d.status = Some(serde_json::from_value(status).unwrap());
    assert_eq!(
        reconcile(
            &d,
            &[&n1],
            &refs,
            &BTreeMap::new(),
            &mut Expectations::default(),
            now()
        )
        .status,
        None
    );
}

#[test]
fn a_node_without_room_gets_no_pod_but_a_failed_placement() {
    let big = ds(json!({"containers": [{"name": "c", "image": "agent:1",
        "resources": {"requests": {"cpu": "500m"}}}]}));
    let n1 = node("n1", json!({}), json!([]));
    let n2 = node("n2", json!({}), json!([]));
    let busy: Pod = serde_json::from_value(json!({
        "metadata": {"name": "busy", "namespace": "default", "uid": "busy"},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x",
            "resources": {"requests": {"cpu": "3800m"}}}]},
        "status": {"phase": "Running"}}))
    .unwrap();
    let used = fit::node_use([&busy]);
    let mut exp = Expectations::default();
    let s = reconcile(&big, &[&n1, &n2], &[], &used, &mut exp, now());
    assert_eq!(created_nodes(&s), vec!["n2"]);
    assert_eq!(
        s.failed_placements,
        vec![(
            "n1".to_string(),
            "Node didn't have enough resource: cpu, requested: 500, used: 3800, capacity: 4000"
                .to_string()
        )]
    );
    // Wanted on both nodes: n1 counts as desired, unavailable.
    assert_eq!(s.status.as_ref().unwrap()["desiredNumberScheduled"], 2);
}

#[test]
fn the_daemon_set_s_own_pods_do_not_count_against_the_room() {
    let big = ds(json!({"containers": [{"name": "c", "image": "agent:1",
        "resources": {"requests": {"cpu": "3"}}}]}));
    let n1 = node("n1", json!({}), json!([]));
    // The old daemon is being deleted; a new one is created in its room.
    let mut old = daemon("old", "n1", 1, "Running", false);
    old.spec.as_mut().unwrap().containers[0].resources =
        serde_json::from_value(json!({"requests": {"cpu": "3"}})).unwrap();
    let deleting = {
        let mut p = old.clone();
        p.metadata.deletion_timestamp =
            serde_json::from_value(json!("2026-11-22T10:05:00Z")).unwrap();
        p
    };
    let used = fit::node_use([&deleting]);
    let mut exp = Expectations::default();
    let s = reconcile(&big, &[&n1], &[&deleting], &used, &mut exp, now());
    assert_eq!(created_nodes(&s), vec!["n1"]);
    assert!(s.failed_placements.is_empty());
}
