//! Upstream's bootstrap configuration of API Priority and Fairness
//! (`apiserver/pkg/apis/flowcontrol/bootstrap`): the mandatory `exempt` and `catch-all`
//! priority levels and schemas, and the suggested ones that give the control plane's own
//! traffic (nodes, leader election, controllers, the scheduler) its own seats and everyone
//! else `global-default`, each annotated `apf.kubernetes.io/autoupdate-spec: "true"`.
//!
//! The API server creates the missing ones at every start and brings the spec of those still
//! annotated `"true"` back to this version's ([`reconcile`]); an object a user annotated
//! `"false"` is left as they wrote it.

use serde_json::{json, Value};

/// The annotation that says whether the API server keeps an object's spec at its bootstrap
/// value.
pub const AUTOUPDATE: &str = "apf.kubernetes.io/autoupdate-spec";

/// The group and version of both kinds.
pub const API_VERSION: &str = "flowcontrol.apiserver.k8s.io/v1";

fn meta(name: &str) -> Value {
    json!({"name": name, "annotations": {AUTOUPDATE: "true"}})
}

fn exempt_level(name: &str) -> Value {
    json!({
        "apiVersion": API_VERSION, "kind": "PriorityLevelConfiguration", "metadata": meta(name),
        "spec": {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}},
    })
}

/// A Limited level: `shares` nominal concurrency shares, `lendable` percent lendable, and
/// `queuing` (`queues`, `handSize`, `queueLengthLimit`), or rejection when `None`.
fn limited_level(
    name: &str,
    shares: u32,
    lendable: u32,
    queuing: Option<(u32, u32, u32)>,
) -> Value {
    let limit_response = match queuing {
        Some((queues, hand_size, queue_length_limit)) => json!({"type": "Queue", "queuing": {
            "queues": queues, "handSize": hand_size, "queueLengthLimit": queue_length_limit}}),
        None => json!({"type": "Reject"}),
    };
    json!({
        "apiVersion": API_VERSION, "kind": "PriorityLevelConfiguration", "metadata": meta(name),
        "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": shares, "lendablePercent": lendable,
            "limitResponse": limit_response}},
    })
}

/// The bootstrap PriorityLevelConfigurations: mandatory first, then suggested.
pub fn priority_levels() -> Vec<Value> {
    vec![
        exempt_level("exempt"),
        limited_level("catch-all", 5, 0, None),
        limited_level("system", 30, 33, Some((64, 6, 50))),
        limited_level("node-high", 40, 25, Some((64, 6, 50))),
        limited_level("leader-election", 10, 0, Some((16, 4, 50))),
        limited_level("workload-high", 40, 50, Some((128, 6, 50))),
        limited_level("workload-low", 100, 90, Some((128, 6, 50))),
        limited_level("global-default", 20, 50, Some((128, 6, 50))),
    ]
}

fn users(names: &[&str]) -> Vec<Value> {
    names
        .iter()
        .map(|n| json!({"kind": "User", "user": {"name": n}}))
        .collect()
}

fn groups(names: &[&str]) -> Vec<Value> {
    names
        .iter()
        .map(|n| json!({"kind": "Group", "group": {"name": n}}))
        .collect()
}

fn kube_system_service_accounts(names: &[&str]) -> Vec<Value> {
    names
        .iter()
        .map(|n| {
            json!({"kind": "ServiceAccount",
                "serviceAccount": {"namespace": "kube-system", "name": n}})
        })
        .collect()
}

fn resource_rule(
    verbs: &[&str],
    groups: &[&str],
    resources: &[&str],
    namespaces: &[&str],
    cluster_scope: bool,
) -> Value {
    let mut rule = json!({"verbs": verbs, "apiGroups": groups, "resources": resources});
    if cluster_scope {
        rule["clusterScope"] = json!(true);
    }
    if !namespaces.is_empty() {
        rule["namespaces"] = json!(namespaces);
    }
    rule
}

