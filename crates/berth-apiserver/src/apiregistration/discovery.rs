//! Remote APIServices in discovery, as upstream's aggregator merges them: `/apis` lists each
//! remote group with its versions by `versionPriority` (groups this server does not serve
//! after its own, by `groupPriorityMinimum`), `/apis/<group>` of a remote-only group is
//! answered here, and aggregated discovery (`apidiscovery.k8s.io/v2`) carries the resources
//! each backend's `/apis/<group>/<version>` listed at its last availability check.

use super::{ApiServices, Registered, Snapshot};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The remote versions of each group, groups by highest `groupPriorityMinimum` then name,
/// versions by `versionPriority` then Kubernetes version order.
pub fn remote_groups(snapshot: &Snapshot) -> Vec<(String, Vec<Arc<Registered>>)> {
    let mut groups: Vec<(String, Vec<Arc<Registered>>)> = Vec::new();
    for r in snapshot.remotes() {
        match groups.iter_mut().find(|(g, _)| *g == r.group) {
            Some((_, versions)) => versions.push(r.clone()),
            None => groups.push((r.group.clone(), vec![r.clone()])),
        }
    }
    for (_, versions) in &mut groups {
        versions.sort_by(|a, b| {
            b.version_priority
                .cmp(&a.version_priority)
                .then_with(|| berth_api::registry::compare_versions(&a.version, &b.version))
        });
    }
    let priority = |v: &[Arc<Registered>]| v.iter().map(|r| r.group_priority).max().unwrap_or(0);
    groups.sort_by(|(ga, va), (gb, vb)| priority(vb).cmp(&priority(va)).then(ga.cmp(gb)));
    groups
}

fn group_version(group: &str, version: &str) -> Value {
    json!({"groupVersion": format!("{group}/{version}"), "version": version})
}

/// The legacy `APIGroup` body of a group only remote APIServices serve.
fn api_group(group: &str, versions: &[Arc<Registered>]) -> Value {
    let listed: Vec<Value> = versions
        .iter()
        .map(|r| group_version(group, &r.version))
        .collect();
    json!({"name": group, "versions": listed, "preferredVersion": listed.first().cloned().unwrap_or(Value::Null)})
}

/// `GET /apis/<group>` of a group that only remote APIServices serve.
pub fn group(services: &ApiServices, group: &str) -> Option<Value> {
    let snapshot = services.snapshot();
    let (_, versions) = remote_groups(&snapshot)
        .into_iter()
        .find(|(g, _)| g == group)?;
    if berth_api::registry::preferred_version(group).is_some() {
        return None;
    }
    let mut body = Map::new();
    body.insert("kind".into(), json!("APIGroup"));
    body.insert("apiVersion".into(), json!("v1"));
    if let Value::Object(m) = api_group(group, &versions) {
        body.extend(m);
    }
    Some(Value::Object(body))
}

/// Adds the remote group versions to a legacy `APIGroupList`.
pub fn merge_group_list(services: &ApiServices, list: &mut Value) {
    let snapshot = services.snapshot();
    let remote = remote_groups(&snapshot);
    let Some(groups) = list.get_mut("groups").and_then(Value::as_array_mut) else {
        return;
    };
    for (name, versions) in remote {
        match groups.iter_mut().find(|g| g["name"] == name.as_str()) {
            Some(existing) => {
                let Some(listed) = existing["versions"].as_array_mut() else {
                    continue;
                };
                for r in &versions {
                    if !listed.iter().any(|v| v["version"] == r.version.as_str()) {
                        listed.push(group_version(&name, &r.version));
                    }
                }
            }
            None => groups.push(api_group(&name, &versions)),
        }
    }
}

/// Adds the remote group versions whose backend's resources are known to an aggregated
/// `APIGroupDiscoveryList`.
pub fn merge_aggregated(services: &ApiServices, list: &mut Value) {
    let snapshot = services.snapshot();
    let remote = remote_groups(&snapshot);
    let Some(items) = list.get_mut("items").and_then(Value::as_array_mut) else {
        return;
    };
    for (name, registered) in remote {
        let versions: Vec<Value> = registered
            .iter()
            .filter_map(|r| {
                let discovered = services.discovered(&r.name)?;
                Some(aggregated_version(&r.version, &discovered))
            })
            .collect();
        if versions.is_empty() {
            continue;
        }
        match items
            .iter_mut()
            .find(|g| g["metadata"]["name"] == name.as_str())
        {
            Some(existing) => {
                if let Some(listed) = existing["versions"].as_array_mut() {
                    for v in versions {
                        if !listed.iter().any(|l| l["version"] == v["version"]) {
                            listed.push(v);
                        }
                    }
                }
            }
            None => items.push(json!({
                "metadata": {"name": name, "creationTimestamp": null},
                "versions": versions,
            })),
        }
    }
}

