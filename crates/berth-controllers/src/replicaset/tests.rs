use std::collections::BTreeMap;

use chrono::{DateTime, Duration, TimeZone, Utc};

use super::rank::pods_to_delete;
use super::*;

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 24, 12, 0, 0).unwrap()
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A running, ready pod on `node`, owned by the set `rs-uid`, created and ready an hour ago.
fn pod(name: &str, node: &str) -> PodView {
    PodView {
        name: name.into(),
        uid: format!("uid-{name}"),
        labels: labels(&[("app", "web")]),
        node_name: node.into(),
        phase: Phase::Running,
        ready_since: Some(now() - Duration::hours(1)),
        max_restarts: 0,
        created: Some(now() - Duration::hours(1)),
        deleting: false,
        deletion_cost: 0,
        controller_uid: Some("rs-uid".into()),
    }
}

fn web(labels: &BTreeMap<String, String>) -> bool {
    labels.get("app").map(String::as_str) == Some("web")
}

fn set<'a>(replicas: i32, template: &'a BTreeMap<String, String>) -> SetView<'a> {
    SetView {
        uid: "rs-uid",
        replicas,
        min_ready_seconds: 0,
        generation: 3,
        deleting: false,
        selects: &web,
        template_labels: template,
    }
}

fn first_deleted(pods: &[PodView], diff: usize) -> Vec<String> {
    let refs: Vec<&PodView> = pods.iter().collect();
    pods_to_delete(&refs, &refs, diff, now())
        .into_iter()
        .map(|p| p.name.clone())
        .collect()
}

#[test]
fn unscheduled_pods_are_deleted_before_scheduled_ones() {
    let mut unscheduled = pod("a", "");
    unscheduled.phase = Phase::Pending;
    unscheduled.ready_since = None;
    assert_eq!(first_deleted(&[pod("b", "n1"), unscheduled], 1), ["a"]);
}

#[test]
fn pending_goes_before_unknown_before_running() {
    let mut pending = pod("pending", "n1");
    pending.phase = Phase::Pending;
    let mut unknown = pod("unknown", "n2");
    unknown.phase = Phase::Unknown;
    let pods = [pod("running", "n3"), unknown, pending];
    assert_eq!(first_deleted(&pods, 2), ["pending", "unknown"]);
}

#[test]
fn not_ready_goes_before_ready() {
    let mut not_ready = pod("not-ready", "n2");
    not_ready.ready_since = None;
    assert_eq!(
        first_deleted(&[pod("ready", "n1"), not_ready], 1),
        ["not-ready"]
    );
}

#[test]
fn a_lower_deletion_cost_goes_first() {
    let mut cheap = pod("cheap", "n1");
    cheap.deletion_cost = -10;
    let mut dear = pod("dear", "n2");
    dear.deletion_cost = 100;
    assert_eq!(
        first_deleted(&[dear, pod("zero", "n3"), cheap], 1),
        ["cheap"]
    );
}

#[test]
fn doubled_up_pods_go_before_pods_alone_on_their_node() {
    let pods = [pod("alone", "n1"), pod("twin-1", "n2"), pod("twin-2", "n2")];
    let deleted = first_deleted(&pods, 1);
    assert!(deleted[0].starts_with("twin"), "{deleted:?}");
}

#[test]
fn sibling_sets_count_when_ranking_by_node() {
    // One pod of the set on each node, but a sibling's pod shares n2.
    let ours = [pod("on-n1", "n1"), pod("on-n2", "n2")];
    let sibling = pod("old-rs-pod", "n2");
    let refs: Vec<&PodView> = ours.iter().collect();
    let family: Vec<&PodView> = ours.iter().chain([&sibling]).collect();
    let deleted = pods_to_delete(&refs, &family, 1, now());
    assert_eq!(deleted[0].name, "on-n2");
}

