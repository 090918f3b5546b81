//! The driver on a paused clock: seats, waiting, rejection, fairness and reloads.

use super::*;
use crate::user::UserInfo;
use serde_json::json;

fn user(name: &str, groups: &[&str]) -> UserInfo {
    let mut groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
    groups.push("system:authenticated".into());
    UserInfo {
        name: name.into(),
        groups,
        ..UserInfo::default()
    }
}

fn get_pods<'a>(u: &'a UserInfo) -> Attributes<'a> {
    Attributes {
        user: u,
        verb: "list",
        api_group: "",
        resource: "pods",
        subresource: "",
        namespace: "team-a",
        name: "",
        path: "",
        field_selector: "",
    }
}

/// One Limited level `tiny` of one share queuing as (`queues`, `hand`, `length`) by user for
/// every user named `u*`, beside the mandatory objects (added by reload).
fn tiny(fc: &FlowControl, queues: u32, hand: u32, length: u32) {
    fc.reload(
        &[
            json!({"metadata": {"name": "tiny", "uid": "fs-uid"}, "spec": {
            "priorityLevelConfiguration": {"name": "tiny"}, "matchingPrecedence": 100,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [{"subjects": [{"kind": "Group", "group": {"name": "system:authenticated"}}],
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                    "namespaces": ["*"], "clusterScope": true}]}]}}),
        ],
        &[
            json!({"metadata": {"name": "tiny", "uid": "pl-uid"}, "spec": {"type": "Limited",
            "limited": {"nominalConcurrencyShares": 1, "limitResponse": {"type": "Queue",
                "queuing": {"queues": queues, "handSize": hand, "queueLengthLimit": length}}}}}),
        ],
    );
}

/// Lets spawned tasks run up to their next wait.
async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(start_paused = true)]
async fn system_masters_never_wait_however_many_they_are() {
    let fc = FlowControl::new(1, crate::Clock::system());
    let admin = UserInfo::admin();
    let mut permits = Vec::new();
    for _ in 0..100 {
        let p = fc.admit(&get_pods(&admin)).await.expect("exempt");
        assert_eq!(p.classification().priority_level, "exempt");
        permits.push(p);
    }
}

#[tokio::test(start_paused = true)]
async fn a_request_waits_for_a_seat_and_gets_it_when_one_is_released() {
    let fc = FlowControl::new(1, crate::Clock::system());
    tiny(&fc, 4, 2, 10);
    let alice = user("alice", &[]);
    let first = fc.admit(&get_pods(&alice)).await.expect("a free seat");
    assert_eq!(
        first.classification(),
        &Classification {
            flow_schema: "tiny".into(),
            flow_schema_uid: "fs-uid".into(),
            priority_level: "tiny".into(),
            priority_level_uid: "pl-uid".into(),
            distinguisher: "alice".into(),
        }
    );
    let fc2 = fc.clone();
    let second = tokio::spawn(async move {
        let bob = user("bob", &[]);
        fc2.admit(&get_pods(&bob))
            .await
            .map(|p| p.classification().clone())
    });
    settle().await;
    assert!(!second.is_finished(), "the only seat is taken");
    drop(first);
    let second = second
        .await
        .expect("task")
        .expect("admitted after the release");
    assert_eq!(second.distinguisher, "bob");
}

#[tokio::test(start_paused = true)]
async fn a_full_queue_is_refused_at_once_with_429_words_and_retry_after() {
    let fc = FlowControl::new(1, crate::Clock::system());
    tiny(&fc, 1, 1, 1);
    let alice = user("alice", &[]);
    let _executing = fc.admit(&get_pods(&alice)).await.expect("a free seat");
    let fc2 = fc.clone();
    let waiting = tokio::spawn(async move {
        let alice = user("alice", &[]);
        fc2.admit(&get_pods(&alice)).await.map(drop)
    });
    settle().await;
    let refused = fc.admit(&get_pods(&alice)).await.expect_err("queue full");
    assert_eq!(refused.reason, Reason::QueueFull);
    assert_eq!(refused.retry_after, 1);
    assert_eq!(refused.classification.priority_level_uid, "pl-uid");
    assert_eq!(
        TOO_MANY_REQUESTS,
        "Too many requests, please try again later."
    );
    let mut metrics = String::new();
    fc.encode(&mut metrics);
    assert!(metrics.contains(
        "apiserver_flowcontrol_rejected_requests_total{flow_schema=\"tiny\",priority_level=\"tiny\",reason=\"queue-full\"} 1"
    ), "{metrics}");
    assert!(metrics.contains(
        "apiserver_flowcontrol_current_inqueue_requests{flow_schema=\"tiny\",priority_level=\"tiny\"} 1"
    ), "{metrics}");
    assert!(metrics.contains(
        "apiserver_flowcontrol_current_executing_requests{flow_schema=\"tiny\",priority_level=\"tiny\"} 1"
    ), "{metrics}");
    waiting.abort();
}

