use super::*;

fn node(name: &str, cpu: i64, pods: u32) -> NodeSample {
    NodeSample {
        name: name.into(),
        cpu_requested_milli: cpu,
        cpu_allocatable_milli: 4000,
        memory_requested: 0,
        memory_allocatable: 1 << 30,
        pods,
    }
}

fn settings() -> Settings {
    Settings {
        until_seconds: 600,
        seed: 1,
        sample_interval_seconds: 300,
        scheduler: "default".into(),
        nodes: 2,
    }
}

#[test]
fn failure_messages_split_into_reasons_with_node_counts() {
    assert_eq!(
        reasons("0/5 nodes are available: 3 Insufficient cpu, 2 node(s) had taints that the pod didn't tolerate."),
        vec![
            ("Insufficient cpu".to_string(), 3),
            ("node(s) had taints that the pod didn't tolerate".to_string(), 2)
        ]
    );
    assert_eq!(
        reasons("0/2 nodes are available: 2 Insufficient memory. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."),
        vec![("Insufficient memory".to_string(), 2)]
    );
    assert_eq!(
        reasons("no nodes available to schedule pods"),
        vec![("no nodes available to schedule pods".to_string(), 1)]
    );
}

#[test]
fn the_report_counts_decisions_and_builds_the_series() {
    let records = vec![
        Record::Action {
            at: 0,
            what: "create Deployment default/web".into(),
        },
        Record::Scheduled {
            at: 10,
            pod: "default/a".into(),
            node: "n1".into(),
        },
        Record::FailedScheduling {
            at: 20,
            pod: "default/b".into(),
            message: "0/2 nodes are available: 2 Insufficient cpu.".into(),
            times: 3,
        },
        Record::Sample(Sample {
            at: 0,
            pending: 0,
            nodes: vec![node("n1", 0, 0)],
        }),
        Record::Sample(Sample {
            at: 300_000,
            pending: 1,
            nodes: vec![node("n1", 1000, 1), node("n2", 4000, 2)],
        }),
        Record::Evicted {
            at: 400_000,
            pod: "default/a".into(),
            reason: "TaintManagerEviction".into(),
            message: "Marking for deletion Pod default/a".into(),
        },
        Record::Preempted {
            at: 500_000,
            pod: "default/c".into(),
            message: "by x".into(),
        },
    ];
    let r = build(settings(), &records);
    assert_eq!(r.totals.scheduled, 1);
    assert_eq!(r.totals.failed_attempts, 3);
    assert_eq!(r.totals.evictions, 1);
    assert_eq!(r.totals.preemptions, 1);
    assert_eq!(r.totals.peak_pending, 1);
    assert_eq!(r.totals.pending_at_end, 1);
    assert_eq!(r.unschedulable_reasons.get("Insufficient cpu"), Some(&6));
    assert_eq!(
        r.placements.get("default/a").map(String::as_str),
        Some("n1")
    );
    assert_eq!(r.pending.t, vec![0.0, 300.0]);
    assert_eq!(r.pending.values, vec![0, 1]);
    // A node missing from an early sample counts as empty there.
    assert_eq!(r.utilisation.nodes["n1"].cpu, vec![0.0, 0.25]);
    assert_eq!(r.utilisation.nodes["n2"].cpu, vec![0.0, 1.0]);
    assert_eq!(r.utilisation.nodes["n2"].pods, vec![0, 2]);
    assert_eq!(r.totals.pods_per_node_at_end.get("n2"), Some(&2));
    assert_eq!(r.decisions[1].times, 3);
    assert_eq!(r.actions[0].what, "create Deployment default/web");
}

#[test]
fn the_same_records_give_the_same_bytes() {
    let records = vec![
        Record::Scheduled {
            at: 1,
            pod: "default/z".into(),
            node: "n2".into(),
        },
        Record::Scheduled {
            at: 1,
            pod: "default/a".into(),
            node: "n1".into(),
        },
        Record::Sample(Sample {
            at: 0,
            pending: 0,
            nodes: vec![node("n2", 1, 1), node("n1", 2, 1)],
        }),
    ];
    let a = to_json(&build(settings(), &records));
    let b = to_json(&build(settings(), &records));
    assert_eq!(a, b);
    // Maps are sorted: n1 before n2, default/a before default/z.
    assert!(a.find("\"n1\"").unwrap() < a.find("\"n2\"").unwrap());
    assert!(a.find("\"default/a\": ").unwrap() < a.find("\"default/z\": ").unwrap());
    assert!(a.ends_with("}\n"));
}

#[test]
fn fractions_are_rounded_and_never_divide_by_zero() {
    assert_eq!(fraction(1, 3), 0.3333);
    assert_eq!(fraction(5, 0), 0.0);
    assert_eq!(fraction(4000, 4000), 1.0);
}

#[test]
fn descheduler_moves_say_where_each_pod_goes_or_that_it_stays() {
    let moved = |pod: &str, to: Option<&str>| Record::Moved {
        at: 300_000,
        pod: pod.into(),
        from: "n1".into(),
        to: to.map(str::to_string),
        strategy: "LowNodeUtilization".into(),
        message: to
            .is_none()
            .then(|| "0/2 nodes are available: 2 Insufficient cpu.".to_string()),
    };
    let r = build(
        settings(),
        &[moved("default/a", Some("n2")), moved("default/b", None)],
    );
    let lines: Vec<String> = r.descheduler_moves.iter().map(Move::line).collect();
    assert_eq!(
        lines,
        [
            "pod default/a: node n1 -> node n2",
            "pod default/b: fits nowhere: not evicted"
        ]
    );
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["descheduler_moves"][0]["to"], "n2");
    assert_eq!(json["descheduler_moves"][1]["to"], serde_json::Value::Null);
    // Without a descheduler the report has no such key.
    let plain = serde_json::to_value(build(settings(), &[])).unwrap();
    assert!(plain.get("descheduler_moves").is_none());
}
