//! Node rows: `NAME STATUS ROLES AGE VERSION` + wide `INTERNAL-IP EXTERNAL-IP OS-IMAGE
//! KERNEL-VERSION CONTAINER-RUNTIME`.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{age, arr_at, col, str_at, wide, Column, AGE, NAME};

pub(super) const COLUMNS: &[Column] = &[
    NAME,
    col("Status", "string", "The status of the node"),
    col("Roles", "string", "The roles of the node"),
    AGE,
    col("Version", "string", "Kubelet Version reported by the node."),
    wide("Internal-IP", "string", "List of addresses reachable to the node. Queried from cloud provider, if available."),
    wide("External-IP", "string", "List of addresses reachable to the node. Queried from cloud provider, if available."),
    wide("OS-Image", "string", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy))."),
    wide("Kernel-Version", "string", "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64)."),
    wide("Container-Runtime", "string", "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2)."),
];

const ROLE_PREFIX: &str = "node-role.kubernetes.io/";
const ROLE_LABEL: &str = "kubernetes.io/role";

pub(super) fn cells(node: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let unknown = |s: &str| {
        if s.is_empty() {
            "<unknown>".to_string()
        } else {
            s.to_string()
        }
    };
    vec![
        json!(str_at(node, "/metadata/name")),
        json!(status(node)),
        json!(roles(node)),
        json!(age(node, now)),
        json!(str_at(node, "/status/nodeInfo/kubeletVersion")),
        json!(address(node, "InternalIP")),
        json!(address(node, "ExternalIP")),
        json!(unknown(str_at(node, "/status/nodeInfo/osImage"))),
        json!(unknown(str_at(node, "/status/nodeInfo/kernelVersion"))),
        json!(unknown(str_at(
            node,
            "/status/nodeInfo/containerRuntimeVersion"
        ))),
    ]
}

/// `Ready` / `NotReady` from the Ready condition (`Unknown` without one), plus
/// `,SchedulingDisabled` when cordoned.
fn status(node: &Value) -> String {
    // Upstream keeps the last condition of each type.
    let ready = arr_at(node, "/status/conditions")
        .iter()
        .rev()
        .find(|c| str_at(c, "/type") == "Ready");
    let mut s = match ready {
        Some(c) if str_at(c, "/status") == "True" => "Ready".to_string(),
        Some(_) => "NotReady".to_string(),
        None => "Unknown".to_string(),
    };
    if node
        .pointer("/spec/unschedulable")
        .and_then(Value::as_bool)
        .unwrap_or(false)
    {
        s.push_str(",SchedulingDisabled");
    }
    s
}

/// Roles from `node-role.kubernetes.io/<role>` label keys and the `kubernetes.io/role` label
/// value, sorted and comma-joined; `<none>` without any.
fn roles(node: &Value) -> String {
    let mut roles = BTreeSet::new();
    if let Some(labels) = node.pointer("/metadata/labels").and_then(Value::as_object) {
        for (k, v) in labels {
            if let Some(role) = k.strip_prefix(ROLE_PREFIX) {
                if !role.is_empty() {
                    roles.insert(role.to_string());
                }
            } else if k == ROLE_LABEL {
                if let Some(v) = v.as_str().filter(|v| !v.is_empty()) {
                    roles.insert(v.to_string());
                }
            }
        }
    }
    if roles.is_empty() {
        "<none>".to_string()
    } else {
        roles.into_iter().collect::<Vec<_>>().join(",")
    }
}

fn address(node: &Value, ty: &str) -> String {
    arr_at(node, "/status/addresses")
        .iter()
        .find(|a| str_at(a, "/type") == ty)
        .map(|a| str_at(a, "/address").to_string())
        .unwrap_or_else(|| "<none>".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::tests::{ago, now};

    fn node(ready: Option<&str>, unschedulable: bool, labels: Value) -> Value {
        let conditions = match ready {
            Some(s) => json!([{"type": "MemoryPressure", "status": "False"},
                              {"type": "Ready", "status": s}]),
            None => json!([]),
        };
        json!({"metadata": {"name": "n1", "labels": labels, "creationTimestamp": ago(5 * 86400)},
               "spec": {"unschedulable": unschedulable},
               "status": {"conditions": conditions,
                          "addresses": [{"type": "Hostname", "address": "n1"},
                                        {"type": "InternalIP", "address": "10.0.0.1"}],
                          "nodeInfo": {"kubeletVersion": "v1.32.0-berth", "osImage": "berth",
                                       "kernelVersion": "", "containerRuntimeVersion": "berth://1"}}})
    }

    #[test]
    fn ready_node_all_cells() {
        let n = node(
            Some("True"),
            false,
            json!({"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/control-plane": ""}),
        );
        assert_eq!(
            cells(&n, now()),
            vec![
                json!("n1"),
                json!("Ready"),
                json!("control-plane,worker"),
                json!("5d"),
                json!("v1.32.0-berth"),
                json!("10.0.0.1"),
                json!("<none>"),
                json!("berth"),
                json!("<unknown>"),
                json!("berth://1")
            ]
        );
    }

    #[test]
    fn status_variants() {
        let status_of = |n: &Value| cells(n, now())[1].clone();
        assert_eq!(
            status_of(&node(Some("True"), true, json!({}))),
            json!("Ready,SchedulingDisabled")
        );
        assert_eq!(
            status_of(&node(Some("False"), false, json!({}))),
            json!("NotReady")
        );
        assert_eq!(
            status_of(&node(Some("Unknown"), false, json!({}))),
            json!("NotReady")
        );
        assert_eq!(status_of(&node(None, false, json!({}))), json!("Unknown"));
        assert_eq!(
            status_of(&node(None, true, json!({}))),
            json!("Unknown,SchedulingDisabled")
        );
    }

    #[test]
    fn roles_variants() {
        let roles_of = |labels: Value| cells(&node(Some("True"), false, labels), now())[2].clone();
        assert_eq!(roles_of(json!({})), json!("<none>"));
        assert_eq!(roles_of(json!({"zone": "a"})), json!("<none>"));
        assert_eq!(
            roles_of(json!({"node-role.kubernetes.io/": ""})),
            json!("<none>")
        );
        assert_eq!(
            roles_of(json!({"kubernetes.io/role": "master", "node-role.kubernetes.io/infra": ""})),
            json!("infra,master")
        );
        assert_eq!(
            roles_of(json!({"kubernetes.io/role": "infra", "node-role.kubernetes.io/infra": ""})),
            json!("infra")
        );
    }
}
