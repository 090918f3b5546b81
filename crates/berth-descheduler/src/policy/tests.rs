use super::*;
use proptest::prelude::*;

/// The seed's sample policy file (16.3.3), verbatim.
const SEED: &str = r#"apiVersion: "descheduler/v1alpha1"
kind: "DeschedulerPolicy"
strategies:
  "RemoveDuplicates":
     enabled: false
  "LowNodeUtilization":
     enabled: true
     params:
       nodeResourceUtilizationThresholds:
         thresholds:
           "cpu" : 20
           "memory": 20
           "pods": 20
         targetThresholds:
           "cpu" : 50
           "memory": 50
           "pods": 50
         numberOfNodes: 3
  "RemovePodsViolatingInterPodAntiAffinity":
     enabled: true
  "RemovePodsViolatingNodeAffinity":
    enabled: true
    params:
      nodeAffinityType:
      - "requiredDuringSchedulingIgnoredDuringExecution"
"#;

fn err(text: &str) -> PolicyError {
    Policy::parse("policy.yaml", text).unwrap_err()
}

#[test]
fn the_seeds_sample_policy_is_read_as_written() {
    let p = Policy::parse("policy.yaml", SEED).unwrap();
    assert!(!p.remove_duplicates);
    assert!(p.inter_pod_anti_affinity && p.node_affinity && !p.node_taints);
    let l = p.low_node_utilization.unwrap();
    assert_eq!(
        l.thresholds,
        Thresholds {
            cpu: Some(20.0),
            memory: Some(20.0),
            pods: Some(20.0)
        }
    );
    assert_eq!(l.target_thresholds.pods, Some(50.0));
    assert_eq!(l.number_of_nodes, 3);
    assert!(p.warnings.is_empty());
}

#[test]
fn the_same_policy_as_json_is_the_same() {
    let v: serde_json::Value = serde_saphyr::from_str(SEED).unwrap();
    let p = Policy::parse("policy.json", &v.to_string()).unwrap();
    assert_eq!(p.low_node_utilization.unwrap().number_of_nodes, 3);
}

#[test]
fn the_seeds_per_strategy_snippets_with_callouts_are_read() {
    let lnu = "apiVersion: \"descheduler/v1alpha1\"\nkind: \"DeschedulerPolicy\"\nstrategies:\n  \"LowNodeUtilization\":\n     enabled: true\n     params:\n       nodeResourceUtilizationThresholds:\n         thresholds: 1\n           \"cpu\" : 20\n           \"memory\": 20\n           \"pods\": 20\n         targetThresholds: 2\n           \"cpu\" : 50\n           \"memory\": 50\n           \"pods\": 50\n         numberOfNodes: 3 3\n";
    assert_eq!(
        Policy::parse("p", lnu)
            .unwrap()
            .low_node_utilization
            .unwrap()
            .number_of_nodes,
        3
    );
    let dup = "apiVersion: \"descheduler/v1alpha1\"\nkind: \"DeschedulerPolicy\"\nstrategies:\n  \"RemoveDuplicates\":\n     enabled: false 1\n";
    assert!(!Policy::parse("p", dup).unwrap().remove_duplicates);
}

#[test]
fn errors_name_the_file_the_strategy_and_the_field() {
    let e = err(&SEED.replace("\"cpu\" : 20", "\"cpu\" : lots"));
    assert_eq!(e.file, "policy.yaml");
    assert_eq!(e.strategy, "LowNodeUtilization");
    assert_eq!(
        e.field,
        "params.nodeResourceUtilizationThresholds.thresholds.cpu"
    );
    assert_eq!(
        e.to_string(),
        "policy.yaml: strategy LowNodeUtilization: field params.nodeResourceUtilizationThresholds.thresholds.cpu: must be a number (percent)"
    );
    let e = err(&SEED.replace("\"pods\": 20", "\"gpu\": 20"));
    assert_eq!(
        e.field,
        "params.nodeResourceUtilizationThresholds.thresholds.gpu"
    );
    assert_eq!(
        e.reason,
        "only cpu, memory, or pods thresholds can be specified"
    );
    let e = err(&SEED.replace(
        "enabled: true\n     params",
        "enabled: yes please\n     params",
    ));
    assert_eq!(
        (e.strategy.as_str(), e.field.as_str()),
        ("LowNodeUtilization", "enabled")
    );
    let e = err(&SEED.replace("kind: \"DeschedulerPolicy\"", "kind: \"Policy\""));
    assert_eq!((e.strategy.as_str(), e.field.as_str()), ("policy", "kind"));
    let e = err("{\"apiVersion\": ");
    assert!(e.reason.starts_with("malformed JSON"), "{e}");
}

