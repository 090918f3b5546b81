//! What an object counts against a ResourceQuota, as upstream's quota evaluators count it
//! (`pkg/quota/v1/evaluator/core`): a pod's compute requests and limits (`requests.cpu`, `cpu`,
//! `limits.memory`, ...) and `pods`; any object's `count/<resource>[.<group>]`; the legacy
//! object counts of the core kinds (`services`, `secrets`, ...). Also which pods a quota's
//! scopes select. The API server's admission and the quota controller both count with this.

use crate::quantity::{self, Quantity};
use serde_json::Value;
use std::collections::BTreeMap;

/// Usage by resource name (`pods`, `requests.cpu`, `count/secrets`).
pub type Usage = BTreeMap<String, Quantity>;

/// The resources whose every container must name a request or limit once a quota limits
/// them (upstream's backward-compatible pod constraint).
const CONTAINER_CONSTRAINED: &[&str] = &[
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
];

/// The legacy core object counts (`services`, not `count/services`).
const LEGACY_COUNTS: &[&str] = &[
    "services",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "replicationcontrollers",
    "resourcequotas",
];

/// `count/<plural>` for core kinds, `count/<plural>.<group>` for others.
pub fn count_name(group: &str, plural: &str) -> String {
    if group.is_empty() {
        format!("count/{plural}")
    } else {
        format!("count/{plural}.{group}")
    }
}

/// What one object of `group`/`plural` uses: one of its `count/` name, its legacy count
/// name, and for a pod that still counts its compute resources and `pods`.
pub fn usage(group: &str, plural: &str, obj: &Value) -> Usage {
    let mut out = Usage::new();
    out.insert(count_name(group, plural), Quantity::from_int(1));
    if group.is_empty() && LEGACY_COUNTS.contains(&plural) {
        out.insert(plural.to_string(), Quantity::from_int(1));
    }
    if group.is_empty() && plural == "services" {
        match obj["spec"]["type"].as_str() {
            Some("NodePort") => {
                out.insert("services.nodeports".into(), ports(obj));
            }
            Some("LoadBalancer") => {
                out.insert("services.loadbalancers".into(), Quantity::from_int(1));
                out.insert("services.nodeports".into(), ports(obj));
            }
            _ => {}
        }
    }
    if group.is_empty() && plural == "pods" {
        if !pod_counts(obj) {
            return Usage::new();
        }
        out.insert("pods".into(), Quantity::from_int(1));
        for (name, q) in pod_compute(&obj["spec"]) {
            out.insert(name, q);
        }
    }
    out
}

fn ports(svc: &Value) -> Quantity {
    let n = svc["spec"]["ports"].as_array().map_or(0, Vec::len);
    Quantity::from_int(i64::try_from(n).unwrap_or(i64::MAX))
}

/// Whether a pod still counts: not finished, and not past its deletion grace.
pub fn pod_counts(pod: &Value) -> bool {
    !matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    )
}

/// A pod's compute usage: the sum over containers, or the largest init container where that
/// is more, of each request (`requests.<r>` and the bare `<r>`) and limit (`limits.<r>`).
fn pod_compute(spec: &Value) -> Usage {
    let mut sum = Usage::new();
    for c in spec["containers"].as_array().into_iter().flatten() {
        add_all(&mut sum, &container_usage(c));
    }
    for c in spec["initContainers"].as_array().into_iter().flatten() {
        for (name, q) in container_usage(c) {
            let entry = sum.entry(name).or_default();
            if q > *entry {
                *entry = q;
            }
        }
    }
    if let Some(overhead) = spec["overhead"].as_object() {
        for (r, v) in overhead {
            if let Ok(q) = quantity::from_json(v) {
                for name in [format!("requests.{r}"), r.clone(), format!("limits.{r}")] {
                    if let Some(e) = sum.get_mut(&name) {
                        *e = e.checked_add(&q).unwrap_or(*e);
                    }
                }
            }
        }
    }
    sum
}

