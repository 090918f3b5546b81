//! Load, default and validate, with vectors from upstream's `v1/defaults_test.go` and
//! `validation/validation_test.go`.

use super::*;

const HEAD: &str = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

fn load(body: &str) -> Result<SchedulerConfiguration, ConfigError> {
    SchedulerConfiguration::from_str(&format!("{HEAD}{body}"))
}

fn errors(body: &str) -> Vec<String> {
    match load(body) {
        Ok(_) => Vec::new(),
        Err(e) => e.errors.iter().map(|e| e.to_string()).collect(),
    }
}

#[test]
fn an_empty_configuration_gets_upstreams_defaults() {
    let c = load("").unwrap();
    assert_eq!(c.parallelism, 16);
    assert_eq!(c.percentage_of_nodes_to_score, 0);
    assert_eq!(
        (c.pod_initial_backoff_seconds, c.pod_max_backoff_seconds),
        (1, 10)
    );
    let le = &c.leader_election;
    assert!(le.leader_elect);
    assert_eq!(le.lease_duration, Duration::from_secs(15));
    assert_eq!(le.renew_deadline, Duration::from_secs(10));
    assert_eq!(le.retry_period, Duration::from_secs(2));
    assert_eq!(
        (
            le.resource_lock.as_str(),
            le.resource_name.as_str(),
            le.resource_namespace.as_str()
        ),
        ("leases", "kube-scheduler", "kube-system")
    );
    assert_eq!(c.client_connection.qps, 50.0);
    assert_eq!(c.client_connection.burst, 100);
    assert_eq!(
        c.client_connection.content_type,
        "application/vnd.kubernetes.protobuf"
    );
    assert_eq!(c.profiles.len(), 1);
    assert_eq!(c.profiles[0].scheduler_name, "default-scheduler");
    let names: Vec<&str> = c.profiles[0]
        .plugins
        .multi_point
        .enabled
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(
        names[..4],
        [
            "SchedulingGates",
            "PrioritySort",
            "NodeUnschedulable",
            "NodeName"
        ]
    );
    // Default args for every enabled plugin that takes args, in name order.
    let configs: Vec<&str> = c.profiles[0]
        .plugin_config
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(
        configs,
        [
            "DefaultPreemption",
            "DynamicResources",
            "InterPodAffinity",
            "NodeAffinity",
            "NodeResourcesBalancedAllocation",
            "NodeResourcesFit",
            "PodTopologySpread",
            "VolumeBinding"
        ]
    );
    assert!(c.profiles[0].plugin_config.contains(&PluginConfig {
        name: "DefaultPreemption".into(),
        args: Args::DefaultPreemption {
            min_candidate_nodes_percentage: 10,
            min_candidate_nodes_absolute: 100
        }
    }));
    assert!(c.profiles[0].plugin_config.contains(&PluginConfig {
        name: "VolumeBinding".into(),
        args: Args::VolumeBinding {
            bind_timeout_seconds: 600,
            shape: None
        }
    }));
}

#[test]
fn several_profiles_keep_their_names_and_the_lone_unnamed_one_is_refused() {
    let c = load("profiles:\n- schedulerName: a\n- schedulerName: b\n").unwrap();
    assert_eq!(c.profiles[1].scheduler_name, "b");
    assert_eq!(
        errors("profiles:\n- schedulerName: a\n- {}\n"),
        ["profiles[1].schedulerName: Required value"]
    );
    assert_eq!(
        errors("profiles:\n- schedulerName: a\n- schedulerName: a\n"),
        ["profiles[1].schedulerName: Duplicate value: profiles[0].schedulerName"]
    );
}

