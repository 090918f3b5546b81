//! `metrics.k8s.io/v1beta1`, what metrics-server serves and `kubectl top` reads: `NodeMetrics`
//! and `PodMetrics`, computed on each request from the kubelets' `/stats/summary` (reached as
//! the node proxy reaches them), so nothing is stored. Only `get` and `list` are served.

use crate::context::Ctx;
use crate::error::{ApiError, ApiResult};
use crate::node_proxy::{kubelet_location, kubelet_summary};
use crate::response::json_response;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use berth_api::registry;
use serde_json::{json, Value};
use std::collections::BTreeMap;

const GROUP_VERSION: &str = "metrics.k8s.io/v1beta1";
/// The window the usage is an average over (metrics-server's default resolution).
const WINDOW: &str = "10s";

/// A request of ours.
#[derive(Debug, PartialEq, Eq)]
pub enum Target<'a> {
    Nodes {
        name: Option<&'a str>,
    },
    Pods {
        namespace: Option<&'a str>,
        name: Option<&'a str>,
    },
}

impl<'a> Target<'a> {
    /// The target a path names, if it is one of ours.
    pub fn of(path: &'a str) -> Option<Target<'a>> {
        let rest = path.strip_prefix("/apis/metrics.k8s.io/v1beta1/")?;
        let parts: Vec<&str> = rest.split('/').collect();
        let nonempty = |s: &&str| !s.is_empty();
        match parts.as_slice() {
            ["nodes"] => Some(Target::Nodes { name: None }),
            ["nodes", name] if nonempty(name) => Some(Target::Nodes { name: Some(name) }),
            ["pods"] => Some(Target::Pods {
                namespace: None,
                name: None,
            }),
            ["namespaces", ns, "pods"] if nonempty(ns) => Some(Target::Pods {
                namespace: Some(ns),
                name: None,
            }),
            ["namespaces", ns, "pods", name] if nonempty(ns) && nonempty(name) => {
                Some(Target::Pods {
                    namespace: Some(ns),
                    name: Some(name),
                })
            }
            _ => None,
        }
    }
}

/// Stored objects of a core resource (`nodes`, `pods`), in one namespace or all.
fn stored(ctx: &Ctx, plural: &str, namespace: Option<&str>) -> Vec<Value> {
    let Some(rt) = registry::find("", "v1", plural) else {
        return Vec::new();
    };
    let prefix = crate::path::collection_prefix(rt, namespace);
    let Ok(r) = ctx.store.range(&prefix, None, 0, None) else {
        return Vec::new();
    };
    r.kvs
        .iter()
        .filter_map(|kv| serde_json::from_slice(&kv.value).ok())
        .collect()
}

/// The stats summaries of these nodes, by name (nodes that do not answer are left out).
async fn summaries(nodes: &[&Value]) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for node in nodes {
        if let Some(kubelet) = kubelet_location(node) {
            if let Some(summary) = kubelet_summary(&kubelet).await {
                out.insert(kubelet.node.clone(), summary);
            }
        }
    }
    out
}

fn usage(stats: &Value) -> Value {
    let nano = stats["cpu"]["usageNanoCores"].as_i64().unwrap_or(0);
    let bytes = stats["memory"]["workingSetBytes"].as_i64().unwrap_or(0);
    json!({"cpu": format!("{nano}n"), "memory": format!("{}Ki", bytes / 1024)})
}

fn list(kind: &str, items: Vec<Value>) -> Value {
    json!({"kind": format!("{kind}List"), "apiVersion": GROUP_VERSION,
           "metadata": {}, "items": items})
}

