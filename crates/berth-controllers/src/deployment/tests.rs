use super::conditions::{self as cond, Condition};
use super::rolling::IntOrPercent;
use super::sync::*;
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;

fn at(s: i64) -> DateTime<Utc> {
    DateTime::<Utc>::from_timestamp(1_700_000_000 + s, 0).unwrap()
}

fn deployment(replicas: i32, surge: i32, unavailable: i32) -> DeploymentView {
    DeploymentView {
        name: "web".into(),
        replicas,
        generation: 1,
        paused: false,
        strategy: Strategy::RollingUpdate {
            max_surge: IntOrPercent::Int(surge),
            max_unavailable: IntOrPercent::Int(unavailable),
        },
        progress_deadline: Some(600),
        revision_history_limit: 10,
        template_hash: "h2".into(),
        annotations: BTreeMap::new(),
        status: StatusView::default(),
    }
}

fn set(
    name: &str,
    current: bool,
    revision: i64,
    replicas: i32,
    available: i32,
    created: i64,
) -> SetView {
    SetView {
        name: name.into(),
        current,
        revision,
        replicas,
        status_replicas: replicas,
        ready: available,
        available,
        created: Some(at(created)),
        deleting: false,
        annotations: BTreeMap::from([(REVISION.to_string(), revision.to_string())]),
    }
}

fn replicas_of(plan: &Plan, name: &str) -> Option<i32> {
    plan.update
        .iter()
        .find(|u| u.name == name)
        .map(|u| u.replicas)
}

#[test]
fn a_new_deployment_creates_its_first_replica_set_at_revision_1() {
    let plan = sync(&deployment(3, 1, 0), &[], at(0));
    let new = plan.create.expect("a new replicaset");
    assert_eq!(new.replicas, 3);
    assert_eq!(new.annotations.get(REVISION).map(String::as_str), Some("1"));
    assert_eq!(
        new.annotations.get(DESIRED_REPLICAS).map(String::as_str),
        Some("3")
    );
    assert_eq!(
        new.annotations.get(MAX_REPLICAS).map(String::as_str),
        Some("4")
    );
    assert_eq!(plan.revision.as_deref(), Some("1"));
    let p = cond::find(&plan.status.conditions, cond::PROGRESSING).unwrap();
    assert_eq!(p.reason, cond::NEW_RS_CREATED);
    assert_eq!(p.message, "Created new replica set \"web-h2\"");
}

#[test]
fn a_template_change_surges_the_new_set_first_then_shrinks_the_old() {
    let d = deployment(3, 1, 0);
    // Step 1: no new set yet: it is created with the surge (1).
    let plan = sync(&d, &[set("web-h1", false, 1, 3, 3, 0)], at(10));
    assert_eq!(plan.create.as_ref().map(|c| c.replicas), Some(1));
    assert_eq!(plan.create.unwrap().annotations[REVISION], "2");
    // Step 2: the new pod is not available yet: nothing shrinks.
    let sets = [
        set("web-h1", false, 1, 3, 3, 0),
        set("web-h2", true, 2, 1, 0, 10),
    ];
    let plan = sync(&d, &sets, at(11));
    assert_eq!(replicas_of(&plan, "web-h1"), None);
    // Step 3: available: the old set gives one up.
    let sets = [
        set("web-h1", false, 1, 3, 3, 0),
        set("web-h2", true, 2, 1, 1, 10),
    ];
    let plan = sync(&d, &sets, at(12));
    assert_eq!(replicas_of(&plan, "web-h1"), Some(2));
}

#[test]
fn the_status_adds_up_the_sets_and_completion_is_reported() {
    let mut d = deployment(3, 1, 0);
    d.status.conditions = vec![Condition::new(
        cond::PROGRESSING,
        "True",
        cond::RS_UPDATED,
        "m".into(),
        at(0),
    )];
    let sets = [
        set("web-h1", false, 1, 0, 0, 0),
        set("web-h2", true, 2, 3, 3, 10),
    ];
    let plan = sync(&d, &sets, at(20));
    let s = &plan.status;
    assert_eq!(
        (
            s.replicas,
            s.updated_replicas,
            s.available_replicas,
            s.unavailable_replicas
        ),
        (3, 3, 3, 0)
    );
    let p = cond::find(&s.conditions, cond::PROGRESSING).unwrap();
    assert_eq!(p.reason, cond::NEW_RS_AVAILABLE);
    assert_eq!(
        p.message,
        "ReplicaSet \"web-h2\" has successfully progressed."
    );
    let a = cond::find(&s.conditions, cond::AVAILABLE).unwrap();
    assert_eq!(
        (a.status.as_str(), a.reason.as_str()),
        ("True", cond::MINIMUM_REPLICAS_AVAILABLE)
    );
    assert_eq!(plan.recheck_at, None);
}