#[test]
fn partial_args_are_defaulted_field_by_field() {
    let c = load(
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: MostAllocated}}\n  - name: InterPodAffinity\n    args: {}\n",
    )
    .unwrap();
    let p = &c.profiles[0];
    assert_eq!(
        p.plugin_config[0].args,
        Args::NodeResourcesFit {
            ignored_resources: vec![],
            ignored_resource_groups: vec![],
            scoring_strategy: ScoringStrategy {
                type_: "MostAllocated".into(),
                resources: vec![
                    ResourceSpec {
                        name: "cpu".into(),
                        weight: 1
                    },
                    ResourceSpec {
                        name: "memory".into(),
                        weight: 1
                    }
                ],
                shape: None
            }
        }
    );
    assert_eq!(
        p.plugin_config[1].args,
        Args::InterPodAffinity {
            hard_pod_affinity_weight: 1,
            ignore_preferred_terms_of_existing_pods: false
        }
    );
}

#[test]
fn upstream_validation_vectors_are_worded_as_upstream() {
    let cases: &[(&str, &str)] = &[
        ("parallelism: 0\n", "parallelism: Invalid value: 0: should be an integer value greater than zero"),
        ("percentageOfNodesToScore: 110\n", "percentageOfNodesToScore: Invalid value: 110: not in valid range [0-100]"),
        ("podInitialBackoffSeconds: 0\n", "podInitialBackoffSeconds: Invalid value: 0: must be greater than 0"),
        ("podInitialBackoffSeconds: 10\npodMaxBackoffSeconds: 5\n", "podMaxBackoffSeconds: Invalid value: 5: must be greater than or equal to PodInitialBackoffSeconds"),
        ("leaderElection: {resourceLock: configmap}\n", "leaderElection.resourceLock: Invalid value: \"configmap\": resourceLock value must be \"leases\""),
        ("leaderElection: {leaseDuration: 5s}\n", "leaderElection.leaseDuration: Invalid value: 10s: LeaseDuration must be greater than RenewDeadline"),
        ("clientConnection: {burst: -1}\n", "clientConnection.burst: Invalid value: -1: must be non-negative"),
        ("profiles:\n- percentageOfNodesToScore: -1\n", "profiles[0].percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]"),
        (
            "profiles:\n- pluginConfig:\n  - name: DefaultPreemption\n    args: {minCandidateNodesPercentage: 0, minCandidateNodesAbsolute: 0}\n",
            "profiles[0].pluginConfig[0].args.minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: DefaultPreemption\n    args: {minCandidateNodesPercentage: 101}\n",
            "profiles[0].pluginConfig[0].args.minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args: {hardPodAffinityWeight: -1}\n",
            "profiles[0].pluginConfig[0].args.hardPodAffinityWeight: Invalid value: -1: not in valid range [0, 100]",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: Invalid}}\n",
            "profiles[0].pluginConfig[0].args.scoringStrategy.type: Unsupported value: \"Invalid\": supported values: \"LeastAllocated\", \"MostAllocated\", \"RequestedToCapacityRatio\"",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: LeastAllocated, resources: [{name: cpu, weight: 101}]}}\n",
            "profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight: Invalid value: 101: resource weight of cpu not in valid range (0, 100]",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: RequestedToCapacityRatio}}\n",
            "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio: Required value: must be specified when type is RequestedToCapacityRatio",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: RequestedToCapacityRatio, requestedToCapacityRatio: {shape: [{utilization: 50, score: 1}, {utilization: 10, score: 11}]}}}\n",
            "profiles[0].pluginConfig[0].args.scoringStrategy.shape[1].utilization: Invalid value: 10: values must be sorted in increasing order",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {ignoredResourceGroups: [example.com/aaa]}\n",
            "profiles[0].pluginConfig[0].args.ignoredResourceGroups[0]: Invalid value: \"example.com/aaa\": resource group name can't contain '/'",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesBalancedAllocation\n    args: {resources: [{name: cpu, weight: 2}]}\n",
            "profiles[0].pluginConfig[0].args.resources[0].weight: Invalid value: 2: must be 1",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args: {defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}]}\n",
            "profiles[0].pluginConfig[0].args.defaultingType: Invalid value: \"System\": when .defaultConstraints are not empty",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args: {defaultingType: List, defaultConstraints: [{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}]}\n",
            "profiles[0].pluginConfig[0].args.defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: VolumeBinding\n    args: {bindTimeoutSeconds: -10}\n",
            "profiles[0].pluginConfig[0].args.bindTimeoutSeconds: Invalid value: -10: invalid BindTimeoutSeconds, should not be a negative value",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: VolumeBinding\n  - name: VolumeBinding\n",
            "profiles[0].pluginConfig[1]: Duplicate value: \"VolumeBinding\"",
        ),
    ];
    for (body, want) in cases {
        assert_eq!(
            errors(body).first().map(String::as_str),
            Some(*want),
            "{body}"
        );
    }
}

