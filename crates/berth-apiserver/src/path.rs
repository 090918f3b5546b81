//! Parsing request paths into the resource they address.

use berth_api::registry::{self, ResourceType};

/// What a resource path names: a collection, or one object (and maybe its subresource).
#[derive(Debug, Clone)]
pub struct Target {
    pub rt: &'static ResourceType,
    /// `None` for a cluster-scoped resource or an all-namespaces list.
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

/// Paths that are not resources.
#[derive(Debug, PartialEq)]
pub enum Route {
    /// `/api`, `/apis`, `/api/v1`, `/apis/<g>`, `/apis/<g>/<v>`.
    CoreVersions,
    Groups,
    GroupVersion(String, String),
    Group(String),
}

/// Splits `/api/v1/...` or `/apis/<g>/<v>/...` into (group, version, rest). A path with an
/// empty segment (`.../configmaps/`, `.../namespaces/default/`, `//`) names no resource: read
/// as the path without it, a trailing slash turned a DELETE of one object into a DELETE of its
/// whole collection, or of a namespace. Upstream's router matches no route for them either.
fn split_prefix(path: &str) -> Option<(&str, &str, Vec<&str>)> {
    let segs: Vec<&str> = path.strip_prefix('/')?.split('/').collect();
    if segs.iter().any(|s| s.is_empty()) {
        return None;
    }
    match segs.as_slice() {
        ["api", v, rest @ ..] => Some(("", v, rest.to_vec())),
        ["apis", g, v, rest @ ..] => Some((g, v, rest.to_vec())),
        _ => None,
    }
}

/// A discovery route, if the path is one.
pub fn discovery_route(path: &str) -> Option<Route> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segs.as_slice() {
        ["api"] => Some(Route::CoreVersions),
        ["apis"] => Some(Route::Groups),
        ["api", v] => Some(Route::GroupVersion(String::new(), v.to_string())),
        ["apis", g] => Some(Route::Group(g.to_string())),
        ["apis", g, v] => Some(Route::GroupVersion(g.to_string(), v.to_string())),
        _ => None,
    }
}

/// Resolves a resource path. `None` means the server does not serve it (404).
pub fn parse(path: &str) -> Option<Target> {
    parse_with(path, |_, _, _| None)
}

/// [`parse`], looking a resource the registry does not serve up in `custom` (the kinds of
/// CustomResourceDefinitions), after the registry missed.
pub fn parse_with(
    path: &str,
    custom: impl Fn(&str, &str, &str) -> Option<&'static ResourceType>,
) -> Option<Target> {
    let (group, version, rest) = split_prefix(path)?;
    let find = |plural: &str| {
        registry::find(group, version, plural).or_else(|| custom(group, version, plural))
    };
    let target =
        |rt: &'static ResourceType, ns: Option<&str>, name: Option<&str>, sub: Option<&str>| {
            Some(Target {
                rt,
                namespace: ns.map(str::to_string),
                name: name.map(str::to_string),
                subresource: sub.map(str::to_string),
            })
        };
    let namespaced = |plural: &str| find(plural).filter(|rt| rt.namespaced);
    let cluster = |plural: &str| find(plural).filter(|rt| !rt.namespaced);
    match rest.as_slice() {
        // namespaced collections and objects
        ["namespaces", ns, plural] if namespaced(plural).is_some() => {
            target(namespaced(plural)?, Some(ns), None, None)
        }
        ["namespaces", ns, plural, name] if namespaced(plural).is_some() => {
            target(namespaced(plural)?, Some(ns), Some(name), None)
        }
        ["namespaces", ns, plural, name, sub] if namespaced(plural).is_some() => {
            let rt = namespaced(plural)?;
            rt.subresources.iter().find(|s| s.name == *sub)?;
            target(rt, Some(ns), Some(name), Some(sub))
        }
        // cluster-scoped collections and objects (namespaces themselves included)
        [plural] => target(find(plural)?, None, None, None),
        [plural, name] => target(cluster(plural)?, None, Some(name), None),
        [plural, name, sub] => {
            let rt = cluster(plural)?;
            let served = rt.subresources.iter().any(|s| s.name == *sub)
                || (*plural == "namespaces" && *sub == "finalize");
            if !served {
                return None;
            }
            target(rt, None, Some(name), Some(sub))
        }
        _ => None,
    }
}

/// The storage key prefix of a resource type (shared by all its versions).
pub fn type_prefix(rt: &ResourceType) -> String {
    // events.k8s.io Events are a view of the core ones (`event_view`): one storage.
    let group = if rt.group.is_empty() || crate::event_view::is_view(rt) {
        "core"
    } else {
        rt.group
    };
    format!("/registry/{group}/{}/", rt.plural)
}

/// The storage key prefix of a collection: one namespace, or all.
pub fn collection_prefix(rt: &ResourceType, namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) if rt.namespaced => format!("{}{ns}/", type_prefix(rt)),
        _ => type_prefix(rt),
    }
}

/// The storage key of one object.
pub fn key(rt: &ResourceType, namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) if rt.namespaced => format!("{}{ns}/{name}", type_prefix(rt)),
        _ => format!("{}{name}", type_prefix(rt)),
    }
}

/// The resource name used in messages: `pods`, `deployments.apps`.
pub fn qualified_resource(rt: &ResourceType) -> String {
    if rt.group.is_empty() {
        rt.plural.to_string()
    } else {
        format!("{}.{}", rt.plural, rt.group)
    }
}
