//! The machine config objects every OpenShift cluster starts with, as the Machine Config
//! Operator creates them at install: the pools `master` and `worker` (selecting nodes by their
//! `node-role.kubernetes.io/<role>` label and MachineConfigs by
//! `machineconfiguration.openshift.io/role`), and each role's base MachineConfigs `00-<role>`
//! and `01-<role>-kubelet` (whose kubelet configuration is the node's own: berth's simulated
//! kubelets take theirs from the cluster file). The machine config controller
//! (`berth-controllers`) renders and rolls them out.

use base64::Engine;
use serde_json::{json, Value};

const API_VERSION: &str = "machineconfiguration.openshift.io/v1";
const ROLE_LABEL: &str = "machineconfiguration.openshift.io/role";
const GENERATED_BY: &str = "machineconfiguration.openshift.io/generated-by-controller-version";

/// The pools and base MachineConfigs: (plural, name, object) without uid and timestamps.
pub fn bootstrap_objects() -> Vec<(&'static str, String, Value)> {
    let mut out = Vec::new();
    for role in ["master", "worker"] {
        let pool = json!({
            "apiVersion": API_VERSION, "kind": "MachineConfigPool",
            "metadata": {"name": role, "labels": {
                "machineconfiguration.openshift.io/mco-built-in": "",
                format!("pools.operator.machineconfiguration.openshift.io/{role}"): "",
            }},
            "spec": {
                "machineConfigSelector": {"matchLabels": {ROLE_LABEL: role}},
                "nodeSelector": {"matchLabels": {format!("node-role.kubernetes.io/{role}"): ""}},
                "paused": false,
            },
        });
        out.push(("machineconfigpools", role.to_string(), pool));
        let base = |name: String, files: Value| {
            json!({
                "apiVersion": API_VERSION, "kind": "MachineConfig",
                "metadata": {"name": name, "labels": {ROLE_LABEL: role},
                             "annotations": {GENERATED_BY: concat!("berth-", env!("CARGO_PKG_VERSION"))}},
                "spec": {"config": {"ignition": {"version": "3.5.0"}, "storage": {"files": files}}},
            })
        };
        out.push((
            "machineconfigs",
            format!("00-{role}"),
            base(format!("00-{role}"), json!([])),
        ));
        let conf =
            json!({"kind": "KubeletConfiguration", "apiVersion": "kubelet.config.k8s.io/v1beta1"});
        let data = base64::engine::general_purpose::STANDARD.encode(conf.to_string());
        let file = json!({"path": "/etc/kubernetes/kubelet.conf", "overwrite": true, "mode": 420,
                          "contents": {"source": format!("data:text/plain;charset=utf-8;base64,{data}")}});
        let name = format!("01-{role}-kubelet");
        out.push(("machineconfigs", name.clone(), base(name, json!([file]))));
    }
    out
}
