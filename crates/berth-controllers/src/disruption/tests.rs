//! Vectors from control-loops §5.2 (upstream `disruption_test.go`), as allowed/current/desired/expected.

use super::*;
use serde_json::{json, Value};

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
        .unwrap()
        .to_utc()
}

fn pdb(spec: Value, status: Value) -> PodDisruptionBudget {
    serde_json::from_value(json!({
        "metadata": {"name": "web-pdb", "namespace": "ns", "generation": 3, "uid": "pdb-uid"},
        "spec": spec,
        "status": status,
    }))
    .unwrap()
}

fn min_available(v: Value) -> PodDisruptionBudget {
    pdb(
        json!({"minAvailable": v, "selector": {"matchLabels": {"app": "web"}}}),
        json!(null),
    )
}

fn max_unavailable(v: Value) -> PodDisruptionBudget {
    pdb(
        json!({"maxUnavailable": v, "selector": {"matchLabels": {"app": "web"}}}),
        json!(null),
    )
}

fn pod(name: &str, ready: bool, owner: Option<(&str, &str)>) -> Pod {
    let owners: Vec<Value> = owner
        .iter()
        .map(|(kind, name)| json!({"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": format!("uid-{name}"), "controller": true}))
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"), "labels": {"app": "web"}, "ownerReferences": owners},
        "spec": {"containers": []},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]},
    }))
    .unwrap()
}

fn pods(n: usize, ready: usize, owner: Option<(&str, &str)>) -> Vec<Pod> {
    (0..n)
        .map(|i| {
            pod(
                &format!("{}-{i}", owner.map_or("p", |o| o.1)),
                i < ready,
                owner,
            )
        })
        .collect()
}

fn workloads(list: &[(&str, &str, i32)]) -> Workloads {
    list.iter()
        .map(|(kind, name, replicas)| {
            (
                (kind.to_string(), "ns".to_string(), name.to_string()),
                Workload {
                    uid: format!("uid-{name}"),
                    replicas: *replicas,
                    controller: None,
                },
            )
        })
        .collect()
}

/// allowed/current/desired/expected.
fn summary(b: &PodDisruptionBudget, pods: &[Pod], w: &Workloads) -> (i32, i32, i32, i32) {
    let refs: Vec<&Pod> = pods.iter().collect();
    let s = reconcile(b, &refs, w, t0()).status;
    (
        s.disruptions_allowed,
        s.current_healthy,
        s.desired_healthy,
        s.expected_pods,
    )
}

