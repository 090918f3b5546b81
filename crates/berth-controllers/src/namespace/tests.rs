use super::*;

fn at(secs: i64) -> Time {
    crate::model::to_time(chrono::DateTime::from_timestamp(secs, 0).unwrap())
}

fn with_finalizers(finalizers: &[(&str, usize)], count: usize) -> Remaining {
    Remaining {
        estimate: FINALIZER_ESTIMATE_SECONDS,
        count,
        finalizers: finalizers
            .iter()
            .map(|(f, n)| (f.to_string(), *n))
            .collect(),
    }
}

fn condition<'a>(all: &'a [NamespaceCondition], kind: &str) -> &'a NamespaceCondition {
    all.iter().find(|c| c.type_ == kind).unwrap()
}

#[test]
fn nothing_left_is_nothing_to_wait_for() {
    assert_eq!(
        remaining("ns", "/v1, Resource=configmaps", 0, &[]),
        Ok(Remaining::default())
    );
}

#[test]
fn objects_left_with_finalizers_are_waited_for_the_finalizer_estimate() {
    let items = vec![
        vec!["example.com/a".to_string()],
        vec![],
        vec!["example.com/a".into(), "b".into()],
    ];
    let r = remaining("ns", "/v1, Resource=pods", 0, &items).unwrap();
    assert_eq!(r.estimate, FINALIZER_ESTIMATE_SECONDS);
    assert_eq!(r.count, 3);
    assert_eq!(r.finalizers["example.com/a"], 2);
    assert_eq!(r.finalizers["b"], 1);
}

#[test]
fn pods_left_within_their_grace_period_are_waited_for() {
    let r = remaining("ns", "/v1, Resource=pods", 30, &[vec![]]).unwrap();
    assert_eq!((r.estimate, r.count), (30, 1));
}

#[test]
fn objects_left_without_finalizers_or_grace_are_an_error_as_upstream_words_it() {
    let (_, e) = remaining("ns", "apps/v1, Resource=deployments", 0, &[vec![]]).unwrap_err();
    assert_eq!(
        e,
        "unexpected items still remain in namespace: ns for gvr: apps/v1, Resource=deployments"
    );
}

#[test]
fn the_pods_estimate_is_the_longest_grace_period_of_running_pods_until_it_has_passed() {
    let pod = |phase: &str, grace| TerminatingPod {
        phase: phase.into(),
        grace_period_seconds: grace,
    };
    let pods = [
        pod("Running", Some(30)),
        pod("Pending", Some(5)),
        pod("Succeeded", Some(90)),
    ];
    assert_eq!(pods_estimate(&pods, 0), 30);
    assert_eq!(pods_estimate(&pods, 29), 30);
    assert_eq!(pods_estimate(&pods, 30), 0);
    assert_eq!(pods_estimate(&[pod("Failed", Some(90))], 0), 0);
    assert_eq!(pods_estimate(&[pod("Running", None)], 0), 0);
}

#[test]
fn an_empty_pass_sets_every_condition_false_with_upstreams_words() {
    let got = conditions(&[], &Pass::default(), at(10)).unwrap();
    let kinds: Vec<&str> = got.iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(kinds, CONDITION_TYPES);
    assert!(got.iter().all(|c| c.status == "False"));
    let content = condition(&got, "NamespaceDeletionContentFailure");
    assert_eq!(content.reason.as_deref(), Some("ContentDeleted"));
    assert_eq!(
        content.message.as_deref(),
        Some("All content successfully deleted, may be waiting on finalization")
    );
    assert_eq!(
        condition(&got, "NamespaceFinalizersRemaining")
            .reason
            .as_deref(),
        Some("ContentRemoved")
    );
    // The same pass again changes nothing.
    assert_eq!(conditions(&got, &Pass::default(), at(20)), None);
}

#[test]
fn a_pod_with_a_finalizer_is_reported_as_content_and_finalizer_remaining() {
    let mut pass = Pass::default();
    pass.remaining.insert(
        "pods.".into(),
        with_finalizers(&[("e2e.example.com/keep", 1)], 1),
    );
    pass.remaining.insert(
        "configmaps.".into(),
        with_finalizers(&[("e2e.example.com/keep", 2), ("x", 1)], 2),
    );
    assert!(!pass.done());
    let got = conditions(&[], &pass, at(10)).unwrap();
    let content = condition(&got, "NamespaceContentRemaining");
    assert_eq!(content.status, "True");
    assert_eq!(content.reason.as_deref(), Some("SomeResourcesRemain"));
    assert_eq!(
        content.message.as_deref(),
        Some("Some resources are remaining: configmaps. has 2 resource instances, pods. has 1 resource instances")
    );
    let finalizers = condition(&got, "NamespaceFinalizersRemaining");
    assert_eq!(finalizers.reason.as_deref(), Some("SomeFinalizerRemain"));
    assert_eq!(
        finalizers.message.as_deref(),
        Some("Some finalizers are remaining: e2e.example.com/keep in 3 resource instances, x in 1 resource instances")
    );
}

#[test]
fn failed_deletions_are_one_content_failure_listing_each_sorted() {
    let pass = Pass {
        errors: vec!["b failed".into(), "a failed".into()],
        ..Pass::default()
    };
    assert!(!pass.done());
    let got = conditions(&[], &pass, at(10)).unwrap();
    let c = condition(&got, "NamespaceDeletionContentFailure");
    assert_eq!(
        (c.status.as_str(), c.reason.as_deref()),
        ("True", Some("ContentDeletionFailed"))
    );
    assert_eq!(
        c.message.as_deref(),
        Some("Failed to delete all resource types, 2 remaining: a failed, b failed")
    );
}

#[test]
fn a_condition_keeps_its_transition_time_unless_its_status_changes() {
    let mut pass = Pass::default();
    pass.remaining
        .insert("pods.".into(), with_finalizers(&[("f", 2)], 2));
    let first = conditions(&[], &pass, at(10)).unwrap();
    pass.remaining
        .insert("pods.".into(), with_finalizers(&[("f", 1)], 1));
    let second = conditions(&first, &pass, at(20)).unwrap();
    let c = condition(&second, "NamespaceContentRemaining");
    assert_eq!(c.last_transition_time, Some(at(10)));
    assert_eq!(
        c.message.as_deref(),
        Some("Some resources are remaining: pods. has 1 resource instances")
    );
    let third = conditions(&second, &Pass::default(), at(30)).unwrap();
    let c = condition(&third, "NamespaceContentRemaining");
    assert_eq!(
        (c.status.as_str(), c.last_transition_time.clone()),
        ("False", Some(at(30)))
    );
}

#[test]
fn finalizing_removes_only_the_controllers_own_finalizer() {
    let finalizers = vec!["kubernetes".to_string(), "z".into(), "a".into(), "z".into()];
    assert_eq!(without_own_finalizer(&finalizers), vec!["a", "z"]);
    assert!(without_own_finalizer(&["kubernetes".into()]).is_empty());
}
