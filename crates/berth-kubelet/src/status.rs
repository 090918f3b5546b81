//! The node conditions the kubelet posts (`Ready` and the three pressure conditions), and
//! which of them to write on a pass.
//!
//! The kubelet compares what it wants to report with what the API shows, as upstream's node
//! status sync does, so a condition someone else changed is put right: after the node lifecycle
//! controller marked a node `Unknown` (say the kubelet was stalled past the grace period), the
//! next pass posts `Ready=True` and the pressure conditions again. Until the node watch has
//! caught up with the kubelet's own last write, it compares with what it last reported instead.

use crate::eviction::Condition;
use std::collections::{BTreeMap, BTreeSet};

/// What the API shows of one node: its resourceVersion and condition statuses by type.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Shown {
    pub resource_version: u64,
    pub statuses: BTreeMap<String, String>,
}

/// One condition to write, and the event its change calls for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionWrite {
    pub type_: &'static str,
    pub status: &'static str,
    pub reason: &'static str,
    pub message: &'static str,
    /// (event type, event reason) when the status changed from a known one.
    pub event: Option<(&'static str, &'static str)>,
}

/// The `Ready` condition the kubelet posts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Readiness {
    pub status: &'static str,
    pub reason: &'static str,
    pub message: &'static str,
}

/// A healthy kubelet's `Ready` condition.
pub const READY_TRUE: Readiness = Readiness {
    status: "True",
    reason: "KubeletReady",
    message: "kubelet is posting ready status",
};

/// The `Ready` condition of a node set `not-ready` (`berth.io/simulate`), in the shape a
/// kubelet whose runtime network is down posts it.
pub const READY_FALSE: Readiness = Readiness {
    status: "False",
    reason: "KubeletNotReady",
    message: "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:berth: node set not-ready (berth.io/simulate)",
};

/// The kubelet's memory of its own condition writes for one node.
#[derive(Clone, Debug, Default)]
pub struct StatusSync {
    reported: Option<(BTreeSet<Condition>, &'static str)>,
    written_version: u64,
}

const READY: &str = "Ready";

/// Every condition type the kubelet posts.
pub const CONDITION_TYPES: [&str; 4] = ["MemoryPressure", "DiskPressure", "PIDPressure", READY];

impl StatusSync {
    /// The conditions to write so that the API shows `pressure` and `ready`.
    pub fn writes(
        &self,
        pressure: &BTreeSet<Condition>,
        ready: Readiness,
        shown: Option<&Shown>,
    ) -> Vec<ConditionWrite> {
        let fresh = shown.filter(|s| s.resource_version >= self.written_version);
        let before = |type_: &str| -> Option<String> {
            match (fresh, &self.reported) {
                (Some(s), _) => s.statuses.get(type_).cloned(),
                (None, Some((r, reported_ready))) => Some(
                    if type_ == READY {
                        *reported_ready
                    } else {
                        status(
                            Condition::ALL
                                .iter()
                                .any(|c| c.name() == type_ && r.contains(c)),
                        )
                    }
                    .to_string(),
                ),
                (None, None) => None,
            }
        };
        let mut out = Vec::new();
        for c in Condition::ALL {
            let on = pressure.contains(&c);
            let was = before(c.name());
            if was.as_deref() == Some(status(on)) {
                continue;
            }
            let (reason, message) = condition_text(c, on);
            out.push(ConditionWrite {
                type_: c.name(),
                status: status(on),
                reason,
                message,
                event: was.map(|_| (if on { "Warning" } else { "Normal" }, event_reason(c, on))),
            });
        }
        let was = before(READY);
        if was.as_deref() != Some(ready.status) {
            let event = if ready.status == "True" {
                "NodeReady"
            } else {
                "NodeNotReady"
            };
            out.push(ConditionWrite {
                type_: READY,
                status: ready.status,
                reason: ready.reason,
                message: ready.message,
                event: was.map(|_| ("Normal", event)),
            });
        }
        out
    }

    /// Records a successful write of `pressure` and `ready`, which the API stored at
    /// `resource_version`.
    pub fn written(
        &mut self,
        pressure: &BTreeSet<Condition>,
        ready: Readiness,
        resource_version: u64,
    ) {
        self.reported = Some((pressure.clone(), ready.status));
        self.written_version = self.written_version.max(resource_version);
    }
}

fn status(on: bool) -> &'static str {
    if on {
        "True"
    } else {
        "False"
    }
}

fn condition_text(c: Condition, on: bool) -> (&'static str, &'static str) {
    match (c, on) {
        (Condition::MemoryPressure, true) => (
            "KubeletHasInsufficientMemory",
            "kubelet has insufficient memory available",
        ),
        (Condition::MemoryPressure, false) => (
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
        ),
        (Condition::DiskPressure, true) => ("KubeletHasDiskPressure", "kubelet has disk pressure"),
        (Condition::DiskPressure, false) => {
            ("KubeletHasNoDiskPressure", "kubelet has no disk pressure")
        }
        (Condition::PIDPressure, true) => (
            "KubeletHasInsufficientPID",
            "kubelet has insufficient PID available",
        ),
        (Condition::PIDPressure, false) => (
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available",
        ),
    }
}