#[test]
fn unknown_and_removed_plugins_are_refused_naming_the_field() {
    assert_eq!(
        errors("profiles:\n- plugins:\n    score:\n      enabled: [{name: NodeResourcesFit}, {name: Foo}]\n"),
        ["profiles[0].plugins.score.enabled[1]: Invalid value: \"Foo\": ScorePlugin \"Foo\" does not exist"]
    );
    assert_eq!(
        errors("profiles:\n- plugins:\n    filter:\n      enabled: [{name: ImageLocality}]\n"),
        ["profiles[0].plugins.filter.enabled[0]: Invalid value: \"ImageLocality\": plugin \"ImageLocality\" does not extend FilterPlugin plugin"]
    );
    assert_eq!(
        errors("profiles:\n- plugins:\n    filter:\n      enabled: [{name: EBSLimits}]\n"),
        ["profiles[0].plugins.filter.enabled[0]: Invalid value: \"EBSLimits\": was invalid in version \"kubescheduler.config.k8s.io/v1\" (KubeSchedulerConfiguration is version \"kubescheduler.config.k8s.io/v1\")"]
    );
    assert_eq!(
        errors("profiles:\n- pluginConfig:\n  - name: Bar\n"),
        ["profiles[0].pluginConfig[0].name: Invalid value: \"Bar\": plugin \"Bar\" does not exist"]
    );
    assert_eq!(
        errors("profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args: {kind: NodeAffinityArgs}\n"),
        ["profiles[0].pluginConfig[0].args: Invalid value: \"NodeAffinityArgs\": has to match plugin args"]
    );
}

#[test]
fn unknown_fields_are_strict_decoding_errors() {
    assert_eq!(
        errors("parallelizm: 3\nprofiles:\n- schedulerName: x\n  plugin: {}\n"),
        [
            "strict decoding error: unknown field \"parallelizm\"",
            "strict decoding error: unknown field \"profiles[0].plugin\""
        ]
    );
}

#[test]
fn other_versions_and_kinds_are_refused() {
    let e = SchedulerConfiguration::from_str(
        "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid KubeSchedulerConfiguration: apiVersion: Unsupported value: \"kubescheduler.config.k8s.io/v1beta3\": supported values: \"kubescheduler.config.k8s.io/v1\""
    );
}

#[test]
fn plugins_merge_with_the_defaults_as_upstream() {
    // Disabling a default at multiPoint removes it; enabling it again with a weight replaces it
    // in place; `*` at a point keeps the multiPoint plugins away from that point.
    let c = load(
        "profiles:\n- plugins:\n    multiPoint:\n      enabled: [{name: TaintToleration, weight: 7}]\n      disabled: [{name: ImageLocality}]\n    score:\n      disabled: [{name: '*'}]\n      enabled: [{name: NodeResourcesFit, weight: 5}]\n",
    )
    .unwrap();
    let compiled = c.compile().unwrap().remove(0);
    let score: Vec<(&str, i64)> = compiled
        .plugins
        .iter()
        .filter(|p| p.point == Point::Score)
        .map(|p| (p.name.as_str(), p.weight))
        .collect();
    assert_eq!(score, [("NodeResourcesFit", 5)]);
    let filter: Vec<&str> = compiled
        .plugins
        .iter()
        .filter(|p| p.point == Point::Filter)
        .map(|p| p.name.as_str())
        .collect();
    assert!(filter.contains(&"TaintToleration"));
    let defaults = load("").unwrap().compile().unwrap().remove(0);
    let weights: Vec<(&str, i64)> = defaults
        .plugins
        .iter()
        .filter(|p| p.point == Point::Score)
        .map(|p| (p.name.as_str(), p.weight))
        .collect();
    assert_eq!(
        weights,
        [
            ("TaintToleration", 3),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1)
        ]
    );
}

