//! Rows of persistent volumes and claims, with upstream's printer columns (`kubectl get pv,pvc`).

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{age, arr_at, col, str_at, wide, Column, AGE, NAME};

const ACCESS_MODES: Column = col("Access Modes", "string", "AccessModes contains all ways the volume can be mounted. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes");
const STORAGE_CLASS: Column = col(
    "StorageClass",
    "string",
    "StorageClassName is the name of the StorageClass.",
);
const ATTRIBUTES_CLASS: Column = col(
    "VolumeAttributesClass",
    "string",
    "Name of VolumeAttributesClass to which this persistent volume belongs.",
);
const VOLUME_MODE: Column = wide("VolumeMode", "string", "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state.");

pub(super) const PERSISTENT_VOLUME_COLUMNS: &[Column] = &[
    NAME,
    col("Capacity", "string", "capacity is the description of the persistent volume's resources and capacity. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity"),
    ACCESS_MODES,
    col("Reclaim Policy", "string", "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim."),
    col("Status", "string", "phase indicates if a volume is available, bound to a claim, or released by a claim."),
    col("Claim", "string", "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim."),
    STORAGE_CLASS,
    ATTRIBUTES_CLASS,
    col("Reason", "string", "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI."),
    AGE,
    VOLUME_MODE,
];

pub(super) const PERSISTENT_VOLUME_CLAIM_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Status",
        "string",
        "phase represents the current phase of PersistentVolumeClaim.",
    ),
    col(
        "Volume",
        "string",
        "volumeName is the binding reference to the PersistentVolume backing this claim.",
    ),
    col(
        "Capacity",
        "string",
        "capacity represents the actual resources of the underlying volume.",
    ),
    ACCESS_MODES,
    STORAGE_CLASS,
    ATTRIBUTES_CLASS,
    AGE,
    VOLUME_MODE,
];

/// Upstream's short forms, in the order the object lists them.
fn access_modes(obj: &Value, ptr: &str) -> String {
    arr_at(obj, ptr)
        .iter()
        .filter_map(Value::as_str)
        .map(|m| match m {
            "ReadWriteOnce" => "RWO",
            "ReadOnlyMany" => "ROX",
            "ReadWriteMany" => "RWX",
            "ReadWriteOncePod" => "RWOP",
            other => other,
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn or_unset(s: &str) -> &str {
    if s.is_empty() {
        "<unset>"
    } else {
        s
    }
}

fn volume_mode(obj: &Value) -> &str {
    match str_at(obj, "/spec/volumeMode") {
        "" => "<unset>",
        m => m,
    }
}

pub(super) fn persistent_volume_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let claim = match str_at(obj, "/spec/claimRef/name") {
        "" => String::new(),
        name => format!("{}/{}", str_at(obj, "/spec/claimRef/namespace"), name),
    };
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(str_at(obj, "/spec/capacity/storage")),
        json!(access_modes(obj, "/spec/accessModes")),
        json!(str_at(obj, "/spec/persistentVolumeReclaimPolicy")),
        json!(str_at(obj, "/status/phase")),
        json!(claim),
        json!(str_at(obj, "/spec/storageClassName")),
        json!(or_unset(str_at(obj, "/spec/volumeAttributesClassName"))),
        json!(str_at(obj, "/status/reason")),
        json!(age(obj, now)),
        json!(volume_mode(obj)),
    ]
}

pub(super) fn persistent_volume_claim_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    // Capacity and access modes are the bound volume's, so empty until the claim is bound.
    let bound = !str_at(obj, "/spec/volumeName").is_empty();
    let (capacity, modes) = if bound {
        (
            str_at(obj, "/status/capacity/storage").to_string(),
            access_modes(obj, "/status/accessModes"),
        )
    } else {
        (String::new(), String::new())
    };
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(str_at(obj, "/status/phase")),
        json!(str_at(obj, "/spec/volumeName")),
        json!(capacity),
        json!(modes),
        json!(str_at(obj, "/spec/storageClassName")),
        json!(or_unset(str_at(obj, "/spec/volumeAttributesClassName"))),
        json!(age(obj, now)),
        json!(volume_mode(obj)),
    ]
}

