//! Pod garbage collection, as upstream's `pkg/controller/podgc`: pods bound to a node that no
//! longer exists are deleted once the node has been missing for a quarantine (40s, so a node
//! that is only late to the watch is not mistaken for a deleted one); terminated pods beyond
//! `--terminated-pod-gc-threshold` are deleted oldest first; unscheduled pods being deleted are
//! deleted at once (no kubelet will ever finish them). Pure: pods, nodes and `now` in.

pub(crate) mod driver;

use berth_core::pod_conditions;
use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// Upstream's quarantine before a node's absence is believed.
pub const QUARANTINE_SECONDS: i64 = 40;
/// `--terminated-pod-gc-threshold`'s default.
pub const DEFAULT_TERMINATED_THRESHOLD: usize = 12_500;

/// A pod as pod GC reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodInfo {
    pub key: String,
    pub node: String,
    pub terminated: bool,
    pub deleting: bool,
    pub created: Option<DateTime<Utc>>,
}

/// Nodes seen missing, and since when.
#[derive(Default, Debug)]
pub struct Quarantine {
    missing_since: BTreeMap<String, DateTime<Utc>>,
}

impl Quarantine {
    /// The keys of pods to delete: those on nodes missing for the whole quarantine, the oldest
    /// terminated pods beyond `threshold` (0 turns that off), and unscheduled pods being deleted.
    pub fn collect(
        &mut self,
        pods: &[PodInfo],
        nodes: &HashSet<&str>,
        threshold: usize,
        now: DateTime<Utc>,
    ) -> Vec<String> {
        let mut delete = BTreeSet::new();
        let missing: BTreeSet<&str> = pods
            .iter()
            .map(|p| p.node.as_str())
            .filter(|n| !n.is_empty() && !nodes.contains(*n))
            .collect();
        self.missing_since
            .retain(|n, _| missing.contains(n.as_str()));
        for node in &missing {
            self.missing_since.entry(node.to_string()).or_insert(now);
        }
        let gone = |node: &str| {
            self.missing_since
                .get(node)
                .is_some_and(|since| *since + Duration::seconds(QUARANTINE_SECONDS) <= now)
        };
        for p in pods {
            if !p.node.is_empty() && gone(&p.node) {
                delete.insert(p.key.clone());
            }
            if p.node.is_empty() && p.deleting {
                delete.insert(p.key.clone());
            }
        }
        if threshold > 0 {
            let mut terminated: Vec<&PodInfo> = pods
                .iter()
                .filter(|p| p.terminated && !p.deleting)
                .collect();
            if terminated.len() > threshold {
                terminated.sort_by(|a, b| a.created.cmp(&b.created).then(a.key.cmp(&b.key)));
                let extra = terminated.len() - threshold;
                delete.extend(terminated.iter().take(extra).map(|p| p.key.clone()));
            }
        }
        delete.into_iter().collect()
    }

    /// When a missing node's quarantine ends, to look again then.
    pub fn next_check(&self) -> Option<DateTime<Utc>> {
        self.missing_since
            .values()
            .min()
            .map(|since| *since + Duration::seconds(QUARANTINE_SECONDS))
    }
}

