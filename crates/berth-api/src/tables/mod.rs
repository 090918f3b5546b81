//! Server-side Table printing (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`): the
//! columns and cells `kubectl get` shows, computed as upstream's printers compute them
//! (`pkg/printers/internalversion/printers.go`), always with the wide (priority 1) columns,
//! which kubectl hides unless `-o wide`.

mod admission;
mod apiregistration;
mod autoscaling;
mod custom;
mod event;
mod flowcontrol;
mod misc;
mod network;
mod networking;
mod node;
mod openshift;
mod pod;
mod quota;
mod rbac;
mod storage;
mod workloads;

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{json, Value};

use crate::registry::{ResourceType, TableKind};
pub use custom::CustomColumns;

/// What each Table row carries in `object` (the `includeObject` query parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    /// No object (`includeObject=None`).
    None,
    /// The object's metadata as a `meta.k8s.io/v1` `PartialObjectMetadata` (the default;
    /// kubectl reads labels from it for `--show-labels`).
    #[default]
    Metadata,
    /// The full object (`includeObject=Object`, sent by kubectl for `--sort-by`).
    Object,
}

impl IncludeObject {
    /// Parses the `includeObject` query value (`None`, `Metadata`, `Object`); `None` (the
    /// Rust value) for anything else so the server can answer 400.
    pub fn parse(s: &str) -> Option<IncludeObject> {
        match s {
            "None" => Some(IncludeObject::None),
            "Metadata" => Some(IncludeObject::Metadata),
            "Object" => Some(IncludeObject::Object),
            _ => None,
        }
    }
}

pub use crate::columns::Column;

pub(crate) const NAME_DESC: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
pub(crate) const AGE_DESC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

pub(crate) const fn col(name: &'static str, ty: &'static str, description: &'static str) -> Column {
    Column {
        name,
        ty,
        format: "",
        description,
        priority: 0,
    }
}

pub(crate) const fn wide(
    name: &'static str,
    ty: &'static str,
    description: &'static str,
) -> Column {
    Column {
        name,
        ty,
        format: "",
        description,
        priority: 1,
    }
}

pub(crate) const NAME: Column = Column {
    name: "Name",
    ty: "string",
    format: "name",
    description: NAME_DESC,
    priority: 0,
};

pub(crate) const AGE: Column = col("Age", "string", AGE_DESC);

const GENERIC_COLUMNS: &[Column] = &[NAME, AGE];

/// The columns printed for a kind.
pub fn columns(kind: TableKind) -> &'static [Column] {
    match kind {
        TableKind::Generic => GENERIC_COLUMNS,
        TableKind::Pod => pod::COLUMNS,
        TableKind::Node => node::COLUMNS,
        TableKind::Event => event::COLUMNS,
        TableKind::Namespace => misc::NAMESPACE_COLUMNS,
        TableKind::PriorityClass => misc::PRIORITY_CLASS_COLUMNS,
        TableKind::Lease => misc::LEASE_COLUMNS,
        TableKind::FlowSchema => flowcontrol::FLOW_SCHEMA_COLUMNS,
        TableKind::PriorityLevelConfiguration => flowcontrol::PRIORITY_LEVEL_COLUMNS,
        TableKind::ConfigMap => misc::CONFIG_MAP_COLUMNS,
        TableKind::Secret => misc::SECRET_COLUMNS,
        TableKind::ServiceAccount => misc::SERVICE_ACCOUNT_COLUMNS,
        TableKind::Service => network::SERVICE_COLUMNS,
        TableKind::Endpoints => network::ENDPOINTS_COLUMNS,
        TableKind::EndpointSlice => network::ENDPOINT_SLICE_COLUMNS,
        TableKind::PodDisruptionBudget => workloads::PDB_COLUMNS,
        TableKind::Deployment => workloads::DEPLOYMENT_COLUMNS,
        TableKind::ReplicaSet => workloads::REPLICA_SET_COLUMNS,
        TableKind::StatefulSet => workloads::STATEFUL_SET_COLUMNS,
        TableKind::DaemonSet => workloads::DAEMON_SET_COLUMNS,
        TableKind::Job => workloads::JOB_COLUMNS,
        TableKind::CronJob => workloads::CRON_JOB_COLUMNS,
        TableKind::ControllerRevision => workloads::CONTROLLER_REVISION_COLUMNS,
        TableKind::Role => rbac::ROLE_COLUMNS,
        TableKind::RoleBinding => rbac::ROLE_BINDING_COLUMNS,
        TableKind::PersistentVolume => storage::PERSISTENT_VOLUME_COLUMNS,
        TableKind::PersistentVolumeClaim => storage::PERSISTENT_VOLUME_CLAIM_COLUMNS,
        TableKind::ResourceQuota => quota::RESOURCE_QUOTA_COLUMNS,
        TableKind::LimitRange => quota::LIMIT_RANGE_COLUMNS,
        TableKind::PodTemplate => quota::POD_TEMPLATE_COLUMNS,
        TableKind::HorizontalPodAutoscaler => autoscaling::HPA_COLUMNS,
        TableKind::Ingress => networking::INGRESS_COLUMNS,
        TableKind::IngressClass => networking::INGRESS_CLASS_COLUMNS,
        TableKind::NetworkPolicy => networking::NETWORK_POLICY_COLUMNS,
        TableKind::RuntimeClass => networking::RUNTIME_CLASS_COLUMNS,
        TableKind::CertificateSigningRequest => admission::CSR_COLUMNS,
        TableKind::WebhookConfiguration => admission::WEBHOOK_CONFIGURATION_COLUMNS,
        TableKind::ValidatingAdmissionPolicy => admission::POLICY_COLUMNS,
        TableKind::ValidatingAdmissionPolicyBinding => admission::POLICY_BINDING_COLUMNS,
        TableKind::StorageClass => storage::STORAGE_CLASS_COLUMNS,
        TableKind::Project => openshift::PROJECT_COLUMNS,
        TableKind::User => openshift::USER_COLUMNS,
        TableKind::Group => openshift::GROUP_COLUMNS,
        TableKind::MachineConfigPool => openshift::MACHINE_CONFIG_POOL_COLUMNS,
        TableKind::ApiService => apiregistration::API_SERVICE_COLUMNS,
        TableKind::MachineConfig => openshift::MACHINE_CONFIG_COLUMNS,
        TableKind::Custom(custom) => custom.columns,
    }
}