#[test]
fn the_default_profile_compiles_to_the_framework_predicates_and_its_own_weights() {
    let p = load("").unwrap().compile().unwrap().remove(0);
    let preds: Vec<&str> = p
        .policy
        .predicates
        .iter()
        .map(|x| x.name.as_str())
        .collect();
    assert_eq!(
        preds,
        [
            "NodeUnschedulable",
            "NodeName",
            "TaintToleration",
            "NodeAffinity",
            "NodePorts",
            "NodeResourcesFit",
            "VolumeRestrictions",
            "NodeVolumeLimits",
            "VolumeBinding",
            "VolumeZone",
            "PodTopologySpread",
            "InterPodAffinity"
        ]
    );
    let prios: Vec<(&str, i64)> = p
        .policy
        .priorities
        .iter()
        .map(|x| (x.name.as_str(), x.weight))
        .collect();
    assert_eq!(
        prios,
        [
            ("TaintToleration", 3),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1)
        ]
    );
    assert!(p.preemption && p.scheduling_gates && p.dynamic_resources);
    let spread = p.topology_spread.unwrap();
    assert!(spread.filter);
    assert_eq!(
        (spread.weight, spread.defaulting_type.as_str()),
        (2, "System")
    );
}

#[test]
fn most_allocated_scores_with_the_most_requested_priority() {
    let p = load("profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: MostAllocated}}\n")
        .unwrap()
        .compile()
        .unwrap()
        .remove(0);
    assert!(p
        .policy
        .priorities
        .iter()
        .any(|x| x.name == "NodeResourcesFit"
            && x.kind
                == crate::policy::PriorityKind::Builtin(
                    crate::policy::PriorityName::MostRequestedPriority
                )));
}

#[test]
fn plugin_args_reach_the_engine() {
    let profile = load(
        "profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args:
      ignoredResources: [example.com/foo]
      ignoredResourceGroups: [example.org]
      scoringStrategy:
        type: RequestedToCapacityRatio
        resources: [{name: cpu, weight: 2}, {name: example.com/gpu, weight: 3}]
        requestedToCapacityRatio:
          shape: [{utilization: 0, score: 0}, {utilization: 100, score: 10}]
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]
  - name: InterPodAffinity
    args: {ignorePreferredTermsOfExistingPods: true}
",
    )
    .unwrap()
    .compile()
    .unwrap()
    .remove(0);
    let a = &profile.plugin_args;
    assert_eq!(a.ignored_resources, ["example.com/foo"]);
    assert_eq!(a.ignored_resource_groups, ["example.org"]);
    assert!(a.added_affinity.is_some());
    assert!(a.ignore_preferred_terms_of_existing_pods);
    assert_eq!(
        a.resource_scoring,
        Some(crate::plugin_args::ResourceScoring {
            strategy: crate::plugin_args::Strategy::RequestedToCapacityRatio(vec![
                (0, 0),
                (100, 100)
            ]),
            resources: vec![("cpu".into(), 2), ("example.com/gpu".into(), 3)],
        })
    );
    // Every plugin scores 0..100: its weight is the profile's (default 1).
    let fit = profile
        .policy
        .priorities
        .iter()
        .find(|p| p.name == "NodeResourcesFit")
        .unwrap();
    assert_eq!(
        (fit.weight, &fit.kind),
        (
            1,
            &crate::policy::PriorityKind::Builtin(crate::policy::PriorityName::NodeResourcesFit)
        )
    );
}

