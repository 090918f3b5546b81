//! The NoExecute taint manager (control-loops §3.6, seed "taint-based evictions"): pods on a node
//! with a `NoExecute` taint they do not tolerate are deleted at once; pods that tolerate it with
//! `tolerationSeconds` are deleted that long after the taint appeared (the minimum over the
//! tolerations used); pods that tolerate it without seconds stay. A taint removed before the
//! deadline cancels the deletion.
//!
//! When the taint appeared: its `timeAdded`, or when this manager first saw it if that is earlier
//! or `timeAdded` is unset (upstream starts the clock at observation; `timeAdded` lets the
//! deadline survive a controller restart). Deletions are plain DELETEs: PDBs are not consulted.

use crate::model::{node_taints, pod_node, to_chrono, tolerates, EventRecord, Involved, PodRef};
use chrono::{DateTime, Duration, Utc};
use k8s_openapi::api::core::v1::{Node, Pod, Taint};
use std::collections::{BTreeMap, BTreeSet};

/// How long a deletion the manager asked for counts as done before it asks again.
const REFIRE_AFTER: i64 = 30;

/// What a pass decided.
#[derive(Clone, Debug, PartialEq)]
pub enum TaintAction {
    /// Delete the pod (default grace).
    Delete(PodRef),
    /// Record an event.
    Event(EventRecord),
}

/// The result of one pass: actions now, and when the next deadline falls.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaintPass {
    pub actions: Vec<TaintAction>,
    pub next_wakeup: Option<DateTime<Utc>>,
}

/// (node, taint key, value, effect) — a taint as observed on one node.
type TaintId = (String, String, String);

/// The taint manager's memory: when taints were first seen, which deletions are scheduled and
/// which were asked for.
#[derive(Debug, Default)]
pub struct TaintManager {
    observed: BTreeMap<(String, TaintId), DateTime<Utc>>,
    scheduled: BTreeMap<PodRef, DateTime<Utc>>,
    fired: BTreeMap<String, DateTime<Utc>>,
}

fn taint_id(t: &Taint) -> TaintId {
    (
        t.key.clone(),
        t.value.clone().unwrap_or_default(),
        t.effect.clone(),
    )
}

fn event(pod: &PodRef, message: String) -> TaintAction {
    TaintAction::Event(EventRecord {
        involved: Involved::Pod(pod.clone()),
        type_: "Normal",
        reason: "TaintManagerEviction",
        message,
    })
}

impl TaintManager {
    /// A manager that has seen nothing yet.
    pub fn new() -> TaintManager {
        TaintManager::default()
    }

    /// One pass over all nodes and pods.
    pub fn pass(&mut self, nodes: &[&Node], pods: &[&Pod], now: DateTime<Utc>) -> TaintPass {
        // When each NoExecute taint started to count.
        let mut since: BTreeMap<&str, Vec<(&Taint, DateTime<Utc>)>> = BTreeMap::new();
        let mut live = BTreeSet::new();
        for node in nodes {
            let name = node.metadata.name.as_deref().unwrap_or("");
            for t in node_taints(node).iter().filter(|t| t.effect == "NoExecute") {
                let key = (name.to_string(), taint_id(t));
                let first = *self.observed.entry(key.clone()).or_insert(now);
                let start = t
                    .time_added
                    .as_ref()
                    .map(to_chrono)
                    .map_or(first, |a| a.min(first));
                since.entry(name).or_default().push((t, start));
                live.insert(key);
            }
        }
        self.observed.retain(|k, _| live.contains(k));

        let mut out = TaintPass::default();
        let mut present = BTreeSet::new();
        for pod in pods {
            let r = PodRef::of(pod);
            present.insert(r.uid.clone());
            let Some(node) = pod_node(pod) else { continue };
            if pod.metadata.deletion_timestamp.is_some() {
                self.scheduled.remove(&r);
                continue;
            }
            let deadline = since.get(node).and_then(|taints| deadline(pod, taints));
            match deadline {
                None => {
                    if self.scheduled.remove(&r).is_some() {
                        let msg = format!("Cancelling deletion of Pod {}/{}", r.namespace, r.name);
                        out.actions.push(event(&r, msg));
                    }
                }
                Some(at) if at <= now => {
                    self.scheduled.remove(&r);
                    let recent = self
                        .fired
                        .get(&r.uid)
                        .is_some_and(|f| now - *f < Duration::seconds(REFIRE_AFTER));
                    if !recent {
                        self.fired.insert(r.uid.clone(), now);
                        let msg = format!("Marking for deletion Pod {}/{}", r.namespace, r.name);
                        out.actions.push(event(&r, msg));
                        out.actions.push(TaintAction::Delete(r));
                    }
                }
                Some(at) => {
                    self.scheduled.insert(r, at);
                    out.next_wakeup = Some(out.next_wakeup.map_or(at, |w| w.min(at)));
                }
            }
        }
        self.scheduled.retain(|r, _| present.contains(&r.uid));
        self.fired.retain(|uid, _| present.contains(uid));
        out
    }
}

/// When the pod must leave a node with these `NoExecute` taints (and when each started):
/// `None` if never, the earliest `since + tolerationSeconds` over the tolerations used, or the
/// taint's start if one taint is not tolerated at all.
fn deadline(pod: &Pod, taints: &[(&Taint, DateTime<Utc>)]) -> Option<DateTime<Utc>> {
    let tolerations = pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or(&[]);
    let mut earliest: Option<DateTime<Utc>> = None;
    for (taint, start) in taints {
        let at = match tolerations.iter().find(|t| tolerates(t, taint)) {
            None => *start,
            Some(t) => match t.toleration_seconds {
                None => continue,
                Some(s) => *start + Duration::seconds(s.max(0)),
            },
        };
        earliest = Some(earliest.map_or(at, |e| e.min(at)));
    }
    earliest
}

#[cfg(test)]
mod tests {
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
}
