use super::*;

/// The node's `/configz` as its kubelet answers it.
fn configz(node: &NodeConfig) -> Value {
    crate::configz::configz(
        node,
        std::time::Duration::from_secs(10),
        std::time::Duration::from_secs(10),
    )
}

const EXAMPLE: &str = include_str!("../../../../examples/cluster.yaml");

fn node<'a>(c: &'a Cluster, name: &str) -> &'a NodeConfig {
    c.nodes.iter().find(|n| n.name == name).unwrap()
}

#[test]
fn example_file() {
    let c = parse_cluster(EXAMPLE).unwrap();
    let names: Vec<&str> = c.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["general-1", "general-2", "small-1", "gpu-node-1"]);
    let g = node(&c, "general-1");
    assert_eq!(g.allocatable["memory"].to_string(), "29596Mi");
    assert_eq!(g.allocatable["cpu"].to_string(), "7500m");
    assert_eq!(g.labels["topology.kubernetes.io/zone"], "zone-a");
    assert_eq!(g.labels["kubernetes.io/hostname"], "general-1");
    assert_eq!(g.images.len(), 2);
    // memory.available is copied to allocatableMemory.available (enforce-node-allocatable=pods).
    assert_eq!(g.eviction.thresholds.len(), 5);
    let s = node(&c, "small-1");
    assert_eq!(s.allocatable["memory"].value(), 8204 << 20);
    assert_eq!(s.eviction.max_pod_grace_period, 30);
    assert!(s.imagefs.is_some());
    let gpu = node(&c, "gpu-node-1");
    assert_eq!(gpu.allocatable["nvidia.com/gpu"].to_string(), "2");
    assert_eq!(gpu.allocatable["cpu"].to_string(), "15");
    assert_eq!(gpu.allocatable["memory"].value(), (63 << 30) - (100 << 20));
    assert_eq!(gpu.taints[0].key, "nvidia.com/gpu");
}

#[test]
fn seed_node_config_and_kubelet_config_forms() {
    let text = r#"
pools:
- name: seed001
  capacity: {memory: 10Gi}
  kubeletArguments:
    eviction-hard: ["memory.available<10%"]
    system-reserved: ["memory=1Gi"]
    max-pods: ["250"]
    image-gc-high-threshold: ["85"]
- name: seed004
  kubeletConfig:
    apiVersion: machineconfiguration.openshift.io/v1
    kind: KubeletConfig
    metadata: {name: set-allocatable}
    spec:
      machineConfigPoolSelector: {matchLabels: {custom-kubelet: small-pods}}
      kubeletConfig:
        systemReserved: {cpu: 500m, memory: 512Mi}
        kubeReserved: {cpu: 500m, memory: 512Mi}
"#;
    let c = parse_cluster(text).unwrap();
    let a = &c.nodes[0].allocatable;
    assert_eq!(a["memory"].value(), 8589934576);
    assert_eq!(a["pods"].to_string(), "250");
    assert_eq!(c.ignored, vec!["seed001: image-gc-high-threshold"]);
    let b = &c.nodes[1].allocatable;
    assert_eq!(b["cpu"].to_string(), "3");
    // No evictionHard given: upstream's defaults apply, memory.available<100Mi among them.
    assert_eq!(b["memory"].to_string(), "15260Mi");
    assert_eq!(c.nodes[1].eviction.thresholds.len(), 5);
}

#[test]
fn errors_name_pool_and_field() {
    let cases = [
        (
            "pools:\n- name: p\n  capacity: {memory: 10Gx}\n",
            "pool p: capacity.memory: invalid quantity",
        ),
        (
            "pools:\n- name: p\n  kubeletArguments:\n    eviction-hard: [\"mem.available<1Gi\"]\n",
            "pool p: kubeletArguments.eviction-hard: unsupported eviction signal mem.available",
        ),
        (
            "pools:\n- name: p\n  kubeletArguments:\n    eviction-soft: [\"memory.available<1Gi\"]\n",
            "pool p: kubeletArguments.eviction-soft: grace period must be specified for the soft eviction threshold memory.available",
        ),
        (
            "pools:\n- name: p\n  kubeletArguments:\n    system-reserved: [\"memory=lots\"]\n",
            "pool p: kubeletArguments.system-reserved: invalid quantity",
        ),
        (
            "pools:\n- name: p\n  kubeletConfig:\n    evictionHard: {memory.available: -1Gi}\n",
            "pool p: kubeletConfig (eviction-hard): eviction threshold memory.available must be positive",
        ),
        (
            "pools:\n- name: p\n  kubeletArguments:\n    eviction-pressure-transition-period: [\"5 minutes\"]\n",
            "pool p: kubeletArguments.eviction-pressure-transition-period: invalid duration",
        ),
        ("pools:\n- name: p\n  capacty: {}\n", "pool p: pool: unknown field `capacty`"),
        ("pools:\n- count: 2\n- count: 1\n  capacity: {cpu: x}\n", "pool #2: capacity.cpu"),
        (
            "pools:\n- name: a\n  namePrefix: n-\n- name: b\n  namePrefix: n-\n",
            "pool b: namePrefix: node name n-1 is used twice",
        ),
        (
            "pools:\n- name: p\n  taints: [{key: k, effect: Never}]\n",
            "pool p: taints: effect \"Never\"",
        ),
        ("pools: []\n", "cluster file: pools: at least one pool"),
        ("nodes: 3\n", "cluster file:"),
    ];
    for (text, want) in cases {
        let e = parse_cluster(text).unwrap_err().to_string();
        assert!(e.starts_with(want), "{e}\n  wanted {want}");
    }
}