#[test]
fn the_pod_ready_most_recently_goes_first_by_power_of_two_buckets() {
    let mut recent = pod("recent", "n1");
    recent.ready_since = Some(now() - Duration::seconds(10));
    let old = pod("old", "n2");
    assert_eq!(first_deleted(&[old, recent], 1), ["recent"]);
}

#[test]
fn pods_in_the_same_time_bucket_are_ordered_by_uid_not_by_time() {
    // 2^41 ns is about 36.6 minutes: 40 and 50 minutes ago share the 2^41..2^42 bucket.
    let mut newer = pod("newer", "n1");
    newer.uid = "uid-z".into();
    newer.ready_since = Some(now() - Duration::minutes(40));
    let mut older = pod("older", "n2");
    older.uid = "uid-a".into();
    older.ready_since = Some(now() - Duration::minutes(50));
    assert_eq!(first_deleted(&[newer, older], 1), ["older"]);
}

#[test]
fn more_restarts_go_first_then_newer_pods() {
    let mut crashy = pod("crashy", "n1");
    crashy.max_restarts = 5;
    assert_eq!(first_deleted(&[pod("steady", "n2"), crashy], 1), ["crashy"]);

    let mut unready_new = pod("new", "n3");
    unready_new.ready_since = None;
    unready_new.created = Some(now() - Duration::seconds(5));
    let mut unready_old = pod("old", "n4");
    unready_old.ready_since = None;
    unready_old.created = Some(now() - Duration::days(3));
    assert_eq!(first_deleted(&[unready_old, unready_new], 1), ["new"]);
}

#[test]
fn deleting_every_pod_needs_no_ranking() {
    let pods = [pod("a", "n1"), pod("b", "n1")];
    assert_eq!(first_deleted(&pods, 5).len(), 2);
}

#[test]
fn slow_start_doubles_each_batch() {
    assert_eq!(slow_start_batches(0), Vec::<usize>::new());
    assert_eq!(slow_start_batches(1), [1]);
    assert_eq!(slow_start_batches(10), [1, 2, 4, 3]);
    assert_eq!(slow_start_batches(500).iter().sum::<usize>(), 500);
}

#[test]
fn a_set_below_its_replicas_creates_the_difference_at_most_a_burst() {
    let template = labels(&[("app", "web")]);
    let plan = reconcile(&set(3, &template), &[pod("a", "n1")], &[], now());
    assert_eq!(plan.create_batches.iter().sum::<usize>(), 2);
    assert!(plan.delete.is_empty());

    let plan = reconcile(&set(2000, &template), &[], &[], now());
    assert_eq!(plan.create_batches.iter().sum::<usize>(), BURST_REPLICAS);
}

#[test]
fn a_set_above_its_replicas_deletes_the_most_deletable() {
    let template = labels(&[("app", "web")]);
    let mut pending = pod("pending", "");
    pending.phase = Phase::Pending;
    pending.ready_since = None;
    let pods = [pod("a", "n1"), pod("b", "n2"), pending];
    let plan = reconcile(&set(2, &template), &pods, &[], now());
    assert_eq!(plan.delete, ["pending"]);
    assert!(plan.create_batches.is_empty());
}

#[test]
fn finished_and_terminating_pods_do_not_count_as_replicas() {
    let template = labels(&[("app", "web")]);
    let mut done = pod("done", "n1");
    done.phase = Phase::Succeeded;
    let mut going = pod("going", "n2");
    going.deleting = true;
    let plan = reconcile(&set(1, &template), &[done, going], &[], now());
    assert_eq!(plan.status.replicas, 0);
    assert_eq!(plan.create_batches, [1]);
}