fn container_usage(c: &Value) -> Usage {
    let mut out = Usage::new();
    for (r, v) in c["resources"]["requests"].as_object().into_iter().flatten() {
        if let Ok(q) = quantity::from_json(v) {
            out.insert(format!("requests.{r}"), q);
            if r == "cpu" || r == "memory" || r == "ephemeral-storage" {
                out.insert(r.clone(), q);
            }
        }
    }
    for (r, v) in c["resources"]["limits"].as_object().into_iter().flatten() {
        if let Ok(q) = quantity::from_json(v) {
            out.insert(format!("limits.{r}"), q);
        }
    }
    out
}

/// Adds `more` into `total`.
pub fn add_all(total: &mut Usage, more: &Usage) {
    for (name, q) in more {
        let entry = total.entry(name.clone()).or_default();
        *entry = entry.checked_add(q).unwrap_or(*entry);
    }
}

/// Whether `quota` (a ResourceQuota) counts `pod`: every scope of `spec.scopes` and of
/// `spec.scopeSelector` must select it. Objects other than pods match only unscoped quotas.
pub fn quota_selects(quota: &Value, plural: &str, obj: &Value) -> bool {
    let mut scopes: Vec<(String, &str, Vec<&str>)> = quota["spec"]["scopes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|s| (s.to_string(), "Exists", Vec::new()))
        .collect();
    for e in quota["spec"]["scopeSelector"]["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let values = e["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        scopes.push((
            e["scopeName"].as_str().unwrap_or("").to_string(),
            e["operator"].as_str().unwrap_or(""),
            values,
        ));
    }
    if scopes.is_empty() {
        return true;
    }
    if plural != "pods" {
        return false;
    }
    scopes
        .iter()
        .all(|(scope, op, values)| pod_in_scope(obj, scope, op, values))
}

fn pod_in_scope(pod: &Value, scope: &str, op: &str, values: &[&str]) -> bool {
    let terminating = pod["spec"]["activeDeadlineSeconds"].as_i64().is_some();
    let best_effort = crate::qos::qos_class(&pod["spec"]) == "BestEffort";
    match scope {
        "Terminating" => terminating,
        "NotTerminating" => !terminating,
        "BestEffort" => best_effort,
        "NotBestEffort" => !best_effort,
        "PriorityClass" => {
            let class = pod["spec"]["priorityClassName"].as_str().unwrap_or("");
            match op {
                "In" => values.contains(&class),
                "NotIn" => !values.contains(&class),
                "Exists" => !class.is_empty(),
                "DoesNotExist" => class.is_empty(),
                _ => false,
            }
        }
        "CrossNamespacePodAffinity" => {
            let terms = |kind: &str| {
                [
                    "requiredDuringSchedulingIgnoredDuringExecution",
                    "preferredDuringSchedulingIgnoredDuringExecution",
                ]
                .iter()
                .flat_map(|k| {
                    pod["spec"]["affinity"][kind][*k]
                        .as_array()
                        .into_iter()
                        .flatten()
                })
                .any(|t| {
                    let t = if t.get("podAffinityTerm").is_some() {
                        &t["podAffinityTerm"]
                    } else {
                        t
                    };
                    t["namespaces"].as_array().is_some_and(|n| !n.is_empty())
                        || t.get("namespaceSelector").is_some_and(|s| !s.is_null())
                })
            };
            terms("podAffinity") || terms("podAntiAffinity")
        }
        _ => false,
    }
}

/// The resources a quota limiting `hard` requires every container of `pod` to name, with the
/// containers that do not: upstream's `must specify limits.cpu for: c1,c2; ...`.
pub fn missing_container_resources(hard: &[&str], pod: &Value) -> Option<String> {
    let required: Vec<&str> = CONTAINER_CONSTRAINED
        .iter()
        .copied()
        .filter(|r| hard.contains(r))
        .collect();
    if required.is_empty() {
        return None;
    }
    let mut missing: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for list in ["containers", "initContainers"] {
        for c in pod["spec"][list].as_array().into_iter().flatten() {
            let has = container_usage(c);
            for r in &required {
                if !has.contains_key(*r) {
                    missing
                        .entry(r)
                        .or_default()
                        .push(c["name"].as_str().unwrap_or("").to_string());
                }
            }
        }
    }
    if missing.is_empty() {
        return None;
    }
    let parts: Vec<String> = missing
        .into_iter()
        .map(|(r, mut names)| {
            names.sort();
            names.dedup();
            format!("{r} for: {}", names.join(","))
        })
        .collect();
    Some(format!("must specify {}", parts.join("; ")))
}

/// `a=1,b=2`: a usage list as upstream's `prettyPrint` writes it (sorted by name).
pub fn pretty(usage: &Usage) -> String {
    usage
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    #[test]
    fn a_pod_uses_its_summed_requests_limits_and_one_pod() {
        let pod = json!({"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "200m"}}},
            {"name": "b", "resources": {"requests": {"cpu": "300m", "memory": "1Gi"}}}],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "1"}}}]}});
        let u = usage("", "pods", &pod);
        assert_eq!(u["pods"], q("1"));
        assert_eq!(u["count/pods"], q("1"));
        assert_eq!(u["requests.cpu"], q("1"));
        assert_eq!(u["cpu"], q("1"));
        assert_eq!(u["requests.memory"], q("1Gi"));
        assert_eq!(u["limits.cpu"], q("200m"));
    }

    #[test]
    fn a_finished_pod_uses_nothing() {
        let pod = json!({"spec": {"containers": []}, "status": {"phase": "Succeeded"}});
        assert!(usage("", "pods", &pod).is_empty());
    }

    #[test]
    fn other_objects_count_by_resource_and_group() {
        let u = usage("", "secrets", &json!({}));
        assert_eq!(
            u.keys().collect::<Vec<_>>(),
            vec!["count/secrets", "secrets"]
        );
        let u = usage("apps", "deployments", &json!({}));
        assert_eq!(u.keys().collect::<Vec<_>>(), vec!["count/deployments.apps"]);
        let svc = json!({"spec": {"type": "NodePort", "ports": [{}, {}]}});
        assert_eq!(usage("", "services", &svc)["services.nodeports"], q("2"));
    }

    #[test]
    fn scopes_select_pods_by_deadline_qos_and_priority_class() {
        let best_effort = json!({"spec": {"containers": [{"name": "c"}]}});
        let burstable = json!({"spec": {"activeDeadlineSeconds": 5, "priorityClassName": "high",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}});
        let quota = |scopes: Value| json!({"spec": {"scopes": scopes}});
        assert!(quota_selects(
            &quota(json!(["BestEffort"])),
            "pods",
            &best_effort
        ));
        assert!(!quota_selects(
            &quota(json!(["BestEffort"])),
            "pods",
            &burstable
        ));
        assert!(quota_selects(
            &quota(json!(["Terminating", "NotBestEffort"])),
            "pods",
            &burstable
        ));
        assert!(quota_selects(
            &quota(json!(["NotTerminating"])),
            "pods",
            &best_effort
        ));
        let by_class = json!({"spec": {"scopeSelector": {"matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}});
        assert!(quota_selects(&by_class, "pods", &burstable));
        assert!(!quota_selects(&by_class, "pods", &best_effort));
        assert!(!quota_selects(
            &quota(json!(["BestEffort"])),
            "secrets",
            &json!({})
        ));
        assert!(quota_selects(&json!({"spec": {}}), "secrets", &json!({})));
    }

    #[test]
    fn containers_must_name_what_a_quota_limits() {
        let pod = json!({"spec": {"containers": [
            {"name": "b", "resources": {"requests": {"cpu": "1"}}}, {"name": "a"}]}});
        assert_eq!(
            missing_container_resources(&["limits.cpu", "requests.cpu", "pods"], &pod).unwrap(),
            "must specify limits.cpu for: a,b; requests.cpu for: a"
        );
        assert_eq!(missing_container_resources(&["pods"], &pod), None);
    }

    #[test]
    fn usage_prints_as_upstream_lists_it() {
        let mut u = Usage::new();
        u.insert("pods".into(), q("3"));
        u.insert("limits.cpu".into(), q("1500m"));
        assert_eq!(pretty(&u), "limits.cpu=1500m,pods=3");
    }
}