#[test]
fn vectors() {
    let none = Workloads::new();
    // minAvailable 3, 0..3 ready pods without controllers: 0/i/3/i.
    for i in 0..=3 {
        assert_eq!(
            summary(&min_available(json!(3)), &pods(i, i, None), &none),
            (0, i as i32, 3, i as i32),
            "{i} pods"
        );
    }
    assert_eq!(
        summary(&min_available(json!(3)), &pods(4, 4, None), &none),
        (1, 4, 3, 4)
    );
    assert_eq!(
        summary(&min_available(json!(3)), &pods(4, 3, None), &none),
        (0, 3, 3, 4)
    );
    // The brief's vectors: minAvailable 2 of 3 ready ⇒ 1; 50% of 3 ⇒ desired 2.
    assert_eq!(
        summary(&min_available(json!(2)), &pods(3, 3, None), &none),
        (1, 3, 2, 3)
    );
    assert_eq!(
        summary(&min_available(json!("50%")), &pods(3, 3, None), &none),
        (1, 3, 2, 3)
    );
    // maxUnavailable 1 of 3 controller-less ready pods: desired 2, allowed 1.
    assert_eq!(
        summary(&max_unavailable(json!(1)), &pods(3, 3, None), &none),
        (1, 3, 2, 3)
    );
    assert_eq!(
        summary(&max_unavailable(json!(1)), &pods(0, 0, None), &none),
        (0, 0, 0, 0)
    );
    assert_eq!(
        summary(&max_unavailable(json!(1)), &pods(1, 1, None), &none),
        (1, 1, 0, 1)
    );
    assert_eq!(
        summary(&max_unavailable(json!("34%")), &pods(3, 3, None), &none),
        (2, 3, 1, 3)
    );
    // maxUnavailable 2, RS replicas 7, 1 ready pod: 0/1/5/7; scaled to 5: 0/1/3/5.
    let rs = Some(("ReplicaSet", "rs"));
    assert_eq!(
        summary(
            &max_unavailable(json!(2)),
            &pods(1, 1, rs),
            &workloads(&[("ReplicaSet", "rs", 7)])
        ),
        (0, 1, 5, 7)
    );
    assert_eq!(
        summary(
            &max_unavailable(json!(2)),
            &pods(1, 1, rs),
            &workloads(&[("ReplicaSet", "rs", 5)])
        ),
        (0, 1, 3, 5)
    );
    // minAvailable 20%, RS replicas 10, 1 ready pod: 0/1/2/10.
    assert_eq!(
        summary(
            &min_available(json!("20%")),
            &pods(1, 1, rs),
            &workloads(&[("ReplicaSet", "rs", 10)])
        ),
        (0, 1, 2, 10)
    );
    // minAvailable 34% (1.02 → 2), RC replicas 3 with 1, 2, 3 ready pods.
    let rc = Some(("ReplicationController", "rc"));
    let w = workloads(&[("ReplicationController", "rc", 3)]);
    assert_eq!(
        summary(&min_available(json!("34%")), &pods(1, 1, rc), &w),
        (0, 1, 2, 3)
    );
    assert_eq!(
        summary(&min_available(json!("34%")), &pods(2, 2, rc), &w),
        (0, 2, 2, 3)
    );
    assert_eq!(
        summary(&min_available(json!("34%")), &pods(3, 3, rc), &w),
        (1, 3, 2, 3)
    );
    // minAvailable 28%, RC replicas 11, first 6 of 11 unready: 1/5/4/11.
    let mut eleven = pods(11, 0, rc);
    for p in eleven.iter_mut().skip(6) {
        *p = pod(p.metadata.name.as_deref().unwrap(), true, rc);
    }
    let w = workloads(&[
        ("ReplicationController", "rc", 11),
        ("ReplicaSet", "rs", 11),
    ]);
    assert_eq!(
        summary(&min_available(json!("28%")), &eleven, &w),
        (1, 5, 4, 11)
    );
    // Plus a second controller with 11 replicas and its (unready) pods: expected 22, desired 7.
    let mut both = eleven.clone();
    both.extend(pods(11, 0, rs));
    assert_eq!(
        summary(&min_available(json!("28%")), &both, &w),
        (0, 5, 7, 22)
    );
}

#[test]
fn deployment_scale_counts_through_its_replicaset() {
    let mut w = workloads(&[("ReplicaSet", "web-abc", 2), ("Deployment", "web", 4)]);
    w.get_mut(&("ReplicaSet".into(), "ns".into(), "web-abc".into()))
        .unwrap()
        .controller = Some(("Deployment".into(), "web".into()));
    let p = pods(2, 2, Some(("ReplicaSet", "web-abc")));
    assert_eq!(summary(&max_unavailable(json!(1)), &p, &w), (0, 2, 3, 4));
}

#[test]
fn selector_edge_cases() {
    let none = Workloads::new();
    let p = pods(2, 2, None);
    // policy/v1: `{}` selects every pod of the namespace; no selector selects none.
    assert_eq!(
        summary(
            &pdb(json!({"minAvailable": 1, "selector": {}}), json!(null)),
            &p,
            &none
        ),
        (1, 2, 1, 2)
    );
    assert_eq!(
        summary(&pdb(json!({"minAvailable": 1}), json!(null)), &p, &none),
        (0, 0, 1, 0)
    );
    // Pods of other namespaces or labels are not the budget's.
    let mut other = pod("x", true, None);
    other.metadata.namespace = Some("elsewhere".into());
    let mut unlabelled = pod("y", true, None);
    unlabelled.metadata.labels = None;
    assert_eq!(
        summary(&min_available(json!(1)), &[other, unlabelled], &none),
        (0, 0, 1, 0)
    );
}