/// One version of an aggregated discovery group, from the backend's `APIResourceList`:
/// `flunders/status` becomes a subresource of `flunders`.
pub fn aggregated_version(version: &str, list: &Value) -> Value {
    let group = list["groupVersion"]
        .as_str()
        .and_then(|gv| gv.split_once('/'))
        .map_or("", |(g, _)| g);
    let all = list["resources"].as_array().cloned().unwrap_or_default();
    let mut resources: Vec<Value> = Vec::new();
    for r in all
        .iter()
        .filter(|r| !r["name"].as_str().unwrap_or("/").contains('/'))
    {
        let name = r["name"].as_str().unwrap_or("");
        let mut m = Map::new();
        m.insert("resource".into(), json!(name));
        m.insert(
            "responseKind".into(),
            json!({"group": r.get("group").and_then(Value::as_str).unwrap_or(group),
                   "version": r.get("version").and_then(Value::as_str).unwrap_or(version),
                   "kind": r["kind"]}),
        );
        let scope = if r["namespaced"].as_bool().unwrap_or(false) {
            "Namespaced"
        } else {
            "Cluster"
        };
        m.insert("scope".into(), json!(scope));
        m.insert("singularResource".into(), r["singularName"].clone());
        for (from, to) in [("shortNames", "shortNames"), ("categories", "categories")] {
            if r[from].as_array().is_some_and(|a| !a.is_empty()) {
                m.insert(to.into(), r[from].clone());
            }
        }
        m.insert("verbs".into(), r["verbs"].clone());
        let prefix = format!("{name}/");
        let subs: Vec<Value> = all
            .iter()
            .filter_map(|s| {
                let sub = s["name"].as_str()?.strip_prefix(&prefix)?;
                Some(json!({"subresource": sub,
                    "responseKind": {"group": group, "version": version, "kind": s["kind"]},
                    "verbs": s["verbs"]}))
            })
            .collect();
        if !subs.is_empty() {
            m.insert("subresources".into(), Value::Array(subs));
        }
        resources.push(Value::Object(m));
    }
    json!({"version": version, "resources": resources, "freshness": "Current"})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_list_becomes_an_aggregated_version() {
        let list = json!({"kind": "APIResourceList", "groupVersion": "wardle.example.com/v1alpha1",
            "resources": [
                {"name": "flunders", "singularName": "flunder", "namespaced": true, "kind": "Flunder",
                 "verbs": ["get", "list"], "shortNames": ["fl"]},
                {"name": "flunders/status", "singularName": "", "namespaced": true, "kind": "Flunder",
                 "verbs": ["get"]}]});
        let v = aggregated_version("v1alpha1", &list);
        assert_eq!(v["version"], "v1alpha1");
        let r = &v["resources"][0];
        assert_eq!(r["resource"], "flunders");
        assert_eq!(r["scope"], "Namespaced");
        assert_eq!(
            r["responseKind"],
            json!({"group": "wardle.example.com", "version": "v1alpha1", "kind": "Flunder"})
        );
        assert_eq!(r["shortNames"], json!(["fl"]));
        assert_eq!(r["subresources"][0]["subresource"], "status");
        assert_eq!(v["resources"].as_array().unwrap().len(), 1);
    }

    fn registered(name: &str, group: &str, version: &str, gp: i64, vp: i64) -> Arc<Registered> {
        Arc::new(Registered {
            name: name.into(),
            group: group.into(),
            version: version.into(),
            group_priority: gp,
            version_priority: vp,
            service: Some(super::super::ServiceRef {
                namespace: "s".into(),
                name: "a".into(),
                port: 443,
            }),
            tls: Err(String::new()),
            available: true,
        })
    }

    #[test]
    fn remote_groups_by_priority() {
        let by_name = [
            registered("v1.b.io", "b.io", "v1", 100, 10),
            registered("v2.b.io", "b.io", "v2", 100, 5),
            registered("v1.a.io", "a.io", "v1", 100, 10),
            registered("v1.c.io", "c.io", "v1", 2000, 10),
        ]
        .into_iter()
        .map(|r| (r.name.clone(), r))
        .collect();
        let snapshot = Snapshot::build(by_name);
        let groups: Vec<(String, Vec<String>)> = remote_groups(&snapshot)
            .into_iter()
            .map(|(g, v)| (g, v.iter().map(|r| r.version.clone()).collect()))
            .collect();
        assert_eq!(
            groups,
            [
                ("c.io".to_string(), vec!["v1".to_string()]),
                ("a.io".to_string(), vec!["v1".to_string()]),
                ("b.io".to_string(), vec!["v1".to_string(), "v2".to_string()]),
            ]
        );
    }
}