#[test]
fn targets_without_pods_are_an_error_not_a_silent_no_op() {
    let e = err(&SEED.replace("           \"pods\": 50\n", ""));
    assert_eq!(
        e.field,
        "params.nodeResourceUtilizationThresholds.targetThresholds.pods"
    );
}

#[test]
fn unknown_strategies_are_warned_about() {
    let p = Policy::parse(
        "p",
        &SEED.replace("\"RemoveDuplicates\":", "\"RemoveDuplicate\":"),
    )
    .unwrap();
    assert!(
        p.warnings[0].contains("RemoveDuplicate"),
        "{:?}",
        p.warnings
    );
}

const V2: &str = r#"apiVersion: "descheduler/v1alpha2"
kind: "DeschedulerPolicy"
nodeSelector: "node-role.kubernetes.io/worker"
maxNoOfPodsToEvictPerNode: 5
profiles:
  - name: ProfileName
    pluginConfig:
    - name: "DefaultEvictor"
      args:
        evictLocalStoragePods: true
        priorityThreshold:
          value: 1000
    - name: "LowNodeUtilization"
      args:
        thresholds:
          "cpu" : 20
          "memory": 20
          "pods": 20
        targetThresholds:
          "cpu" : 50
          "memory": 50
          "pods": 50
    - name: "RemovePodsViolatingNodeAffinity"
      args:
        nodeAffinityType:
        - "requiredDuringSchedulingIgnoredDuringExecution"
    plugins:
      balance:
        enabled:
          - "RemoveDuplicates"
          - "LowNodeUtilization"
      deschedule:
        enabled:
          - "RemovePodsViolatingInterPodAntiAffinity"
          - "RemovePodsViolatingNodeAffinity"
          - "RemovePodsViolatingNodeTaints"
"#;

#[test]
fn v1alpha2_profiles_enable_the_same_strategies() {
    let p = Policy::parse("v2.yaml", V2).unwrap();
    assert!(p.remove_duplicates && p.inter_pod_anti_affinity && p.node_affinity && p.node_taints);
    let l = p.low_node_utilization.unwrap();
    assert!(l.gate_inclusive);
    assert_eq!(l.thresholds.cpu, Some(20.0));
    assert!(p.evictor.evict_local_storage_pods);
    assert_eq!(p.evictor.priority_threshold, Some(1000));
    assert_eq!(p.max_pods_to_evict_per_node, Some(5));
    assert_eq!(
        p.node_selector.as_deref(),
        Some("node-role.kubernetes.io/worker")
    );
}

#[test]
fn v1alpha2_thresholds_default_to_100_and_are_validated() {
    let only_cpu = V2
        .replace("          \"memory\": 20\n          \"pods\": 20\n", "")
        .replace("          \"memory\": 50\n          \"pods\": 50\n", "");
    let l = Policy::parse("v2", &only_cpu)
        .unwrap()
        .low_node_utilization
        .unwrap();
    assert_eq!(l.thresholds.pods, Some(100.0));
    let e = err(&V2.replace("\"cpu\" : 20", "\"cpu\" : 70"));
    assert_eq!(
        (e.strategy.as_str(), e.field.as_str()),
        ("LowNodeUtilization", "args.thresholds.cpu")
    );
    let e = err(&V2.replace("\"cpu\" : 50", "\"cpu\" : 150"));
    assert_eq!(e.field, "args.targetThresholds.cpu");
    let e = err(&V2.replace(
        "- \"RemoveDuplicates\"",
        "- \"RemoveDuplicates\"\n          - \"RemovePodsViolatingNodeTaints\"",
    ));
    assert!(e.reason.contains("is a deschedule plugin"), "{e}");
    let e = err(&V2.replace(
        "evictLocalStoragePods: true",
        "evictLocalStoragePods: sometimes",
    ));
    assert_eq!(
        (e.strategy.as_str(), e.field.as_str()),
        ("DefaultEvictor", "args.evictLocalStoragePods")
    );
    let e = err(&V2.replace("- \"RemoveDuplicates\"", "- \"RemoveDuplicatez\""));
    assert_eq!(e.field, "profiles[0].plugins.balance.enabled[0]");
}

