use super::*;
use serde_json::json;

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
        .unwrap()
        .to_utc()
}

fn at(s: i64) -> DateTime<Utc> {
    t0() + Duration::seconds(s)
}

fn node(taints: serde_json::Value) -> Node {
    serde_json::from_value(json!({"metadata": {"name": "node1"}, "spec": {"taints": taints}}))
        .unwrap()
}

fn pod(name: &str, node: Option<&str>, tolerations: serde_json::Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}")},
        "spec": {"nodeName": node, "tolerations": tolerations, "containers": []},
    }))
    .unwrap()
}

fn deleted(p: &TaintPass) -> Vec<String> {
    p.actions
        .iter()
        .filter_map(|a| match a {
            TaintAction::Delete(r) => Some(r.name.clone()),
            _ => None,
        })
        .collect()
}

fn messages(p: &TaintPass) -> Vec<String> {
    p.actions
        .iter()
        .filter_map(|a| match a {
            TaintAction::Event(e) => Some(e.message.clone()),
            _ => None,
        })
        .collect()
}

const TAINT1: &str = r#"[{"key": "testTaint1", "value": "v", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"}]"#;

fn tol(key: &str, seconds: Option<i64>) -> serde_json::Value {
    json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds})
}

#[test]
fn scenario_vectors() {
    let taint1: serde_json::Value = serde_json::from_str(TAINT1).unwrap();
    // (name, node, node taints, tolerations, deleted at 0s?, next wakeup)
    let cases = [
        (
            "not scheduled",
            None,
            taint1.clone(),
            json!([]),
            false,
            None,
        ),
        (
            "untainted node",
            Some("node1"),
            json!([]),
            json!([]),
            false,
            None,
        ),
        (
            "no tolerations",
            Some("node1"),
            taint1.clone(),
            json!([]),
            true,
            None,
        ),
        (
            "tolerates 100s",
            Some("node1"),
            taint1.clone(),
            json!([tol("testTaint1", Some(100))]),
            false,
            Some(at(100)),
        ),
        (
            "tolerates forever",
            Some("node1"),
            taint1.clone(),
            json!([tol("testTaint1", None)]),
            false,
            None,
        ),
        (
            "tolerates another key",
            Some("node1"),
            taint1.clone(),
            json!([tol("other", None)]),
            true,
            None,
        ),
        (
            "tolerationSeconds 0",
            Some("node1"),
            taint1.clone(),
            json!([tol("testTaint1", Some(0))]),
            true,
            None,
        ),
        (
            "tolerationSeconds negative",
            Some("node1"),
            taint1.clone(),
            json!([tol("testTaint1", Some(-5))]),
            true,
            None,
        ),
        (
            "NoSchedule taint is not the manager's",
            Some("node1"),
            json!([{"key": "a", "effect": "NoSchedule"}]),
            json!([]),
            false,
            None,
        ),
        (
            "1s for A and 100s for B",
            Some("node1"),
            json!([{"key": "A", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"}, {"key": "B", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"}]),
            json!([tol("A", Some(1)), tol("B", Some(100))]),
            false,
            Some(at(1)),
        ),
        (
            "first matching toleration is the one used",
            Some("node1"),
            taint1.clone(),
            json!([tol("testTaint1", None), tol("testTaint1", Some(1))]),
            false,
            None,
        ),
        (
            "Exists with empty key tolerates all",
            Some("node1"),
            taint1.clone(),
            json!([{"operator": "Exists"}]),
            false,
            None,
        ),
        (
            "Equal with the wrong value",
            Some("node1"),
            taint1.clone(),
            json!([{"key": "testTaint1", "operator": "Equal", "value": "x", "effect": "NoExecute"}]),
            true,
            None,
        ),
    ];
    for (name, on, taints, tolerations, del, wake) in cases {
        let mut m = TaintManager::new();
        let n = node(taints);
        let p = pod("p", on, tolerations);
        let pass = m.pass(&[&n], &[&p], at(0));
        assert_eq!(!deleted(&pass).is_empty(), del, "{name}");
        assert_eq!(pass.next_wakeup, wake, "{name}");
        if del {
            assert_eq!(
                messages(&pass),
                vec!["Marking for deletion Pod ns/p".to_string()],
                "{name}"
            );
        }
    }
}

