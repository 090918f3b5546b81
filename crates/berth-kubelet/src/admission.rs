//! The kubelet's own admission of a pod bound to its node, beyond resources (upstream
//! `pkg/kubelet/lifecycle/predicate.go`, `generalFilter`): the pod's required node affinity and
//! node selector must match the node, its host ports must be free, and it must tolerate the
//! node's `NoExecute` taints. A pod placed by `spec.nodeName` skips the scheduler, so these are
//! the only checks it meets. Each failure is upstream's `PredicateFailureError`: the reason is the
//! scheduler plugin's name, the message `Predicate <name> failed: <the plugin's reason>`.
//!
//! Also the resource names the kubelet reads from the Node object (extended resources an
//! administrator patched into `status.capacity`).

use berth_core::taints::{tolerates, Operator, Taint, Toleration};
use serde_json::Value;
use std::collections::BTreeMap;

/// The scheduler plugin whose rule a pod's node affinity breaks (upstream `nodeaffinity.Name`).
pub const NODE_AFFINITY: &str = "NodeAffinity";
/// Upstream `nodeaffinity.ErrReasonPod`.
pub const NODE_AFFINITY_REASON: &str = "node(s) didn't match Pod's node affinity/selector";
/// The plugin whose rule a host port clash breaks (upstream `nodeports.Name`).
pub const NODE_PORTS: &str = "NodePorts";
/// Upstream `nodeports.ErrReason`.
pub const NODE_PORTS_REASON: &str = "node(s) didn't have free ports for the requested pod ports";
/// The plugin whose rule an untolerated taint breaks (upstream `tainttoleration.Name`).
pub const TAINT_TOLERATION: &str = "TaintToleration";
/// Upstream `tainttoleration.ErrReasonNotMatch`.
pub const TAINT_TOLERATION_REASON: &str = "node(s) had taints that the pod didn't tolerate";

/// What the kubelet knows of its Node object for admission.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeView {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// (key, value, effect).
    pub taints: Vec<(String, String, String)>,
}

/// One host port a pod's container asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPort {
    /// `hostIP`; empty or `0.0.0.0` means every address.
    pub ip: String,
    pub protocol: String,
    pub port: i64,
}

impl HostPort {
    fn conflicts(&self, other: &HostPort) -> bool {
        let any = |ip: &str| ip.is_empty() || ip == "0.0.0.0";
        self.port == other.port
            && self.protocol == other.protocol
            && (any(&self.ip) || any(&other.ip) || self.ip == other.ip)
    }
}

/// Why the node refused a pod: `status.reason` and `status.message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    pub reason: String,
    pub message: String,
}

fn rejection(name: &str, reason: &str) -> Rejection {
    Rejection {
        reason: name.to_string(),
        message: format!("Predicate {name} failed: {reason}"),
    }
}

/// The host ports a pod spec asks for (containers and init containers; port 0 asks for none).
pub fn host_ports(spec: &Value) -> Vec<HostPort> {
    ["containers", "initContainers"]
        .iter()
        .filter_map(|k| spec[*k].as_array())
        .flatten()
        .filter_map(|c| c["ports"].as_array())
        .flatten()
        .filter_map(|p| {
            let port = p["hostPort"].as_i64().filter(|p| *p > 0)?;
            Some(HostPort {
                ip: p["hostIP"].as_str().unwrap_or("").to_string(),
                protocol: p["protocol"].as_str().unwrap_or("TCP").to_string(),
                port,
            })
        })
        .collect()
}

/// Whether any of `wanted` clashes with a port in use.
pub fn ports_clash<'a>(wanted: &[HostPort], in_use: impl Iterator<Item = &'a HostPort>) -> bool {
    in_use
        .into_iter()
        .any(|u| wanted.iter().any(|w| w.conflicts(u)))
}

/// Node affinity, host ports (against `in_use`) and `NoExecute` taints, in upstream's order.
pub fn admit<'a>(
    spec: &Value,
    wanted_ports: &[HostPort],
    in_use: impl Iterator<Item = &'a HostPort>,
    node: &NodeView,
) -> Result<(), Rejection> {
    if !node_affinity_fits(spec, node) {
        return Err(rejection(NODE_AFFINITY, NODE_AFFINITY_REASON));
    }
    if !wanted_ports.is_empty() && ports_clash(wanted_ports, in_use) {
        return Err(rejection(NODE_PORTS, NODE_PORTS_REASON));
    }
    if untolerated_no_execute(spec, node) {
        return Err(rejection(TAINT_TOLERATION, TAINT_TOLERATION_REASON));
    }
    Ok(())
}

