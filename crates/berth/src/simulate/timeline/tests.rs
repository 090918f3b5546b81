use super::*;
use proptest::prelude::*;

fn refused(text: &str) -> String {
    match parse(text) {
        Ok(t) => panic!("accepted: {t:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_timeline_of_every_action_parses_in_time_order() {
    let t = parse(
        r#"
timeline:
  - at: 2h
    fail: [node-2, {node: node-1, mode: partitioned}]
  - at: 0s
    create:
      - {apiVersion: apps/v1, kind: Deployment, metadata: {name: web}, spec: {replicas: 2}}
  - at: 1h
    scale: [{kind: Deployment, name: web, replicas: 6}]
    delete: [{kind: Job, name: pi, namespace: batch}]
  - at: 3h
    recover: [node-2]
    cordon: [node-1]
    uncordon: [node-3]
    label: [{node: node-1, labels: {disktype: ssd, old: null}}]
    taint: [{node: node-1, key: dedicated, value: gpu, effect: NoSchedule}]
    untaint: [{node: node-1, key: dedicated, effect: NoSchedule}]
"#,
    )
    .unwrap();
    let ats: Vec<u64> = t.entries.iter().map(|e| e.at.as_secs()).collect();
    assert_eq!(ats, vec![0, 3600, 7200, 10800]);
    assert_eq!(
        t.entries[1].actions,
        vec![
            Action::Scale(vec![(
                ObjectRef {
                    kind: "Deployment".into(),
                    api_version: None,
                    name: "web".into(),
                    namespace: "default".into()
                },
                6
            )]),
            Action::Delete(vec![ObjectRef {
                kind: "Job".into(),
                api_version: None,
                name: "pi".into(),
                namespace: "batch".into()
            }]),
        ]
    );
    assert_eq!(
        t.entries[2].actions,
        vec![Action::Fail(vec![
            ("node-2".into(), Simulate::Stopped),
            ("node-1".into(), Simulate::Partitioned)
        ])]
    );
    // One entry's actions run in the documented order, whatever the file's order.
    let kinds: Vec<&str> = t.entries[3]
        .actions
        .iter()
        .map(|a| match a {
            Action::Recover(_) => "recover",
            Action::Cordon(_) => "cordon",
            Action::Uncordon(_) => "uncordon",
            Action::Label(_) => "label",
            Action::Taint(_) => "taint",
            Action::Untaint(_) => "untaint",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        ["recover", "cordon", "uncordon", "label", "taint", "untaint"]
    );
    let Action::Label(labels) = &t.entries[3].actions[3] else {
        panic!("not a label action")
    };
    assert_eq!(
        labels[0].1,
        vec![
            ("disktype".into(), Some("ssd".into())),
            ("old".into(), None)
        ]
    );
}

#[test]
fn entries_at_the_same_time_keep_the_file_order() {
    let t = parse("timeline:\n- {at: 1m, cordon: [a]}\n- {at: 1m, uncordon: [a]}\n").unwrap();
    assert_eq!(t.entries[0].actions, vec![Action::Cordon(vec!["a".into()])]);
    assert_eq!(
        t.entries[1].actions,
        vec![Action::Uncordon(vec!["a".into()])]
    );
}

#[test]
fn an_empty_workload_is_an_empty_timeline() {
    assert_eq!(parse("timeline: []").unwrap(), Timeline::default());
    assert_eq!(parse("{}").unwrap(), Timeline::default());
    assert_eq!(parse("timeline:").unwrap(), Timeline::default());
}

#[test]
fn hostile_input_is_refused_with_the_place_and_the_reason() {
    let cases = [
        ("just a string", "workload: expected a mapping"),
        ("[1, 2]", "workload: expected a mapping"),
        ("timelines: []", "workload.timelines: unknown field"),
        ("timeline: {at: 1h}", "timeline: expected a list of entries"),
        ("timeline: [5]", "timeline[0]: expected a mapping"),
        ("timeline: [{cordon: [a]}]", "timeline[0]: missing `at`"),
        ("timeline: [{at: 1h}]", "timeline[0]: no action"),
        (
            "timeline: [{at: soon, cordon: [a]}]",
            "timeline[0].at: invalid duration \"soon\"",
        ),
        (
            "timeline: [{at: -5, cordon: [a]}]",
            "timeline[0].at: expected a duration",
        ),
        (
            "timeline: [{at: 9000h, cordon: [a]}]",
            "timeline[0].at: more than a year",
        ),
        (
            "timeline: [{at: 1h, explode: [a]}]",
            "timeline[0].explode: unknown action",
        ),
        (
            "timeline: [{at: 1h, cordon: a}]",
            "timeline[0].cordon: expected a list",
        ),
        (
            "timeline: [{at: 1h, cordon: [Bad_Name]}]",
            "timeline[0].cordon[0]: invalid node name",
        ),
        (
            "timeline: [{at: 1h, cordon: [7]}]",
            "timeline[0].cordon[0]: expected a node name",
        ),
        (
            "timeline: [{at: 1h, scale: [{kind: Deployment, name: w}]}]",
            "timeline[0].scale[0].replicas: expected a whole number",
        ),
        (
            "timeline: [{at: 1h, scale: [{kind: Deployment, name: w, replicas: -1}]}]",
            "timeline[0].scale[0].replicas: expected a whole number",
        ),
        (
            "timeline: [{at: 1h, scale: [{kind: Deployment, name: w, replicas: 1.5}]}]",
            "timeline[0].scale[0].replicas",
        ),
        (
            "timeline: [{at: 1h, scale: [{name: w, replicas: 1}]}]",
            "timeline[0].scale[0]: missing `kind`",
        ),
        (
            "timeline: [{at: 1h, delete: [{kind: Pod, name: p, colour: red}]}]",
            "timeline[0].delete[0].colour: unknown field",
        ),
        (
            "timeline: [{at: 1h, create: [{kind: Pod, metadata: {name: p}}]}]",
            "timeline[0].create[0]: missing `apiVersion`",
        ),
        (
            "timeline: [{at: 1h, create: [{apiVersion: v1, kind: Pod}]}]",
            "timeline[0].create[0].metadata: missing metadata.name",
        ),
        (
            "timeline: [{at: 1h, fail: [{node: a, mode: running}]}]",
            "timeline[0].fail[0].mode: unknown mode \"running\"",
        ),
        (
            "timeline: [{at: 1h, fail: [{node: a, mode: melted}]}]",
            "timeline[0].fail[0].mode: unknown mode",
        ),
        (
            "timeline: [{at: 1h, taint: [{node: a, key: k, effect: Sometimes}]}]",
            "timeline[0].taint[0].effect: unknown effect \"Sometimes\"",
        ),
        (
            "timeline: [{at: 1h, taint: [{node: a, key: 'bad key', effect: NoSchedule}]}]",
            "timeline[0].taint[0].key: invalid taint key",
        ),
        (
            "timeline: [{at: 1h, untaint: [{node: a, key: k, value: v, effect: NoSchedule}]}]",
            "timeline[0].untaint[0].value: untaint removes by key and effect",
        ),
        (
            "timeline: [{at: 1h, label: [{node: a, labels: {'bad key': x}}]}]",
            "timeline[0].label[0].labels.bad key: invalid label key",
        ),
        (
            "timeline: [{at: 1h, label: [{node: a, labels: {k: [1]}}]}]",
            "timeline[0].label[0].labels.k: expected a string, or null",
        ),
    ];
    for (input, want) in cases {
        let got = refused(input);
        assert!(
            got.starts_with(want),
            "{input}\n want: {want}\n  got: {got}"
        );
    }
}

#[test]
fn too_many_entries_are_refused_before_any_is_compiled() {
    let mut text = String::from("timeline:\n");
    for _ in 0..=MAX_ENTRIES {
        text.push_str("- 0\n");
    }
    assert!(refused(&text).starts_with("timeline: 100001 entries, more than the 100000 allowed"));
}

proptest! {
    // Whatever the bytes, parsing answers (never panics), and an error names a place.
    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        if let Err(e) = parse(&text) {
            prop_assert!(!e.path.is_empty());
            prop_assert!(!e.reason.is_empty());
        }
    }

    // Entries come out sorted by time, and none is lost.
    #[test]
    fn entries_are_sorted_and_kept(ats in proptest::collection::vec(0u64..100_000, 0..30)) {
        let mut text = String::from("timeline:\n");
        for (i, at) in ats.iter().enumerate() {
            text.push_str(&format!("- {{at: {at}, cordon: [n{i}]}}\n"));
        }
        let t = parse(&text).unwrap();
        prop_assert_eq!(t.entries.len(), ats.len());
        prop_assert!(t.entries.windows(2).all(|w| w[0].at <= w[1].at));
    }

    // Structured garbage in a known field is refused with that field's path.
    #[test]
    fn a_bad_replicas_value_names_its_entry(i in 0usize..5, bad in prop_oneof![
        Just("x".to_string()), Just("-3".to_string()), Just("2000000".to_string()), Just("[]".to_string())]) {
        let mut text = String::from("timeline:\n");
        for j in 0..5 {
            let replicas = if j == i { bad.clone() } else { "1".to_string() };
            text.push_str(&format!("- {{at: 1m, scale: [{{kind: Deployment, name: w, replicas: {replicas}}}]}}\n"));
        }
        let e = parse(&text).unwrap_err();
        prop_assert_eq!(e.path, format!("timeline[{i}].scale[0].replicas"));
    }
}
