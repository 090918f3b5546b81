//! Loading tests: every policy of seed 002 loads as printed; every kind of error is reported
//! with its entry named; a policy written back out loads to an equal value.

use proptest::prelude::*;

use super::*;

/// Seed 002's policy files and samples, copied verbatim from the document.
const SEED_FILES: &[(&str, &str)] = &[
    (
        "16.2.4 default",
        include_str!("../../tests/policies/seed-16.2.4-default.json"),
    ),
    (
        "16.2.4.1 sample modified",
        include_str!("../../tests/policies/seed-16.2.4.1-sample-modified.yaml"),
    ),
    (
        "16.2.8 with callouts",
        include_str!("../../tests/policies/seed-16.2.8-callouts.yaml"),
    ),
    (
        "16.2.8 region/zone/rack",
        include_str!("../../tests/policies/seed-16.2.8-region-zone-rack.yaml"),
    ),
    (
        "16.2.8 city/building/room",
        include_str!("../../tests/policies/seed-16.2.8-city-building-room.yaml"),
    ),
    (
        "16.2.8 require region",
        include_str!("../../tests/policies/seed-16.2.8-require-region-prefer-zone.yaml"),
    ),
    (
        "16.2.8 static and configurable",
        include_str!("../../tests/policies/seed-16.2.8-static-and-configurable.yaml"),
    ),
];

fn load(text: &str) -> Policy {
    Policy::from_str(text).unwrap_or_else(|e| panic!("{e}\n---\n{text}"))
}

fn errors(text: &str) -> Vec<PolicyEntryError> {
    match Policy::from_str(text) {
        Ok(p) => panic!("loaded but should not: {p:?}\n---\n{text}"),
        Err(e) => e.errors,
    }
}

fn pred(name: &str, kind: PredicateKind) -> PredicateConfig {
    PredicateConfig {
        name: name.into(),
        kind,
    }
}

fn prio(name: &str, weight: i64, kind: PriorityKind) -> PriorityConfig {
    PriorityConfig {
        name: name.into(),
        weight,
        kind,
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[test]
fn every_seed_file_loads() {
    for (what, text) in SEED_FILES {
        if let Err(e) = Policy::from_str(text) {
            panic!("{what}: {e}");
        }
    }
}

#[test]
fn seed_default_file_is_the_default_policy() {
    assert_eq!(load(SEED_FILES[0].1), Policy::default_policy());
}

#[test]
fn seed_sample_modified_contents() {
    let p = load(SEED_FILES[1].1);
    let names: Vec<&str> = p.predicates.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "PodFitsResources",
            "NoDiskConflict",
            "MatchNodeSelector",
            "HostName",
            "Region"
        ]
    );
    assert_eq!(
        p.predicates[4].kind,
        PredicateKind::ServiceAffinity {
            labels: strings(&["region"])
        }
    );
    assert_eq!(p.priorities.len(), 4);
    assert_eq!(
        p.priorities[2],
        prio(
            "ServiceSpreadingPriority",
            1,
            PriorityKind::Builtin(PriorityName::ServiceSpreadingPriority)
        )
    );
    assert_eq!(
        p.priorities[3],
        prio(
            "Zone",
            2,
            PriorityKind::ServiceAntiAffinity {
                label: "zone".into()
            }
        )
    );
}