/// `spec.nodeSelector` and the required node affinity both match the node.
pub fn node_affinity_fits(spec: &Value, node: &NodeView) -> bool {
    let selector_fits = spec["nodeSelector"].as_object().is_none_or(|m| {
        m.iter()
            .all(|(k, v)| node.labels.get(k).map(String::as_str) == v.as_str())
    });
    let required =
        &spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
    let affinity_fits = match required["nodeSelectorTerms"].as_array() {
        None => true,
        // The terms are ORed; a term with no requirements matches nothing.
        Some(terms) => terms.iter().any(|t| term_matches(t, node)),
    };
    selector_fits && affinity_fits
}

fn term_matches(term: &Value, node: &NodeView) -> bool {
    let expressions = term["matchExpressions"].as_array();
    let fields = term["matchFields"].as_array();
    if expressions.is_none_or(Vec::is_empty) && fields.is_none_or(Vec::is_empty) {
        return false;
    }
    let labels_match = expressions
        .into_iter()
        .flatten()
        .all(|r| requirement_matches(r, |k| node.labels.get(k).map(String::as_str)));
    let fields_match = fields
        .into_iter()
        .flatten()
        .all(|r| requirement_matches(r, |k| (k == "metadata.name").then_some(node.name.as_str())));
    labels_match && fields_match
}

