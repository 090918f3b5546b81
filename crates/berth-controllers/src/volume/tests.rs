use super::*;
use serde_json::{json, Value};

fn pv(name: &str, size: &str, extra: Value) -> PersistentVolume {
    let mut v = json!({
        "metadata": {"name": name, "labels": {"disk": "ssd"}},
        "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                 "persistentVolumeReclaimPolicy": "Retain"},
        "status": {"phase": "Available"},
    });
    crate::update::merge(&mut v, &extra);
    serde_json::from_value(v).unwrap()
}

fn pvc(name: &str, size: &str, extra: Value) -> PersistentVolumeClaim {
    let mut v = json!({
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}")},
        "spec": {"accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": size}}},
    });
    crate::update::merge(&mut v, &extra);
    serde_json::from_value(v).unwrap()
}

fn name(v: Option<&PersistentVolume>) -> Option<&str> {
    v.and_then(|v| v.metadata.name.as_deref())
}

fn run(volumes: &[PersistentVolume], claims: &[PersistentVolumeClaim]) -> Vec<Action> {
    let v: Vec<&PersistentVolume> = volumes.iter().collect();
    let c: Vec<&PersistentVolumeClaim> = claims.iter().collect();
    sync(&v, &c, &BTreeSet::new(), &BTreeSet::new())
}

fn bind(claim: &str, volume: &str) -> Action {
    Action::Bind {
        claim: ClaimRef {
            namespace: "ns".into(),
            name: claim.into(),
            uid: format!("uid-{claim}"),
        },
        volume: volume.into(),
    }
}

#[test]
fn the_smallest_volume_that_is_big_enough_wins() {
    let volumes = [
        pv("big", "10Gi", json!({})),
        pv("small", "1Gi", json!({})),
        pv("tiny", "500Mi", json!({})),
    ];
    let refs: Vec<&PersistentVolume> = volumes.iter().collect();
    assert_eq!(
        name(find_matching_volume(&pvc("c", "1Gi", json!({})), &refs)),
        Some("small")
    );
    assert_eq!(
        name(find_matching_volume(&pvc("c", "2Gi", json!({})), &refs)),
        Some("big")
    );
    assert_eq!(
        name(find_matching_volume(&pvc("c", "20Gi", json!({})), &refs)),
        None
    );
}

#[test]
fn access_modes_class_selector_and_volume_mode_must_match() {
    let rwx = pvc(
        "c",
        "1Gi",
        json!({"spec": {"accessModes": ["ReadWriteMany"]}}),
    );
    let volumes = [pv("v", "1Gi", json!({}))];
    let refs: Vec<&PersistentVolume> = volumes.iter().collect();
    assert!(find_matching_volume(&rwx, &refs).is_none());
    let fast = pvc("c", "1Gi", json!({"spec": {"storageClassName": "fast"}}));
    assert!(find_matching_volume(&fast, &refs).is_none());
    let classed = [pv(
        "v",
        "1Gi",
        json!({"spec": {"storageClassName": "fast"}}),
    )];
    let classed: Vec<&PersistentVolume> = classed.iter().collect();
    assert!(find_matching_volume(&fast, &classed).is_some());
    assert!(find_matching_volume(&pvc("c", "1Gi", json!({})), &classed).is_none());
    let hdd = pvc(
        "c",
        "1Gi",
        json!({"spec": {"selector": {"matchLabels": {"disk": "hdd"}}}}),
    );
    assert!(find_matching_volume(&hdd, &refs).is_none());
    let ssd = pvc(
        "c",
        "1Gi",
        json!({"spec": {"selector": {"matchLabels": {"disk": "ssd"}}}}),
    );
    assert!(find_matching_volume(&ssd, &refs).is_some());
    let block = pvc("c", "1Gi", json!({"spec": {"volumeMode": "Block"}}));
    assert!(find_matching_volume(&block, &refs).is_none());
}

#[test]
fn only_available_unclaimed_volumes_match_unless_pre_bound_to_the_claim() {
    let released = pv(
        "r",
        "1Gi",
        json!({"status": {"phase": "Released"},
        "spec": {"claimRef": {"namespace": "ns", "name": "old", "uid": "gone"}}}),
    );
    let pre_bound = pv(
        "p",
        "5Gi",
        json!({"status": {"phase": "Available"},
        "spec": {"claimRef": {"namespace": "ns", "name": "c"}}}),
    );
    let plain = pv("a", "1Gi", json!({}));
    let volumes = [released, pre_bound, plain];
    let refs: Vec<&PersistentVolume> = volumes.iter().collect();
    assert_eq!(
        name(find_matching_volume(&pvc("c", "1Gi", json!({})), &refs)),
        Some("p")
    );
    assert_eq!(
        name(find_matching_volume(&pvc("d", "1Gi", json!({})), &refs)),
        Some("a")
    );
}