#[test]
fn seed_samples_contents() {
    let callouts = load(SEED_FILES[2].1);
    let plain = load(SEED_FILES[3].1);
    assert_eq!(
        callouts, plain,
        "callout numbers are presentation, not content"
    );
    assert_eq!(
        plain.predicates,
        [pred(
            "RegionZoneAffinity",
            PredicateKind::ServiceAffinity {
                labels: strings(&["region", "zone"])
            }
        )]
    );
    assert_eq!(
        plain.priorities,
        [prio(
            "RackSpread",
            1,
            PriorityKind::ServiceAntiAffinity {
                label: "rack".into()
            }
        )]
    );

    let city = load(SEED_FILES[4].1);
    assert_eq!(
        city.predicates,
        [pred(
            "CityAffinity",
            PredicateKind::ServiceAffinity {
                labels: strings(&["city"])
            }
        )]
    );
    assert_eq!(
        city.priorities,
        [
            prio(
                "BuildingSpread",
                1,
                PriorityKind::ServiceAntiAffinity {
                    label: "building".into()
                }
            ),
            prio(
                "RoomSpread",
                1,
                PriorityKind::ServiceAntiAffinity {
                    label: "room".into()
                }
            ),
        ]
    );

    let region = load(SEED_FILES[5].1);
    assert_eq!(
        region.predicates,
        [pred(
            "RequireRegion",
            PredicateKind::LabelsPresence {
                labels: strings(&["region"]),
                presence: true
            }
        )]
    );
    assert_eq!(
        region.priorities,
        [prio(
            "ZonePreferred",
            1,
            PriorityKind::LabelPreference {
                label: "zone".into(),
                presence: true
            }
        )]
    );

    let mixed = load(SEED_FILES[6].1);
    let names: Vec<&str> = mixed.predicates.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "RegionAffinity",
            "RequireRegion",
            "BuildingNodesAvoid",
            "PodFitsPorts",
            "MatchNodeSelector"
        ]
    );
    assert_eq!(
        mixed.predicates[2].kind,
        PredicateKind::LabelsPresence {
            labels: strings(&["building"]),
            presence: false
        }
    );
    assert_eq!(
        mixed.predicates[3].kind,
        PredicateKind::Builtin(PredicateName::PodFitsHostPorts)
    );
    assert_eq!(mixed.priorities.len(), 3);
}

/// The one-entry snippets of 16.2.5 and 16.2.6, verbatim, placed in a policy.
#[test]
fn seed_entry_snippets_load() {
    let predicates = [
        r#"{"name" : "NoVolumeZoneConflict"}"#,
        r#"{"name" : "MaxEBSVolumeCount"}"#,
        r#"{"name" : "MaxGCEPDVolumeCount"}"#,
        r#"{"name" : "MatchInterPodAffinity"}"#,
        r#"{"name" : "NoDiskConflict"}"#,
        r#"{"name" : "PodToleratesNodeTaints"}"#,
        r#"{"name" : "CheckVolumeBinding"}"#,
        r#"{"name" : "CheckNodeCondition"}"#,
        r#"{"name" : "PodToleratesNodeNoExecuteTaints"}"#,
        r#"{"name" : "MaxAzureDiskVolumeCount"}"#,
        r#"{"name" : "PodFitsResources"}"#,
        r#"{"name" : "PodFitsHostPorts"}"#,
        r#"{"name" : "HostName"}"#,
        r#"{"name" : "MatchNodeSelector"}"#,
        // 16.2.5.3 "For example:" fragments, given their braces.
        "{\n        \"name\":\"ZoneAffinity\",\n        \"argument\":{\n            \"serviceAffinity\":{\n                \"labels\":[\n                    \"rack\"\n                ]\n            }\n        }\n}",
        "{\n        \"name\":\"RackPreferred\",\n        \"argument\":{\n            \"labelsPresence\":{\n                \"labels\":[\n                    \"rack\",\n                    \"region\"\n                ],\n                \"presence\": true\n            }\n        }\n}",
    ];
    for snippet in predicates {
        let p = load(&format!(
            "{{\"kind\": \"Policy\", \"apiVersion\": \"v1\", \"predicates\": [{snippet}]}}"
        ));
        assert_eq!(p.predicates.len(), 1, "{snippet}");
    }
    let priorities = [
        r#"{"name" : "SelectorSpreadPriority", "weight" : 1}"#,
        r#"{"name" : "InterPodAffinityPriority", "weight" : 1}"#,
        r#"{"name" : "LeastRequestedPriority", "weight" : 1}"#,
        r#"{"name" : "BalancedResourceAllocation", "weight" : 1}"#,
        r#"{"name" : "NodePreferAvoidPodsPriority", "weight" : 10000}"#,
        r#"{"name" : "NodeAffinityPriority", "weight" : 1}"#,
        r#"{"name" : "TaintTolerationPriority", "weight" : 1}"#,
        r#"{"name" : "EqualPriority", "weight" : 1}"#,
        r#"{"name" : "MostRequestedPriority", "weight" : 1}"#,
        r#"{"name" : "ImageLocalityPriority", "weight" : 1}"#,
        r#"{"name" : "ServiceSpreadingPriority", "weight" : 1}"#,
        // 16.2.6.2's RackSpread example without its callout numbers (1, 2, 3), which break
        // the JSON: `"weight" : 1 2`.
        "{\n        \"name\":\"RackSpread\",\n        \"weight\" : 1,\n        \"argument\":{\n            \"serviceAntiAffinity\":{\n                \"label\": \"rack\"\n            }\n        }\n}",
    ];
    for snippet in priorities {
        let p = load(&format!(
            "{{\"kind\": \"Policy\", \"apiVersion\": \"v1\", \"priorities\": [{snippet}]}}"
        ));
        assert_eq!(p.priorities.len(), 1, "{snippet}");
    }
}