/// One node selector requirement (`In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`, `Lt`).
fn requirement_matches<'a>(r: &Value, get: impl Fn(&str) -> Option<&'a str>) -> bool {
    let key = r["key"].as_str().unwrap_or("");
    let values: Vec<&str> = r["values"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let value = get(key);
    let number = |v: &str| v.parse::<i64>().ok();
    match r["operator"].as_str().unwrap_or("") {
        "In" => value.is_some_and(|v| values.contains(&v)),
        "NotIn" => value.is_none_or(|v| !values.contains(&v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" => {
            matches!((value.and_then(number), values.first().and_then(|v| number(v))), (Some(a), Some(b)) if a > b)
        }
        "Lt" => {
            matches!((value.and_then(number), values.first().and_then(|v| number(v))), (Some(a), Some(b)) if a < b)
        }
        _ => false,
    }
}

/// Whether the node has a `NoExecute` taint the pod does not tolerate (the kubelet looks at
/// no other effect).
pub fn untolerated_no_execute(spec: &Value, node: &NodeView) -> bool {
    let tolerations: Vec<Toleration<&str, &str>> = spec["tolerations"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| Toleration {
            key: t["key"].as_str().filter(|k| !k.is_empty()),
            operator: Operator::parse(t["operator"].as_str().unwrap_or("")),
            value: t["value"].as_str().unwrap_or(""),
            effect: t["effect"].as_str().filter(|e| !e.is_empty()),
        })
        .collect();
    node.taints
        .iter()
        .filter(|(_, _, effect)| effect == "NoExecute")
        .any(|(key, value, effect)| {
            let taint = Taint {
                key: key.as_str(),
                value: value.as_str(),
                effect: effect.as_str(),
            };
            !tolerations.iter().any(|t| tolerates(t, &taint))
        })
}

/// Whether `name` is an extended resource (upstream `IsExtendedResourceName`): a
/// domain-prefixed name outside `kubernetes.io`, not a quota `requests.` name.
pub fn is_extended_resource(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/") && !name.starts_with("requests.")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node() -> NodeView {
        NodeView {
            name: "node-1".into(),
            labels: BTreeMap::from([
                ("zone".to_string(), "a".to_string()),
                ("cores".to_string(), "8".to_string()),
            ]),
            taints: vec![],
        }
    }

    fn term(expressions: Value) -> Value {
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{"matchExpressions": expressions}]}}}})
    }

    #[test]
    fn node_selector_and_required_affinity_must_match_the_node() {
        let n = node();
        let cases = [
            ("no constraints fit", json!({}), true),
            (
                "a matching node selector fits",
                json!({"nodeSelector": {"zone": "a"}}),
                true,
            ),
            (
                "a node selector on another value does not",
                json!({"nodeSelector": {"zone": "b"}}),
                false,
            ),
            (
                "In a listed value fits",
                term(json!([{"key": "zone", "operator": "In", "values": ["a", "b"]}])),
                true,
            ),
            (
                "NotIn a listed value does not",
                term(json!([{"key": "zone", "operator": "NotIn", "values": ["a"]}])),
                false,
            ),
            (
                "Exists on a missing label does not",
                term(json!([{"key": "gpu", "operator": "Exists"}])),
                false,
            ),
            (
                "DoesNotExist on a missing label fits",
                term(json!([{"key": "gpu", "operator": "DoesNotExist"}])),
                true,
            ),
            (
                "Gt compares numbers",
                term(json!([{"key": "cores", "operator": "Gt", "values": ["4"]}])),
                true,
            ),
            (
                "Lt compares numbers",
                term(json!([{"key": "cores", "operator": "Lt", "values": ["4"]}])),
                false,
            ),
            (
                "matchFields on metadata.name",
                json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-2"]}]}]}}}}),
                false,
            ),
            (
                "an empty term matches nothing",
                json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                {"nodeSelectorTerms": [{}]}}}}),
                false,
            ),
            (
                "terms are ORed",
                json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                {"nodeSelectorTerms": [{}, {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}]}}}}),
                true,
            ),
        ];
        for (name, spec, want) in cases {
            assert_eq!(node_affinity_fits(&spec, &n), want, "{name}");
        }
    }

    #[test]
    fn host_ports_clash_on_the_same_port_protocol_and_address() {
        let p = |ip: &str, protocol: &str, port: i64| HostPort {
            ip: ip.into(),
            protocol: protocol.into(),
            port,
        };
        let cases = [
            (
                "the same port on every address clashes",
                p("", "TCP", 80),
                p("", "TCP", 80),
                true,
            ),
            (
                "another port does not",
                p("", "TCP", 80),
                p("", "TCP", 81),
                false,
            ),
            (
                "another protocol does not",
                p("", "TCP", 80),
                p("", "UDP", 80),
                false,
            ),
            (
                "every address clashes with one address",
                p("0.0.0.0", "TCP", 80),
                p("10.0.0.1", "TCP", 80),
                true,
            ),
            (
                "two different addresses do not",
                p("10.0.0.2", "TCP", 80),
                p("10.0.0.1", "TCP", 80),
                false,
            ),
        ];
        for (name, a, b, want) in cases {
            assert_eq!(ports_clash(&[a], [b].iter()), want, "{name}");
        }
    }

    #[test]
    fn host_ports_are_read_from_every_container_with_tcp_by_default() {
        let spec = json!({"containers": [{"ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 81}]}],
                          "initContainers": [{"ports": [{"hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"}]}]});
        assert_eq!(
            host_ports(&spec),
            [
                HostPort {
                    ip: "".into(),
                    protocol: "TCP".into(),
                    port: 8080
                },
                HostPort {
                    ip: "10.0.0.1".into(),
                    protocol: "UDP".into(),
                    port: 53
                },
            ]
        );
    }

    #[test]
    fn only_untolerated_no_execute_taints_refuse_a_pod() {
        let mut n = node();
        n.taints = vec![
            ("dedicated".into(), "x".into(), "NoSchedule".into()),
            ("evict".into(), "y".into(), "NoExecute".into()),
        ];
        let cases = [
            ("no toleration", json!({}), true),
            (
                "tolerating the NoExecute taint",
                json!({"tolerations": [{"key": "evict", "value": "y", "effect": "NoExecute"}]}),
                false,
            ),
            (
                "tolerating everything",
                json!({"tolerations": [{"operator": "Exists"}]}),
                false,
            ),
            (
                "another value",
                json!({"tolerations": [{"key": "evict", "value": "z"}]}),
                true,
            ),
        ];
        for (name, spec, want) in cases {
            assert_eq!(untolerated_no_execute(&spec, &n), want, "{name}");
        }
    }

    #[test]
    fn failures_are_upstream_predicate_errors_in_upstream_order() {
        let mut n = node();
        n.taints = vec![("evict".into(), "".into(), "NoExecute".into())];
        let spec = json!({"nodeSelector": {"zone": "b"}});
        let in_use = [HostPort {
            ip: "".into(),
            protocol: "TCP".into(),
            port: 80,
        }];
        let wanted = in_use.clone();
        let r = admit(&spec, &wanted, in_use.iter(), &n).unwrap_err();
        assert_eq!(r.reason, "NodeAffinity");
        assert_eq!(
            r.message,
            "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
        );
        let r = admit(&json!({}), &wanted, in_use.iter(), &n).unwrap_err();
        assert_eq!(r.reason, "NodePorts");
        assert_eq!(
            r.message,
            "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
        );
        let r = admit(&json!({}), &[], in_use.iter(), &n).unwrap_err();
        assert_eq!(r.reason, "TaintToleration");
        assert_eq!(
            r.message,
            "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"
        );
    }

    #[test]
    fn extended_resources_are_domain_prefixed_outside_kubernetes_io() {
        assert!(is_extended_resource("example.com/fakecpu"));
        assert!(!is_extended_resource("cpu"));
        assert!(!is_extended_resource("hugepages-2Mi"));
        assert!(!is_extended_resource("kubernetes.io/something"));
        assert!(!is_extended_resource("requests.example.com/foo"));
    }
}
