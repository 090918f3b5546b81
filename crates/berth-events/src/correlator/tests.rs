//! The scenarios of client-go's `events_cache_test.go` (`TestEventCorrelator`,
//! `TestEventSpamFilter`), on an interval clock: each event comes `interval` after the last.

use super::*;
use k8s_openapi::api::core::v1::{EventSource, ObjectReference};

fn object(kind: &str, name: &str, namespace: &str) -> ObjectReference {
    ObjectReference {
        kind: Some(kind.into()),
        name: Some(name.into()),
        namespace: Some(namespace.into()),
        uid: Some("C934D34AFB20242".into()),
        api_version: Some("version".into()),
        ..Default::default()
    }
}

fn event(reason: &str, message: &str, involved: ObjectReference) -> Event {
    Event {
        reason: Some(reason.into()),
        message: Some(message.into()),
        involved_object: involved,
        source: Some(EventSource {
            component: Some("kubelet".into()),
            host: Some("kublet.node1".into()),
        }),
        count: Some(1),
        type_: Some("Normal".into()),
        ..Default::default()
    }
}

fn my_pod() -> ObjectReference {
    object("Pod", "my-pod", "my-ns")
}

fn repeated(n: usize, e: &Event) -> Vec<Event> {
    vec![e.clone(); n]
}

/// `n` events differing only by their message (upstream `makeSimilarEvents`).
fn similar(n: usize, e: &Event) -> Vec<Event> {
    (0..n)
        .map(|i| {
            let mut e = e.clone();
            e.message = Some(format!("{}{i}{}", s(&e.message), s(&e.message)));
            e
        })
        .collect()
}

/// `n` events about `n` different pods (upstream `makeUniqueEvents`).
fn unique(n: usize) -> Vec<Event> {
    (0..n)
        .map(|i| {
            event(
                &format!("reason-{i}"),
                &format!("message-{i}"),
                object("Pod", &format!("pod-{i}"), &format!("ns-{i}")),
            )
        })
        .collect()
}

/// Plays `previous` then `new`, `interval_s` apart, writing every event not skipped; the
/// decision about `new`.
fn play(previous: Vec<Event>, new: Event, interval_s: i64, options: Options) -> Correlated {
    let mut c = Correlator::new(options);
    let start = DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
        .unwrap()
        .with_timezone(&Utc);
    let mut tick = 0;
    let mut at = || {
        tick += 1;
        start + chrono::Duration::seconds(interval_s * tick)
    };
    let stamp = |mut e: Event, now: DateTime<Utc>| {
        e.first_timestamp = Some(time(now));
        e.last_timestamp = Some(time(now));
        e.metadata.name = Some(event_name(s(&e.involved_object.name), now));
        e
    };
    for e in previous {
        let now = at();
        match c.correlate(stamp(e, now), now) {
            Correlated::Create(e) | Correlated::Patch(e) => c.update_state(&e),
            Correlated::Skip => {}
        }
    }
    let now = at();
    c.correlate(stamp(new, now), now)
}

fn written(got: Correlated) -> (String, String, i32, bool) {
    match got {
        Correlated::Create(e) => (
            s(&e.reason).into(),
            s(&e.message).into(),
            e.count.unwrap(),
            false,
        ),
        Correlated::Patch(e) => (
            s(&e.reason).into(),
            s(&e.message).into(),
            e.count.unwrap(),
            true,
        ),
        Correlated::Skip => panic!("skipped"),
    }
}

#[test]
fn a_single_event_is_created() {
    let first = event("first", "i am first", my_pod());
    let got = play(vec![], first, 5, Options::default());
    assert_eq!(
        written(got),
        ("first".into(), "i am first".into(), 1, false)
    );
}

#[test]
fn the_same_event_just_counts() {
    let dup = event("duplicate", "me again", my_pod());
    let got = play(repeated(1, &dup), dup, 5, Options::default());
    assert_eq!(
        written(got),
        ("duplicate".into(), "me again".into(), 2, true)
    );
}

#[test]
fn the_same_event_just_counts_even_past_the_aggregate_threshold() {
    let dup = event("duplicate", "me again", my_pod());
    let got = play(
        repeated(AGGREGATE_MAX_EVENTS, &dup),
        dup,
        30,
        Options::default(),
    );
    assert_eq!(written(got).2, AGGREGATE_MAX_EVENTS as i32 + 1);
}

#[test]
fn the_same_event_is_spam_when_it_happens_too_often() {
    let dup = event("duplicate", "me again", my_pod());
    let got = play(repeated(26, &dup), dup, 1, Options::default());
    assert_eq!(got, Correlated::Skip);
}