#[test]
fn quick_nodes_have_upstream_default_thresholds() {
    let n = NodeConfig::quick(2);
    assert_eq!(n[1].name, "node-2");
    assert_eq!(n[0].labels["node-role.kubernetes.io/worker"], "");
    // memory.available<100Mi, nodefs.available<10%, nodefs.inodesFree<5%, imagefs.available<15%,
    // and allocatableMemory.available<100Mi (enforce-node-allocatable=pods).
    assert_eq!(n[0].eviction.thresholds.len(), 5);
    assert_eq!(n[0].allocatable["memory"].to_string(), "16284Mi");
    assert_eq!(n[0].allocatable["cpu"], n[0].capacity["cpu"]);
    assert_eq!(n[0].allocatable["pods"], n[0].capacity["pods"]);
}

#[test]
fn a_pool_without_eviction_hard_gets_the_defaults_and_an_empty_list_none() {
    let c = parse_cluster("pools: [{name: a}, {name: b, kubeletArguments: {eviction-hard: []}}]")
        .unwrap();
    assert_eq!(c.nodes[0].eviction.thresholds.len(), 5);
    assert!(c.nodes[1].eviction.thresholds.is_empty());
    assert_eq!(c.nodes[1].allocatable, c.nodes[1].capacity);
}

#[test]
fn a_pool_zone_sets_both_zone_labels() {
    let text = "pools:\n- name: east\n  count: 2\n  zone: east-1\n- name: plain\n";
    let c = parse_cluster(text).unwrap();
    let east = node(&c, "east-2");
    for key in ZONE_LABELS {
        assert_eq!(east.labels[key], "east-1", "{key}");
    }
    assert!(!node(&c, "plain-1").labels.contains_key(ZONE_LABELS[0]));
}

#[test]
fn a_pool_failure_schedule_names_nodes_times_and_modes() {
    use crate::failures::Failure;
    use crate::simulate::Simulate;
    use std::time::Duration;
    let text = "pools:\n- name: small\n  count: 3\n  failures:\n  - {node: small-2, stop: 30s, for: 60s, mode: partitioned}\n  - {stop: 5m}\n";
    let c = parse_cluster(text).unwrap();
    let s = |n| Duration::from_secs(n);
    let all = Failure {
        stop: s(300),
        duration: None,
        mode: Simulate::Stopped,
    };
    assert_eq!(node(&c, "small-1").failures, std::slice::from_ref(&all));
    assert_eq!(
        node(&c, "small-2").failures,
        [
            Failure {
                stop: s(30),
                duration: Some(s(60)),
                mode: Simulate::Partitioned,
            },
            all
        ]
    );
}

#[test]
fn bad_failure_entries_are_refused_naming_the_field() {
    let cases = [
        (
            "{node: small-9, stop: 30s}",
            "failures[0].node",
            "no node \"small-9\"",
        ),
        ("{stop: soon}", "failures[0].stop", ""),
        ("{stop: 1s, for: 0s}", "failures[0].for", "longer than 0s"),
        (
            "{stop: 1s, mode: running}",
            "failures[0].mode",
            "not a failure",
        ),
        (
            "{stop: 1s, mode: exploded}",
            "failures[0].mode",
            "not a failure",
        ),
        ("{stop: 1s, when: later}", "pool", "when"),
    ];
    for (entry, field, reason) in cases {
        let text = format!("pools:\n- name: small\n  count: 2\n  failures:\n  - {entry}\n");
        let e = parse_cluster(&text).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("pool small: {field}: ")) && e.contains(reason),
            "{entry}: {e}"
        );
    }
}

