//! Rows of workload kinds: disruption budgets, deployments, replica sets (and replication
//! controllers), stateful sets, daemon sets and jobs.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{
    age, arr_at, col, human_duration, int_at, parse_time, str_at, wide, Column, AGE, NAME,
};

const CONTAINERS: Column = wide(
    "Containers",
    "string",
    "Names of each container in the template.",
);
const IMAGES: Column = wide(
    "Images",
    "string",
    "Images referenced by each container in the template.",
);
const SELECTOR: Column = wide(
    "Selector",
    "string",
    "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.",
);

pub(super) const PDB_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Min Available",
        "string",
        "The minimum number of pods that must be available.",
    ),
    col(
        "Max Unavailable",
        "string",
        "The maximum number of pods that may be unavailable.",
    ),
    col(
        "Allowed Disruptions",
        "integer",
        "Calculated number of pods that may be disrupted at this time.",
    ),
    AGE,
];

/// An IntOrString field printed as upstream's `IntOrString.String()`, or `N/A` when unset.
fn int_or_string(v: Option<&Value>) -> String {
    match v {
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) => s.clone(),
        _ => "N/A".to_string(),
    }
}

pub(super) fn pdb_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(int_or_string(obj.pointer("/spec/minAvailable"))),
        json!(int_or_string(obj.pointer("/spec/maxUnavailable"))),
        json!(int_at(obj, "/status/disruptionsAllowed")),
        json!(age(obj, now)),
    ]
}

/// `spec.replicas`, defaulting to 1 as the API server's defaulting does.
fn desired(obj: &Value) -> i64 {
    obj.pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

/// Container names and images of the pod template, comma-joined.
fn containers(obj: &Value) -> (String, String) {
    let cs = arr_at(obj, "/spec/template/spec/containers");
    let names: Vec<&str> = cs.iter().map(|c| str_at(c, "/name")).collect();
    let images: Vec<&str> = cs.iter().map(|c| str_at(c, "/image")).collect();
    (names.join(","), images.join(","))
}

/// A `map[string]string` of labels as `k=v,...` sorted by key (upstream `labels.FormatLabels`).
pub(super) fn format_labels(v: Option<&Value>) -> String {
    let map: BTreeMap<&str, &str> = v
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    if map.is_empty() {
        return "<none>".to_string();
    }
    map.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// A `LabelSelector` as upstream's `selector.String()`: requirements sorted by key,
/// `k=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`; `""` when it selects everything.
fn selector_string(sel: Option<&Value>) -> String {
    let Some(sel) = sel else {
        return String::new();
    };
    let mut reqs: Vec<(String, String)> = Vec::new();
    if let Some(m) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in m {
            reqs.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or(""))));
        }
    }
    for e in arr_at(sel, "/matchExpressions") {
        let key = str_at(e, "/key");
        let mut values: Vec<&str> = arr_at(e, "/values")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        values.dedup();
        let s = match str_at(e, "/operator") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => return "<invalid>".to_string(),
        };
        reqs.push((key.to_string(), s));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    reqs.into_iter()
        .map(|(_, s)| s)
        .collect::<Vec<_>>()
        .join(",")
}

/// Upstream `metav1.FormatLabelSelector`: like [`selector_string`] but `<none>` when empty.
pub(super) fn format_label_selector(sel: Option<&Value>) -> String {
    let s = selector_string(sel);
    if s.is_empty() {
        "<none>".to_string()
    } else {
        s
    }
}

pub(super) const DEPLOYMENT_COLUMNS: &[Column] = &[
    NAME,
    col("Ready", "string", "Number of the pod with ready state"),
    col("Up-to-date", "string", "Total number of non-terminated pods targeted by this deployment that have the desired template spec."),
    col("Available", "string", "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

pub(super) fn deployment_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let (names, images) = containers(obj);
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(format!(
            "{}/{}",
            int_at(obj, "/status/readyReplicas"),
            desired(obj)
        )),
        json!(int_at(obj, "/status/updatedReplicas")),
        json!(int_at(obj, "/status/availableReplicas")),
        json!(age(obj, now)),
        json!(names),
        json!(images),
        json!(selector_string(obj.pointer("/spec/selector"))),
    ]
}

