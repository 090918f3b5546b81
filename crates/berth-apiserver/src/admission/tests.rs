//! The chain: declared order, disabling and configuring by name, unknown names, bad configs.

use super::*;
use berth_api::registry::find;
use serde_json::json;

fn handles() -> Handles {
    Handles {
        store: Store::memory(),
        cache: Arc::new(AdmissionCache::default()),
        priority_disabled: Default::default(),
        authorizer: Arc::new(crate::authorizer::AlwaysAllow),
    }
}

fn config(entries: &[(&str, Value)]) -> AdmissionConfig {
    let mut c = AdmissionConfig::default();
    for (name, configuration) in entries {
        c.insert(
            name,
            configuration.clone(),
            format!("master-config.yaml: admissionConfig.pluginConfig.{name}.configuration"),
        );
    }
    c
}

fn disable() -> Value {
    json!({"kind": "DefaultAdmissionConfig", "apiVersion": "v1", "disable": true})
}

#[test]
fn plugins_run_in_the_declared_order_whatever_order_the_config_names_them() {
    let default = Chain::build(&handles(), &AdmissionConfig::default()).unwrap();
    // Off by default: the plugins that need a configuration (PodNodeSelector, PodNodeConstraints).
    let declared: Vec<&str> = PLUGINS
        .iter()
        .filter(|r| r.on_by_default)
        .map(|r| r.name)
        .collect();
    assert_eq!(default.names(), declared);
    assert_eq!(
        default.names(),
        [
            "NamespaceLifecycle",
            "LimitRanger",
            "ServiceAccount",
            "OriginPodNodeEnvironment",
            "Priority",
            "DefaultTolerationSeconds",
            "ResourceQuota"
        ]
    );
    let reversed = config(&[
        ("DefaultTolerationSeconds", json!({})),
        ("Priority", json!({})),
        ("NamespaceLifecycle", json!({})),
    ]);
    assert_eq!(
        Chain::build(&handles(), &reversed).unwrap().names(),
        declared
    );
}

#[test]
fn a_plugin_is_disabled_by_name() {
    let c = config(&[("Priority", disable())]);
    let chain = Chain::build(&handles(), &c).unwrap();
    assert_eq!(
        chain.names(),
        [
            "NamespaceLifecycle",
            "LimitRanger",
            "ServiceAccount",
            "OriginPodNodeEnvironment",
            "DefaultTolerationSeconds",
            "ResourceQuota"
        ]
    );
    // `disable: false` keeps it.
    let c = config(&[("Priority", json!({"disable": false}))]);
    assert!(Chain::build(&handles(), &c)
        .unwrap()
        .names()
        .contains(&"Priority"));
    // Without Priority a pod naming a missing class is admitted; with it, refused.
    let pods = find("", "v1", "pods").unwrap();
    let mut pod = json!({"metadata": {"name": "p", "namespace": "default"},
        "spec": {"priorityClassName": "missing", "containers": []}});
    let without = config(&[("Priority", disable()), ("NamespaceLifecycle", disable())]);
    let chain = Chain::build(&handles(), &without).unwrap();
    assert!(chain
        .admit_create(&UserInfo::admin(), pods, &mut pod.clone())
        .is_ok());
    let with = config(&[("NamespaceLifecycle", disable())]);
    let chain = Chain::build(&handles(), &with).unwrap();
    assert!(matches!(
        chain.admit_create(&UserInfo::admin(), pods, &mut pod),
        Err(crate::error::ApiError::Forbidden(_))
    ));
}

