//! Rows of OpenShift's kinds, as `oc get` prints them: projects, users, groups (OpenShift's
//! printers), machine config pools and machine configs (the columns of their
//! CustomResourceDefinitions).

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{age, col, str_at, Column, AGE, NAME};

pub(super) const PROJECT_COLUMNS: &[Column] = &[
    NAME,
    col("Display Name", "string", "The project's display name"),
    col("Status", "string", "The project's phase"),
];

pub(super) fn project_cells(obj: &Value) -> Vec<Value> {
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(str_at(
            obj,
            "/metadata/annotations/openshift.io~1display-name"
        )),
        json!(str_at(obj, "/status/phase")),
    ]
}

pub(super) const USER_COLUMNS: &[Column] = &[
    NAME,
    col("UID", "string", "The user's uid"),
    col("Full Name", "string", "The user's full name"),
    col("Identities", "string", "The identities mapped to the user"),
];

fn joined(obj: &Value, field: &str) -> String {
    obj.get(field)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

pub(super) fn user_cells(obj: &Value) -> Vec<Value> {
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(str_at(obj, "/metadata/uid")),
        json!(str_at(obj, "/fullName")),
        json!(joined(obj, "identities")),
    ]
}

pub(super) const GROUP_COLUMNS: &[Column] = &[NAME, col("Users", "string", "The group's users")];

pub(super) fn group_cells(obj: &Value) -> Vec<Value> {
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(joined(obj, "users")),
    ]
}

pub(super) const MACHINE_CONFIG_POOL_COLUMNS: &[Column] = &[
    NAME,
    col("Config", "string", "The rendered configuration of the pool"),
    col("Updated", "string", "When all the machines in the pool are updated to the correct machine config."),
    col("Updating", "string", "When at least one of machine is not either not updated or is in the process of updating to the desired machine config."),
    col("Degraded", "string", "When progress is blocked on updating one or more nodes, or the pool configuration is failing."),
    col("MachineCount", "number", "Total number of machines in the machine config pool"),
    col("ReadyMachineCount", "number", "Total number of ready machines targeted by the pool"),
    col("UpdatedMachineCount", "number", "Total number of machines targeted by the pool that have the CurrentMachineConfig as their config"),
    col("DegradedMachineCount", "number", "Total number of machines marked degraded (or unreconcilable)"),
    AGE,
];

fn condition(obj: &Value, kind: &str) -> String {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c["type"] == kind))
        .and_then(|c| c["status"].as_str())
        .unwrap_or("")
        .to_string()
}

pub(super) fn machine_config_pool_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let count = |field: &str| {
        obj.pointer(&format!("/status/{field}"))
            .and_then(Value::as_i64)
            .unwrap_or(0)
    };
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(str_at(obj, "/status/configuration/name")),
        json!(condition(obj, "Updated")),
        json!(condition(obj, "Updating")),
        json!(condition(obj, "Degraded")),
        json!(count("machineCount")),
        json!(count("readyMachineCount")),
        json!(count("updatedMachineCount")),
        json!(count("degradedMachineCount")),
        json!(age(obj, now)),
    ]
}

pub(super) const MACHINE_CONFIG_COLUMNS: &[Column] = &[
    NAME,
    col("GeneratedByController", "string", "Version of the controller that generated the machineconfig. This will be empty if the machineconfig is not managed by a controller."),
    col("IgnitionVersion", "string", "Version of the Ignition Config defined in the machineconfig."),
    AGE,
];

pub(super) fn machine_config_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(str_at(
            obj,
            "/metadata/annotations/machineconfiguration.openshift.io~1generated-by-controller-version"
        )),
        json!(str_at(obj, "/spec/config/ignition/version")),
        json!(age(obj, now)),
    ]
}
