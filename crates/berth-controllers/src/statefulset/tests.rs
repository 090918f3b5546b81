use super::*;

fn set(spec: Value) -> StatefulSet {
    let mut spec = spec;
    spec["serviceName"] = json!("web");
    spec["selector"] = json!({"matchLabels": {"app": "web"}});
    spec["template"] = json!({"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    serde_json::from_value(
        json!({"metadata": {"name": "web", "namespace": "ns", "uid": "s", "generation": 1},
                                  "spec": spec}),
    )
    .unwrap()
}

fn rev(name: &str) -> Revision {
    Revision {
        name: name.into(),
        template: json!({"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "c", "image": name}]}}),
    }
}

fn pod(ordinal: i32, revision: &str, phase: &str, ready: bool) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": format!("web-{ordinal}"), "namespace": "ns", "uid": format!("u{ordinal}"),
                     "labels": {REVISION_HASH_LABEL: revision}},
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]},
    }))
    .unwrap()
}

fn names(values: &[Value]) -> Vec<&str> {
    values
        .iter()
        .filter_map(|v| v["metadata"]["name"].as_str())
        .collect()
}

fn deleted(s: &SetSync) -> Vec<&str> {
    s.delete.iter().map(|p| p.name.as_str()).collect()
}

#[test]
fn ordered_ready_creates_one_pod_at_a_time_after_the_ones_before_are_ready() {
    let s = set(json!({"replicas": 3}));
    let r = rev("r1");
    let out = sync(&s, &[], &r, &r);
    assert_eq!(names(&out.create), ["web-0"]);
    let p0 = pod(0, "r1", "Pending", false);
    assert!(sync(&s, &[&p0], &r, &r).create.is_empty());
    let p0 = pod(0, "r1", "Running", true);
    assert_eq!(names(&sync(&s, &[&p0], &r, &r).create), ["web-1"]);
}

#[test]
fn a_pod_has_a_stable_name_hostname_subdomain_and_its_revision_labels() {
    let s = set(json!({"replicas": 1}));
    let p = new_pod(&s, 2, &rev("web-abc"));
    assert_eq!(p["metadata"]["name"], "web-2");
    assert_eq!(p["spec"]["hostname"], "web-2");
    assert_eq!(p["spec"]["subdomain"], "web");
    let labels = &p["metadata"]["labels"];
    assert_eq!(labels[REVISION_HASH_LABEL], "web-abc");
    assert_eq!(labels[POD_NAME_LABEL], "web-2");
    assert_eq!(labels[POD_INDEX_LABEL], "2");
    assert_eq!(labels["app"], "web");
    assert_eq!(p["metadata"]["ownerReferences"][0]["kind"], "StatefulSet");
}

#[test]
fn parallel_creates_and_deletes_all_at_once() {
    let s = set(json!({"replicas": 3, "podManagementPolicy": "Parallel"}));
    let r = rev("r1");
    assert_eq!(
        names(&sync(&s, &[], &r, &r).create),
        ["web-0", "web-1", "web-2"]
    );
    let s = set(json!({"replicas": 1, "podManagementPolicy": "Parallel"}));
    let (p0, p1, p2) = (
        pod(0, "r1", "Running", true),
        pod(1, "r1", "Running", true),
        pod(2, "r1", "Pending", false),
    );
    assert_eq!(
        deleted(&sync(&s, &[&p0, &p1, &p2], &r, &r)),
        ["web-2", "web-1"]
    );
}

#[test]
fn scale_down_goes_from_the_highest_ordinal_one_at_a_time() {
    let s = set(json!({"replicas": 1}));
    let r = rev("r1");
    let (p0, p1, p2) = (
        pod(0, "r1", "Running", true),
        pod(1, "r1", "Running", true),
        pod(2, "r1", "Running", true),
    );
    assert_eq!(deleted(&sync(&s, &[&p0, &p1, &p2], &r, &r)), ["web-2"]);
}

#[test]
fn a_failed_pod_is_deleted_to_be_made_again() {
    let s = set(json!({"replicas": 2}));
    let r = rev("r1");
    let (p0, p1) = (pod(0, "r1", "Failed", false), pod(1, "r1", "Running", true));
    assert_eq!(deleted(&sync(&s, &[&p0, &p1], &r, &r)), ["web-0"]);
}

#[test]
fn a_rolling_update_replaces_the_highest_stale_ordinal_above_the_partition() {
    let s = set(
        json!({"replicas": 3, "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}}),
    );
    let (old, new) = (rev("r1"), rev("r2"));
    let (p0, p1, p2) = (
        pod(0, "r1", "Running", true),
        pod(1, "r1", "Running", true),
        pod(2, "r2", "Running", true),
    );
    assert_eq!(deleted(&sync(&s, &[&p0, &p1, &p2], &old, &new)), ["web-1"]);
    // Recreated below the partition: the current revision; at or above it: the update one.
    let out = sync(&s, &[&p1, &p2], &old, &new);
    assert_eq!(
        out.create[0]["metadata"]["labels"][REVISION_HASH_LABEL],
        "r1"
    );
    let out = sync(&s, &[&p0, &p2], &old, &new);
    assert_eq!(
        out.create[0]["metadata"]["labels"][REVISION_HASH_LABEL],
        "r2"
    );
    // Nothing is replaced while a pod is unhealthy.
    let p1 = pod(1, "r1", "Running", false);
    assert!(sync(&s, &[&p0, &p1, &p2], &old, &new).delete.is_empty());
}

#[test]
fn on_delete_replaces_nothing_by_itself() {
    let s = set(json!({"replicas": 1, "updateStrategy": {"type": "OnDelete"}}));
    let p0 = pod(0, "r1", "Running", true);
    assert!(sync(&s, &[&p0], &rev("r1"), &rev("r2")).delete.is_empty());
}

#[test]
fn status_counts_and_a_finished_update_makes_its_revision_current() {
    let s = set(json!({"replicas": 2}));
    let (old, new) = (rev("r1"), rev("r2"));
    let (p0, p1) = (pod(0, "r1", "Running", true), pod(1, "r2", "Running", true));
    let st = sync(&s, &[&p0, &p1], &old, &new).status.unwrap();
    assert_eq!(st["replicas"], 2);
    assert_eq!(st["readyReplicas"], 2);
    assert_eq!(st["currentReplicas"], 1);
    assert_eq!(st["updatedReplicas"], 1);
    assert_eq!(st["currentRevision"], "r1");
    assert_eq!(st["updateRevision"], "r2");
    let p0 = pod(0, "r2", "Running", true);
    let st = sync(&s, &[&p0, &p1], &old, &new).status.unwrap();
    assert_eq!(st["currentRevision"], "r2");
    assert_eq!(st["currentReplicas"], 2);
    assert_eq!(st["observedGeneration"], 1);
}
