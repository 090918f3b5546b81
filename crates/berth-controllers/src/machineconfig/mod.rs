//! OpenShift's Machine Config Operator, as far as berth's simulated nodes go
//! (`machineconfiguration.openshift.io/v1`, upstream `openshift/machine-config-operator`'s
//! machine-config-controller):
//!
//! - [`kubelet_config`]: each KubeletConfig becomes, for every MachineConfigPool its
//!   `machineConfigPoolSelector` selects, the MachineConfig `99-<pool>-generated-kubelet`
//!   carrying its kubelet settings as the file `/etc/kubernetes/kubelet.conf`; its status
//!   condition says `Success`, or `Failure` in the operator's words;
//! - [`render`]: each pool's MachineConfigs (by its `machineConfigSelector`) merge into one
//!   `rendered-<pool>-<hash>`, which becomes the pool's `spec.configuration`;
//! - [`rollout`]: the pool's nodes (by its `nodeSelector`) are pointed at that configuration
//!   one `maxUnavailable` at a time (the node annotation `desiredConfig`), and the pool's
//!   status counts them (`machineCount`, `updatedMachineCount`, ...) with the conditions
//!   `Updated`, `Updating` and `Degraded`.
//!
//! The machine config daemon of each node (in `berth-kubelet`) carries a `desiredConfig` out:
//! it applies the rendered kubelet settings to its simulated kubelet and answers with
//! `currentConfig` and `state: Done`. The engines are pure functions of the objects and `now`;
//! [`driver::run`] watches the kinds and writes what they decide.

pub mod driver;
pub mod kubelet_config;
pub mod objects;
pub mod render;
pub mod rollout;
#[cfg(test)]
mod tests;

pub use driver::{run, Queues};

/// The API group and version of the machine config kinds.
pub const API_VERSION: &str = "machineconfiguration.openshift.io/v1";
/// The label of a MachineConfig that names the pool role it is for.
pub const ROLE_LABEL: &str = "machineconfiguration.openshift.io/role";
/// The annotation naming the controller version that generated a MachineConfig.
pub const GENERATED_BY: &str = "machineconfiguration.openshift.io/generated-by-controller-version";
/// berth's controller version, in that annotation.
pub const CONTROLLER_VERSION: &str = concat!("berth-", env!("CARGO_PKG_VERSION"));
/// The node annotations the controller and the daemon talk through.
pub const CURRENT_CONFIG: &str = "machineconfiguration.openshift.io/currentConfig";
pub const DESIRED_CONFIG: &str = "machineconfiguration.openshift.io/desiredConfig";
pub const STATE: &str = "machineconfiguration.openshift.io/state";
pub const REASON: &str = "machineconfiguration.openshift.io/reason";
/// The daemon's states (`state` annotation).
pub const STATE_DONE: &str = "Done";
pub const STATE_WORKING: &str = "Working";
pub const STATE_DEGRADED: &str = "Degraded";
/// Where the kubelet reads its configuration on an OpenShift node.
pub const KUBELET_CONF_PATH: &str = "/etc/kubernetes/kubelet.conf";
/// The Ignition spec version of the configurations berth writes.
pub const IGNITION_VERSION: &str = "3.5.0";

use serde_json::{Map, Value};

/// The labels of an object, as a map for label selectors.
pub(crate) fn labels_of(obj: &Value) -> Map<String, Value> {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// The name of an object.
pub(crate) fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// A stable digest of `text`, 32 hex digits (as long as the operator's md5 names): two
/// FNV-1a passes with different offsets. Names rendered configurations, not a security check.
pub(crate) fn digest(text: &[u8]) -> String {
    let fnv = |offset: u64| {
        text.iter().fold(offset, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    };
    format!(
        "{:016x}{:016x}",
        fnv(0xcbf2_9ce4_8422_2325),
        fnv(0x6c62_272e_07bb_0142)
    )
}