fn event_reason(c: Condition, on: bool) -> &'static str {
    match (c, on) {
        (Condition::MemoryPressure, true) => "NodeHasInsufficientMemory",
        (Condition::MemoryPressure, false) => "NodeHasSufficientMemory",
        (Condition::DiskPressure, true) => "NodeHasDiskPressure",
        (Condition::DiskPressure, false) => "NodeHasNoDiskPressure",
        (Condition::PIDPressure, true) => "NodeHasInsufficientPID",
        (Condition::PIDPressure, false) => "NodeHasSufficientPID",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(rv: u64, pairs: &[(&str, &str)]) -> Shown {
        Shown {
            resource_version: rv,
            statuses: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    const HEALTHY: &[(&str, &str)] = &[
        ("MemoryPressure", "False"),
        ("DiskPressure", "False"),
        ("PIDPressure", "False"),
        ("Ready", "True"),
    ];

    fn types(w: &[ConditionWrite]) -> Vec<(&str, &str)> {
        w.iter().map(|w| (w.type_, w.status)).collect()
    }

    #[test]
    fn nothing_to_write_when_the_api_shows_what_the_node_reports() {
        let sync = StatusSync::default();
        assert!(sync
            .writes(&BTreeSet::new(), READY_TRUE, Some(&shown(5, HEALTHY)))
            .is_empty());
    }

    #[test]
    fn without_any_view_every_condition_is_written_without_events() {
        let w = StatusSync::default().writes(&BTreeSet::new(), READY_TRUE, None);
        assert_eq!(w.len(), 4);
        assert!(w.iter().all(|w| w.event.is_none()));
    }

    #[test]
    fn pressure_writes_only_that_condition_with_its_event() {
        let sync = StatusSync::default();
        let p = BTreeSet::from([Condition::MemoryPressure]);
        let w = sync.writes(&p, READY_TRUE, Some(&shown(5, HEALTHY)));
        assert_eq!(types(&w), [("MemoryPressure", "True")]);
        assert_eq!(w[0].reason, "KubeletHasInsufficientMemory");
        assert_eq!(w[0].event, Some(("Warning", "NodeHasInsufficientMemory")));
    }

    #[test]
    fn unknown_conditions_from_the_lifecycle_controller_are_put_right() {
        let mut sync = StatusSync::default();
        sync.written(&BTreeSet::new(), READY_TRUE, 5);
        let unknown = shown(
            9,
            &[
                ("MemoryPressure", "Unknown"),
                ("DiskPressure", "Unknown"),
                ("PIDPressure", "Unknown"),
                ("Ready", "Unknown"),
            ],
        );
        let w = sync.writes(&BTreeSet::new(), READY_TRUE, Some(&unknown));
        assert_eq!(
            types(&w),
            [
                ("MemoryPressure", "False"),
                ("DiskPressure", "False"),
                ("PIDPressure", "False"),
                ("Ready", "True")
            ]
        );
        assert_eq!(w[3].event, Some(("Normal", "NodeReady")));
        assert_eq!(w[3].reason, "KubeletReady");
    }

    #[test]
    fn a_view_older_than_the_last_write_is_not_trusted() {
        let mut sync = StatusSync::default();
        let p = BTreeSet::from([Condition::DiskPressure]);
        sync.written(&p, READY_TRUE, 12);
        // The watch still shows the node before the write: nothing is written again.
        assert!(sync
            .writes(&p, READY_TRUE, Some(&shown(11, HEALTHY)))
            .is_empty());
        // Pressure over: written relative to what was reported.
        let w = sync.writes(&BTreeSet::new(), READY_TRUE, Some(&shown(11, HEALTHY)));
        assert_eq!(types(&w), [("DiskPressure", "False")]);
        assert_eq!(w[0].event, Some(("Normal", "NodeHasNoDiskPressure")));
    }

    #[test]
    fn a_node_set_not_ready_posts_ready_false_and_back() {
        let mut sync = StatusSync::default();
        let w = sync.writes(&BTreeSet::new(), READY_FALSE, Some(&shown(5, HEALTHY)));
        assert_eq!(types(&w), [("Ready", "False")]);
        assert_eq!(w[0].reason, "KubeletNotReady");
        assert_eq!(w[0].event, Some(("Normal", "NodeNotReady")));
        sync.written(&BTreeSet::new(), READY_FALSE, 6);
        // The watch has not caught up: what was reported counts.
        assert!(sync
            .writes(&BTreeSet::new(), READY_FALSE, Some(&shown(5, HEALTHY)))
            .is_empty());
        let w = sync.writes(&BTreeSet::new(), READY_TRUE, Some(&shown(5, HEALTHY)));
        assert_eq!(types(&w), [("Ready", "True")]);
        assert_eq!(w[0].event, Some(("Normal", "NodeReady")));
    }
}
