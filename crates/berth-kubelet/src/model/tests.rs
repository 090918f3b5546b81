use super::*;
use crate::config::parse_cluster;
use serde_json::json;

const MI: i64 = 1 << 20;
const GI: i64 = 1 << 30;

fn node(extra: &str) -> NodeModel {
    let text = format!(
        "pools:\n- name: pool\n  capacity: {{cpu: '2', memory: 4Gi, pods: '3', ephemeral-storage: 10Gi}}\n  systemUsage: {{memory: 256Mi, pids: 100}}\n{extra}"
    );
    NodeModel::new(parse_cluster(&text).unwrap().nodes.remove(0))
}

fn pod(name: &str, resources: Value, annotations: Value) -> PodState {
    let p = json!({
        "metadata": {"namespace": "ns", "name": name, "uid": name, "annotations": annotations},
        "spec": {"containers": [{"name": "c", "image": format!("img-{name}"), "resources": resources}]},
        "status": {"phase": "Running"},
    });
    PodState::from_pod(&p, Duration::ZERO).0
}

fn add(n: &mut NodeModel, p: PodState) {
    n.pods.insert(p.key.clone(), p);
}

#[test]
fn admission_fit() {
    let mut n = node("");
    add(
        &mut n,
        pod(
            "a",
            json!({"requests": {"cpu": "1500m", "memory": "1Gi"}}),
            json!({}),
        ),
    );
    // (resources, expected rejection reason)
    let cases = [
        (json!({"requests": {"cpu": "500m"}}), None),
        (json!({"requests": {"cpu": "600m"}}), Some("OutOfcpu")),
        (
            json!({"limits": {"memory": "4Gi", "cpu": "100m"}}),
            Some("OutOfmemory"),
        ),
        // An extended resource the node does not know: a cluster-level one, not checked
        // (upstream's removeMissingExtendedResources).
        (json!({"requests": {"nvidia.com/gpu": "1"}}), None),
        (json!({}), None),
    ];
    for (res, want) in cases {
        let got = n.admit(&pod("b", res.clone(), json!({}))).err();
        assert_eq!(got.as_ref().map(|r| r.reason.as_str()), want, "{res}");
    }
    let e = n
        .admit(&pod("b", json!({"requests": {"cpu": "600m"}}), json!({})))
        .unwrap_err();
    assert_eq!(
        e.message,
        "Node didn't have enough resource: cpu, requested: 600, used: 1500, capacity: 2000"
    );
    add(&mut n, pod("c", json!({}), json!({})));
    add(&mut n, pod("d", json!({}), json!({})));
    assert_eq!(
        n.admit(&pod("e", json!({}), json!({}))).unwrap_err().reason,
        "OutOfpods"
    );
}

#[test]
fn extended_resources_from_the_node_capacity_are_admitted_up_to_it() {
    let mut n = node("");
    n.extended
        .insert("example.com/fakecpu".into(), Quantity::parse("5").unwrap());
    let fake = |name: &str, q: &str| {
        pod(
            name,
            json!({"requests": {"example.com/fakecpu": q}, "limits": {"example.com/fakecpu": q}}),
            json!({}),
        )
    };
    add(&mut n, fake("a", "2"));
    add(&mut n, fake("b", "2"));
    assert!(n.admit(&fake("c", "1")).is_ok(), "4 + 1 fits in 5");
    let r = n.admit(&fake("c", "2")).unwrap_err();
    assert_eq!(r.reason, "OutOfexample.com/fakecpu");
    assert_eq!(
        r.message,
        "Node didn't have enough resource: example.com/fakecpu, requested: 2, used: 4, capacity: 5"
    );
}

#[test]
fn placement_admission_refuses_a_host_port_in_use_and_a_mismatched_selector() {
    let mut n = node("");
    let with_port = |name: &str| {
        let p = json!({
            "metadata": {"namespace": "ns", "name": name, "uid": name},
            "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}]}]},
            "status": {"phase": "Running"},
        });
        (PodState::from_pod(&p, Duration::ZERO).0, p["spec"].clone())
    };
    let (first, spec) = with_port("first");
    assert!(n.admit_placement(&first, &spec).is_ok());
    add(&mut n, first);
    let (second, spec) = with_port("second");
    assert_eq!(
        n.admit_placement(&second, &spec).unwrap_err().reason,
        "NodePorts"
    );
    let plain = pod("plain", json!({}), json!({}));
    let spec = json!({"nodeSelector": {"disktype": "ssd"}});
    assert_eq!(
        n.admit_placement(&plain, &spec).unwrap_err().reason,
        "NodeAffinity"
    );
    n.view.labels.insert("disktype".into(), "ssd".into());
    assert!(n.admit_placement(&plain, &spec).is_ok());
}