pub(super) const REPLICA_SET_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Desired",
        "integer",
        "Replicas is the number of desired replicas.",
    ),
    col(
        "Current",
        "integer",
        "Replicas is the most recently observed number of replicas.",
    ),
    col(
        "Ready",
        "integer",
        "The number of ready replicas for this replica set.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

/// Replica sets and replication controllers (whose selector is a plain label map).
pub(super) fn replica_set_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let (names, images) = containers(obj);
    let selector = if str_at(obj, "/kind") == "ReplicationController" {
        format_labels(obj.pointer("/spec/selector"))
    } else {
        format_label_selector(obj.pointer("/spec/selector"))
    };
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(desired(obj)),
        json!(int_at(obj, "/status/replicas")),
        json!(int_at(obj, "/status/readyReplicas")),
        json!(age(obj, now)),
        json!(names),
        json!(images),
        json!(selector),
    ]
}

pub(super) const STATEFUL_SET_COLUMNS: &[Column] = &[
    NAME,
    col("Ready", "string", "Number of the pod with ready state"),
    AGE,
    CONTAINERS,
    IMAGES,
];

pub(super) fn stateful_set_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let (names, images) = containers(obj);
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(format!(
            "{}/{}",
            int_at(obj, "/status/readyReplicas"),
            desired(obj)
        )),
        json!(age(obj, now)),
        json!(names),
        json!(images),
    ]
}

pub(super) const DAEMON_SET_COLUMNS: &[Column] = &[
    NAME,
    col("Desired", "integer", "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod)."),
    col("Current", "integer", "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod."),
    col("Ready", "integer", "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition."),
    col("Up-to-date", "integer", "The total number of nodes that are running updated daemon pod"),
    col("Available", "integer", "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)"),
    col("Node Selector", "string", "NodeSelector is a selector which must be true for the pod to fit on a node."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

pub(super) fn daemon_set_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let (names, images) = containers(obj);
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(int_at(obj, "/status/desiredNumberScheduled")),
        json!(int_at(obj, "/status/currentNumberScheduled")),
        json!(int_at(obj, "/status/numberReady")),
        json!(int_at(obj, "/status/updatedNumberScheduled")),
        json!(int_at(obj, "/status/numberAvailable")),
        json!(format_labels(
            obj.pointer("/spec/template/spec/nodeSelector")
        )),
        json!(age(obj, now)),
        json!(names),
        json!(images),
        json!(format_label_selector(obj.pointer("/spec/selector"))),
    ]
}

pub(super) const JOB_COLUMNS: &[Column] = &[
    NAME,
    col("Status", "string", "Status of the job."),
    col(
        "Completions",
        "string",
        "The number of pods which reached phase Succeeded.",
    ),
    col("Duration", "string", "Time required to complete the job."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

/// The status of the first condition of type `ty` is `True`.
fn job_condition(obj: &Value, ty: &str) -> bool {
    arr_at(obj, "/status/conditions")
        .iter()
        .find(|c| str_at(c, "/type") == ty)
        .is_some_and(|c| str_at(c, "/status") == "True")
}

pub(super) fn job_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let succeeded = int_at(obj, "/status/succeeded");
    let completions = match obj.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(c) => format!("{succeeded}/{c}"),
        None => {
            let parallelism = int_at(obj, "/spec/parallelism");
            if parallelism > 1 {
                format!("{succeeded}/1 of {parallelism}")
            } else {
                format!("{succeeded}/1")
            }
        }
    };
    let start = parse_time(str_at(obj, "/status/startTime"));
    let end = parse_time(str_at(obj, "/status/completionTime"));
    let duration = match (start, end) {
        (None, _) => String::new(),
        (Some(s), None) => human_duration(now - s),
        (Some(s), Some(e)) => human_duration(e - s),
    };
    let deleting = obj
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null());
    let status = if job_condition(obj, "Complete") {
        "Complete"
    } else if job_condition(obj, "Failed") {
        "Failed"
    } else if deleting {
        "Terminating"
    } else if job_condition(obj, "Suspended") {
        "Suspended"
    } else if job_condition(obj, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    let (names, images) = containers(obj);
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(status),
        json!(completions),
        json!(duration),
        json!(age(obj, now)),
        json!(names),
        json!(images),
        json!(format_label_selector(obj.pointer("/spec/selector"))),
    ]
}