/// The cells of one object's row, one per [`columns`] entry.
pub fn cells(kind: TableKind, obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    match kind {
        TableKind::Generic => vec![json!(str_at(obj, "/metadata/name")), json!(age(obj, now))],
        TableKind::Pod => pod::cells(obj, now),
        TableKind::Node => node::cells(obj, now),
        TableKind::Event => event::cells(obj, now),
        TableKind::Namespace => misc::namespace_cells(obj, now),
        TableKind::PriorityClass => misc::priority_class_cells(obj, now),
        TableKind::Lease => misc::lease_cells(obj, now),
        TableKind::FlowSchema => flowcontrol::flow_schema_cells(obj, now),
        TableKind::PriorityLevelConfiguration => flowcontrol::priority_level_cells(obj, now),
        TableKind::ConfigMap => misc::config_map_cells(obj, now),
        TableKind::Secret => misc::secret_cells(obj, now),
        TableKind::ServiceAccount => misc::service_account_cells(obj, now),
        TableKind::Service => network::service_cells(obj, now),
        TableKind::Endpoints => network::endpoints_cells(obj, now),
        TableKind::EndpointSlice => network::endpoint_slice_cells(obj, now),
        TableKind::PodDisruptionBudget => workloads::pdb_cells(obj, now),
        TableKind::Deployment => workloads::deployment_cells(obj, now),
        TableKind::ReplicaSet => workloads::replica_set_cells(obj, now),
        TableKind::StatefulSet => workloads::stateful_set_cells(obj, now),
        TableKind::DaemonSet => workloads::daemon_set_cells(obj, now),
        TableKind::Job => workloads::job_cells(obj, now),
        TableKind::CronJob => workloads::cron_job_cells(obj, now),
        TableKind::ControllerRevision => workloads::controller_revision_cells(obj, now),
        TableKind::Role => rbac::role_cells(obj),
        TableKind::RoleBinding => rbac::role_binding_cells(obj, now),
        TableKind::PersistentVolume => storage::persistent_volume_cells(obj, now),
        TableKind::PersistentVolumeClaim => storage::persistent_volume_claim_cells(obj, now),
        TableKind::ResourceQuota => quota::resource_quota_cells(obj, now),
        TableKind::LimitRange => quota::limit_range_cells(obj, now),
        TableKind::PodTemplate => quota::pod_template_cells(obj, now),
        TableKind::HorizontalPodAutoscaler => autoscaling::hpa_cells(obj, now),
        TableKind::Ingress => networking::ingress_cells(obj, now),
        TableKind::IngressClass => networking::ingress_class_cells(obj, now),
        TableKind::NetworkPolicy => networking::network_policy_cells(obj, now),
        TableKind::RuntimeClass => networking::runtime_class_cells(obj, now),
        TableKind::CertificateSigningRequest => admission::csr_cells(obj, now),
        TableKind::WebhookConfiguration => admission::webhook_configuration_cells(obj, now),
        TableKind::ValidatingAdmissionPolicy => admission::policy_cells(obj, now),
        TableKind::ValidatingAdmissionPolicyBinding => admission::policy_binding_cells(obj, now),
        TableKind::StorageClass => storage::storage_class_cells(obj, now),
        TableKind::Project => openshift::project_cells(obj),
        TableKind::User => openshift::user_cells(obj),
        TableKind::Group => openshift::group_cells(obj),
        TableKind::MachineConfigPool => openshift::machine_config_pool_cells(obj, now),
        TableKind::ApiService => apiregistration::api_service_cells(obj, now),
        TableKind::MachineConfig => openshift::machine_config_cells(obj, now),
        TableKind::Custom(custom) => custom::cells(custom, obj, now),
    }
}

