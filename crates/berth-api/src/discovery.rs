//! Discovery documents, aggregated (`apidiscovery.k8s.io/v2`) and legacy
//! (`APIVersions`, `APIGroupList`, `APIGroup`, `APIResourceList`), built from the registry.
//!
//! Content negotiation is the server's job: it answers `/api` and `/apis` with
//! [`aggregated_core`]/[`aggregated_groups`] and Content-Type [`AGGREGATED_CONTENT_TYPE`] when the
//! Accept header asks for `as=APIGroupDiscoveryList`, and with the legacy bodies otherwise.

use serde_json::{json, Map, Value};

use crate::registry::{self, ResourceType};

/// The Content-Type that makes client-go read `/api` and `/apis` as aggregated discovery.
pub const AGGREGATED_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Body of `GET /api` with the aggregated Accept: an `APIGroupDiscoveryList` with the core group.
pub fn aggregated_core() -> Value {
    aggregated_list(&[""], &[])
}

/// Body of `GET /apis` with the aggregated Accept: an `APIGroupDiscoveryList` with every named
/// group, versions preferred first.
pub fn aggregated_groups() -> Value {
    aggregated_groups_with(&[])
}

/// [`aggregated_groups`] with `extra` resources served besides the registry's (the kinds of
/// CustomResourceDefinitions), their groups after the built-in ones.
pub fn aggregated_groups_with(extra: &[&ResourceType]) -> Value {
    let groups: Vec<&str> = groups(extra)
        .into_iter()
        .filter(|g| !g.is_empty())
        .collect();
    aggregated_list(&groups, extra)
}

/// The groups served, the registry's first, then those only `extra` serves.
fn groups<'a>(extra: &[&'a ResourceType]) -> Vec<&'a str> {
    let mut out: Vec<&str> = registry::groups();
    for rt in extra {
        if !out.contains(&rt.group) {
            out.push(rt.group);
        }
    }
    out
}

/// The versions of `group`, preferred first, the registry's and `extra`'s.
fn versions<'a>(group: &str, extra: &[&'a ResourceType]) -> Vec<&'a str> {
    let mut out: Vec<&str> = registry::versions(group);
    for rt in extra.iter().filter(|rt| rt.group == group) {
        if !out.contains(&rt.version) {
            out.push(rt.version);
        }
    }
    out.sort_by(|a, b| registry::compare_versions(a, b));
    out
}

/// The resources of one group version, the registry's then `extra`'s.
fn resources_of<'a>(
    group: &str,
    version: &str,
    extra: &[&'a ResourceType],
) -> Vec<&'a ResourceType> {
    let mut out: Vec<&ResourceType> = registry::resources_of(group, version).collect();
    out.extend(
        extra
            .iter()
            .filter(|rt| rt.group == group && rt.version == version),
    );
    out
}

fn aggregated_list(groups: &[&str], extra: &[&ResourceType]) -> Value {
    let items: Vec<Value> = groups.iter().map(|g| aggregated_group(g, extra)).collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    })
}

fn aggregated_group(group: &str, extra: &[&ResourceType]) -> Value {
    let versions: Vec<Value> = versions(group, extra)
        .into_iter()
        .map(|version| {
            let resources: Vec<Value> = resources_of(group, version, extra)
                .into_iter()
                .map(aggregated_resource)
                .collect();
            json!({"version": version, "resources": resources, "freshness": "Current"})
        })
        .collect();
    json!({
        "metadata": {"name": group, "creationTimestamp": null},
        "versions": versions,
    })
}

fn aggregated_resource(rt: &ResourceType) -> Value {
    let mut m = Map::new();
    m.insert("resource".into(), json!(rt.plural));
    m.insert(
        "responseKind".into(),
        json!({"group": rt.group, "version": rt.version, "kind": rt.kind}),
    );
    m.insert("scope".into(), json!(scope(rt)));
    m.insert("singularResource".into(), json!(rt.singular));
    if !rt.short_names.is_empty() {
        m.insert("shortNames".into(), json!(rt.short_names));
    }
    if !rt.categories.is_empty() {
        m.insert("categories".into(), json!(rt.categories));
    }
    m.insert("verbs".into(), json!(rt.verbs()));
    if !rt.subresources.is_empty() {
        let subs: Vec<Value> = rt
            .subresources
            .iter()
            .map(|s| {
                json!({
                    "subresource": s.name,
                    "responseKind": {"group": s.group, "version": s.version, "kind": s.kind},
                    "verbs": s.verbs,
                })
            })
            .collect();
        m.insert("subresources".into(), Value::Array(subs));
    }
    Value::Object(m)
}

fn scope(rt: &ResourceType) -> &'static str {
    if rt.namespaced {
        "Namespaced"
    } else {
        "Cluster"
    }
}