#[test]
fn many_unique_events_are_each_created() {
    let new = event("unique", "snowflake", my_pod());
    let got = play(unique(30), new, 5, Options::default());
    assert_eq!(
        written(got),
        ("unique".into(), "snowflake".into(), 1, false)
    );
}

fn similar_event() -> Event {
    let mut e = event("similar", "similar message", my_pod());
    e.involved_object.field_path = Some("spec.containers{container1}".into());
    e
}

#[test]
fn similar_events_are_combined() {
    let e = similar_event();
    let got = play(
        similar(AGGREGATE_MAX_EVENTS - 1, &e),
        e,
        5,
        Options::default(),
    );
    assert_eq!(
        written(got),
        (
            "similar".into(),
            "(combined from similar events): similar message".into(),
            1,
            false
        )
    );
}

#[test]
fn more_similar_events_count_the_combined_one() {
    let e = similar_event();
    let got = play(similar(AGGREGATE_MAX_EVENTS, &e), e, 5, Options::default());
    assert_eq!(
        written(got),
        (
            "similar".into(),
            "(combined from similar events): similar message".into(),
            2,
            true
        )
    );
}

#[test]
fn events_from_different_containers_are_not_counted_together() {
    let e = similar_event();
    let mut other = e.clone();
    other.involved_object.field_path = Some("spec.containers{container2}".into());
    let got = play(repeated(1, &other), e, 5, Options::default());
    assert_eq!(
        written(got),
        ("similar".into(), "similar message".into(), 1, false)
    );
}

#[test]
fn similar_events_further_apart_than_the_interval_are_not_combined() {
    let e = similar_event();
    // Upstream's interval clock advances at every read (several per event), so its events are
    // further apart than the interval; here each event is one tick, one second past it.
    let interval = AGGREGATE_INTERVAL.as_secs() as i64 + 1;
    let got = play(
        similar(AGGREGATE_MAX_EVENTS - 1, &e),
        e,
        interval,
        Options::default(),
    );
    assert_eq!(
        written(got),
        ("similar".into(), "similar message".into(), 1, false)
    );
}

#[test]
fn the_spam_filter_keys_on_source_and_object_not_reason() {
    // `TestEventSpamFilter` with a burst of 1: a second event about the same object is spam,
    // whatever its reason.
    let options = Options {
        burst: 1.0,
        ..Options::default()
    };
    let original = event("original", "i am first", my_pod());
    let different_reason = event("duplicate", "me again", my_pod());
    assert_eq!(
        play(vec![original], different_reason, 1, options),
        Correlated::Skip
    );
}

#[test]
fn the_budget_refills_one_event_every_five_minutes() {
    let dup = event("duplicate", "me again", my_pod());
    // 25 at once spend the burst; 300 s later there is one more token.
    let mut c = Correlator::default();
    let t0 = DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
        .unwrap()
        .with_timezone(&Utc);
    for _ in 0..25 {
        assert_ne!(c.correlate(dup.clone(), t0), Correlated::Skip);
    }
    assert_eq!(c.correlate(dup.clone(), t0), Correlated::Skip);
    let later = t0 + chrono::Duration::seconds(300);
    assert_ne!(c.correlate(dup.clone(), later), Correlated::Skip);
    assert_eq!(c.correlate(dup, later), Correlated::Skip);
}

#[test]
fn a_repeat_keeps_the_first_name_and_first_timestamp() {
    let mut c = Correlator::default();
    let t0 = DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
        .unwrap()
        .with_timezone(&Utc);
    let mut first = event("r", "m", my_pod());
    first.metadata.name = Some("my-pod.1".into());
    first.first_timestamp = Some(time(t0));
    let Correlated::Create(created) = c.correlate(first.clone(), t0) else {
        panic!("not created")
    };
    c.update_state(&created);
    let t1 = t0 + chrono::Duration::seconds(7);
    let mut again = first;
    again.metadata.name = Some("my-pod.2".into());
    again.first_timestamp = Some(time(t1));
    again.last_timestamp = Some(time(t1));
    let Correlated::Patch(patch) = c.correlate(again, t1) else {
        panic!("not a patch")
    };
    assert_eq!(patch.metadata.name.as_deref(), Some("my-pod.1"));
    assert_eq!(patch.first_timestamp, Some(time(t0)));
    assert_eq!(patch.last_timestamp, Some(time(t1)));
    assert_eq!(patch.count, Some(2));
}
