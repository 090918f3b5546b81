use super::kubelet_config::{self, Outcome};
use super::rollout::{self, NodeView};
use super::{render, CURRENT_CONFIG, DESIRED_CONFIG, STATE};
use base64::Engine;
use serde_json::{json, Value};
use std::collections::BTreeMap;

fn pool(name: &str, labels: Value) -> Value {
    json!({
        "apiVersion": super::API_VERSION, "kind": "MachineConfigPool",
        "metadata": {"name": name, "uid": format!("uid-{name}"), "labels": labels, "generation": 1},
        "spec": {
            "machineConfigSelector": {"matchLabels": {super::ROLE_LABEL: name}},
            "nodeSelector": {"matchLabels": {format!("node-role.kubernetes.io/{name}"): ""}},
        },
    })
}

/// Seed 004's KubeletConfig `set-allocatable`.
fn seed_kc(name: &str, created: &str) -> Value {
    json!({
        "apiVersion": super::API_VERSION, "kind": "KubeletConfig",
        "metadata": {"name": name, "uid": format!("uid-{name}"), "creationTimestamp": created, "generation": 1},
        "spec": {
            "machineConfigPoolSelector": {"matchLabels": {"custom-kubelet": "small-pods"}},
            "kubeletConfig": {"systemReserved": {"cpu": "500m", "memory": "512Mi"},
                              "kubeReserved": {"cpu": "500m", "memory": "512Mi"}},
        },
    })
}

fn pools() -> Vec<Value> {
    vec![
        pool("master", json!({})),
        pool("worker", json!({"custom-kubelet": "small-pods"})),
    ]
}