#[test]
fn a_bad_shape_is_refused_with_upstreams_words() {
    let e = load(
        "profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: RequestedToCapacityRatio
        requestedToCapacityRatio:
          shape: [{utilization: 50, score: 11}, {utilization: 40, score: 1}]
",
    )
    .unwrap_err();
    let got: Vec<String> = e.errors.iter().map(|e| e.to_string()).collect();
    let sp = "profiles[0].pluginConfig[0].args.scoringStrategy.shape";
    assert_eq!(
        got,
        [
            format!(
                "{sp}[1].utilization: Invalid value: 40: values must be sorted in increasing order"
            ),
            format!("{sp}[0].score: Invalid value: 11: not in valid range [0, 10]"),
        ]
    );
}

#[test]
fn a_policy_file_is_not_taken_for_a_configuration() {
    assert!(!is_scheduler_configuration(
        "kind: Policy\napiVersion: v1\n"
    ));
    assert!(is_scheduler_configuration(HEAD));
}

/// Places `n` pods of 500m/2Gi one after another with `profile` on three 4-cpu nodes; returns
/// how many distinct nodes they went to.
fn nodes_used(profile: &CompiledProfile, n: usize) -> usize {
    use crate::{ClusterCache, Decision, Scheduler};
    let mut cache = ClusterCache::new();
    for name in ["a", "b", "c"] {
        cache.upsert_node(&crate::testutil::simple_node(name, "4", "16Gi", 110));
    }
    let mut scheduler = Scheduler::builder()
        .policy(profile.policy.clone())
        .framework_profile(true)
        .seed(7)
        .build()
        .unwrap();
    let mut used = std::collections::BTreeSet::new();
    for i in 0..n {
        let pod = crate::testutil::pod(serde_json::json!({
            "metadata": {"name": format!("p{i}"), "namespace": "default"},
            "spec": {"containers": [{"name": "c",
                "resources": {"requests": {"cpu": "500m", "memory": "2Gi"}}}]}
        }));
        let info = cache.compile_pod(&pod);
        match scheduler.schedule(&cache, &info) {
            Decision::Scheduled { node, .. } => {
                used.insert(node.clone());
                cache.assume(info, &node).unwrap();
            }
            other => panic!("{other:?}"),
        }
    }
    used.len()
}

#[test]
fn a_most_allocated_profile_packs_where_the_default_profile_spreads() {
    let default = load("").unwrap().compile().unwrap().remove(0);
    assert_eq!(nodes_used(&default, 3), 3);
    let packer = load(
        "profiles:\n- plugins:\n    score:\n      disabled: [{name: NodeResourcesBalancedAllocation}]\n  pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: MostAllocated}}\n",
    )
    .unwrap()
    .compile()
    .unwrap()
    .remove(0);
    assert_eq!(nodes_used(&packer, 3), 1);
}

#[test]
fn a_profile_has_no_node_condition_predicate_but_a_policy_keeps_it_mandatory() {
    use crate::{ClusterCache, Decision, Scheduler};
    let mut cache = ClusterCache::new();
    // A node whose Ready condition is False and that carries no not-ready taint: 1.35 filters
    // such a node by its taints only, the seed's scheduler by its condition.
    cache.upsert_node(&crate::testutil::node_json(serde_json::json!({
        "metadata": {"name": "n"},
        "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "False"}]}
    })));
    let pod = crate::testutil::pod(serde_json::json!({
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c"}]}
    }));
    let info = cache.compile_pod(&pod);
    let profile = load("").unwrap().compile().unwrap().remove(0);
    let mut framework = Scheduler::builder()
        .policy(profile.policy)
        .framework_profile(true)
        .build()
        .unwrap();
    assert!(matches!(
        framework.schedule(&cache, &info),
        Decision::Scheduled { .. }
    ));
    let mut legacy = Scheduler::builder().build().unwrap();
    assert!(matches!(
        legacy.schedule(&cache, &info),
        Decision::Unschedulable(_)
    ));
}