pub(super) const STORAGE_CLASS_COLUMNS: &[Column] = &[
    NAME,
    col("Provisioner", "string", "Provisioner indicates the type of the provisioner."),
    col("ReclaimPolicy", "string", "Dynamically provisioned PersistentVolumes of this storage class are created with this reclaimPolicy. Defaults to Delete."),
    col("VolumeBindingMode", "string", "VolumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound. When unset, VolumeBindingImmediate is used."),
    col("AllowVolumeExpansion", "string", "AllowVolumeExpansion shows whether the storage class allow volume expand."),
    AGE,
];

/// The annotation that makes a StorageClass the default one (`NAME (default)`).
const DEFAULT_CLASS_ANNOTATION: &str = "storageclass.kubernetes.io/is-default-class";

pub(super) fn storage_class_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let mut name = str_at(obj, "/metadata/name").to_string();
    let default = obj
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(DEFAULT_CLASS_ANNOTATION))
        .and_then(Value::as_str)
        == Some("true");
    if default {
        name.push_str(" (default)");
    }
    let or = |ptr: &str, fallback: &'static str| match str_at(obj, ptr) {
        "" => fallback.to_string(),
        v => v.to_string(),
    };
    vec![
        json!(name),
        json!(str_at(obj, "/provisioner")),
        json!(or("/reclaimPolicy", "Delete")),
        json!(or("/volumeBindingMode", "Immediate")),
        json!(obj
            .get("allowVolumeExpansion")
            .and_then(Value::as_bool)
            .unwrap_or(false)
            .to_string()),
        json!(age(obj, now)),
    ]
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_default_storage_class_is_marked_and_unset_policies_defaulted() {
        let sc = json!({"metadata": {"name": "standard",
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "rancher.io/local-path", "volumeBindingMode": "WaitForFirstConsumer"});
        let cells = storage_class_cells(&sc, super::super::tests::now());
        assert_eq!(
            cells[..5],
            [
                json!("standard (default)"),
                json!("rancher.io/local-path"),
                json!("Delete"),
                json!("WaitForFirstConsumer"),
                json!("false")
            ]
        );
    }

    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-01-01T00:01:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn a_bound_claim_shows_its_volume_capacity_and_short_access_modes() {
        let pvc = json!({"metadata": {"name": "www-web-0", "creationTimestamp": "2026-01-01T00:00:00Z"},
                         "spec": {"volumeName": "pv-a", "storageClassName": "manual",
                                  "volumeMode": "Filesystem"},
                         "status": {"phase": "Bound", "capacity": {"storage": "1Gi"},
                                    "accessModes": ["ReadWriteOnce", "ReadOnlyMany"]}});
        let cells = persistent_volume_claim_cells(&pvc, now());
        assert_eq!(
            cells,
            vec![
                json!("www-web-0"),
                json!("Bound"),
                json!("pv-a"),
                json!("1Gi"),
                json!("RWO,ROX"),
                json!("manual"),
                json!("<unset>"),
                json!("60s"),
                json!("Filesystem")
            ]
        );
        assert_eq!(cells.len(), PERSISTENT_VOLUME_CLAIM_COLUMNS.len());
    }

    #[test]
    fn a_volume_shows_its_claim_as_namespace_slash_name() {
        let pv = json!({"metadata": {"name": "pv-a", "creationTimestamp": "2026-01-01T00:00:00Z"},
                        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                 "persistentVolumeReclaimPolicy": "Retain",
                                 "claimRef": {"namespace": "ns", "name": "www-web-0"}},
                        "status": {"phase": "Bound"}});
        let cells = persistent_volume_cells(&pv, now());
        assert_eq!(cells[5], json!("ns/www-web-0"));
        assert_eq!(cells[4], json!("Bound"));
        assert_eq!(cells.len(), PERSISTENT_VOLUME_COLUMNS.len());
    }
}