#[tokio::test(start_paused = true)]
async fn a_request_that_waits_past_the_limit_is_refused_as_timed_out() {
    let fc = FlowControl::new(1, crate::Clock::system());
    tiny(&fc, 4, 2, 10);
    let alice = user("alice", &[]);
    let _executing = fc.admit(&get_pods(&alice)).await.expect("a free seat");
    let start = crate::Clock::system().instant();
    let refused = fc
        .admit(&get_pods(&alice))
        .await
        .expect_err("no seat frees");
    assert_eq!(refused.reason, Reason::TimeOut);
    assert_eq!(start.elapsed(), QUEUE_WAIT_LIMIT);
    let waiting = {
        let config = fc.config();
        let n = lock(&config.levels["tiny"].queues).waiting();
        n
    };
    assert_eq!(waiting, 0, "the timed-out request left its queue");
}

#[tokio::test(start_paused = true)]
async fn a_waiter_that_goes_away_leaves_its_queue_and_frees_its_place() {
    let fc = FlowControl::new(1, crate::Clock::system());
    tiny(&fc, 1, 1, 1);
    let alice = user("alice", &[]);
    let executing = fc.admit(&get_pods(&alice)).await.expect("a free seat");
    // The client gives up after a second.
    let gave_up = tokio::time::timeout(Duration::from_secs(1), fc.admit(&get_pods(&alice))).await;
    assert!(gave_up.is_err());
    // Its place is free again: the next one queues instead of being refused.
    let fc2 = fc.clone();
    let next = tokio::spawn(async move {
        let alice = user("alice", &[]);
        fc2.admit(&get_pods(&alice)).await.map(drop)
    });
    settle().await;
    assert!(!next.is_finished());
    drop(executing);
    next.await.expect("task").expect("admitted");
}

#[tokio::test(start_paused = true)]
async fn a_quiet_user_is_served_between_a_noisy_users_requests() {
    let fc = FlowControl::new(1, crate::Clock::system());
    // Hands of one queue out of 64: find a quiet user whose queue is not the noisy one's.
    tiny(&fc, 64, 1, 100);
    let noisy_queue = dispatch::deal(dispatch::flow_hash("tiny", "noisy"), 64, 1);
    let quiet = (0..)
        .map(|i| format!("quiet{i}"))
        .find(|q| dispatch::deal(dispatch::flow_hash("tiny", q), 64, 1) != noisy_queue)
        .unwrap_or_default();
    let order = Arc::new(Mutex::new(Vec::new()));
    let run = |name: String| {
        let (fc, order) = (fc.clone(), order.clone());
        tokio::spawn(async move {
            let u = user(&name, &[]);
            let permit = fc.admit(&get_pods(&u)).await;
            lock(&order).push(name);
            // Each request executes for 100 ms.
            tokio::time::sleep(Duration::from_millis(100)).await;
            drop(permit);
        })
    };
    let mut tasks: Vec<_> = (0..20).map(|_| run("noisy".into())).collect();
    settle().await;
    tasks.push(run(quiet.clone()));
    for t in tasks {
        t.await.expect("task");
    }
    let order = lock(&order).clone();
    let at = order.iter().position(|n| *n == quiet).unwrap_or(usize::MAX);
    assert!(
        at <= 2,
        "the quiet request ran {at}th of {}: {order:?}",
        order.len()
    );
}

#[tokio::test(start_paused = true)]
async fn a_reload_keeps_executing_requests_and_frees_their_seats_later() {
    let fc = FlowControl::new(1, crate::Clock::system());
    tiny(&fc, 4, 2, 10);
    let alice = user("alice", &[]);
    let executing = fc.admit(&get_pods(&alice)).await.expect("a free seat");
    tiny(&fc, 8, 2, 10);
    let fc2 = fc.clone();
    let next = tokio::spawn(async move {
        let bob = user("bob", &[]);
        fc2.admit(&get_pods(&bob)).await.map(drop)
    });
    settle().await;
    assert!(
        !next.is_finished(),
        "the seat is still held across the reload"
    );
    drop(executing);
    next.await.expect("task").expect("admitted");
}

#[tokio::test(start_paused = true)]
async fn the_bootstrap_configuration_splits_600_seats() {
    let fc = FlowControl::new(
        DEFAULT_MAX_REQUESTS_INFLIGHT + DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT,
        crate::Clock::system(),
    );
    let mut metrics = String::new();
    fc.encode(&mut metrics);
    for (level, seats) in [
        ("catch-all", 13),
        ("global-default", 49),
        ("leader-election", 25),
        ("node-high", 98),
        ("system", 74),
        ("workload-high", 98),
        ("workload-low", 245),
    ] {
        let line = format!(
            "apiserver_flowcontrol_nominal_limit_seats{{priority_level=\"{level}\"}} {seats}\n"
        );
        assert!(metrics.contains(&line), "{line}{metrics}");
    }
    let alice = user("alice", &[]);
    assert_eq!(fc.classify(&get_pods(&alice)).flow_schema, "global-default");
}

