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
mod tests;
