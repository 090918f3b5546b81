use super::*;

fn t(secs: i64) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-01-01T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
        + TimeDelta::seconds(secs)
}

fn ask(current: i32, desired: i32, min: i32, max: i32) -> Ask {
    Ask {
        current,
        desired,
        min,
        max,
    }
}

fn down_window(secs: i32) -> Rules {
    Rules {
        stabilization_window_seconds: secs,
        ..default_scale_down()
    }
}

#[test]
fn the_default_scale_up_takes_the_larger_of_4_pods_and_double() {
    let mut m = Memory::default();
    let n = m.normalize(
        ask(2, 10, 1, 10),
        &default_scale_up(),
        &default_scale_down(),
        t(0),
    );
    assert_eq!(n.replicas, 6);
    assert!(n.limited);
    assert_eq!(n.scaling_limited, SCALE_UP_LIMIT);
    let n = Memory::default().normalize(
        ask(10, 50, 1, 100),
        &default_scale_up(),
        &default_scale_down(),
        t(0),
    );
    assert_eq!(n.replicas, 20);
}

#[test]
fn max_replicas_limits_a_scale_up_below_the_rate() {
    let n = Memory::default().normalize(
        ask(2, 8, 2, 5),
        &default_scale_up(),
        &default_scale_down(),
        t(0),
    );
    assert_eq!((n.replicas, n.scaling_limited), (5, TOO_MANY));
    assert_eq!(n.able_to_scale, READY_FOR_NEW_SCALE);
}

#[test]
fn a_scale_down_waits_for_the_stabilization_window() {
    let mut m = Memory::default();
    m.record_initial(5, t(0));
    let n = m.normalize(
        ask(5, 1, 2, 5),
        &default_scale_up(),
        &down_window(300),
        t(60),
    );
    assert_eq!(n.replicas, 5);
    assert_eq!(n.able_to_scale, SCALE_DOWN_STABILIZED);
    // Past the window of the initial recommendation, the highest since is 1: down to min.
    let n = m.normalize(
        ask(5, 1, 2, 5),
        &default_scale_up(),
        &down_window(300),
        t(301),
    );
    assert_eq!((n.replicas, n.scaling_limited), (2, TOO_FEW));
}

#[test]
fn a_zero_window_scales_down_at_once() {
    let mut m = Memory::default();
    m.record_initial(5, t(0));
    let n = m.normalize(ask(5, 2, 2, 5), &default_scale_up(), &down_window(0), t(1));
    assert_eq!((n.replicas, n.limited), (2, false));
    assert_eq!(n.able_to_scale, READY_FOR_NEW_SCALE);
}

#[test]
fn a_pods_policy_limits_the_scale_down_per_period_counting_recent_events() {
    let down = Rules {
        stabilization_window_seconds: 0,
        select_policy: "Max".into(),
        policies: vec![("Pods".into(), 2, 60)],
    };
    let up = default_scale_up();
    let mut m = Memory::default();
    let n = m.normalize(ask(10, 1, 1, 10), &up, &down, t(0));
    assert_eq!((n.replicas, n.scaling_limited), (8, SCALE_DOWN_LIMIT));
    m.store_scale_event((&up, &down), 10, 8, t(0));
    // Within the period the two removed count: no further scale-down.
    let n = m.normalize(ask(8, 1, 1, 10), &up, &down, t(30));
    assert_eq!(n.replicas, 8);
    // After it, two more.
    let n = m.normalize(ask(8, 1, 1, 10), &up, &down, t(61));
    assert_eq!(n.replicas, 6);
}

#[test]
fn a_disabled_direction_never_scales() {
    let up = Rules {
        select_policy: "Disabled".into(),
        ..default_scale_up()
    };
    let n = Memory::default().normalize(ask(3, 9, 1, 10), &up, &default_scale_down(), t(0));
    assert_eq!((n.replicas, n.scaling_limited), (3, SCALE_UP_LIMIT));
}

#[test]
fn a_min_policy_scales_up_by_the_smaller_step() {
    let up = Rules {
        stabilization_window_seconds: 0,
        select_policy: "Min".into(),
        policies: vec![("Pods".into(), 1, 15), ("Percent".into(), 100, 15)],
    };
    let n = Memory::default().normalize(ask(4, 9, 1, 10), &up, &default_scale_down(), t(0));
    assert_eq!(n.replicas, 5);
}

#[test]
fn a_scale_up_window_applies_the_lowest_recent_recommendation() {
    let up = Rules {
        stabilization_window_seconds: 60,
        ..default_scale_up()
    };
    let mut m = Memory::default();
    m.record_initial(3, t(0));
    let n = m.normalize(ask(3, 6, 1, 10), &up, &default_scale_down(), t(10));
    assert_eq!((n.replicas, n.able_to_scale), (3, SCALE_UP_STABILIZED));
}

#[test]
fn without_behavior_a_scale_down_waits_for_the_flags_window_and_a_scale_up_doubles() {
    let mut m = Memory::default();
    m.record_initial(4, t(0));
    let window = TimeDelta::minutes(5);
    let n = m.normalize_legacy(ask(4, 2, 1, 10), window, t(10));
    assert_eq!((n.replicas, n.able_to_scale), (4, SCALE_DOWN_STABILIZED));
    let n = Memory::default().normalize_legacy(ask(3, 20, 1, 10), window, t(0));
    assert_eq!((n.replicas, n.scaling_limited), (6, SCALE_UP_LIMIT));
    let n = Memory::default().normalize_legacy(ask(1, 20, 1, 10), window, t(0));
    assert_eq!(n.replicas, 4);
}

#[test]
fn given_rules_are_completed_with_defaults() {
    let b = HorizontalPodAutoscalerBehavior {
        scale_down: Some(HPAScalingRules {
            stabilization_window_seconds: Some(0),
            ..Default::default()
        }),
        scale_up: None,
    };
    let (up, down) = behavior_rules(&b);
    assert_eq!(up, default_scale_up());
    assert_eq!(down, down_window(0));
}