pub(super) const CRON_JOB_COLUMNS: &[Column] = &[
    NAME,
    col("Schedule", "string", "The schedule in Cron format."),
    col(
        "Timezone",
        "string",
        "The time zone the schedule is read in.",
    ),
    col(
        "Suspend",
        "boolean",
        "Whether subsequent executions are suspended.",
    ),
    col("Active", "integer", "The number of running jobs."),
    col(
        "Last Schedule",
        "date",
        "When the job was last successfully scheduled.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

pub(super) fn cron_job_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let last = match parse_time(str_at(obj, "/status/lastScheduleTime")) {
        Some(t) => crate::tables::human_duration(now - t),
        None => "<none>".to_string(),
    };
    let template = obj
        .pointer("/spec/jobTemplate")
        .cloned()
        .unwrap_or_default();
    let (names, images) = containers(&template);
    let zone = match str_at(obj, "/spec/timeZone") {
        "" => "<none>",
        z => z,
    };
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(str_at(obj, "/spec/schedule")),
        json!(zone),
        json!(obj
            .pointer("/spec/suspend")
            .and_then(Value::as_bool)
            .unwrap_or(false)),
        json!(arr_at(obj, "/status/active").len()),
        json!(last),
        json!(age(obj, now)),
        json!(names),
        json!(images),
        json!(format_label_selector(template.pointer("/spec/selector"))),
    ]
}

pub(super) const CONTROLLER_REVISION_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Controller",
        "string",
        "The controller that owns the revision.",
    ),
    col("Revision", "integer", "The revision number."),
    AGE,
];

