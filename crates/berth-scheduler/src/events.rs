//! Cluster events: what changed, so the scheduling queue can decide which unschedulable pods a
//! change might help.

use serde::Serialize;
use std::collections::BTreeMap;

/// What changed about a node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct NodeChange {
    /// Labels changed.
    pub labels: bool,
    /// Taints changed.
    pub taints: bool,
    /// Allocatable changed.
    pub allocatable: bool,
    /// Conditions changed.
    pub conditions: bool,
    /// `spec.unschedulable` changed.
    pub unschedulable: bool,
}

impl NodeChange {
    /// True if anything relevant to scheduling changed.
    pub fn any(&self) -> bool {
        self.labels || self.taints || self.allocatable || self.conditions || self.unschedulable
    }
}

/// A change to the cluster as seen by the cache.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum ClusterEvent {
    /// A node was added.
    NodeAdded,
    /// A node was updated.
    NodeChanged(NodeChange),
    /// A node was deleted.
    NodeDeleted,
    /// A bound pod was added (or updated) with these labels.
    PodAdded {
        /// Namespace.
        namespace: String,
        /// Labels.
        labels: BTreeMap<String, String>,
    },
    /// A bound pod was deleted.
    PodDeleted {
        /// Namespace.
        namespace: String,
        /// Labels (may be empty).
        labels: BTreeMap<String, String>,
    },
    /// A Service or controller changed.
    ServiceChanged,
    /// A PV, PVC or StorageClass changed.
    VolumeChanged,
}

impl ClusterEvent {
    /// True if this change might make an unschedulable `pod` schedulable.
    ///
    /// Node additions, relevant node changes, pod deletions and volume changes may help any pod;
    /// a pod addition helps only pods with a required pod-affinity term the new pod matches
    /// (checked on labels and namespaces); Service changes help pods whose failures could depend
    /// on service affinity.
    pub fn may_help(&self, pod: &crate::model::Pod) -> bool {
        match self {
            ClusterEvent::NodeAdded
            | ClusterEvent::PodDeleted { .. }
            | ClusterEvent::VolumeChanged => true,
            ClusterEvent::NodeChanged(c) => c.any(),
            // a deleted node may take away the domain that held the global minimum
            ClusterEvent::NodeDeleted => has_hard_spread(pod),
            ClusterEvent::ServiceChanged => true,
            ClusterEvent::PodAdded { namespace, labels } => {
                let own_ns = pod.metadata.namespace_or_default();
                let terms = pod
                    .spec
                    .affinity
                    .as_ref()
                    .and_then(|a| a.pod_affinity.as_ref())
                    .map(|p| {
                        p.required_during_scheduling_ignored_during_execution
                            .as_slice()
                    })
                    .unwrap_or(&[]);
                // a pod added to the emptiest domain raises the global minimum (upstream's
                // PodTopologySpread registers pod additions)
                let own_ns_match = namespace == own_ns;
                let spread = pod.spec.topology_spread_constraints.iter().any(|c| {
                    own_ns_match
                        && c.when_unsatisfiable == crate::topology_spread::DO_NOT_SCHEDULE
                        && c.label_selector
                            .as_ref()
                            .is_some_and(|s| selector_matches(s, labels))
                });
                spread
                    || terms.iter().any(|t| {
                        let ns_ok = if t.namespaces.is_empty() {
                            namespace == own_ns
                        } else {
                            t.namespaces.iter().any(|n| n == namespace)
                        };
                        ns_ok
                            && t.label_selector
                                .as_ref()
                                .is_some_and(|s| selector_matches(s, labels))
                    })
            }
        }
    }
}

fn has_hard_spread(pod: &crate::model::Pod) -> bool {
    pod.spec
        .topology_spread_constraints
        .iter()
        .any(|c| c.when_unsatisfiable == crate::topology_spread::DO_NOT_SCHEDULE)
}

fn selector_matches(s: &crate::model::LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    s.match_labels.iter().all(|(k, v)| labels.get(k) == Some(v))
        && s.match_expressions.iter().all(|e| {
            let v = labels.get(&e.key);
            match e.operator.as_str() {
                "In" => v.is_some_and(|v| e.values.contains(v)),
                "NotIn" => v.is_none_or(|v| !e.values.contains(v)),
                "Exists" => v.is_some(),
                "DoesNotExist" => v.is_none(),
                _ => false,
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::pod;
    use serde_json::json;

    fn added(ns: &str, app: &str) -> ClusterEvent {
        ClusterEvent::PodAdded {
            namespace: ns.into(),
            labels: [("app".to_string(), app.to_string())].into(),
        }
    }

    #[test]
    fn pod_additions_and_node_deletions_may_help_a_topology_spread_pod() {
        let spread = pod(json!({"metadata": {"namespace": "default"},
            "spec": {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}}}]}}));
        let plain = pod(json!({"metadata": {"namespace": "default"}}));
        let cases = [
            (
                "a matching pod in its namespace",
                &spread,
                added("default", "web"),
                true,
            ),
            (
                "a pod its selector does not match",
                &spread,
                added("default", "db"),
                false,
            ),
            (
                "a matching pod elsewhere",
                &spread,
                added("other", "web"),
                false,
            ),
            ("a deleted node", &spread, ClusterEvent::NodeDeleted, true),
            (
                "a pod, for a pod without constraints",
                &plain,
                added("default", "web"),
                false,
            ),
            (
                "a deleted node, for a pod without constraints",
                &plain,
                ClusterEvent::NodeDeleted,
                false,
            ),
        ];
        for (name, p, ev, want) in cases {
            assert_eq!(ev.may_help(p), want, "{name}");
        }
    }
}