#[test]
fn a_plugin_is_configured_by_name() {
    let c = config(&[
        ("NamespaceLifecycle", disable()),
        (
            "DefaultTolerationSeconds",
            json!({"defaultNotReadyTolerationSeconds": 60, "defaultUnreachableTolerationSeconds": 120}),
        ),
    ]);
    let chain = Chain::build(&handles(), &c).unwrap();
    let pods = find("", "v1", "pods").unwrap();
    let mut pod =
        json!({"metadata": {"name": "p", "namespace": "default"}, "spec": {"containers": []}});
    chain
        .admit_create(&UserInfo::admin(), pods, &mut pod)
        .unwrap();
    let seconds: Vec<(String, i64)> = pod["spec"]["tolerations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["key"].as_str().unwrap().to_string(),
                t["tolerationSeconds"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seconds,
        [
            ("node.kubernetes.io/not-ready".to_string(), 60),
            ("node.kubernetes.io/unreachable".to_string(), 120)
        ]
    );
}

#[test]
fn unknown_plugin_names_are_reported() {
    let c = config(&[
        (
            "RunOnceDuration",
            json!({"activeDeadlineSecondsOverride": 3600}),
        ),
        ("Priority", json!({})),
        ("BuildDefaults", json!({})),
    ]);
    assert_eq!(c.unknown_plugins(), ["RunOnceDuration", "BuildDefaults"]);
    // They are warned about, and the known ones still run.
    assert_eq!(Chain::build(&handles(), &c).unwrap().names().len(), 7);
}

#[test]
fn a_bad_config_names_its_source_plugin_and_field() {
    let c = config(&[(
        "DefaultTolerationSeconds",
        json!({"defaultNotReadyTolerationSeconds": -1}),
    )]);
    let e = Chain::build(&handles(), &c).err().unwrap();
    assert_eq!(e.plugin, "DefaultTolerationSeconds");
    assert_eq!(e.field, "defaultNotReadyTolerationSeconds");
    let text = e.to_string();
    assert!(text.starts_with("master-config.yaml: admissionConfig.pluginConfig.DefaultTolerationSeconds.configuration.defaultNotReadyTolerationSeconds: "), "{text}");
    assert!(text.contains("DefaultTolerationSeconds"), "{text}");

    let e = Chain::build(
        &handles(),
        &config(&[("Priority", json!({"disable": "yes"}))]),
    )
    .err()
    .unwrap();
    assert_eq!(
        (e.plugin.as_str(), e.field.as_str()),
        ("Priority", "disable")
    );
    let e = Chain::build(&handles(), &config(&[("NamespaceLifecycle", json!(["x"]))]))
        .err()
        .unwrap();
    assert_eq!(e.plugin, "NamespaceLifecycle");
    let e = Chain::build(&handles(), &config(&[("Priority", json!({"extra": 1}))]))
        .err()
        .unwrap();
    assert_eq!(e.field, "extra");
}

#[test]
fn the_placement_plugins_run_when_configured_before_priority() {
    let c = config(&[
        (
            "PodNodeSelector",
            json!({"podNodeSelectorPluginConfig": {"clusterDefaultNodeSelector": "k3=v3"}}),
        ),
        (
            "PodNodeConstraints",
            json!({"apiversion": "v1", "kind": "PodNodeConstraintsConfig"}),
        ),
    ]);
    assert!(c.unknown_plugins().is_empty());
    assert_eq!(
        Chain::build(&handles(), &c).unwrap().names(),
        [
            "NamespaceLifecycle",
            "LimitRanger",
            "ServiceAccount",
            "PodNodeConstraints",
            "PodNodeSelector",
            "OriginPodNodeEnvironment",
            "Priority",
            "DefaultTolerationSeconds",
            "ResourceQuota"
        ]
    );
    let e = Chain::build(
        &handles(),
        &config(&[(
            "PodNodeSelector",
            json!({"podNodeSelectorPluginConfig": {"ns1": "env=="}}),
        )]),
    )
    .err()
    .unwrap();
    assert_eq!(
        (e.plugin.as_str(), e.field.as_str()),
        ("PodNodeSelector", "podNodeSelectorPluginConfig.ns1")
    );
}

/// Both namespace selectors are merged into a pod created in a namespace with both annotations,
/// and the chain reads them from the stored namespace.
#[tokio::test]
async fn a_namespace_with_both_annotations_gets_both_selectors() {
    let h = handles();
    let namespaces = find("", "v1", "namespaces").unwrap();
    let ns = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "ns1", "annotations": {
            "scheduler.alpha.kubernetes.io/node-selector": "env=test",
            "openshift.io/node-selector": "superregion=us"}},
        "status": {"phase": "Active"}});
    h.store
        .create(
            &crate::path::key(namespaces, None, "ns1"),
            crate::codec::encode(&ns),
        )
        .await
        .unwrap();
    let c = config(&[("PodNodeSelector", json!({}))]);
    let chain = Chain::build(&h, &c).unwrap();
    let pods = find("", "v1", "pods").unwrap();
    let mut pod = json!({"metadata": {"name": "p", "namespace": "ns1"},
        "spec": {"containers": [], "nodeSelector": {"disk": "ssd"}}});
    chain
        .admit_create(&UserInfo::admin(), pods, &mut pod)
        .unwrap();
    assert_eq!(
        pod["spec"]["nodeSelector"],
        json!({"disk": "ssd", "env": "test", "superregion": "us"})
    );
    let mut apac = json!({"metadata": {"name": "p", "namespace": "ns1"},
        "spec": {"containers": [], "nodeSelector": {"superregion": "apac"}}});
    let e = chain
        .admit_create(&UserInfo::admin(), pods, &mut apac)
        .unwrap_err();
    assert_eq!(e.message(), "pods \"p\" is forbidden: pod node label selector conflicts with its project node label selector");
}