/// Every verb on every resource, namespaced or not.
fn all_resources() -> Value {
    resource_rule(&["*"], &["*"], &["*"], &["*"], true)
}

/// Every verb on every non-resource path.
fn all_non_resources() -> Value {
    json!({"verbs": ["*"], "nonResourceURLs": ["*"]})
}

/// A FlowSchema: `distinguisher` is `ByUser`, `ByNamespace` or `""` (none); `rules` its
/// `PolicyRulesWithSubjects`.
fn flow_schema(
    name: &str,
    level: &str,
    precedence: u32,
    distinguisher: &str,
    rules: Vec<Value>,
) -> Value {
    let mut spec = json!({
        "priorityLevelConfiguration": {"name": level},
        "matchingPrecedence": precedence,
        "rules": rules,
    });
    if !distinguisher.is_empty() {
        spec["distinguisherMethod"] = json!({"type": distinguisher});
    }
    json!({"apiVersion": API_VERSION, "kind": "FlowSchema", "metadata": meta(name), "spec": spec})
}

/// A schema for all requests of `subjects`.
fn all_of(
    name: &str,
    level: &str,
    precedence: u32,
    distinguisher: &str,
    subjects: Vec<Value>,
) -> Value {
    flow_schema(
        name,
        level,
        precedence,
        distinguisher,
        vec![json!({
            "subjects": subjects,
            "resourceRules": [all_resources()],
            "nonResourceRules": [all_non_resources()],
        })],
    )
}

/// The bootstrap FlowSchemas: mandatory first, then suggested.
pub fn flow_schemas() -> Vec<Value> {
    let leader_election = |namespaces: &[&str]| {
        vec![
            resource_rule(
                &["get", "create", "update"],
                &[""],
                &["endpoints", "configmaps"],
                namespaces,
                false,
            ),
            resource_rule(
                &["get", "create", "update"],
                &["coordination.k8s.io"],
                &["leases"],
                &["*"],
                false,
            ),
        ]
    };
    let everyone = ["system:unauthenticated", "system:authenticated"];
    let controllers_and_kube_system = [
        users(&["system:kube-controller-manager", "system:kube-scheduler"]),
        kube_system_service_accounts(&["*"]),
    ]
    .concat();
    let endpoint_controllers = [
        users(&["system:kube-controller-manager"]),
        kube_system_service_accounts(&["endpoint-controller", "endpointslicemirroring-controller"]),
    ]
    .concat();
    vec![
        all_of("exempt", "exempt", 1, "", groups(&["system:masters"])),
        all_of("catch-all", "catch-all", 10000, "ByUser", groups(&everyone)),
        flow_schema(
            "probes",
            "exempt",
            2,
            "",
            vec![json!({
                "subjects": groups(&everyone),
                "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}],
            })],
        ),
        flow_schema(
            "system-leader-election",
            "leader-election",
            100,
            "ByUser",
            vec![json!({
                "subjects": controllers_and_kube_system,
                "resourceRules": leader_election(&["kube-system"]),
            })],
        ),
        flow_schema(
            "endpoint-controller",
            "workload-high",
            150,
            "ByUser",
            vec![json!({
                "subjects": endpoint_controllers,
                "resourceRules": [resource_rule(&["get", "create", "update"], &[""], &["endpoints"], &["*"], false)],
            })],
        ),
        flow_schema(
            "workload-leader-election",
            "leader-election",
            200,
            "ByUser",
            vec![json!({
                "subjects": kube_system_service_accounts(&["*"]),
                "resourceRules": leader_election(&["*"]),
            })],
        ),
        flow_schema(
            "system-node-high",
            "node-high",
            400,
            "ByUser",
            vec![json!({
                "subjects": groups(&["system:nodes"]),
                "resourceRules": [
                    resource_rule(&["*"], &[""], &["nodes", "nodes/status"], &["*"], true),
                    resource_rule(&["*"], &["coordination.k8s.io"], &["leases"], &["*"], false),
                ],
            })],
        ),
        all_of(
            "system-nodes",
            "system",
            500,
            "ByUser",
            groups(&["system:nodes"]),
        ),
        all_of(
            "kube-controller-manager",
            "workload-high",
            800,
            "ByNamespace",
            users(&["system:kube-controller-manager"]),
        ),
        all_of(
            "kube-scheduler",
            "workload-high",
            800,
            "ByNamespace",
            users(&["system:kube-scheduler"]),
        ),
        all_of(
            "kube-system-service-accounts",
            "workload-high",
            900,
            "ByNamespace",
            kube_system_service_accounts(&["*"]),
        ),
        all_of(
            "service-accounts",
            "workload-low",
            9000,
            "ByUser",
            groups(&["system:serviceaccounts"]),
        ),
        all_of(
            "global-default",
            "global-default",
            9900,
            "ByUser",
            groups(&everyone),
        ),
    ]
}

