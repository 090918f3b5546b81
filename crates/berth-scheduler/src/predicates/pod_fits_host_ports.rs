//! PodFitsHostPorts (alias PodFitsPorts): wanted host ports against the ports used on the node.

use super::unit::{FastClass, PredicateUnit, ReasonDef, VictimsClass};
use super::Pred;
use super::{NodeView, Reason};
use crate::ctx::PodCtx;
use crate::intern::EMPTY;
use crate::pod_info::HostPort;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PredicateUnit = PredicateUnit {
    name: "PodFitsHostPorts",
    aliases: &["PodFitsPorts"],
    order: 4,
    argument: None,
    reasons: &[&NO_FREE_PORTS],
    fast: FastClass::HostPorts,
    victims: VictimsClass::MetWithoutPortsAndVolumes,
};

/// `node(s) didn't have free ports for the requested pod ports`.
pub(crate) static NO_FREE_PORTS: ReasonDef = ReasonDef {
    text: "node(s) didn't have free ports for the requested pod ports",
    resolvable: true,
};

/// The registry's entry point.
#[inline]
pub(crate) fn filter(
    c: &PodCtx,
    _p: &Pred,
    n: &NodeView,
    out: &mut Vec<Reason>,
) -> Result<bool, String> {
    Ok(check(c, n, out))
}

#[inline]
fn conflicts(want: &HostPort, used: &HostPort) -> bool {
    want.proto == used.proto
        && want.port == used.port
        && (want.ip == EMPTY || used.ip == EMPTY || want.ip == used.ip)
}

/// Fails if any wanted (ip, protocol, port) conflicts with a used one.
#[inline]
pub(crate) fn check(c: &PodCtx, n: &NodeView, out: &mut Vec<Reason>) -> bool {
    let want = &c.pod.host_ports;
    if want.is_empty() || n.info.ports.is_empty() {
        return true;
    }
    if want
        .iter()
        .any(|w| n.info.ports.iter().any(|u| conflicts(w, u)))
    {
        out.push(NO_FREE_PORTS.reason());
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    fn with_port(name: &str, node: &str, ip: &str, proto: &str) -> crate::model::Pod {
        pod(
            json!({"metadata": {"name": name}, "spec": {"nodeName": node, "containers": [{"name": "c",
            "ports": [{"containerPort": 80, "hostPort": 8080, "hostIP": ip, "protocol": proto}]}]}}),
        )
    }

    #[test]
    fn vectors() {
        let cases = [
            (("0.0.0.0", "TCP"), ("127.0.0.1", "TCP"), false),
            (("127.0.0.1", "UDP"), ("127.0.0.2", "UDP"), true),
            (("127.0.0.1", "TCP"), ("0.0.0.0", "TCP"), false),
            (("0.0.0.0", "UDP"), ("", ""), true),
        ];
        for (used, want, fit) in cases {
            let n = simple_node("n1", "4", "8Gi", 10);
            let e = with_port("e", "n1", used.0, used.1);
            let p = with_port("p", "", want.0, want.1);
            let got = reasons_of(builtin(P::PodFitsHostPorts), vec![n], vec![e], p);
            let w: Vec<String> = if fit {
                vec![]
            } else {
                vec!["node(s) didn't have free ports for the requested pod ports".into()]
            };
            assert_eq!(got, vec![w], "{used:?} {want:?}");
        }
    }
}