/// The static-predicate list of 16.2.5.1.2 names two configurable types without an argument;
/// they are load errors naming the entry (project decision).
#[test]
fn configurable_types_without_argument_are_errors() {
    for name in ["CheckNodeLabelPresence", "checkServiceAffinity"] {
        let e = errors(&format!(
            r#"{{"kind":"Policy","predicates":[{{"name" : "{name}"}}]}}"#
        ));
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].entry, format!("predicates[0] ({name})"));
        assert!(
            e[0].message.starts_with(&format!(
                "Invalid configuration: Predicate type not found for {name} ("
            )),
            "{}",
            e[0].message
        );
        assert!(e[0].message.contains("argument"));
    }
    let e = errors(r#"{"kind":"Policy","priorities":[{"name":"ServiceAntiAffinity","weight":1}]}"#);
    assert!(e[0]
        .message
        .starts_with("Invalid configuration: Priority type not found for ServiceAntiAffinity ("));
}

#[test]
fn documentation_templates_with_placeholders_are_errors() {
    let e = errors("kind: Policy\npredicates:\n  - name: \"<name>\"\n    argument: {serviceAffinity: {labels: [\"<label>\"]}}\n");
    assert_eq!(e[0].entry, "predicates[0] (<name>)");
    assert!(e[0]
        .message
        .starts_with("Algorithm name <name> does not match the name validation regexp"));
    assert!(e[1].message.contains("not a valid label key"), "{e:?}");
}