#[test]
fn two_claims_never_get_the_same_volume_in_one_pass() {
    let volumes = [pv("v1", "1Gi", json!({})), pv("v2", "2Gi", json!({}))];
    let claims = [
        pvc(
            "a",
            "1Gi",
            json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"}}),
        ),
        pvc(
            "b",
            "1Gi",
            json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:01Z"}}),
        ),
        pvc(
            "c",
            "1Gi",
            json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:02Z"}}),
        ),
    ];
    let actions = run(&volumes, &claims);
    assert_eq!(
        actions,
        [
            bind("a", "v1"),
            bind("b", "v2"),
            Action::ClaimPhase {
                claim: ClaimRef {
                    namespace: "ns".into(),
                    name: "c".into(),
                    uid: "uid-c".into()
                },
                phase: "Pending"
            },
        ]
    );
}

#[test]
fn a_half_done_binding_is_finished_and_a_done_one_left_alone() {
    let claim_ref = json!({"spec": {"claimRef": {"namespace": "ns", "name": "a", "uid": "uid-a"}}});
    let mut bound = pv("v", "1Gi", claim_ref.clone());
    let claim = pvc("a", "1Gi", json!({"spec": {"volumeName": "v"}}));
    assert_eq!(
        run(std::slice::from_ref(&bound), &[claim]),
        [bind("a", "v")]
    );
    bound.status = serde_json::from_value(json!({"phase": "Bound"})).unwrap();
    let done = pvc(
        "a",
        "1Gi",
        json!({"spec": {"volumeName": "v"}, "status": {"phase": "Bound"}}),
    );
    assert!(run(&[bound], &[done]).is_empty());
}

#[test]
fn a_claim_naming_a_free_volume_binds_to_it() {
    let claim = pvc("a", "1Gi", json!({"spec": {"volumeName": "big"}}));
    assert_eq!(
        run(&[pv("big", "10Gi", json!({}))], &[claim]),
        [bind("a", "big")]
    );
}

#[test]
fn a_new_volume_becomes_available() {
    let fresh = pv("v", "1Gi", json!({"status": null}));
    assert_eq!(
        run(&[fresh], &[]),
        [Action::VolumePhase {
            volume: "v".into(),
            phase: "Available"
        }]
    );
}

#[test]
fn a_volume_whose_claim_is_gone_is_released_and_deleted_under_the_delete_policy() {
    let held = json!({"status": {"phase": "Bound"},
        "spec": {"claimRef": {"namespace": "ns", "name": "a", "uid": "uid-a"}}});
    let retain = pv("keep", "1Gi", held.clone());
    assert_eq!(
        run(std::slice::from_ref(&retain), &[]),
        [Action::VolumePhase {
            volume: "keep".into(),
            phase: "Released"
        }]
    );
    let mut delete = held;
    delete["spec"]["persistentVolumeReclaimPolicy"] = json!("Delete");
    let delete = pv("drop", "1Gi", delete);
    assert_eq!(
        run(&[delete], &[]),
        [
            Action::VolumePhase {
                volume: "drop".into(),
                phase: "Released"
            },
            Action::DeleteVolume {
                volume: "drop".into()
            }
        ]
    );
    // A claim of the same name but another uid is another claim: still released.
    let other = pvc("a", "1Gi", json!({"metadata": {"uid": "new"}}));
    let actions = run(&[retain], &[other]);
    assert!(actions.contains(&Action::VolumePhase {
        volume: "keep".into(),
        phase: "Released"
    }));
}

#[test]
fn a_bound_claim_whose_volume_is_gone_is_lost() {
    let claim = pvc(
        "a",
        "1Gi",
        json!({"metadata": {"annotations": {BIND_COMPLETED: "yes"}},
                                        "spec": {"volumeName": "v"}, "status": {"phase": "Bound"}}),
    );
    assert_eq!(
        run(&[], &[claim]),
        [Action::ClaimPhase {
            claim: ClaimRef {
                namespace: "ns".into(),
                name: "a".into(),
                uid: "uid-a".into()
            },
            phase: "Lost"
        }]
    );
}

#[test]
fn wait_for_first_consumer_claims_wait_for_a_scheduled_pod() {
    let volumes = [pv(
        "v",
        "1Gi",
        json!({"spec": {"storageClassName": "local"}}),
    )];
    let claims = [pvc(
        "a",
        "1Gi",
        json!({"spec": {"storageClassName": "local"},
                                         "status": {"phase": "Pending"}}),
    )];
    let v: Vec<&PersistentVolume> = volumes.iter().collect();
    let c: Vec<&PersistentVolumeClaim> = claims.iter().collect();
    let delayed = BTreeSet::from(["local".to_string()]);
    assert!(sync(&v, &c, &delayed, &BTreeSet::new()).is_empty());
    let scheduled = BTreeSet::from(["ns/a".to_string()]);
    assert_eq!(sync(&v, &c, &delayed, &scheduled), [bind("a", "v")]);
}