/// Builds a `meta.k8s.io/v1` `Table` of `objects` (all of kind `rt`).
///
/// `list_meta` becomes the Table's `metadata` (`{"resourceVersion", "continue"}`); `now` is the
/// time ages are measured against. With `with_headers == false` (watch events after the first)
/// `columnDefinitions` is empty, as upstream sends it with `NoHeaders`.
pub fn table(
    rt: &ResourceType,
    objects: &[Value],
    list_meta: Value,
    include: IncludeObject,
    now: DateTime<Utc>,
    with_headers: bool,
) -> Value {
    let column_definitions: Vec<Value> = if with_headers {
        columns(rt.table)
            .iter()
            .map(|c| {
                json!({
                    "name": c.name,
                    "type": c.ty,
                    "format": c.format,
                    "description": c.description,
                    "priority": c.priority,
                })
            })
            .collect()
    } else {
        Vec::new()
    };
    let rows: Vec<Value> = objects
        .iter()
        .map(|obj| {
            let mut row = serde_json::Map::new();
            row.insert("cells".into(), Value::Array(cells(rt.table, obj, now)));
            match include {
                IncludeObject::None => {}
                IncludeObject::Metadata => {
                    row.insert(
                        "object".into(),
                        json!({
                            "kind": "PartialObjectMetadata",
                            "apiVersion": "meta.k8s.io/v1",
                            "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
                        }),
                    );
                }
                IncludeObject::Object => {
                    row.insert("object".into(), obj.clone());
                }
            }
            Value::Object(row)
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": column_definitions,
        "rows": rows,
    })
}

/// The age of an RFC 3339 timestamp at `now`, as upstream's `HumanDuration` prints it
/// (`"45s"`, `"3m20s"`, `"15m"`, `"2h5m"`, `"20h"`, `"3d4h"`, `"30d"`, `"2y10d"`, `"9y"`);
/// `"<unknown>"` when `created` is empty or not a timestamp.
pub fn human_age(created: &str, now: DateTime<Utc>) -> String {
    match parse_time(created) {
        Some(t) => human_duration(now - t),
        None => "<unknown>".to_string(),
    }
}