#[test]
fn admission_under_pressure() {
    let be = pod("be", json!({}), json!({}));
    let burst = pod("bu", json!({"requests": {"memory": "10Mi"}}), json!({}));
    let mut tolerant = be.clone();
    tolerant.tolerates_memory_pressure = true;
    // (conditions, pod, admitted)
    let cases = [
        (vec![], &be, true),
        (vec![Condition::MemoryPressure], &be, false),
        (vec![Condition::MemoryPressure], &tolerant, true),
        (vec![Condition::MemoryPressure], &burst, true),
        (vec![Condition::DiskPressure], &burst, false),
        (vec![Condition::PIDPressure], &burst, false),
    ];
    for (conds, p, want) in cases {
        let mut n = node("");
        n.conditions = conds.iter().copied().collect();
        let got = n.admit(p);
        assert_eq!(got.is_ok(), want, "{conds:?} {}", p.key);
        if let Err(r) = got {
            assert_eq!(r.reason, "Evicted");
            assert!(r.message.starts_with("The node had condition: ["));
        }
    }
    let mut n = node("");
    n.conditions = [Condition::MemoryPressure, Condition::DiskPressure].into();
    assert_eq!(
        n.admit(&be).unwrap_err().message,
        "The node had condition: [MemoryPressure DiskPressure]. "
    );
}

#[test]
fn stats_from_usage() {
    let mut n = node("");
    add(
        &mut n,
        pod(
            "be",
            json!({}),
            json!({"berth.io/usage": "memory=1Gi,ephemeral-storage=2Gi,inodes=500"}),
        ),
    );
    add(
        &mut n,
        pod(
            "g",
            json!({"limits": {"cpu": "1", "memory": "512Mi"}}),
            json!({}),
        ),
    );
    let s = n.stats(Duration::ZERO);
    assert_eq!(s.memory_working_set, GI + 512 * MI + 256 * MI);
    assert_eq!(s.pods_memory_working_set, GI + 512 * MI);
    assert_eq!(s.nodefs.used_bytes, 2 * GI);
    assert_eq!(s.nodefs.inodes_used, 500);
    assert_eq!(s.pids, 100 + 5 + 1);
}

#[test]
fn eviction_of_best_effort_under_memory_pressure() {
    let mut n = node("  kubeletArguments:\n    eviction-hard: [\"memory.available<1Gi\"]\n");
    add(
        &mut n,
        pod(
            "g",
            json!({"limits": {"cpu": "1", "memory": "1Gi"}}),
            json!({}),
        ),
    );
    add(
        &mut n,
        pod("be", json!({}), json!({"berth.io/usage": "memory=1Gi"})),
    );
    let (d, _) = n.housekeeping(Duration::ZERO);
    assert!(d.eviction.is_none(), "4Gi − 2Gi − 256Mi is above 1Gi");
    n.pods.get_mut("ns/be").unwrap().usage = Some(usage::parse_usage("memory=2Gi").unwrap());
    let (d, _) = n.housekeeping(Duration::from_secs(10));
    assert!(n.conditions.contains(&Condition::MemoryPressure));
    let e = d.eviction.unwrap();
    assert_eq!(e.pod, "ns/be");
    assert_eq!(
        e.message,
        "The node was low on resource: memory. Threshold quantity: 1Gi, available: 768Mi. \
         Container c was using 2Gi, request is 0, has larger consumption of memory. "
    );
}

#[test]
fn disk_pressure_deletes_unused_images_before_evicting() {
    let mut n = node(
        "  images: [{name: big, size: 3Gi}]\n  kubeletArguments:\n    eviction-hard: [\"nodefs.available<2Gi\"]\n",
    );
    add(
        &mut n,
        pod(
            "be",
            json!({}),
            json!({"berth.io/usage": "ephemeral-storage=6Gi"}),
        ),
    );
    let (d, deleted) = n.housekeeping(Duration::ZERO);
    assert!(d.conditions.contains(&Condition::DiskPressure));
    assert_eq!(deleted, vec!["big"]);
    assert!(d.eviction.is_none());
    let (d, _) = n.housekeeping(Duration::from_secs(10));
    assert!(d.eviction.is_none());
    n.pods.get_mut("ns/be").unwrap().usage =
        Some(usage::parse_usage("ephemeral-storage=9Gi").unwrap());
    let (d, _) = n.housekeeping(Duration::from_secs(20));
    assert_eq!(d.eviction.unwrap().pod, "ns/be");
}