pub(super) fn controller_revision_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let controller = arr_at(obj, "/metadata/ownerReferences")
        .iter()
        .find(|r| r.pointer("/controller").and_then(Value::as_bool) == Some(true))
        .map(|r| {
            let group = str_at(r, "/apiVersion").split('/').next().unwrap_or("");
            let kind = str_at(r, "/kind").to_lowercase();
            format!("{kind}.{group}/{}", str_at(r, "/name"))
        })
        .unwrap_or_else(|| "<none>".to_string());
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(controller),
        json!(int_at(obj, "/revision")),
        json!(age(obj, now)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::tests::{ago, now};

    fn template() -> Value {
        json!({"spec": {"containers": [{"name": "a", "image": "nginx"},
                                       {"name": "b", "image": "busybox"}],
                        "nodeSelector": {"zone": "a", "disk": "ssd"}}})
    }

    #[test]
    fn pdb_row() {
        let pdb = json!({"metadata": {"name": "db", "creationTimestamp": ago(60)},
                         "spec": {"minAvailable": 2}, "status": {"disruptionsAllowed": 1}});
        assert_eq!(
            pdb_cells(&pdb, now()),
            vec![
                json!("db"),
                json!("2"),
                json!("N/A"),
                json!(1),
                json!("60s")
            ]
        );
        let pdb = json!({"metadata": {"name": "db"}, "spec": {"maxUnavailable": "50%"}});
        assert_eq!(pdb_cells(&pdb, now())[1], json!("N/A"));
        assert_eq!(pdb_cells(&pdb, now())[2], json!("50%"));
    }

    #[test]
    fn deployment_row() {
        let d = json!({"metadata": {"name": "web", "creationTimestamp": ago(3600)},
            "spec": {"replicas": 3, "template": template(),
                     "selector": {"matchLabels": {"app": "web"},
                                  "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]},
                                                       {"key": "canary", "operator": "DoesNotExist"}]}},
            "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}});
        assert_eq!(
            deployment_cells(&d, now()),
            vec![
                json!("web"),
                json!("2/3"),
                json!(3),
                json!(2),
                json!("60m"),
                json!("a,b"),
                json!("nginx,busybox"),
                json!("app=web,!canary,tier in (a,b)")
            ]
        );
    }

    #[test]
    fn replica_sets_and_controllers() {
        let rs = json!({"kind": "ReplicaSet", "metadata": {"name": "rs"},
            "spec": {"replicas": 2, "template": template(), "selector": {}},
            "status": {"replicas": 2, "readyReplicas": 1}});
        let c = replica_set_cells(&rs, now());
        assert_eq!(&c[..4], &[json!("rs"), json!(2), json!(2), json!(1)]);
        assert_eq!(c[7], json!("<none>"));
        let rc = json!({"kind": "ReplicationController", "metadata": {"name": "rc"},
            "spec": {"template": template(), "selector": {"b": "2", "a": "1"}}});
        let c = replica_set_cells(&rc, now());
        assert_eq!(c[1], json!(1));
        assert_eq!(c[7], json!("a=1,b=2"));
    }

    #[test]
    fn stateful_and_daemon_sets() {
        let sts = json!({"metadata": {"name": "db"}, "spec": {"replicas": 3, "template": template()},
                         "status": {"readyReplicas": 3}});
        assert_eq!(stateful_set_cells(&sts, now())[1], json!("3/3"));
        let ds = json!({"metadata": {"name": "agent"},
            "spec": {"template": template(), "selector": {"matchLabels": {"app": "agent"}}},
            "status": {"desiredNumberScheduled": 4, "currentNumberScheduled": 4, "numberReady": 3,
                       "updatedNumberScheduled": 4, "numberAvailable": 3}});
        let c = daemon_set_cells(&ds, now());
        assert_eq!(
            &c[1..7],
            &[
                json!(4),
                json!(4),
                json!(3),
                json!(4),
                json!(3),
                json!("disk=ssd,zone=a")
            ]
        );
        assert_eq!(c[10], json!("app=agent"));
    }

    #[test]
    fn cron_job_row() {
        let cj = json!({"metadata": {"name": "hello", "creationTimestamp": ago(600)},
            "spec": {"schedule": "* * * * *", "suspend": false,
                     "jobTemplate": {"spec": {"template": template()}}},
            "status": {"active": [{"name": "hello-1"}], "lastScheduleTime": ago(30)}});
        let cells = cron_job_cells(&cj, now());
        assert_eq!(cells[1], json!("* * * * *"));
        assert_eq!(cells[2], json!("<none>"));
        assert_eq!(cells[3], json!(false));
        assert_eq!(cells[4], json!(1));
        assert_eq!(cells[5], json!("30s"));
        assert_eq!(cells[7], json!("a,b"));
    }

    #[test]
    fn controller_revision_row() {
        let cr = json!({"metadata": {"name": "web-5d4f", "creationTimestamp": ago(60),
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "controller": true}]},
            "revision": 2});
        let cells = controller_revision_cells(&cr, now());
        assert_eq!(cells[1], json!("statefulset.apps/web"));
        assert_eq!(cells[2], json!(2));
    }

    #[test]
    fn job_rows() {
        let job = json!({"metadata": {"name": "pi", "creationTimestamp": ago(600)},
            "spec": {"completions": 3, "template": template()},
            "status": {"succeeded": 1, "startTime": ago(500)}});
        let c = job_cells(&job, now());
        assert_eq!(
            &c[..5],
            &[
                json!("pi"),
                json!("Running"),
                json!("1/3"),
                json!("8m20s"),
                json!("10m")
            ]
        );
        let done = json!({"metadata": {"name": "pi"}, "spec": {"parallelism": 2},
            "status": {"succeeded": 1, "startTime": ago(100), "completionTime": ago(40),
                       "conditions": [{"type": "Complete", "status": "True"}]}});
        let c = job_cells(&done, now());
        assert_eq!(
            &c[1..4],
            &[json!("Complete"), json!("1/1 of 2"), json!("60s")]
        );
        let unstarted = json!({"metadata": {"name": "pi", "deletionTimestamp": ago(1)}});
        let c = job_cells(&unstarted, now());
        assert_eq!(&c[1..4], &[json!("Terminating"), json!("0/1"), json!("")]);
    }
}