/// Upstream `k8s.io/apimachinery/pkg/util/duration.HumanDuration`: about 2–3 significant
/// figures; up to 1 s in the future prints `"0s"`, further is `"<invalid>"`.
pub fn human_duration(d: TimeDelta) -> String {
    // num_seconds truncates toward zero, like Go's int(d.Seconds()).
    let seconds = d.num_seconds();
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    if seconds < 0 {
        return "0s".to_string();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{}h", hours / 24, h)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{}d", hours / 24 / 365, dy)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// Parses an RFC 3339 timestamp (`metav1.Time` or `MicroTime`); `None` for empty or invalid.
pub(crate) fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The string at JSON pointer `ptr`, or `""`.
pub(crate) fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

/// The integer at JSON pointer `ptr`, or 0.
pub(crate) fn int_at(v: &Value, ptr: &str) -> i64 {
    v.pointer(ptr).and_then(Value::as_i64).unwrap_or(0)
}

/// The age cell of an object (`<unknown>` without a creation timestamp).
pub(crate) fn age(obj: &Value, now: DateTime<Utc>) -> String {
    human_age(str_at(obj, "/metadata/creationTimestamp"), now)
}

/// The array at `ptr`, or an empty slice.
pub(crate) fn arr_at<'a>(v: &'a Value, ptr: &str) -> &'a [Value] {
    v.pointer(ptr)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::find;

    pub(crate) fn now() -> DateTime<Utc> {
        parse_time("2025-01-01T12:00:00Z").unwrap()
    }

    /// `now` minus `secs` seconds, as RFC 3339.
    pub(crate) fn ago(secs: i64) -> String {
        (now() - TimeDelta::seconds(secs)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    }

    #[test]
    fn human_duration_matches_upstream() {
        let cases: &[(i64, &str)] = &[
            (-3, "<invalid>"),
            (-2, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (1, "1s"),
            (59, "59s"),
            (60, "60s"),
            (90, "90s"),
            (119, "119s"),
            (120, "2m"),
            (130, "2m10s"),
            (599, "9m59s"),
            (600, "10m"),
            (601, "10m"),
            (3 * 3600 - 1, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 60 * 5 + 30, "3h5m"),
            (8 * 3600 - 1, "7h59m"),
            (8 * 3600, "8h"),
            (47 * 3600 + 3599, "47h"),
            (48 * 3600, "2d"),
            (50 * 3600, "2d2h"),
            (8 * 86400 - 1, "7d23h"),
            (8 * 86400, "8d"),
            (364 * 86400, "364d"),
            (2 * 365 * 86400 - 1, "729d"),
            (2 * 365 * 86400, "2y"),
            (2 * 365 * 86400 + 10 * 86400, "2y10d"),
            (8 * 365 * 86400 - 1, "7y364d"),
            (8 * 365 * 86400, "8y"),
            (20 * 365 * 86400, "20y"),
        ];
        for (secs, want) in cases {
            assert_eq!(
                human_duration(TimeDelta::seconds(*secs)),
                *want,
                "{secs} seconds"
            );
        }
        // Sub-second parts truncate toward zero like Go's int(d.Seconds()).
        assert_eq!(human_duration(TimeDelta::milliseconds(-1500)), "0s");
        assert_eq!(human_duration(TimeDelta::milliseconds(119_999)), "119s");
    }

    #[test]
    fn human_age_parses_and_reports_unknown() {
        assert_eq!(human_age(&ago(300), now()), "5m");
        assert_eq!(human_age("2025-01-01T11:59:59.500000Z", now()), "0s");
        assert_eq!(human_age("2025-01-01T13:00:00+01:00", now()), "0s");
        assert_eq!(human_age("", now()), "<unknown>");
        assert_eq!(human_age("yesterday", now()), "<unknown>");
    }

    #[test]
    fn generic_table_shape_and_include_object() {
        let rt = find("", "v1", "configmaps").unwrap();
        let generic = ResourceType {
            table: TableKind::Generic,
            ..*rt
        };
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c1", "namespace": "default", "labels": {"a": "b"},
                         "creationTimestamp": ago(3 * 86400)},
            "data": {"k": "v"}});
        let meta = json!({"resourceVersion": "105", "continue": "tok"});
        let t = table(
            &generic,
            std::slice::from_ref(&obj),
            meta.clone(),
            IncludeObject::Metadata,
            now(),
            true,
        );
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(t["metadata"], meta);
        assert_eq!(
            t["columnDefinitions"][0],
            json!({"name": "Name", "type": "string", "format": "name",
                   "description": NAME_DESC, "priority": 0})
        );
        assert_eq!(t["columnDefinitions"][1]["name"], "Age");
        assert_eq!(t["rows"][0]["cells"], json!(["c1", "3d"]));
        assert_eq!(
            t["rows"][0]["object"],
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                   "metadata": obj["metadata"]})
        );

        let t = table(
            &generic,
            std::slice::from_ref(&obj),
            json!({}),
            IncludeObject::Object,
            now(),
            false,
        );
        assert_eq!(t["columnDefinitions"], json!([]));
        assert_eq!(t["rows"][0]["object"], obj);

        let t = table(
            &generic,
            &[obj],
            json!({}),
            IncludeObject::None,
            now(),
            true,
        );
        assert!(t["rows"][0].get("object").is_none());
    }

    #[test]
    fn every_kind_has_one_cell_per_column() {
        let empty = json!({"metadata": {"name": "x"}});
        for rt in crate::registry::all() {
            let t = table(
                rt,
                std::slice::from_ref(&empty),
                json!({}),
                IncludeObject::None,
                now(),
                true,
            );
            let ncols = t["columnDefinitions"].as_array().unwrap().len();
            let ncells = t["rows"][0]["cells"].as_array().unwrap().len();
            assert_eq!(ncols, ncells, "{}", rt.plural);
        }
    }

    #[test]
    fn include_object_parse() {
        assert_eq!(IncludeObject::parse("Object"), Some(IncludeObject::Object));
        assert_eq!(IncludeObject::parse("None"), Some(IncludeObject::None));
        assert_eq!(
            IncludeObject::parse("Metadata"),
            Some(IncludeObject::Metadata)
        );
        assert_eq!(IncludeObject::parse("x"), None);
        assert_eq!(IncludeObject::default(), IncludeObject::Metadata);
    }
}