#[test]
fn oom_killer_picks_highest_score() {
    let mut n = node("");
    add(
        &mut n,
        pod(
            "g",
            json!({"limits": {"cpu": "1", "memory": "2Gi"}}),
            json!({"berth.io/usage": "memory=2Gi"}),
        ),
    );
    add(
        &mut n,
        pod(
            "bu",
            json!({"requests": {"memory": "100Mi"}}),
            json!({"berth.io/usage": "memory=1Gi"}),
        ),
    );
    assert_eq!(n.oom_victim(Duration::ZERO), None);
    add(
        &mut n,
        pod(
            "bu2",
            json!({"requests": {"memory": "1Gi"}}),
            json!({"berth.io/usage": "memory=1Gi"}),
        ),
    );
    assert_eq!(
        n.oom_victim(Duration::ZERO),
        Some(("ns/bu".into(), "c".into()))
    );
}

#[test]
fn a_container_over_its_own_limit_is_killed_whatever_the_node() {
    let mut n = node("");
    // At its limit: fine. Over it: killed, although the node has memory to spare.
    add(
        &mut n,
        pod(
            "at",
            json!({"limits": {"memory": "200Mi"}}),
            json!({"berth.io/usage": "memory=200Mi"}),
        ),
    );
    add(
        &mut n,
        pod(
            "over",
            json!({"requests": {"memory": "100Mi"}, "limits": {"memory": "200Mi"}}),
            json!({"berth.io/usage": "memory=100Mi->300Mi/20s"}),
        ),
    );
    add(
        &mut n,
        pod(
            "nolimit",
            json!({}),
            json!({"berth.io/usage": "memory=3Gi"}),
        ),
    );
    assert!(n.over_limit(Duration::from_secs(5)).is_empty());
    assert_eq!(
        n.over_limit(Duration::from_secs(20)),
        [("ns/over".to_string(), "c".to_string())]
    );
    assert_eq!(n.oom_victim(Duration::from_secs(20)), None);
    n.pods.get_mut("ns/over").unwrap().phase = Phase::Terminated;
    assert!(n.over_limit(Duration::from_secs(20)).is_empty());
}

#[test]
fn crash_loop_back_off_doubles_to_five_minutes_and_starts_over_after_ten_minutes() {
    let (mut p, _) = PodState::from_pod(
        &json!({"metadata": {"namespace": "ns", "name": "p"}, "spec": {"containers": [{"name": "c"}]}}),
        Duration::ZERO,
    );
    let s = Duration::from_secs;
    let mut seen = Vec::new();
    for _ in 0..7 {
        seen.push(p.next_backoff(p.started_at + s(1)).as_secs());
    }
    assert_eq!(seen, [10, 20, 40, 80, 160, 300, 300]);
    // A run of 10 minutes before the next crash: back to 10s.
    assert_eq!(p.next_backoff(p.started_at + s(600)), s(10));
    assert_eq!(p.next_backoff(p.started_at + s(1)), s(20));
    // Waiting out a back-off, the containers use nothing.
    p.backoff_until = Some(s(50));
    assert!(p.backing_off(s(49)) && !p.backing_off(s(50)));
    assert_eq!(p.usage(s(49)).amounts.memory, 0);
}

#[test]
fn a_node_is_steady_once_its_ramps_end_and_no_container_backs_off() {
    let mut n = node("");
    add(
        &mut n,
        pod("fixed", json!({"requests": {"cpu": "100m"}}), json!({})),
    );
    assert!(n.steady(Duration::ZERO));
    let ramp = json!({"berth.io/usage": "memory=1Gi->2Gi/60s"});
    add(&mut n, pod("ramp", json!({}), ramp));
    // The ramp climbs for a minute from the container's start, then stays.
    assert!(!n.steady(Duration::from_secs(30)));
    assert!(n.steady(Duration::from_secs(60)));
    n.pods.get_mut("ns/fixed").unwrap().backoff_until = Some(Duration::from_secs(90));
    assert!(!n.steady(Duration::from_secs(60)));
    // A pod that ended changes nothing any more.
    n.pods.get_mut("ns/fixed").unwrap().phase = Phase::Terminated;
    assert!(n.steady(Duration::from_secs(60)));
}