/// Answers a request for `target`.
pub async fn handle(ctx: &Ctx, target: Target<'_>, method: Method) -> ApiResult<Response> {
    if method != Method::GET {
        return Err(ApiError::MethodNotAllowed(
            "the server does not allow this method on the requested resource".into(),
        ));
    }
    match target {
        Target::Nodes { name } => {
            let nodes = stored(ctx, "nodes", None);
            let wanted: Vec<&Value> = nodes
                .iter()
                .filter(|n| name.is_none_or(|want| n["metadata"]["name"] == want))
                .collect();
            let summaries = summaries(&wanted).await;
            let items: Vec<Value> = wanted
                .iter()
                .filter_map(|n| {
                    let node = n["metadata"]["name"].as_str()?;
                    let s = summaries.get(node)?;
                    Some(json!({
                        "kind": "NodeMetrics", "apiVersion": GROUP_VERSION,
                        "metadata": {"name": node, "creationTimestamp": s["node"]["startTime"],
                                     "labels": n["metadata"]["labels"]},
                        "timestamp": s["node"]["cpu"]["time"], "window": WINDOW,
                        "usage": usage(&s["node"]),
                    }))
                })
                .collect();
            answer(name, "nodes", "NodeMetrics", items)
        }
        Target::Pods { namespace, name } => {
            let pods = stored(ctx, "pods", namespace);
            let pods: Vec<&Value> = pods
                .iter()
                .filter(|p| name.is_none_or(|want| p["metadata"]["name"] == want))
                .filter(|p| {
                    p["spec"]["nodeName"]
                        .as_str()
                        .is_some_and(|n| !n.is_empty())
                })
                .collect();
            let node_names: std::collections::BTreeSet<&str> = pods
                .iter()
                .filter_map(|p| p["spec"]["nodeName"].as_str())
                .collect();
            let nodes = stored(ctx, "nodes", None);
            let hosting: Vec<&Value> = nodes
                .iter()
                .filter(|n| {
                    n["metadata"]["name"]
                        .as_str()
                        .is_some_and(|n| node_names.contains(n))
                })
                .collect();
            let summaries = summaries(&hosting).await;
            let items: Vec<Value> =
                pods.iter()
                    .filter_map(|p| {
                        let node = p["spec"]["nodeName"].as_str()?;
                        let (ns, pod) = (
                            p["metadata"]["namespace"].as_str()?,
                            p["metadata"]["name"].as_str()?,
                        );
                        let stats = summaries.get(node)?["pods"].as_array()?.iter().find(|s| {
                            s["podRef"]["namespace"] == ns && s["podRef"]["name"] == pod
                        })?;
                        let containers: Vec<Value> = stats["containers"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(|c| json!({"name": c["name"], "usage": usage(c)}))
                            .collect();
                        Some(json!({
                            "kind": "PodMetrics", "apiVersion": GROUP_VERSION,
                            "metadata": {"name": pod, "namespace": ns,
                                         "creationTimestamp": stats["startTime"],
                                         "labels": p["metadata"]["labels"]},
                            "timestamp": stats["cpu"]["time"], "window": WINDOW,
                            "containers": containers,
                        }))
                    })
                    .collect();
            answer(name, "pods", "PodMetrics", items)
        }
    }
}

fn answer(
    name: Option<&str>,
    resource: &str,
    kind: &str,
    items: Vec<Value>,
) -> ApiResult<Response> {
    match name {
        Some(name) => {
            let item = items.into_iter().next().ok_or_else(|| ApiError::NotFound {
                resource: format!("{resource}.metrics.k8s.io"),
                name: name.to_string(),
            })?;
            Ok(json_response(StatusCode::OK, &item))
        }
        None => Ok(json_response(StatusCode::OK, &list(kind, items))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn metrics_paths() {
        assert_eq!(
            Target::of("/apis/metrics.k8s.io/v1beta1/nodes"),
            Some(Target::Nodes { name: None })
        );
        assert_eq!(
            Target::of("/apis/metrics.k8s.io/v1beta1/nodes/n1"),
            Some(Target::Nodes { name: Some("n1") })
        );
        assert_eq!(
            Target::of("/apis/metrics.k8s.io/v1beta1/namespaces/d/pods"),
            Some(Target::Pods {
                namespace: Some("d"),
                name: None
            })
        );
        assert_eq!(
            Target::of("/apis/metrics.k8s.io/v1beta1/namespaces/d/pods/p"),
            Some(Target::Pods {
                namespace: Some("d"),
                name: Some("p")
            })
        );
        assert_eq!(Target::of("/apis/metrics.k8s.io/v1beta1"), None);
        assert_eq!(Target::of("/apis/metrics.k8s.io/v1beta1/nodes/"), None);
        assert_eq!(Target::of("/api/v1/nodes"), None);
    }

    #[test]
    fn usage_is_in_nanocores_and_kibibytes() {
        let s =
            json!({"cpu": {"usageNanoCores": 250_000_000}, "memory": {"workingSetBytes": 1 << 30}});
        assert_eq!(
            usage(&s),
            json!({"cpu": "250000000n", "memory": "1048576Ki"})
        );
    }

    proptest! {
        #[test]
        fn any_path_is_classified_without_panic(p in "/apis/metrics.k8s.io/v1beta1/.*") {
            let _ = Target::of(&p);
        }
    }
}