proptest! {
    #[test]
    fn any_text_gives_a_policy_or_an_error(text in ".{0,400}") {
        let _ = Policy::parse("p", &text);
    }

    #[test]
    fn any_yaml_shaped_text_gives_a_policy_or_an_error(
        lines in proptest::collection::vec("( {0,6})(\"?[a-zA-Z]{1,12}\"?)(: ?)([a-z0-9.\\-\\[\\]{}\" ]{0,10})", 0..12)
    ) {
        let text = format!("apiVersion: descheduler/v1alpha1\nkind: DeschedulerPolicy\n{}", lines.join("\n"));
        let _ = Policy::parse("p", &text);
        let v2 = text.replace("v1alpha1", "v1alpha2");
        let _ = Policy::parse("p", &v2);
    }

    #[test]
    fn mutated_seed_policies_never_panic(at in 0usize..SEED.len(), insert in "[ :\\-\"0-9a-z\n]{0,4}") {
        let at = (0..=at).rev().find(|i| SEED.is_char_boundary(*i)).unwrap_or(0);
        let text = format!("{}{}{}", &SEED[..at], insert, &SEED[at..]);
        let _ = Policy::parse("p", &text);
        let v2 = format!("{}{}{}", &V2[..at.min(V2.len())], insert, &V2[at.min(V2.len())..]);
        let _ = Policy::parse("p", &v2);
    }
}

#[test]
fn v1alpha2_default_evictor_arguments_are_read() {
    let p = Policy::parse(
        "v2.yaml",
        &V2.replace(
            "        evictLocalStoragePods: true\n",
            "        evictLocalStoragePods: true\n        nodeFit: true\n        evictFailedBarePods: true\n        minReplicas: 2\n        minPodAge: 5m\n",
        ),
    )
    .unwrap();
    let e = &p.evictor;
    assert!(e.node_fit && e.evict_failed_bare_pods);
    assert_eq!(e.min_replicas, 2);
    assert_eq!(e.min_pod_age_seconds, Some(300));
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
}

#[test]
fn v1alpha2_default_evictor_refuses_a_priority_threshold_with_both_fields() {
    let e = err(&V2.replace(
        "          value: 1000\n",
        "          value: 1000\n          name: high\n",
    ));
    assert_eq!(
        (e.strategy.as_str(), e.field.as_str()),
        ("DefaultEvictor", "args.priorityThreshold")
    );
    assert_eq!(
        e.reason,
        "priority threshold misconfigured, only one of priorityThreshold fields can be set"
    );
    let e = err(&V2.replace(
        "        evictLocalStoragePods: true\n",
        "        minPodAge: soon\n",
    ));
    assert_eq!(e.field, "args.minPodAge");
}

#[test]
fn v1alpha2_plugins_are_enabled_at_their_extension_point_only() {
    let with = |point: &str, plugin: &str| {
        V2.replace(
            "      deschedule:\n        enabled:\n",
            &format!("      {point}:\n        enabled:\n          - \"{plugin}\"\n"),
        )
    };
    let p = Policy::parse(
        "v2",
        &with("deschedule", "RemoveFailedPods").replace(
            "    - name: \"RemovePodsViolatingNodeAffinity\"",
            "    - name: \"RemoveFailedPods\"\n      args:\n        reasons: [\"OOMKilled\"]\n    - name: \"RemovePodsViolatingNodeAffinity\"",
        ),
    )
    .unwrap();
    assert_eq!(p.remove_failed_pods.unwrap().reasons, ["OOMKilled"]);
    let e = err(&with("deschedule", "HighNodeUtilization"));
    assert!(e.reason.contains("is a balance plugin"), "{e}");
    let p = Policy::parse(
        "v2",
        &V2.replace(
            "          - \"LowNodeUtilization\"\n",
            "          - \"LowNodeUtilization\"\n          - \"RemovePodsViolatingTopologySpreadConstraint\"\n",
        ),
    )
    .unwrap();
    let t = p.topology_spread.unwrap();
    assert_eq!(t.constraints, ["DoNotSchedule"]);
    assert!(t.node_fit);
}

#[test]
fn the_seeds_file_does_not_know_the_v1alpha2_plugins() {
    let p = Policy::parse(
        "p",
        &SEED.replace("\"RemoveDuplicates\":", "\"PodLifeTime\":"),
    )
    .unwrap();
    assert!(p.pod_life_time.is_none());
    assert!(p.warnings[0].contains("\"PodLifeTime\" is not one berth knows"));
    assert!(
        !p.warnings[0].contains("RemoveFailedPods"),
        "{:?}",
        p.warnings
    );
}