/// Body of legacy `GET /api`: `APIVersions` naming `v1`, reachable at `server_address`
/// (`host:port` as the client sees it).
pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    })
}

/// Body of legacy `GET /apis`: `APIGroupList` of every named group.
pub fn api_group_list() -> Value {
    api_group_list_with(&[])
}

/// [`api_group_list`] with `extra` resources served besides the registry's.
pub fn api_group_list_with(extra: &[&ResourceType]) -> Value {
    let groups: Vec<Value> = groups(extra)
        .into_iter()
        .filter(|g| !g.is_empty())
        .filter_map(|g| group_body(g, extra))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// Body of legacy `GET /apis/<group>`: an `APIGroup`, or `None` when the group is not served
/// (the core group is not a named group and gives `None`).
pub fn api_group(group: &str) -> Option<Value> {
    api_group_with(group, &[])
}

/// [`api_group`] with `extra` resources served besides the registry's.
pub fn api_group_with(group: &str, extra: &[&ResourceType]) -> Option<Value> {
    if group.is_empty() {
        return None;
    }
    let mut body = group_body(group, extra)?;
    let m = body.as_object_mut()?;
    let mut out = Map::new();
    out.insert("kind".into(), json!("APIGroup"));
    out.insert("apiVersion".into(), json!("v1"));
    out.append(m);
    Some(Value::Object(out))
}

fn group_body(group: &str, extra: &[&ResourceType]) -> Option<Value> {
    let versions = versions(group, extra);
    let preferred = *versions.first()?;
    let gv = |v: &str| json!({"groupVersion": registry::group_version(group, v), "version": v});
    Some(json!({
        "name": group,
        "versions": versions.iter().map(|v| gv(v)).collect::<Vec<_>>(),
        "preferredVersion": gv(preferred),
    }))
}

/// Body of legacy `GET /api/v1` (`group` = `""`) or `GET /apis/<group>/<version>`: an
/// `APIResourceList`, or `None` when that group version is not served.
///
/// Subresources are entries named `<resource>/<subresource>`; when the subresource's kind lives
/// in another group version (`pods/eviction` → `policy/v1` `Eviction`) the entry names it with
/// explicit `group` and `version`, which is what `kubectl drain` looks for.
pub fn api_resource_list(group: &str, version: &str) -> Option<Value> {
    api_resource_list_with(group, version, &[])
}

/// [`api_resource_list`] with `extra` resources served besides the registry's.
pub fn api_resource_list_with(
    group: &str,
    version: &str,
    extra: &[&ResourceType],
) -> Option<Value> {
    let mut resources = Vec::new();
    for rt in resources_of(group, version, extra) {
        let mut m = Map::new();
        m.insert("name".into(), json!(rt.plural));
        m.insert("singularName".into(), json!(rt.singular));
        m.insert("namespaced".into(), json!(rt.namespaced));
        m.insert("kind".into(), json!(rt.kind));
        m.insert("verbs".into(), json!(rt.verbs()));
        if !rt.short_names.is_empty() {
            m.insert("shortNames".into(), json!(rt.short_names));
        }
        if !rt.categories.is_empty() {
            m.insert("categories".into(), json!(rt.categories));
        }
        resources.push(Value::Object(m));
        for s in rt.subresources {
            let mut m = Map::new();
            m.insert("name".into(), json!(format!("{}/{}", rt.plural, s.name)));
            m.insert("singularName".into(), json!(""));
            m.insert("namespaced".into(), json!(rt.namespaced));
            if s.group != rt.group || s.version != rt.version {
                m.insert("group".into(), json!(s.group));
                m.insert("version".into(), json!(s.version));
            }
            m.insert("kind".into(), json!(s.kind));
            m.insert("verbs".into(), json!(s.verbs));
            resources.push(Value::Object(m));
        }
    }
    if resources.is_empty() {
        return None;
    }
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": registry::group_version(group, version),
        "resources": resources,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pods entry that kubectl 1.32 accepted (api-compat §1.1), byte for byte.
    #[test]
    fn aggregated_pods_entry_matches_observed() {
        let observed: Value = serde_json::from_str(
            r#"{"resource":"pods","responseKind":{"group":"","version":"v1","kind":"Pod"},
      "scope":"Namespaced","singularResource":"pod","shortNames":["po"],"categories":["all"],
      "verbs":["create","delete","deletecollection","get","list","patch","update","watch"],
      "subresources":[
        {"subresource":"status","responseKind":{"group":"","version":"v1","kind":"Pod"},"verbs":["get","patch","update"]},
        {"subresource":"eviction","responseKind":{"group":"policy","version":"v1","kind":"Eviction"},"verbs":["create"]},
        {"subresource":"binding","responseKind":{"group":"","version":"v1","kind":"Binding"},"verbs":["create"]}]}"#,
        )
        .unwrap();
        let core = aggregated_core();
        assert_eq!(core["kind"], "APIGroupDiscoveryList");
        assert_eq!(core["apiVersion"], "apidiscovery.k8s.io/v2");
        assert_eq!(core["metadata"], json!({}));
        let item = &core["items"][0];
        assert_eq!(
            item["metadata"],
            json!({"name": "", "creationTimestamp": null})
        );
        assert_eq!(core["items"].as_array().unwrap().len(), 1);
        let v1 = &item["versions"][0];
        assert_eq!(v1["version"], "v1");
        assert_eq!(v1["freshness"], "Current");
        let pods = v1["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["resource"] == "pods")
            .unwrap();
        assert_eq!(pods, &observed);
    }

    #[test]
    fn aggregated_groups_scope_and_preferred_first() {
        let all = aggregated_groups();
        let items = all["items"].as_array().unwrap();
        assert!(items.iter().all(|i| i["metadata"]["name"] != ""));
        let sched = items
            .iter()
            .find(|i| i["metadata"]["name"] == "scheduling.k8s.io")
            .unwrap();
        let versions: Vec<&str> = sched["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["version"].as_str().unwrap())
            .collect();
        assert_eq!(versions, vec!["v1", "v1beta1"]);
        let pc = &sched["versions"][0]["resources"][0];
        assert_eq!(pc["resource"], "priorityclasses");
        assert_eq!(pc["scope"], "Cluster");
        assert_eq!(pc["shortNames"], json!(["pc"]));
        assert!(pc.get("subresources").is_none());
        let policy = items
            .iter()
            .find(|i| i["metadata"]["name"] == "policy")
            .unwrap();
        assert_eq!(policy["versions"][0]["resources"][0]["scope"], "Namespaced");
    }

    #[test]
    fn legacy_api_v1_has_pods_eviction_in_policy() {
        let list = api_resource_list("", "v1").unwrap();
        assert_eq!(list["kind"], "APIResourceList");
        assert_eq!(list["groupVersion"], "v1");
        let res = list["resources"].as_array().unwrap();
        let eviction = res.iter().find(|r| r["name"] == "pods/eviction").unwrap();
        assert_eq!(eviction["group"], "policy");
        assert_eq!(eviction["version"], "v1");
        assert_eq!(eviction["kind"], "Eviction");
        assert_eq!(eviction["verbs"], json!(["create"]));
        assert_eq!(eviction["namespaced"], true);
        let status = res.iter().find(|r| r["name"] == "pods/status").unwrap();
        assert!(status.get("group").is_none());
        assert_eq!(status["kind"], "Pod");
        let pods = res.iter().find(|r| r["name"] == "pods").unwrap();
        assert_eq!(pods["singularName"], "pod");
        assert_eq!(pods["shortNames"], json!(["po"]));
        assert_eq!(pods["categories"], json!(["all"]));
        let bindings = res.iter().find(|r| r["name"] == "bindings").unwrap();
        assert_eq!(bindings["verbs"], json!(["create"]));
    }

    #[test]
    fn legacy_scale_names_autoscaling() {
        let list = api_resource_list("apps", "v1").unwrap();
        assert_eq!(list["groupVersion"], "apps/v1");
        let scale = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "deployments/scale")
            .unwrap()
            .clone();
        assert_eq!(scale["group"], "autoscaling");
        assert_eq!(scale["kind"], "Scale");
        assert!(api_resource_list("apps", "v2").is_none());
        assert!(api_resource_list("nope", "v1").is_none());
    }

    #[test]
    fn legacy_versions_and_groups() {
        let v = api_versions("127.0.0.1:6443");
        assert_eq!(v["kind"], "APIVersions");
        assert_eq!(v["versions"], json!(["v1"]));
        assert_eq!(
            v["serverAddressByClientCIDRs"][0]["serverAddress"],
            "127.0.0.1:6443"
        );
        let list = api_group_list();
        assert_eq!(list["kind"], "APIGroupList");
        let groups = list["groups"].as_array().unwrap();
        assert!(groups.iter().all(|g| g["name"] != ""));
        let g = api_group("scheduling.k8s.io").unwrap();
        assert_eq!(g["kind"], "APIGroup");
        assert_eq!(g["name"], "scheduling.k8s.io");
        assert_eq!(
            g["preferredVersion"],
            json!({"groupVersion": "scheduling.k8s.io/v1", "version": "v1"})
        );
        assert_eq!(
            g["versions"][1],
            json!({"groupVersion": "scheduling.k8s.io/v1beta1", "version": "v1beta1"})
        );
        assert!(api_group("nope").is_none());
        assert!(api_group("").is_none());
    }
}
