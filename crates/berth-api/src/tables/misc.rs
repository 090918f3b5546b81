//! Rows of small kinds: namespaces, priority classes, leases, config maps, secrets and
//! service accounts.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{age, col, str_at, Column, AGE, NAME};

pub(super) const NAMESPACE_COLUMNS: &[Column] = &[
    NAME,
    col("Status", "string", "The status of the namespace"),
    AGE,
];

pub(super) fn namespace_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(str_at(obj, "/status/phase")),
        json!(age(obj, now)),
    ]
}

pub(super) const PRIORITY_CLASS_COLUMNS: &[Column] = &[
    NAME,
    col("Value", "integer", "value represents the integer value of this priority class. This is the actual priority that pods receive when they have the name of this class in their pod spec."),
    col("Global-Default", "boolean", "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class. Only one PriorityClass can be marked as `globalDefault`. However, if more than one PriorityClasses exists with their `globalDefault` field set to true, the smallest value of such global default PriorityClasses will be used as the default priority."),
    AGE,
    // Upstream declares this column with priority 0, so `kubectl get pc` shows it.
    col("PreemptionPolicy", "string", "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset."),
];

pub(super) fn priority_class_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(obj.get("value").and_then(Value::as_i64).unwrap_or(0)),
        json!(obj
            .get("globalDefault")
            .and_then(Value::as_bool)
            .unwrap_or(false)),
        json!(age(obj, now)),
        json!(str_at(obj, "/preemptionPolicy")),
    ]
}

pub(super) const LEASE_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Holder",
        "string",
        "holderIdentity contains the identity of the holder of a current lease.",
    ),
    AGE,
];

pub(super) fn lease_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(str_at(obj, "/spec/holderIdentity")),
        json!(age(obj, now)),
    ]
}

fn len_of(obj: &Value, key: &str) -> usize {
    obj.get(key)
        .and_then(Value::as_object)
        .map_or(0, |m| m.len())
}

pub(super) const CONFIG_MAP_COLUMNS: &[Column] = &[
    NAME,
    col("Data", "string", "Data contains the configuration data."),
    AGE,
];

pub(super) fn config_map_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(len_of(obj, "data") + len_of(obj, "binaryData")),
        json!(age(obj, now)),
    ]
}

pub(super) const SECRET_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Type",
        "string",
        "Used to facilitate programmatic handling of secret data.",
    ),
    col("Data", "string", "Data contains the secret data."),
    AGE,
];

pub(super) fn secret_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    // The server defaults the type to Opaque; print that for objects stored without one.
    let ty = match str_at(obj, "/type") {
        "" => "Opaque",
        t => t,
    };
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(ty),
        json!(len_of(obj, "data") + len_of(obj, "stringData")),
        json!(age(obj, now)),
    ]
}

pub(super) const SERVICE_ACCOUNT_COLUMNS: &[Column] = &[
    NAME,
    col("Secrets", "string", "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use."),
    AGE,
];

pub(super) fn service_account_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let secrets = obj
        .get("secrets")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(secrets),
        json!(age(obj, now)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::tests::{ago, now};

    #[test]
    fn priority_class_row() {
        let pc = json!({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PriorityClass",
            "metadata": {"name": "high-priority", "creationTimestamp": ago(7200)},
            "value": 1000000, "globalDefault": false, "preemptionPolicy": "PreemptLowerPriority"});
        assert_eq!(
            priority_class_cells(&pc, now()),
            vec![
                json!("high-priority"),
                json!(1000000),
                json!(false),
                json!("120m"),
                json!("PreemptLowerPriority")
            ]
        );
        assert!(PRIORITY_CLASS_COLUMNS.iter().all(|c| c.priority == 0));
    }

    #[test]
    fn namespace_lease_configmap_secret_sa_rows() {
        let ns = json!({"metadata": {"name": "default", "creationTimestamp": ago(10)},
                        "status": {"phase": "Active"}});
        assert_eq!(
            namespace_cells(&ns, now()),
            vec![json!("default"), json!("Active"), json!("10s")]
        );
        let lease = json!({"metadata": {"name": "n1", "creationTimestamp": ago(10)},
                           "spec": {"holderIdentity": "n1"}});
        assert_eq!(lease_cells(&lease, now())[1], json!("n1"));
        let cm = json!({"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"},
                        "binaryData": {"c": ""}});
        assert_eq!(
            config_map_cells(&cm, now()),
            vec![json!("c"), json!(3), json!("<unknown>")]
        );
        let secret = json!({"metadata": {"name": "s"}, "data": {"a": "MQ=="}});
        assert_eq!(secret_cells(&secret, now())[1], json!("Opaque"));
        assert_eq!(secret_cells(&secret, now())[2], json!(1));
        let sa = json!({"metadata": {"name": "default"}});
        assert_eq!(service_account_cells(&sa, now())[1], json!(0));
    }
}
