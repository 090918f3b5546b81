//! Scenarios of upstream's `TestEventSeriesf` and `TestFinishSeries`/`TestRefreshExistingEventSeries`
//! (client-go `tools/events/eventseries_test.go`).

use super::*;

fn at(secs: i64) -> DateTime<Utc> {
    DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::seconds(1_700_000_000 + secs)
}

fn pod(name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some("ns".into()),
        name: Some(name.into()),
        uid: Some(format!("uid-{name}")),
        ..Default::default()
    }
}

fn event(regarding: &str, reason: &str, note: &str, when: DateTime<Utc>) -> Event {
    Event {
        metadata: kube::api::ObjectMeta {
            name: Some(format!("{regarding}.{}", when.timestamp())),
            namespace: Some("ns".into()),
            ..Default::default()
        },
        event_time: Some(micro_time(when)),
        action: Some("Scheduling".into()),
        reason: Some(reason.into()),
        note: Some(note.into()),
        regarding: Some(pod(regarding)),
        reporting_controller: Some("default-scheduler".into()),
        reporting_instance: Some("default-scheduler-host".into()),
        type_: Some("Warning".into()),
        ..Default::default()
    }
}

fn count(e: &Event) -> Option<i32> {
    e.series.as_ref().map(|s| s.count)
}

#[test]
fn the_first_event_is_created_as_it_is() {
    let mut cache = SeriesCache::default();
    let e = event("p", "FailedScheduling", "0/3 nodes", at(0));
    assert_eq!(cache.record(e.clone(), at(0)), Some(e));
    assert_eq!(cache.len(), 1);
}

#[test]
fn the_second_isomorphic_event_makes_the_first_a_series_of_two() {
    let mut cache = SeriesCache::default();
    let first = event("p", "FailedScheduling", "0/3 nodes", at(0));
    cache.record(first.clone(), at(0));
    let second = event("p", "FailedScheduling", "0/4 nodes", at(5));
    let write = cache.record(second, at(5)).expect("a patch of the first");
    // The first event's name and note, with the series.
    assert_eq!(write.metadata.name, first.metadata.name);
    assert_eq!(write.note.as_deref(), Some("0/3 nodes"));
    assert_eq!(count(&write), Some(2));
    assert_eq!(write.series.unwrap().last_observed_time, micro_time(at(5)));
}

#[test]
fn later_isomorphic_events_only_bump_the_cached_series() {
    let mut cache = SeriesCache::default();
    cache.record(event("p", "FailedScheduling", "m", at(0)), at(0));
    cache.record(event("p", "FailedScheduling", "m", at(1)), at(1));
    assert_eq!(
        cache.record(event("p", "FailedScheduling", "m", at(2)), at(2)),
        None
    );
    assert_eq!(
        cache.record(event("p", "FailedScheduling", "m", at(3)), at(3)),
        None
    );
    let live = cache.refresh();
    assert_eq!(live.len(), 1);
    assert_eq!(count(&live[0]), Some(4));
}

#[test]
fn events_differing_in_object_reason_type_or_reporter_are_not_isomorphic() {
    let mut cache = SeriesCache::default();
    let base = event("p", "FailedScheduling", "m", at(0));
    cache.record(base.clone(), at(0));
    let mut others = vec![
        event("q", "FailedScheduling", "m", at(1)),
        event("p", "Scheduled", "m", at(1)),
    ];
    let mut normal = base.clone();
    normal.type_ = Some("Normal".into());
    others.push(normal);
    let mut acted = base.clone();
    acted.action = Some("Binding".into());
    others.push(acted);
    let mut instance = base.clone();
    instance.reporting_instance = Some("default-scheduler-other".into());
    others.push(instance);
    let mut related = base.clone();
    related.related = Some(pod("preemptor"));
    others.push(related);
    let mut newer = base.clone();
    newer.regarding.as_mut().unwrap().resource_version = Some("7".into());
    others.push(newer);
    for e in others {
        let written = cache.record(e, at(1)).expect("created");
        assert_eq!(written.series, None);
    }
    assert_eq!(cache.len(), 8);
}

#[test]
fn a_series_ends_after_six_minutes_without_a_repeat_and_is_written_once_more() {
    let mut cache = SeriesCache::default();
    cache.record(event("p", "FailedScheduling", "m", at(0)), at(0));
    cache.record(event("p", "FailedScheduling", "m", at(10)), at(10));
    cache.record(event("p", "FailedScheduling", "m", at(20)), at(20));
    // Observed 5 minutes ago: still live.
    assert!(cache.finish(at(20 + 300)).is_empty());
    assert_eq!(cache.len(), 1);
    // Exactly 6 minutes is not yet before the horizon (upstream's `Before`).
    assert!(cache.finish(at(20 + 360)).is_empty());
    let ended = cache.finish(at(20 + 361));
    assert_eq!(ended.len(), 1);
    assert_eq!(count(&ended[0]), Some(3));
    assert!(cache.is_empty());
    // The next one starts afresh.
    let again = cache.record(event("p", "FailedScheduling", "m", at(400)), at(400));
    assert_eq!(again.unwrap().series, None);
}

#[test]
fn a_single_event_older_than_six_minutes_is_forgotten_without_a_write() {
    let mut cache = SeriesCache::default();
    cache.record(event("p", "Scheduled", "m", at(0)), at(0));
    cache.record(event("q", "Scheduled", "m", at(100)), at(100));
    assert!(cache.finish(at(361)).is_empty());
    assert_eq!(cache.len(), 1, "q (recorded 261 s ago) is kept");
}

#[test]
fn refresh_writes_only_live_series() {
    let mut cache = SeriesCache::default();
    cache.record(event("p", "FailedScheduling", "m", at(0)), at(0));
    cache.record(event("p", "FailedScheduling", "m", at(1)), at(1));
    cache.record(event("q", "FailedScheduling", "m", at(1)), at(1));
    let live = cache.refresh();
    assert_eq!(live.len(), 1);
    assert_eq!(
        live[0].regarding.as_ref().unwrap().name.as_deref(),
        Some("p")
    );
}

#[test]
fn a_full_cache_still_writes_new_events_without_remembering_them() {
    let mut cache = SeriesCache::default();
    for i in 0..SERIES_ENTRIES {
        cache.record(event(&format!("p{i}"), "Scheduled", "m", at(0)), at(0));
    }
    let extra = event("extra", "Scheduled", "m", at(1));
    assert_eq!(cache.record(extra.clone(), at(1)), Some(extra.clone()));
    assert_eq!(cache.len(), SERIES_ENTRIES);
    // Not remembered: a repeat is written as a new event too.
    assert_eq!(cache.record(extra.clone(), at(2)), Some(extra));
}
