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

#[cfg(test)]
mod tests {
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