fn file_of(mc: &Value) -> Value {
    let source = mc["spec"]["config"]["storage"]["files"][0]["contents"]["source"]
        .as_str()
        .unwrap();
    let data = source.split_once("base64,").unwrap().1;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[test]
fn the_seeds_kubelet_config_renders_a_machine_config_for_the_labelled_pool() {
    let (outcomes, configs) =
        kubelet_config::reconcile(&[seed_kc("set-allocatable", "t1")], &pools());
    assert_eq!(
        outcomes,
        vec![(
            "set-allocatable".into(),
            Outcome::Success {
                pools: vec!["worker".into()]
            }
        )]
    );
    let mc = &configs["99-worker-generated-kubelet"];
    assert_eq!(mc["metadata"]["labels"][super::ROLE_LABEL], "worker");
    assert_eq!(
        mc["metadata"]["ownerReferences"][0]["kind"],
        "KubeletConfig"
    );
    assert_eq!(
        mc["spec"]["config"]["storage"]["files"][0]["path"],
        "/etc/kubernetes/kubelet.conf"
    );
    let conf = file_of(mc);
    assert_eq!(conf["kind"], "KubeletConfiguration");
    assert_eq!(
        conf["systemReserved"],
        json!({"cpu": "500m", "memory": "512Mi"})
    );
    assert_eq!(conf["kubeReserved"]["memory"], "512Mi");
}

#[test]
fn a_kubelet_config_that_selects_no_pool_fails_in_the_operators_words() {
    let unlabelled = vec![pool("master", json!({})), pool("worker", json!({}))];
    let kc = seed_kc("set-allocatable", "t1");
    let (outcomes, configs) = kubelet_config::reconcile(std::slice::from_ref(&kc), &unlabelled);
    assert!(configs.is_empty());
    let outcome = &outcomes[0].1;
    assert_eq!(
        outcome,
        &Outcome::Failure(
            "could not find any MachineConfigPool set for KubeletConfig set-allocatable".into()
        )
    );
    let status = kubelet_config::status(&kc, outcome, "now");
    assert_eq!(status["conditions"][0]["type"], "Failure");
    assert_eq!(status["conditions"][0]["status"], "False");
    assert_eq!(
        status["conditions"][0]["message"],
        "Error: could not find any MachineConfigPool set for KubeletConfig set-allocatable"
    );
    // An empty selector selects nothing either.
    let mut empty = kc.clone();
    empty["spec"]["machineConfigPoolSelector"] = json!({});
    assert!(matches!(
        kubelet_config::outcome(&empty, &pools()),
        Outcome::Failure(_)
    ));
}

#[test]
fn fields_a_kubelet_config_may_not_set_and_undecodable_values_fail() {
    let cases = [
        (json!({"clusterDomain": "example.org"}), "KubeletConfiguration: clusterDomain is not allowed to be set, but contains: example.org"),
        (json!({"failSwapOn": false}), "KubeletConfiguration: failSwapOn is not allowed to be set, but contains: false"),
        (json!({"featureGates": {"Foo": true}}), "KubeletConfiguration: featureGates is not allowed to be set, but contains: map[Foo:true]"),
        (json!({"maxPods": "many"}), "KubeletConfig could not be unmarshalled, err: json: cannot unmarshal string into Go struct field KubeletConfiguration.maxPods of type int32"),
        (json!({"systemReserved": {"memory": 1}}), "KubeletConfig could not be unmarshalled, err: json: cannot unmarshal number into Go struct field KubeletConfiguration.systemReserved.memory of type string"),
        (json!({"memorySwap": {"swapBehavior": "LimitedSwap"}}), "KubeletConfiguration: swapBehavior is not allowed to be set, but contains: LimitedSwap"),
    ];
    for (config, want) in cases {
        let mut kc = seed_kc("bad", "t1");
        kc["spec"]["kubeletConfig"] = config;
        assert_eq!(
            kubelet_config::outcome(&kc, &pools()),
            Outcome::Failure(want.into()),
            "{want}"
        );
    }
    let mut kc = seed_kc("bad", "t1");
    kc["spec"]["logLevel"] = json!(11);
    assert_eq!(
        kubelet_config::outcome(&kc, &pools()),
        Outcome::Failure("KubeletConfig's LogLevel is not valid [1,10]: 11".into())
    );
    kc["spec"]["logLevel"] = json!(4);
    kc["spec"]["autoSizingReserved"] = json!(true);
    assert!(
        matches!(kubelet_config::outcome(&kc, &pools()), Outcome::Failure(e) if e.contains("autoSizingReserved"))
    );
    // Settings berth does not simulate are carried, not refused (upstream's decoder ignores
    // what it does not know, and the kubelet the rest).
    let mut kc = seed_kc("ok", "t1");
    kc["spec"]["kubeletConfig"]["imageGCHighThresholdPercent"] = json!(80);
    assert!(matches!(
        kubelet_config::outcome(&kc, &pools()),
        Outcome::Success { .. }
    ));
}

#[test]
fn a_second_kubelet_config_of_a_pool_gets_the_next_suffix_by_age() {
    let kcs = [
        seed_kc("newer", "2026-01-02T00:00:00Z"),
        seed_kc("older", "2026-01-01T00:00:00Z"),
    ];
    let (_, configs) = kubelet_config::reconcile(&kcs, &pools());
    let names: Vec<&String> = configs.keys().collect();
    assert_eq!(
        names,
        [
            "99-worker-generated-kubelet",
            "99-worker-generated-kubelet-1"
        ]
    );
    assert_eq!(
        configs["99-worker-generated-kubelet"]["metadata"]["ownerReferences"][0]["name"],
        "older"
    );
    assert_eq!(
        configs["99-worker-generated-kubelet-1"]["metadata"]["ownerReferences"][0]["name"],
        "newer"
    );
}

#[test]
fn the_status_keeps_three_conditions_and_refreshes_a_repeated_one() {
    let mut kc = seed_kc("k", "t1");
    for (i, msg) in ["a", "b", "c", "d"].iter().enumerate() {
        kc["status"] =
            kubelet_config::status(&kc, &Outcome::Failure(msg.to_string()), &format!("t{i}"));
    }
    let messages: Vec<&str> = kc["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["message"].as_str().unwrap())
        .collect();
    assert_eq!(messages, ["Error: b", "Error: c", "Error: d"]);
    kc["status"] = kubelet_config::status(&kc, &Outcome::Failure("d".into()), "later");
    assert_eq!(kc["status"]["conditions"].as_array().unwrap().len(), 3);
    assert_eq!(kc["status"]["conditions"][2]["lastTransitionTime"], "later");
    assert!(kubelet_config::status_current(
        &kc,
        &Outcome::Failure("d".into())
    ));
    assert!(!kubelet_config::status_current(
        &kc,
        &Outcome::Success { pools: vec![] }
    ));
}

fn base_mc(name: &str, role: &str, files: Value) -> Value {
    json!({"metadata": {"name": name, "labels": {super::ROLE_LABEL: role}},
           "spec": {"config": {"ignition": {"version": "3.5.0"}, "storage": {"files": files}}}})
}

#[test]
fn a_pool_renders_its_machine_configs_in_name_order_later_files_winning() {
    let worker = &pools()[1];
    let mcs = vec![
        base_mc(
            "99-worker-generated-kubelet",
            "worker",
            json!([{"path": "/etc/kubernetes/kubelet.conf", "contents": {"source": "new"}}]),
        ),
        base_mc(
            "00-worker",
            "worker",
            json!([{"path": "/etc/kubernetes/kubelet.conf", "contents": {"source": "old"}}, {"path": "/etc/motd"}]),
        ),
        base_mc("00-master", "master", json!([{"path": "/etc/master"}])),
        json!({"metadata": {"name": "rendered-worker-0000", "labels": {super::ROLE_LABEL: "worker"}}}),
    ];
    let r = render::render(worker, &mcs).unwrap();
    assert!(
        r.name.starts_with("rendered-worker-") && r.name.len() == "rendered-worker-".len() + 32
    );
    let sources: Vec<&str> = r
        .source
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(sources, ["00-worker", "99-worker-generated-kubelet"]);
    let files = r.machine_config["spec"]["config"]["storage"]["files"]
        .as_array()
        .unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!(files[0]["contents"]["source"], "new");
    assert_eq!(
        r.machine_config["metadata"]["ownerReferences"][0]["name"],
        "worker"
    );
    // The same content renders the same name; other content another one.
    assert_eq!(render::render(worker, &mcs).unwrap().name, r.name);
    let base_only = render::render(worker, &mcs[1..]).unwrap();
    assert_ne!(base_only.name, r.name);
    // A pool whose selector selects nothing renders nothing.
    assert!(render::render(&pool("infra", json!({})), &mcs).is_none());
}

fn node(name: &str, role: &str, annotations: &[(&str, &str)], ready: bool) -> NodeView {
    NodeView {
        name: name.into(),
        labels: serde_json::from_value(json!({format!("node-role.kubernetes.io/{role}"): ""}))
            .unwrap(),
        annotations: annotations
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ready,
    }
}

fn at(config: &str) -> Vec<(&'static str, &str)> {
    vec![
        (CURRENT_CONFIG, config),
        (DESIRED_CONFIG, config),
        (STATE, "Done"),
    ]
}

fn targeting(mut pool: Value, target: &str, current: &str) -> Value {
    pool["spec"]["configuration"] = json!({"name": target});
    pool["status"] = json!({"configuration": {"name": current}});
    pool
}

#[test]
fn nodes_that_joined_get_the_pools_current_configuration_at_once() {
    let worker = targeting(pools()[1].clone(), "rendered-worker-b", "rendered-worker-a");
    let nodes = [
        node("node-1", "worker", &[], true),
        node("node-2", "worker", &at("rendered-worker-a"), true),
    ];
    let members: Vec<&NodeView> = nodes.iter().collect();
    let plan = rollout::plan(&worker, &members);
    assert_eq!(plan[0].0, "node-1");
    assert_eq!(plan[0].1[CURRENT_CONFIG], "rendered-worker-a");
    assert_eq!(plan[0].1[DESIRED_CONFIG], "rendered-worker-a");
    assert_eq!(plan[0].1[STATE], "Done");
    // node-2 is the first candidate; node-1 is not unavailable for joining.
    assert_eq!(
        plan[1],
        (
            "node-2".to_string(),
            BTreeMap::from([(DESIRED_CONFIG.to_string(), "rendered-worker-b".to_string())])
        )
    );
}

#[test]
fn a_pool_updates_one_node_at_a_time_by_default_in_name_order() {
    let worker = targeting(pools()[1].clone(), "b", "a");
    let nodes = [
        node("node-3", "worker", &at("a"), true),
        node("node-1", "worker", &at("a"), true),
        node("node-2", "worker", &at("a"), true),
    ];
    let members: Vec<&NodeView> = nodes.iter().collect();
    let plan = rollout::plan(&worker, &members);
    assert_eq!(
        plan.iter().map(|p| p.0.as_str()).collect::<Vec<_>>(),
        ["node-1"]
    );
    let status = rollout::status(&worker, &members, "now");
    assert_eq!(status["machineCount"], 3);
    assert_eq!(status["updatedMachineCount"], 0);
    assert_eq!(status["unavailableMachineCount"], 0);
    assert_eq!(status["configuration"]["name"], "a");

    // node-1 updating: no room for another.
    let nodes = [
        node(
            "node-1",
            "worker",
            &[
                (CURRENT_CONFIG, "a"),
                (DESIRED_CONFIG, "b"),
                (STATE, "Working"),
            ],
            true,
        ),
        node("node-2", "worker", &at("a"), true),
        node("node-3", "worker", &at("a"), true),
    ];
    let members: Vec<&NodeView> = nodes.iter().collect();
    assert!(rollout::plan(&worker, &members).is_empty());
    let status = rollout::status(&worker, &members, "now");
    assert_eq!(status["unavailableMachineCount"], 1);
    let cond = |s: &Value, t: &str| {
        s["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == t)
            .unwrap()
            .clone()
    };
    assert_eq!(cond(&status, "Updating")["status"], "True");
    assert_eq!(
        cond(&status, "Updating")["message"],
        "All nodes are updating to MachineConfig b"
    );
    assert_eq!(cond(&status, "Updated")["status"], "False");

    // maxUnavailable 2 (or 67% of 3): a second one may go.
    for max in [json!(2), json!("67%")] {
        let mut wider = worker.clone();
        wider["spec"]["maxUnavailable"] = max;
        let plan = rollout::plan(&wider, &members);
        assert_eq!(
            plan.iter().map(|p| p.0.as_str()).collect::<Vec<_>>(),
            ["node-2"]
        );
    }

    // All done: Updated, and the status names the new configuration.
    let nodes = [
        node("node-1", "worker", &at("b"), true),
        node("node-2", "worker", &at("b"), false),
    ];
    let members: Vec<&NodeView> = nodes.iter().collect();
    let status = rollout::status(&worker, &members, "now");
    assert_eq!(status["updatedMachineCount"], 2);
    assert_eq!(status["readyMachineCount"], 1);
    assert_eq!(status["unavailableMachineCount"], 1);
    assert_eq!(status["configuration"]["name"], "b");
    assert_eq!(cond(&status, "Updated")["status"], "True");
    assert_eq!(
        cond(&status, "Updated")["message"],
        "All nodes are updated with MachineConfig b"
    );
    assert_eq!(cond(&status, "Updating")["status"], "False");
}

#[test]
fn a_degraded_node_is_counted_and_takes_a_new_target_at_once() {
    let worker = targeting(pools()[1].clone(), "b", "a");
    let nodes = [
        node(
            "node-1",
            "worker",
            &[
                (CURRENT_CONFIG, "a"),
                (DESIRED_CONFIG, "a"),
                (STATE, "Degraded"),
                (super::REASON, "bad"),
            ],
            true,
        ),
        node("node-2", "worker", &at("a"), true),
    ];
    let members: Vec<&NodeView> = nodes.iter().collect();
    // node-1 is unavailable (degraded): it goes to the new target, node-2 waits for room.
    let plan = rollout::plan(&worker, &members);
    assert_eq!(
        plan.iter().map(|p| p.0.as_str()).collect::<Vec<_>>(),
        ["node-1"]
    );
    let stuck = [
        node(
            "node-1",
            "worker",
            &[
                (CURRENT_CONFIG, "a"),
                (DESIRED_CONFIG, "b"),
                (STATE, "Degraded"),
            ],
            true,
        ),
        node("node-2", "worker", &at("a"), true),
    ];
    let members: Vec<&NodeView> = stuck.iter().collect();
    assert!(rollout::plan(&worker, &members).is_empty());
    let status = rollout::status(&worker, &members, "now");
    assert_eq!(status["degradedMachineCount"], 1);
    let degraded = status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Degraded")
        .unwrap();
    assert_eq!(degraded["status"], "True");
}

#[test]
fn a_custom_pool_takes_its_nodes_from_worker_and_a_paused_pool_waits() {
    let mut infra = pool("infra", json!({}));
    infra["spec"]["nodeSelector"] = json!({"matchLabels": {"node-role.kubernetes.io/infra": ""}});
    let all = vec![pools()[0].clone(), pools()[1].clone(), infra.clone()];
    let mut both = node("node-1", "worker", &[], true);
    both.labels
        .insert("node-role.kubernetes.io/infra".into(), json!(""));
    let nodes = [both, node("node-2", "worker", &[], true)];
    let names = |p: &Value| {
        rollout::nodes_of(p, &all, &nodes)
            .iter()
            .map(|n| n.name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&infra), ["node-1"]);
    assert_eq!(names(&all[1]), ["node-2"]);
    assert!(names(&all[0]).is_empty());

    let mut paused = targeting(pools()[1].clone(), "b", "a");
    paused["spec"]["paused"] = json!(true);
    let n = [node("node-2", "worker", &at("a"), true)];
    let members: Vec<&NodeView> = n.iter().collect();
    assert!(rollout::plan(&paused, &members).is_empty());
}

#[test]
fn an_empty_pool_is_updated() {
    let master = targeting(pools()[0].clone(), "m", "");
    let status = rollout::status(&master, &[], "now");
    assert_eq!(status["machineCount"], 0);
    assert_eq!(status["configuration"]["name"], "m");
    let updated = status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Updated")
        .unwrap();
    assert_eq!(updated["status"], "True");
}