#[test]
fn a_rollout_without_progress_times_out_after_the_deadline() {
    let mut d = deployment(3, 1, 0);
    d.status = StatusView {
        observed_generation: 1,
        replicas: 4,
        updated_replicas: 1,
        ready_replicas: 3,
        available_replicas: 3,
        unavailable_replicas: 1,
        conditions: vec![Condition::new(
            cond::PROGRESSING,
            "True",
            cond::RS_UPDATED,
            "m".into(),
            at(0),
        )],
    };
    let sets = [
        set("web-h1", false, 1, 3, 3, 0),
        set("web-h2", true, 2, 1, 0, 10),
    ];
    let plan = sync(&d, &sets, at(300));
    assert_eq!(plan.recheck_at, Some(at(601)));
    let plan = sync(&d, &sets, at(601));
    let p = cond::find(&plan.status.conditions, cond::PROGRESSING).unwrap();
    assert_eq!(
        (p.status.as_str(), p.reason.as_str()),
        ("False", cond::TIMED_OUT)
    );
    assert_eq!(
        p.message,
        "ReplicaSet \"web-h2\" has timed out progressing."
    );
}

#[test]
fn an_old_template_coming_back_gets_the_next_revision() {
    // Undo: web-h1 (revision 1) is current again, web-h2 was revision 2.
    let d = deployment(3, 1, 0);
    let sets = [
        set("web-h1", true, 1, 0, 0, 0),
        set("web-h2", false, 2, 3, 3, 10),
    ];
    let plan = sync(&d, &sets, at(20));
    let u = plan.update.iter().find(|u| u.name == "web-h1").unwrap();
    assert_eq!(u.annotations[REVISION], "3");
    assert_eq!(u.replicas, 1);
    assert_eq!(plan.revision.as_deref(), Some("3"));
}

#[test]
fn scaling_a_settled_deployment_scales_its_set() {
    let d = deployment(10, 3, 2);
    let plan = sync(&d, &[set("web-h2", true, 1, 3, 3, 0)], at(0));
    assert_eq!(replicas_of(&plan, "web-h2"), Some(10));
    let d = deployment(2, 1, 0);
    let plan = sync(&d, &[set("web-h2", true, 1, 10, 10, 0)], at(0));
    assert_eq!(replicas_of(&plan, "web-h2"), Some(2));
}

#[test]
fn recreate_scales_the_old_sets_to_zero_and_waits_for_their_pods() {
    let mut d = deployment(3, 0, 0);
    d.strategy = Strategy::Recreate;
    let plan = sync(&d, &[set("web-h1", false, 1, 3, 3, 0)], at(0));
    assert_eq!(replicas_of(&plan, "web-h1"), Some(0));
    assert!(plan.create.is_none());
    // Scaled down, pods still terminating.
    let mut old = set("web-h1", false, 1, 0, 0, 0);
    old.status_replicas = 2;
    let plan = sync(&d, std::slice::from_ref(&old), at(1));
    assert!(plan.create.is_none());
    old.status_replicas = 0;
    let plan = sync(&d, &[old], at(2));
    assert_eq!(plan.create.map(|c| c.replicas), Some(3));
}

#[test]
fn a_paused_deployment_does_not_roll_out() {
    let mut d = deployment(3, 1, 0);
    d.paused = true;
    let plan = sync(&d, &[set("web-h1", false, 1, 3, 3, 0)], at(0));
    assert!(plan.create.is_none());
    let p = cond::find(&plan.status.conditions, cond::PROGRESSING).unwrap();
    assert_eq!(
        (p.status.as_str(), p.reason.as_str()),
        ("Unknown", cond::PAUSED)
    );
}

#[test]
fn old_sets_beyond_the_history_limit_are_deleted_lowest_revision_first() {
    let mut d = deployment(3, 1, 0);
    d.revision_history_limit = 1;
    let sets = [
        set("web-a", false, 1, 0, 0, 0),
        set("web-b", false, 2, 0, 0, 1),
        set("web-h2", true, 3, 3, 3, 2),
    ];
    let plan = sync(&d, &sets, at(10));
    assert_eq!(plan.delete, ["web-a"]);
}