/// The status patch pod GC writes to a collected pod before deleting it, as upstream's
/// `markFailedAndDeletePodWithCondition`: none for a pod already terminated; phase `Failed`
/// otherwise (no kubelet will ever finish it), with `DisruptionTarget` (`DeletionByPodGC`) when
/// its node is gone. `conditions` is the pod's `status.conditions`.
pub fn status_before_delete(
    pod: &PodInfo,
    node_gone: bool,
    conditions: &Value,
    now: &str,
) -> Option<Value> {
    if pod.terminated {
        return None;
    }
    let mut status = json!({"phase": "Failed"});
    if node_gone {
        let wanted = pod_conditions::disruption_target(
            pod_conditions::DELETION_BY_POD_GC,
            pod_conditions::POD_GC_MESSAGE,
        );
        if let Some(c) = pod_conditions::update(conditions, &wanted, now) {
            status["conditions"] = json!([c]);
        }
    }
    Some(json!({ "status": status }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> DateTime<Utc> {
        DateTime::<Utc>::from_timestamp(1_700_000_000 + s, 0).unwrap()
    }

    fn pod(key: &str, node: &str, terminated: bool, created: i64) -> PodInfo {
        PodInfo {
            key: key.into(),
            node: node.into(),
            terminated,
            deleting: false,
            created: Some(at(created)),
        }
    }

    #[test]
    fn pods_of_a_missing_node_go_after_the_quarantine() {
        let nodes = HashSet::from(["n1"]);
        let pods = [pod("a", "n1", false, 0), pod("b", "gone", false, 0)];
        let mut q = Quarantine::default();
        assert!(q.collect(&pods, &nodes, 0, at(0)).is_empty());
        assert_eq!(q.next_check(), Some(at(40)));
        assert!(q.collect(&pods, &nodes, 0, at(39)).is_empty());
        assert_eq!(q.collect(&pods, &nodes, 0, at(40)), ["b"]);
    }

    #[test]
    fn a_node_that_comes_back_ends_its_quarantine() {
        let pods = [pod("b", "late", false, 0)];
        let mut q = Quarantine::default();
        q.collect(&pods, &HashSet::new(), 0, at(0));
        let back = HashSet::from(["late"]);
        assert!(q.collect(&pods, &back, 0, at(50)).is_empty());
        assert!(q.collect(&pods, &HashSet::new(), 0, at(60)).is_empty());
    }

    #[test]
    fn terminated_pods_over_the_threshold_go_oldest_first() {
        let nodes = HashSet::from(["n1"]);
        let pods = [
            pod("new", "n1", true, 30),
            pod("old", "n1", true, 10),
            pod("running", "n1", false, 0),
            pod("mid", "n1", true, 20),
        ];
        let mut q = Quarantine::default();
        assert_eq!(q.collect(&pods, &nodes, 1, at(0)), ["mid", "old"]);
        assert!(q.collect(&pods, &nodes, 3, at(0)).is_empty());
        assert!(q.collect(&pods, &nodes, 0, at(0)).is_empty());
    }

    #[test]
    fn unscheduled_pods_being_deleted_go_at_once() {
        let mut p = pod("u", "", false, 0);
        p.deleting = true;
        let mut q = Quarantine::default();
        assert_eq!(q.collect(&[p], &HashSet::new(), 0, at(0)), ["u"]);
    }

    const NOW: &str = "2026-01-01T00:00:00Z";

    #[test]
    fn a_pod_of_a_gone_node_is_failed_and_marked_a_disruption_target() {
        let p = pod("b", "gone", false, 0);
        let patch = status_before_delete(&p, true, &Value::Null, NOW).expect("a status write");
        assert_eq!(patch["status"]["phase"], "Failed");
        let c = &patch["status"]["conditions"][0];
        assert_eq!(c["type"], "DisruptionTarget");
        assert_eq!(c["status"], "True");
        assert_eq!(c["reason"], "DeletionByPodGC");
        assert_eq!(c["message"], "PodGC: node no longer exists");
        assert_eq!(c["lastTransitionTime"], NOW);
    }

    #[test]
    fn an_unscheduled_terminating_pod_is_failed_without_a_condition() {
        let mut p = pod("u", "", false, 0);
        p.deleting = true;
        let patch = status_before_delete(&p, false, &Value::Null, NOW).expect("a status write");
        assert_eq!(patch, json!({"status": {"phase": "Failed"}}));
    }

    #[test]
    fn a_terminated_pod_is_deleted_as_it_is() {
        let p = pod("t", "gone", true, 0);
        assert_eq!(status_before_delete(&p, true, &Value::Null, NOW), None);
    }
}