#[tokio::test(start_paused = true)]
async fn without_stored_mandatory_objects_the_bootstrap_ones_apply() {
    let fc = FlowControl::new(10, crate::Clock::system());
    fc.reload(&[], &[]);
    let alice = user("alice", &[]);
    let c = fc.classify(&get_pods(&alice));
    assert_eq!(
        (c.flow_schema.as_str(), c.priority_level.as_str()),
        ("catch-all", "catch-all")
    );
    let admin = UserInfo::admin();
    assert_eq!(fc.classify(&get_pods(&admin)).priority_level, "exempt");
}

#[tokio::test(start_paused = true)]
async fn hostile_configuration_objects_never_panic() {
    let fc = FlowControl::new(1, crate::Clock::system());
    let junk = [
        json!(null),
        json!(5),
        json!({"metadata": {"name": 3}}),
        json!({"metadata": {"name": "x"}, "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": -5, "limitResponse": {"type": "Queue", "queuing": {
                "queues": 0, "handSize": 4_000_000_000u64, "queueLengthLimit": -1}}}}}),
        json!({"metadata": {"name": "y"}, "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": u64::MAX, "limitResponse": {"type": "Queue", "queuing": {
                "queues": u64::MAX, "handSize": 0}}}}}),
        json!({"metadata": {"name": "z"}, "spec": {"type": "Sideways"}}),
    ];
    let schemas = [json!({"metadata": {"name": "s"}, "spec": {
        "priorityLevelConfiguration": {"name": "x"}, "matchingPrecedence": -1,
        "rules": [{"subjects": [{"kind": "Group", "group": {"name": "*"}}],
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"]}]}]}})];
    fc.reload(&schemas, &junk);
    let alice = user("alice", &[]);
    let p = fc
        .admit(&get_pods(&alice))
        .await
        .expect("one seat at least");
    assert_eq!(p.classification().priority_level, "x");
}

mod served {
    use crate::testing::TestServer;
    use axum::http::{Method, StatusCode};
    use serde_json::{json, Value};

    const FS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";
    const PL: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations";

    fn names(list: &Value) -> Vec<String> {
        let mut names: Vec<String> = list["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    #[tokio::test]
    async fn the_bootstrap_set_is_listed_like_kubectl_get_flowschemas() {
        let s = TestServer::new().await;
        let (status, list) = s.json(Method::GET, FS, Value::Null).await;
        assert_eq!(status, StatusCode::OK, "{list}");
        assert_eq!(
            names(&list),
            [
                "catch-all",
                "endpoint-controller",
                "exempt",
                "global-default",
                "kube-controller-manager",
                "kube-scheduler",
                "kube-system-service-accounts",
                "probes",
                "service-accounts",
                "system-leader-election",
                "system-node-high",
                "system-nodes",
                "workload-leader-election"
            ]
        );
        let (status, list) = s.json(Method::GET, PL, Value::Null).await;
        assert_eq!(status, StatusCode::OK, "{list}");
        assert_eq!(
            names(&list),
            [
                "catch-all",
                "exempt",
                "global-default",
                "leader-election",
                "node-high",
                "system",
                "workload-high",
                "workload-low"
            ]
        );
        let (_, exempt) = s
            .json(Method::GET, &format!("{FS}/exempt"), Value::Null)
            .await;
        assert_eq!(
            exempt["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"],
            "true"
        );
        assert_eq!(exempt["status"]["conditions"][0]["type"], "Dangling");
    }

    #[tokio::test]
    async fn an_invalid_priority_level_is_refused_and_not_stored() {
        let s = TestServer::new().await;
        let (status, answer) = s
            .json(
                Method::POST,
                PL,
                json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1",
                    "kind": "PriorityLevelConfiguration", "metadata": {"name": "bad"},
                    "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue",
                        "queuing": {"queues": 4, "handSize": 9, "queueLengthLimit": 1}}}}}),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
        let (status, _) = s.json(Method::GET, &format!("{PL}/bad"), Value::Null).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn a_user_edit_marked_not_to_autoupdate_survives_a_restart_and_others_are_restored() {
        let s = TestServer::new().await;
        let (status, _) = s
            .merge_patch(
                &format!("{PL}/workload-low"),
                json!({"metadata": {"annotations": {"apf.kubernetes.io/autoupdate-spec": "false"}},
                    "spec": {"limited": {"nominalConcurrencyShares": 7}}}),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        let (status, _) = s
            .merge_patch(
                &format!("{PL}/workload-high"),
                json!({"spec": {"limited": {"nominalConcurrencyShares": 7}}}),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        let (status, _) = s
            .json(Method::DELETE, &format!("{FS}/probes"), Value::Null)
            .await;
        assert_eq!(status, StatusCode::OK);
        s.server().bootstrap().await.expect("bootstrap again");
        let shares = |v: Value| v["spec"]["limited"]["nominalConcurrencyShares"].clone();
        let (_, low) = s
            .json(Method::GET, &format!("{PL}/workload-low"), Value::Null)
            .await;
        assert_eq!(shares(low), 7);
        let (_, high) = s
            .json(Method::GET, &format!("{PL}/workload-high"), Value::Null)
            .await;
        assert_eq!(shares(high), 40);
        let (status, _) = s
            .json(Method::GET, &format!("{FS}/probes"), Value::Null)
            .await;
        assert_eq!(status, StatusCode::OK);
    }
}