/// One table row: the policy text, the entry named and the start of the message.
const ERROR_CASES: &[(&str, &str, &str)] = &[
    (r#"{"kind":"Policy","predicates":[{"name":"Foo"}]}"#, "predicates[0] (Foo)", "Invalid configuration: Predicate type not found for Foo"),
    (r#"{"kind":"Policy","priorities":[{"name":"Bar","weight":1}]}"#, "priorities[0] (Bar)", "Invalid configuration: Priority type not found for Bar"),
    (r#"{"kind":"Policy","predicates":[{"name":"R","argument":{}}]}"#, "predicates[0] (R)", "Algorithm name R does not match"),
    (r#"{"kind":"Policy","predicates":[{"name":"Rg","argument":{}}]}"#, "predicates[0] (Rg)", "Exactly 1 predicate argument is required, numArgs: 0, Predicate: Rg"),
    (r#"{"kind":"Policy","predicates":[{"name":"Rg","argument":{"serviceAffinity":{"labels":["a"]},"labelsPresence":{"labels":["a"],"presence":true}}}]}"#, "predicates[0] (Rg)", "Exactly 1 predicate argument is required, numArgs: 2, Predicate: Rg"),
    (r#"{"kind":"Policy","predicates":[{"name":"Rg","argument":{"serviceAfinity":{"labels":["a"]}}}]}"#, "predicates[0] (Rg)", "Exactly 1 predicate argument is required, numArgs: 0, Predicate: Rg (unknown argument serviceAfinity"),
    (r#"{"kind":"Policy","priorities":[{"name":"Zn","weight":1,"argument":{"serviceAntiAffinity":{"label":"a"},"labelPreference":{"label":"a","presence":true}}}]}"#, "priorities[0] (Zn)", "Exactly 1 priority argument is required, numArgs: 2, Priority: Zn"),
    (r#"{"kind":"Policy","priorities":[{"name":"Zn","weight":1,"argument":{"serviceAntiAffinity":{"label":["zone"]}}}]}"#, "priorities[0] (Zn)", "argument.serviceAntiAffinity.label must be a single node label key, not a list"),
    (r#"{"kind":"Policy","predicates":[{"name":"Rg","argument":{"labelsPresence":{"labels":["a"]}}}]}"#, "predicates[0] (Rg)", "argument.labelsPresence.presence is required"),
    (r#"{"kind":"Policy","predicates":[{"name":"Rg","argument":{"serviceAffinity":{"labels":[]}}}]}"#, "predicates[0] (Rg)", "argument.serviceAffinity.labels is required"),
    (r#"{"kind":"Policy","priorities":[{"name":"EqualPriority"}]}"#, "priorities[0] (EqualPriority)", "Priority EqualPriority should have a positive weight applied to it or it has overflown"),
    (r#"{"kind":"Policy","priorities":[{"name":"EqualPriority","weight":0}]}"#, "priorities[0] (EqualPriority)", "Priority EqualPriority should have a positive weight applied to it or it has overflown"),
    (r#"{"kind":"Policy","priorities":[{"name":"EqualPriority","weight":-3}]}"#, "priorities[0] (EqualPriority)", "Priority EqualPriority should have a positive weight applied to it or it has overflown"),
    (r#"{"kind":"Policy","priorities":[{"name":"EqualPriority","weight":922337203685477580}]}"#, "priorities[0] (EqualPriority)", "Priority EqualPriority should have a positive weight applied to it or it has overflown"),
    (r#"{"kind":"Policy","priorities":[{"name":"EqualPriority","weight":99999999999999999999}]}"#, "priorities[0] (EqualPriority)", "Priority EqualPriority should have a positive weight applied to it or it has overflown"),
    (r#"{"kind":"Policy","priorities":[{"name":"EqualPriority","weight":"1"}]}"#, "priorities[0] (EqualPriority)", "weight must be an integer, not a string"),
    (r#"{"kind":"Policy","priorities":[{"name":"EqualPriority","weight":1.5}]}"#, "priorities[0] (EqualPriority)", "weight must be an integer"),
    (r#"{"kind":"Policy","priorities":[{"name":"EqualPriority","weight":922337203685477579},{"name":"ImageLocalityPriority","weight":922337203685477579}]}"#, "priorities", "Total priority of priority functions has overflown"),
    (r#"{"kind":"Policy","predicates":[{"name":"HostName"},{"name":"HostName"}]}"#, "predicates[1] (HostName)", "duplicate predicate: already configured as predicates[0] (HostName)"),
    (r#"{"kind":"Policy","predicates":[{"name":"PodFitsPorts"},{"name":"PodFitsHostPorts"}]}"#, "predicates[1] (PodFitsHostPorts)", "duplicate predicate: already configured as predicates[0] (PodFitsPorts)"),
    (r#"{"kind":"Policy","priorities":[{"name":"Zn","weight":1,"argument":{"serviceAntiAffinity":{"label":"a"}}},{"name":"Zn","weight":2,"argument":{"serviceAntiAffinity":{"label":"b"}}}]}"#, "priorities[1] (Zn)", "duplicate priority"),
    (r#"{"kind":"Policy","predicates":[{"name":"Bad_Name","argument":{"serviceAffinity":{"labels":["a"]}}}]}"#, "predicates[0] (Bad_Name)", "Algorithm name Bad_Name does not match the name validation regexp \"^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])$\"."),
    (r#"{"kind":"Policy","predicates":[{"argument":{"serviceAffinity":{"labels":["a"]}}}]}"#, "predicates[0]", "name is required"),
    (r#"{"kind":"Policy","hardPodAffinitySymmetricWeight":101}"#, "hardPodAffinitySymmetricWeight", "invalid hardPodAffinitySymmetricWeight: 101, must be in the range 1-100"),
    (r#"{"kind":"Policy","hardPodAffinitySymmetricWeight":-1}"#, "hardPodAffinitySymmetricWeight", "invalid hardPodAffinitySymmetricWeight: -1, must be in the range 1-100"),
    (r#"{"kind":"Policy","alwaysCheckAllPredicates":"yes"}"#, "alwaysCheckAllPredicates", "must be true or false"),
    (r#"{"apiVersion":"v1"}"#, "kind", "Object 'Kind' is missing"),
    (r#"{"kind":"Pod","apiVersion":"v1"}"#, "kind", "is \"Pod\"; expected Policy"),
    (r#"{"kind":"Policy","apiVersion":"v2"}"#, "apiVersion", "\"v2\" is not supported"),
    (r#"{"kind":"Policy","predicates":{"name":"HostName"}}"#, "predicates", "must be a list"),
    ("", "document", "the document is empty"),
    ("- kind: Policy\n", "document", "the document is not a mapping"),
    ("{\"kind\": \"Policy\",\n \"predicates\": [\n  {\"name\": \"HostName\"}\n}", "line 4, column 1", "malformed JSON"),
    ("kind: Policy\npredicates:\n  - name: HostName\n   - name: x\n", "line 4, column 4", "malformed YAML"),
    (r#"{"kind":"Policy","extenders":[{"urlPrefix":"http://e","prioritizeVerb":"p","weight":0}]}"#, "extenders[0] (http://e)", "Priority for extender http://e should have a positive weight applied to it"),
    (r#"{"kind":"Policy","extenders":[{"urlPrefix":"http://a","bindVerb":"b"},{"urlPrefix":"http://b","bindVerb":"b"}]}"#, "extenders", "Only one extender can implement bind, found 2"),
    (r#"{"kind":"Policy","extenders":[{"urlPrefix":"http://a","managedResources":[{"name":"cpu"}]}]}"#, "extenders[0] (http://a)", "cpu is an invalid extended resource name"),
    (r#"{"kind":"Policy","extenders":[{"urlPrefix":"http://a","managedResources":[{"name":"example.com/foo"},{"name":"example.com/foo"}]}]}"#, "extenders[0] (http://a)", "Duplicate extender managed resource name example.com/foo"),
    (r#"{"kind":"Policy","extenders":[{"urlPrefix":"http://a","weight":"x"}]}"#, "extenders[0] (http://a)", "invalid type"),
];

#[test]
fn each_kind_of_error_names_its_entry() {
    for (text, entry, message) in ERROR_CASES {
        let e = errors(text);
        assert!(
            e.iter()
                .any(|e| e.entry == *entry && e.message.starts_with(message)),
            "{text}\nexpected {entry}: {message}...\ngot {e:?}"
        );
    }
}

#[test]
fn several_errors_are_reported_together() {
    let text = r#"{"kind":"Policy",
        "predicates":[{"name":"Foo"},{"name":"HostName"},{"name":"Rg","argument":{}}],
        "priorities":[{"name":"EqualPriority","weight":0},{"name":"Bar","weight":"2"}],
        "hardPodAffinitySymmetricWeight":500}"#;
    let err = Policy::from_str(text).unwrap_err();
    let entries: Vec<&str> = err.errors.iter().map(|e| e.entry.as_str()).collect();
    assert_eq!(
        entries,
        [
            "predicates[0] (Foo)",
            "predicates[2] (Rg)",
            "priorities[0] (EqualPriority)",
            "priorities[1] (Bar)",
            "priorities[1] (Bar)",
            "hardPodAffinitySymmetricWeight"
        ]
    );
    let shown = err.to_string();
    assert!(
        shown.starts_with("invalid scheduler policy: [predicates[0] (Foo): Invalid configuration"),
        "{shown}"
    );
    assert!(shown.ends_with("hardPodAffinitySymmetricWeight: invalid hardPodAffinitySymmetricWeight: 500, must be in the range 1-100]"), "{shown}");
}

#[test]
fn from_file_names_the_file() {
    let dir = std::env::temp_dir().join(format!("berth-policy-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("scheduler.json");
    std::fs::write(&path, r#"{"kind":"Policy","predicates":[{"name":"Foo"}]}"#).unwrap();
    let err = Policy::from_file(&path).unwrap_err();
    assert_eq!(
        err.file.as_deref(),
        Some(path.display().to_string().as_str())
    );
    assert!(err.to_string().contains("scheduler.json"));
    let missing = Policy::from_file(&dir.join("absent.json")).unwrap_err();
    assert_eq!(missing.errors[0].entry, "file");
    std::fs::write(&path, SEED_FILES[0].1).unwrap();
    assert_eq!(Policy::from_file(&path).unwrap(), Policy::default_policy());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn absent_lists_mean_defaults_and_empty_lists_mean_none() {
    let p = load("kind: Policy\n");
    assert_eq!(p, Policy::default_policy());
    let p = load("kind: Policy\npredicates: []\npriorities: []\n");
    assert!(p.predicates.is_empty() && p.priorities.is_empty());
    let ordered: Vec<&str> = p
        .ordered_predicates()
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(ordered, ["CheckNodeCondition"]);
    let p = load("kind: Policy\npredicates: []\n");
    assert_eq!(p.priorities, Policy::default_policy().priorities);
}

#[test]
fn versions_accepted() {
    for header in [
        "kind: Policy\napiVersion: v1\n",
        "kind: Policy\nversion: \"v1\"\n",
        "kind: Policy\n",
        "apiVersion: v1\nkind: Policy\n",
    ] {
        load(&format!("{header}predicates: []\n"));
    }
}

#[test]
fn unknown_keys_are_ignored_and_extenders_kept() {
    let p = load(
        r#"{"kind":"Policy","apiVersion":"v1","colour":"blue","hardPodAffinitySymmetricWeight":10,"alwaysCheckAllPredicates":true,
           "extenders":[{"urlPrefix":"http://127.0.0.1:12346/scheduler","filterVerb":"filter","prioritizeVerb":"prioritize",
             "weight":5,"bindVerb":"bind","enableHttps":false,"httpTimeout":30000000000,"nodeCacheCapable":true,
             "managedResources":[{"name":"example.com/foo","ignoredByScheduler":true}],"ignorable":true,
             "tlsConfig":{"insecure":true}}]}"#,
    );
    assert_eq!(p.hard_pod_affinity_symmetric_weight, 10);
    assert!(p.always_check_all_predicates);
    assert_eq!(p.extenders.len(), 1);
    assert_eq!(p.extenders[0].weight, 5);
    assert_eq!(p.extenders[0].managed_resources[0].name, "example.com/foo");
    assert_eq!(load(&p.to_json()), p);
}

#[test]
fn ordered_predicates_follow_the_static_order() {
    let p = load(SEED_FILES[6].1);
    let order: Vec<&str> = p
        .ordered_predicates()
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(
        order,
        [
            "CheckNodeCondition",
            "PodFitsPorts",
            "MatchNodeSelector",
            "RequireRegion",
            "BuildingNodesAvoid",
            "RegionAffinity"
        ]
    );
    let d = Policy::default_policy();
    let order: Vec<&str> = d
        .ordered_predicates()
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(
        order,
        [
            "CheckNodeCondition",
            "GeneralPredicates",
            "NoDiskConflict",
            "PodToleratesNodeTaints",
            "Region",
            "MaxEBSVolumeCount",
            "MaxGCEPDVolumeCount",
            "MaxAzureDiskVolumeCount",
            "NoVolumeZoneConflict",
            "MatchInterPodAffinity",
        ]
    );
    let with_condition = load(
        r#"{"kind":"Policy","predicates":[{"name":"HostName"},{"name":"CheckNodeCondition"}]}"#,
    );
    let order: Vec<&str> = with_condition
        .ordered_predicates()
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(order, ["CheckNodeCondition", "HostName"]);
}

#[test]
fn seed_files_round_trip() {
    for (what, text) in SEED_FILES {
        let p = load(text);
        assert_eq!(load(&p.to_json()), p, "{what}");
    }
}

fn label() -> impl Strategy<Value = String> {
    "[a-z]{1,3}(\\.[a-z]{1,3}/)?[a-z][a-z0-9]{0,5}".prop_map(|s| s)
}

fn algorithm_name() -> impl Strategy<Value = String> {
    "[A-Za-z0-9][-A-Za-z0-9]{0,6}[A-Za-z0-9]"
}

fn predicate() -> impl Strategy<Value = PredicateConfig> {
    prop_oneof![
        prop::sample::select(PredicateName::ALL)
            .prop_map(|n| pred(n.as_str(), PredicateKind::Builtin(n))),
        (algorithm_name(), prop::collection::vec(label(), 1..3)).prop_map(|(name, labels)| pred(
            &format!("S{name}"),
            PredicateKind::ServiceAffinity { labels }
        )),
        (
            algorithm_name(),
            prop::collection::vec(label(), 1..3),
            any::<bool>()
        )
            .prop_map(|(name, labels, presence)| pred(
                &format!("L{name}"),
                PredicateKind::LabelsPresence { labels, presence }
            )),
    ]
}

fn priority() -> impl Strategy<Value = PriorityConfig> {
    let weight = 1i64..1_000_000;
    prop_oneof![
        (prop::sample::select(PriorityName::ALL), weight.clone()).prop_map(|(n, w)| prio(
            n.as_str(),
            w,
            PriorityKind::Builtin(n)
        )),
        (algorithm_name(), weight.clone(), label()).prop_map(|(name, w, label)| prio(
            &format!("A{name}"),
            w,
            PriorityKind::ServiceAntiAffinity { label }
        )),
        (algorithm_name(), weight, label(), any::<bool>()).prop_map(
            |(name, w, label, presence)| {
                prio(
                    &format!("P{name}"),
                    w,
                    PriorityKind::LabelPreference { label, presence },
                )
            }
        ),
    ]
}

/// Drops entries whose identity repeats an earlier one (duplicates are load errors).
fn dedup<T>(items: Vec<T>, key: impl Fn(&T) -> String) -> Vec<T> {
    let mut seen = std::collections::HashSet::new();
    items.into_iter().filter(|i| seen.insert(key(i))).collect()
}

fn policy() -> impl Strategy<Value = Policy> {
    (
        prop::collection::vec(predicate(), 0..8),
        prop::collection::vec(priority(), 0..8),
        any::<bool>(),
        1i32..=100,
    )
        .prop_map(|(predicates, priorities, always, symmetric)| Policy {
            predicates: dedup(predicates, |p| match &p.kind {
                PredicateKind::Builtin(n) => n.as_str().to_string(),
                _ => p.name.clone(),
            }),
            priorities: dedup(priorities, |p| p.name.clone()),
            always_check_all_predicates: always,
            hard_pod_affinity_symmetric_weight: symmetric,
            extenders: Vec::new(),
        })
}

proptest! {
    #[test]
    fn serialized_policy_reloads_equal(p in policy()) {
        let json = serde_json::to_string(&p).unwrap();
        prop_assert_eq!(Policy::from_str(&json).unwrap(), p);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        let _ = Policy::from_str(&text);
    }
}