#[test]
fn toleration_seconds_counts_from_time_added() {
    let mut m = TaintManager::new();
    let n = node(serde_json::from_str(TAINT1).unwrap());
    let p = pod("p", Some("node1"), json!([tol("testTaint1", Some(60))]));
    // First seen 20s after it was added: 40s left.
    assert_eq!(m.pass(&[&n], &[&p], at(20)).next_wakeup, Some(at(60)));
    assert!(deleted(&m.pass(&[&n], &[&p], at(59))).is_empty());
    assert_eq!(deleted(&m.pass(&[&n], &[&p], at(60))), vec!["p"]);
    // Asked once; not again while the deletion is under way.
    assert!(deleted(&m.pass(&[&n], &[&p], at(61))).is_empty());
}

#[test]
fn without_time_added_the_clock_starts_at_observation() {
    let mut m = TaintManager::new();
    let n = node(json!([{"key": "k", "effect": "NoExecute"}]));
    let p = pod("p", Some("node1"), json!([tol("k", Some(5))]));
    assert_eq!(m.pass(&[&n], &[&p], at(10)).next_wakeup, Some(at(15)));
    assert_eq!(m.pass(&[&n], &[&p], at(12)).next_wakeup, Some(at(15)));
    assert_eq!(deleted(&m.pass(&[&n], &[&p], at(15))), vec!["p"]);
}

#[test]
fn taint_removed_before_deadline_cancels() {
    let mut m = TaintManager::new();
    let tainted = node(serde_json::from_str(TAINT1).unwrap());
    let p = pod("p", Some("node1"), json!([tol("testTaint1", Some(100))]));
    assert_eq!(m.pass(&[&tainted], &[&p], at(0)).next_wakeup, Some(at(100)));
    let clean = node(json!([]));
    let pass = m.pass(&[&clean], &[&p], at(50));
    assert_eq!(
        messages(&pass),
        vec!["Cancelling deletion of Pod ns/p".to_string()]
    );
    assert!(deleted(&pass).is_empty());
    // Nothing left to cancel or fire later.
    let later = m.pass(&[&clean], &[&p], at(200));
    assert_eq!(later, TaintPass::default());
    // Tainted again later: the clock restarts at the new taint's timeAdded.
    let again = node(
        json!([{"key": "testTaint1", "value": "v", "effect": "NoExecute", "timeAdded": "2026-01-01T00:05:00Z"}]),
    );
    assert_eq!(m.pass(&[&again], &[&p], at(300)).next_wakeup, Some(at(400)));
}

#[test]
fn deleting_pods_are_left_alone() {
    let mut m = TaintManager::new();
    let n = node(serde_json::from_str(TAINT1).unwrap());
    let mut p = pod("p", Some("node1"), json!([]));
    p.metadata.deletion_timestamp = Some(crate::model::to_time(at(0)));
    assert_eq!(m.pass(&[&n], &[&p], at(0)), TaintPass::default());
}

/// Issue 30: a toleration of `i64::MAX` seconds panicked the taint manager for good
/// (`TimeDelta::seconds out of bounds`), after which no `NoExecute` taint evicted anything.
#[test]
fn r30_a_toleration_of_i64_max_seconds_waits_until_the_last_writable_second() {
    let mut m = TaintManager::new();
    let n = node(serde_json::from_str(TAINT1).unwrap());
    let patient = pod(
        "patient",
        Some("node1"),
        json!([tol("testTaint1", Some(i64::MAX))]),
    );
    let brief = pod("brief", Some("node1"), json!([tol("testTaint1", Some(5))]));
    let pass = m.pass(&[&n], &[&patient, &brief], at(0));
    assert_eq!(pass.next_wakeup, Some(at(5)));
    // The others are still evicted on time; the patient pod stays.
    assert_eq!(
        deleted(&m.pass(&[&n], &[&patient, &brief], at(5))),
        vec!["brief"]
    );
    let pass = m.pass(&[&n], &[&patient], at(6));
    assert_eq!(pass.next_wakeup, Some(berth_core::clock::latest()));
    assert!(deleted(&pass).is_empty());
}