/// What to do with a stored bootstrap object.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// Its spec is this version's (or the annotation is not `"true"`): nothing to write.
    Unchanged,
    /// Annotated `"true"` with another spec: write this object back.
    Update(Value),
}

/// Brings `existing` back to `expected`'s spec when it is annotated
/// `apf.kubernetes.io/autoupdate-spec: "true"`, as upstream's configuration ensurer does; an
/// object annotated otherwise (or not at all) is the user's.
pub fn reconcile(existing: &Value, expected: &Value) -> Outcome {
    if existing["metadata"]["annotations"][AUTOUPDATE].as_str() != Some("true") {
        return Outcome::Unchanged;
    }
    if existing["spec"] == expected["spec"] {
        return Outcome::Unchanged;
    }
    let mut updated = existing.clone();
    updated["spec"] = expected["spec"].clone();
    let generation = existing["metadata"]["generation"].as_i64().unwrap_or(1);
    updated["metadata"]["generation"] = json!(generation.saturating_add(1));
    Outcome::Update(updated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bootstrap_set_is_upstreams() {
        let names = |objs: Vec<Value>| -> Vec<String> {
            objs.iter()
                .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(
            names(priority_levels()),
            [
                "exempt",
                "catch-all",
                "system",
                "node-high",
                "leader-election",
                "workload-high",
                "workload-low",
                "global-default"
            ]
        );
        assert_eq!(
            names(flow_schemas()),
            [
                "exempt",
                "catch-all",
                "probes",
                "system-leader-election",
                "endpoint-controller",
                "workload-leader-election",
                "system-node-high",
                "system-nodes",
                "kube-controller-manager",
                "kube-scheduler",
                "kube-system-service-accounts",
                "service-accounts",
                "global-default"
            ]
        );
        for fs in flow_schemas() {
            let level = fs["spec"]["priorityLevelConfiguration"]["name"]
                .as_str()
                .unwrap();
            assert!(
                names(priority_levels()).iter().any(|l| l == level),
                "{level}"
            );
            assert_eq!(fs["metadata"]["annotations"][AUTOUPDATE], "true");
        }
    }

    #[test]
    fn a_stored_object_is_reconciled_only_when_it_asks_to_be() {
        let expected = &priority_levels()[2];
        let mut edited = expected.clone();
        edited["spec"]["limited"]["nominalConcurrencyShares"] = json!(1);
        edited["metadata"]["generation"] = json!(2);
        let Outcome::Update(updated) = reconcile(&edited, expected) else {
            panic!("an autoupdated object must be reconciled")
        };
        assert_eq!(updated["spec"], expected["spec"]);
        assert_eq!(updated["metadata"]["generation"], 3);
        assert_eq!(reconcile(expected, expected), Outcome::Unchanged);
        edited["metadata"]["annotations"][AUTOUPDATE] = json!("false");
        assert_eq!(reconcile(&edited, expected), Outcome::Unchanged);
        edited["metadata"]["annotations"] = json!(null);
        assert_eq!(reconcile(&edited, expected), Outcome::Unchanged);
    }
}