#[test]
fn deleting_pods_are_not_healthy() {
    let mut p = pods(3, 3, None);
    p[0].metadata.deletion_timestamp = Some(to_time(t0()));
    assert_eq!(
        summary(&min_available(json!(2)), &p, &Workloads::new()),
        (0, 2, 2, 3)
    );
}

#[test]
fn disrupted_pods_are_kept_while_young_and_dropped_when_old_or_deleting() {
    let p = pods(3, 3, None);
    let refs: Vec<&Pod> = p.iter().collect();
    let b = pdb(
        json!({"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}),
        json!({"disruptedPods": {"p-0": "2026-01-01T00:00:00Z", "gone": "2026-01-01T00:00:00Z"}, "disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 1, "expectedPods": 3}),
    );
    // One minute later: p-0 stays disrupted (not healthy), the entry of a pod that is gone is dropped.
    let s = reconcile(&b, &refs, &Workloads::new(), t0() + Duration::seconds(60));
    assert_eq!(
        (s.status.disruptions_allowed, s.status.current_healthy),
        (1, 2)
    );
    assert_eq!(
        s.status
            .disrupted_pods
            .as_ref()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        vec!["p-0"]
    );
    assert_eq!(s.resync_at, Some(t0() + Duration::seconds(120)));
    let patch = s.status_patch.unwrap();
    assert_eq!(patch["disruptedPods"]["gone"], Value::Null);
    assert_eq!(patch["disruptedPods"]["p-0"], json!("2026-01-01T00:00:00Z"));
    assert!(s.events.is_empty());
    // Three minutes later the pod was not deleted: dropped, NotDeleted event, healthy again.
    let s = reconcile(&b, &refs, &Workloads::new(), t0() + Duration::seconds(180));
    assert_eq!(
        (s.status.disruptions_allowed, s.status.current_healthy),
        (2, 3)
    );
    assert_eq!(s.status.disrupted_pods, None);
    assert_eq!(s.events.len(), 1);
    assert_eq!(s.events[0].reason, "NotDeleted");
    assert_eq!(
        s.events[0].message,
        "Pod was expected by PDB ns/web-pdb to be deleted but it wasn't"
    );
}

#[test]
fn status_fields_and_no_churn() {
    let p = pods(3, 3, None);
    let refs: Vec<&Pod> = p.iter().collect();
    let b = min_available(json!(2));
    let s = reconcile(&b, &refs, &Workloads::new(), t0());
    assert_eq!(s.status.observed_generation, Some(3));
    let c = &s.status.conditions.as_ref().unwrap()[0];
    assert_eq!(
        (c.type_.as_str(), c.status.as_str(), c.reason.as_str()),
        ("DisruptionAllowed", "True", "SufficientPods")
    );
    let patch = s.status_patch.clone().unwrap();
    assert_eq!(patch["disruptionsAllowed"], json!(1));
    assert_eq!(patch["observedGeneration"], json!(3));
    // Applying the status and syncing again later changes nothing: no write.
    let mut applied = b.clone();
    applied.status = Some(s.status.clone());
    let again = reconcile(
        &applied,
        &refs,
        &Workloads::new(),
        t0() + Duration::seconds(30),
    );
    assert_eq!(again.status_patch, None);
    // Budget exhausted: condition turns False/InsufficientPods with a new transition time.
    let fewer: Vec<&Pod> = refs[..2].to_vec();
    let s2 = reconcile(
        &applied,
        &fewer,
        &Workloads::new(),
        t0() + Duration::seconds(30),
    );
    let c = &s2.status.conditions.as_ref().unwrap()[0];
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", "InsufficientPods")
    );
    assert_eq!(
        to_chrono(&c.last_transition_time),
        t0() + Duration::seconds(30)
    );
}

#[test]
fn bad_percentage_fails_safe() {
    let p = pods(3, 3, None);
    let refs: Vec<&Pod> = p.iter().collect();
    let s = reconcile(&min_available(json!("abc")), &refs, &Workloads::new(), t0());
    assert_eq!(s.status.disruptions_allowed, 0);
    assert_eq!(
        s.status.conditions.as_ref().unwrap()[0].reason,
        "SyncFailed"
    );
    assert_eq!(s.events[0].reason, "CalculateExpectedPodCountFailed");
}