#[test]
fn orphans_that_match_are_adopted_and_owned_pods_that_stop_matching_are_released() {
    let template = labels(&[("app", "web")]);
    let mut orphan = pod("orphan", "n1");
    orphan.controller_uid = None;
    let mut relabeled = pod("relabeled", "n2");
    relabeled.labels = labels(&[("app", "debug")]);
    let mut others = pod("others", "n3");
    others.controller_uid = Some("another-set".into());
    let mut orphan_going = pod("orphan-going", "n1");
    orphan_going.controller_uid = None;
    orphan_going.deleting = true;
    let plan = reconcile(
        &set(1, &template),
        &[orphan, relabeled, others, orphan_going],
        &[],
        now(),
    );
    assert_eq!(plan.adopt, ["orphan"]);
    assert_eq!(plan.release, ["relabeled"]);
    assert_eq!(plan.status.replicas, 1);
    assert!(plan.create_batches.is_empty() && plan.delete.is_empty());
}

#[test]
fn a_set_being_deleted_neither_adopts_nor_scales() {
    let template = labels(&[("app", "web")]);
    let mut s = set(5, &template);
    s.deleting = true;
    let mut orphan = pod("orphan", "n1");
    orphan.controller_uid = None;
    let plan = reconcile(&s, &[orphan, pod("a", "n1")], &[], now());
    assert!(plan.adopt.is_empty() && plan.create_batches.is_empty());
    assert_eq!(plan.status.replicas, 1);
}

#[test]
fn status_counts_labeled_ready_and_available_replicas() {
    let template = labels(&[("app", "web"), ("tier", "front")]);
    let mut s = set(3, &template);
    s.min_ready_seconds = 60;
    let mut full = pod("full", "n1");
    full.labels = template.clone();
    let mut just_ready = pod("just-ready", "n2");
    just_ready.ready_since = Some(now() - Duration::seconds(30));
    let mut not_ready = pod("not-ready", "n3");
    not_ready.ready_since = None;
    let plan = reconcile(&s, &[full, just_ready, not_ready], &[], now());
    assert_eq!(
        plan.status,
        Status {
            replicas: 3,
            fully_labeled_replicas: 1,
            ready_replicas: 2,
            available_replicas: 1,
            observed_generation: 3,
        }
    );
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn arb_pod() -> impl Strategy<Value = PodView> {
        (
            0u8..4,
            0u8..5,
            proptest::option::of(0i64..100_000),
            0i32..3,
            proptest::option::of(0i64..100_000),
            -2i32..3,
            "[a-f]{1,3}",
        )
            .prop_map(|(node, phase, ready, restarts, created, cost, uid)| {
                let mut p = pod(&format!("p-{uid}"), "");
                p.uid = uid;
                p.node_name = if node == 0 {
                    String::new()
                } else {
                    format!("n{node}")
                };
                p.phase = [
                    Phase::Pending,
                    Phase::Running,
                    Phase::Unknown,
                    Phase::Running,
                    Phase::Running,
                ][phase as usize];
                p.ready_since = ready.map(|s| now() - Duration::seconds(s));
                p.max_restarts = restarts;
                p.created = created.map(|s| now() - Duration::seconds(s));
                p.deletion_cost = cost;
                p
            })
    }

    proptest! {
        #[test]
        fn picks_exactly_the_difference_and_unscheduled_pods_first(
            pods in proptest::collection::vec(arb_pod(), 0..40),
            diff in 0usize..45,
        ) {
            let refs: Vec<&PodView> = pods.iter().collect();
            let chosen = pods_to_delete(&refs, &refs, diff, now());
            prop_assert_eq!(chosen.len(), diff.min(pods.len()));
            let unscheduled = pods.iter().filter(|p| p.node_name.is_empty()).count();
            if diff < pods.len() {
                let first_unscheduled = chosen.iter().take(unscheduled).filter(|p| p.node_name.is_empty()).count();
                prop_assert_eq!(first_unscheduled, unscheduled.min(chosen.len()));
            }
        }

        #[test]
        fn the_order_is_antisymmetric(a in arb_pod(), b in arb_pod(), ra in 0usize..4, rb in 0usize..4) {
            let ab = rank::deletion_order(&a, ra, &b, rb, now());
            let ba = rank::deletion_order(&b, rb, &a, ra, now());
            prop_assert_eq!(ab, ba.reverse());
        }
    }
}