#[test]
fn the_pod_priority_gate_chooses_the_eviction_order() {
    let text = r#"
pools:
- name: gate-on
- name: gate-off
  kubeletArguments:
    feature-gates: ["PodPriority=false,RotateKubeletServerCertificate=true"]
- name: off-config
  kubeletConfig:
    featureGates: {PodPriority: false}
- name: bad
  kubeletArguments:
    feature-gates: ["PodPriority=maybe"]
"#;
    let err = parse_cluster(text).unwrap_err().to_string();
    assert_eq!(
        err,
        "pool bad: kubeletArguments.feature-gates: invalid value of PodPriority: \"maybe\", expected true or false"
    );
    let c = parse_cluster(&text.replace("PodPriority=maybe", "PodPriority=true")).unwrap();
    let gate: Vec<bool> = c.nodes.iter().map(|n| n.eviction.pod_priority).collect();
    assert_eq!(gate, [true, false, false, true]);
    assert!(c.ignored.is_empty(), "{:?}", c.ignored);
}

#[test]
fn a_machine_configs_kubelet_configuration_is_laid_over_the_nodes_own() {
    let own = NodeConfig::quick(1).remove(0);
    // Seed 004's KubeletConfig: 4 CPU and 16Gi less 1 CPU and 1Gi reserved and the default
    // memory.available<100Mi.
    let seed_004 = serde_json::json!({
        "kind": "KubeletConfiguration",
        "systemReserved": {"cpu": "500m", "memory": "512Mi"},
        "kubeReserved": {"cpu": "500m", "memory": "512Mi"},
    });
    let n = own.reconfigured(&seed_004).unwrap();
    assert_eq!(n.allocatable["cpu"].to_string(), "3");
    assert_eq!(n.allocatable["memory"].to_string(), "15260Mi");
    assert_eq!(n.eviction, own.eviction);
    assert_eq!(
        configz(&n)["kubeletconfig"]["systemReserved"]["memory"],
        "512Mi"
    );
    // Seed 001's eviction settings: the hard threshold leaves allocatable, the soft one waits
    // its grace period.
    let seed_001 = serde_json::json!({
        "evictionHard": {"memory.available": "500Mi"},
        "evictionSoft": {"memory.available": "10%"},
        "evictionSoftGracePeriod": {"memory.available": "30s"},
        "evictionPressureTransitionPeriod": "1m",
        "systemReserved": {"memory": "1536Mi"},
        "maxPods": 40,
    });
    let n = own.reconfigured(&seed_001).unwrap();
    assert_eq!(n.allocatable["memory"].to_string(), "14348Mi");
    assert_eq!(n.capacity["pods"].to_string(), "40");
    assert_eq!(n.eviction.pressure_transition_period.as_secs(), 60);
    let soft: Vec<_> = n.eviction.thresholds.iter().filter(|t| !t.hard).collect();
    assert_eq!(soft.len(), 1);
    assert_eq!(soft[0].grace_period.as_secs(), 30);
    let shown = configz(&n);
    assert_eq!(
        shown["kubeletconfig"]["evictionHard"],
        serde_json::json!({"memory.available": "500Mi"})
    );
    assert_eq!(
        shown["kubeletconfig"]["evictionSoft"]["memory.available"],
        "10%"
    );
    assert_eq!(
        shown["kubeletconfig"]["evictionPressureTransitionPeriod"],
        "1m0s"
    );
    assert_eq!(shown["kubeletconfig"]["maxPods"], 40);
    // podsPerCore caps pods at cores x podsPerCore.
    let n = own
        .reconfigured(&serde_json::json!({"podsPerCore": 10}))
        .unwrap();
    assert_eq!(n.capacity["pods"].to_string(), "40");
    // An empty configuration gives the node back its own settings.
    assert_eq!(own.reconfigured(&serde_json::json!({})).unwrap(), own);
    // A setting the kubelet cannot run with is an error naming it.
    let e = own
        .reconfigured(&serde_json::json!({"evictionHard": {"memory.available": "lots"}}))
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("kubelet configuration: eviction-hard"),
        "{e}"
    );
}

#[test]
fn a_pool_without_a_role_is_of_workers() {
    let c = parse_cluster(
        "pools:\n- name: a\n- name: b\n  labels: {node-role.kubernetes.io/infra: \"\"}\n",
    )
    .unwrap();
    assert_eq!(c.nodes[0].labels["node-role.kubernetes.io/worker"], "");
    assert!(!c.nodes[1]
        .labels
        .contains_key("node-role.kubernetes.io/worker"));
}
