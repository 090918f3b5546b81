//! Which objects each node may read: upstream's node authorizer graph, reduced to the edges
//! berth's objects have. A pod bound to a node links the node to the pod and to every Secret,
//! ConfigMap, PersistentVolumeClaim and ServiceAccount the pod references
//! (`node <- pod <- secret`, ...); a claim bound to a PersistentVolume links the volume to
//! the claim (`node <- pod <- pvc <- pv`, [`ClaimVolumes`]). The graph is pure: the watch in [`super::node`] feeds it
//! stored pods ([`Graph::apply_pod`], [`Graph::remove_pod`]), and a request asks
//! [`Graph::has_path`], a map lookup, never a scan of pods.

use serde::Deserialize;
use std::collections::HashMap;

/// The kinds of object a node reaches through its pods.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum VertexKind {
    Pod,
    Secret,
    ConfigMap,
    PersistentVolumeClaim,
    ServiceAccount,
}

/// One namespaced object of the graph.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct Vertex {
    pub kind: VertexKind,
    pub namespace: String,
    pub name: String,
}

/// A bound pod's edges: its node and what it references.
#[derive(Debug)]
struct Bound {
    node: String,
    references: Vec<Vertex>,
}

/// The node-to-object relationships of a cluster.
#[derive(Debug, Default)]
pub struct Graph {
    /// (namespace, name) of each bound pod → its edges.
    pods: HashMap<(String, String), Bound>,
    /// A referenced object → the nodes whose pods reference it, with how many pods do.
    referenced_by: HashMap<Vertex, HashMap<String, u32>>,
}

impl Graph {
    /// Whether `node` reaches the object (a pod bound to it, or an object one of its pods
    /// references).
    pub fn has_path(&self, node: &str, kind: VertexKind, namespace: &str, name: &str) -> bool {
        if kind == VertexKind::Pod {
            return self
                .pods
                .get(&(namespace.to_string(), name.to_string()))
                .is_some_and(|b| b.node == node);
        }
        let vertex = Vertex {
            kind,
            namespace: namespace.into(),
            name: name.into(),
        };
        self.referenced_by
            .get(&vertex)
            .is_some_and(|nodes| nodes.contains_key(node))
    }

    /// Whether the pod is in the graph (bound). A bound pod's node and references cannot
    /// change, so the watch need not decode it again.
    pub fn knows_pod(&self, namespace: &str, name: &str) -> bool {
        self.pods
            .contains_key(&(namespace.to_string(), name.to_string()))
    }

    /// Takes in a stored pod: a bound one gains its edges; an unbound one has none.
    pub fn apply_pod(&mut self, namespace: &str, name: &str, pod: &PodRefs) {
        self.remove_pod(namespace, name);
        if pod.spec.node_name.is_empty() {
            return;
        }
        let references = pod.references(namespace, name);
        for vertex in &references {
            *self
                .referenced_by
                .entry(vertex.clone())
                .or_default()
                .entry(pod.spec.node_name.clone())
                .or_default() += 1;
        }
        self.pods.insert(
            (namespace.into(), name.into()),
            Bound {
                node: pod.spec.node_name.clone(),
                references,
            },
        );
    }

    /// Forgets a deleted pod and the edges only it made.
    pub fn remove_pod(&mut self, namespace: &str, name: &str) {
        let Some(bound) = self.pods.remove(&(namespace.to_string(), name.to_string())) else {
            return;
        };
        for vertex in bound.references {
            let Some(nodes) = self.referenced_by.get_mut(&vertex) else {
                continue;
            };
            if let Some(count) = nodes.get_mut(&bound.node) {
                *count -= 1;
                if *count == 0 {
                    nodes.remove(&bound.node);
                }
            }
            if nodes.is_empty() {
                self.referenced_by.remove(&vertex);
            }
        }
    }
}

/// Which claim each PersistentVolume is bound to (a claim's `spec.volumeName`), the edges
/// `pvc <- pv` of upstream's graph, kept apart from the pods' edges because a different watch
/// (the stored claims) feeds them.
#[derive(Debug, Default)]
pub struct ClaimVolumes {
    /// (namespace, claim) → the volume it is bound to.
    volume_of: HashMap<(String, String), String>,
    /// volume → the claims bound to it (one, unless a volume was pre-bound twice).
    claims_of: HashMap<String, Vec<(String, String)>>,
}

/// What the graph reads of a claim.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ClaimRefs {
    spec: ClaimSpec,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ClaimSpec {
    volume_name: String,
}

impl ClaimVolumes {
    /// Takes in a stored claim: bound to a volume, it links the volume to itself.
    pub fn apply_claim(&mut self, namespace: &str, name: &str, claim: &ClaimRefs) {
        let key = (namespace.to_string(), name.to_string());
        if self.volume_of.get(&key) == Some(&claim.spec.volume_name) {
            return;
        }
        self.remove_claim(namespace, name);
        if claim.spec.volume_name.is_empty() {
            return;
        }
        self.claims_of
            .entry(claim.spec.volume_name.clone())
            .or_default()
            .push(key.clone());
        self.volume_of.insert(key, claim.spec.volume_name.clone());
    }

    /// Forgets a deleted claim.
    pub fn remove_claim(&mut self, namespace: &str, name: &str) {
        let key = (namespace.to_string(), name.to_string());
        let Some(volume) = self.volume_of.remove(&key) else {
            return;
        };
        if let Some(claims) = self.claims_of.get_mut(&volume) {
            claims.retain(|c| *c != key);
            if claims.is_empty() {
                self.claims_of.remove(&volume);
            }
        }
    }

    /// The claims bound to `volume`, as (namespace, name).
    pub fn claims_of(&self, volume: &str) -> &[(String, String)] {
        self.claims_of.get(volume).map_or(&[], Vec::as_slice)
    }
}

/// What the graph reads of a pod: its node and the names it references (upstream's
/// `VisitPodSecretNames`, `VisitPodConfigmapNames`, PVC volumes and the ServiceAccount).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct PodRefs {
    spec: Spec,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Spec {
    node_name: String,
    service_account_name: String,
    image_pull_secrets: Vec<NameRef>,
    volumes: Vec<Volume>,
    containers: Vec<Container>,
    init_containers: Vec<Container>,
    ephemeral_containers: Vec<Container>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct NameRef {
    name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Volume {
    name: String,
    secret: Option<SecretVolume>,
    config_map: Option<NameRef>,
    projected: Option<Projected>,
    persistent_volume_claim: Option<ClaimRef>,
    ephemeral: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct SecretVolume {
    secret_name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ClaimRef {
    claim_name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Projected {
    sources: Vec<ProjectedSource>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ProjectedSource {
    secret: Option<NameRef>,
    config_map: Option<NameRef>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Container {
    env: Vec<Env>,
    env_from: Vec<EnvFrom>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Env {
    value_from: Option<EnvSource>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct EnvSource {
    secret_key_ref: Option<NameRef>,
    config_map_key_ref: Option<NameRef>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct EnvFrom {
    secret_ref: Option<NameRef>,
    config_map_ref: Option<NameRef>,
}

impl PodRefs {
    /// The objects the pod references, each once.
    fn references(&self, namespace: &str, pod_name: &str) -> Vec<Vertex> {
        let mut out: Vec<Vertex> = Vec::new();
        let mut add = |kind: VertexKind, name: &str| {
            if name.is_empty() {
                return;
            }
            let v = Vertex {
                kind,
                namespace: namespace.into(),
                name: name.into(),
            };
            if !out.contains(&v) {
                out.push(v);
            }
        };
        let spec = &self.spec;
        add(VertexKind::ServiceAccount, &spec.service_account_name);
        for s in &spec.image_pull_secrets {
            add(VertexKind::Secret, &s.name);
        }
        for v in &spec.volumes {
            if let Some(s) = &v.secret {
                add(VertexKind::Secret, &s.secret_name);
            }
            if let Some(c) = &v.config_map {
                add(VertexKind::ConfigMap, &c.name);
            }
            for source in v.projected.iter().flat_map(|p| &p.sources) {
                if let Some(s) = &source.secret {
                    add(VertexKind::Secret, &s.name);
                }
                if let Some(c) = &source.config_map {
                    add(VertexKind::ConfigMap, &c.name);
                }
            }
            if let Some(c) = &v.persistent_volume_claim {
                add(VertexKind::PersistentVolumeClaim, &c.claim_name);
            }
            // A generic ephemeral volume's claim is named after the pod and the volume.
            if v.ephemeral.is_some() {
                add(
                    VertexKind::PersistentVolumeClaim,
                    &format!("{pod_name}-{}", v.name),
                );
            }
        }
        let containers = spec
            .containers
            .iter()
            .chain(&spec.init_containers)
            .chain(&spec.ephemeral_containers);
        for c in containers {
            for e in c.env.iter().filter_map(|e| e.value_from.as_ref()) {
                if let Some(s) = &e.secret_key_ref {
                    add(VertexKind::Secret, &s.name);
                }
                if let Some(m) = &e.config_map_key_ref {
                    add(VertexKind::ConfigMap, &m.name);
                }
            }
            for e in &c.env_from {
                if let Some(s) = &e.secret_ref {
                    add(VertexKind::Secret, &s.name);
                }
                if let Some(m) = &e.config_map_ref {
                    add(VertexKind::ConfigMap, &m.name);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(spec: serde_json::Value) -> PodRefs {
        serde_json::from_value(json!({ "spec": spec })).unwrap()
    }

    #[test]
    fn a_bound_pod_links_its_node_to_what_it_references() {
        let mut g = Graph::default();
        g.apply_pod(
            "dev",
            "p",
            &pod(json!({
                "nodeName": "n1",
                "serviceAccountName": "sa",
                "imagePullSecrets": [{"name": "pull"}],
                "volumes": [
                    {"name": "v1", "secret": {"secretName": "s1"}},
                    {"name": "v2", "configMap": {"name": "cm1"}},
                    {"name": "v3", "projected": {"sources": [{"secret": {"name": "s2"}}, {"configMap": {"name": "cm2"}}]}},
                    {"name": "v4", "persistentVolumeClaim": {"claimName": "data"}}
                ],
                "containers": [{"name": "c", "env": [
                    {"name": "A", "valueFrom": {"secretKeyRef": {"name": "s3", "key": "k"}}},
                    {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "cm3", "key": "k"}}},
                    {"name": "C", "value": "plain"}
                ], "envFrom": [{"secretRef": {"name": "s4"}}, {"configMapRef": {"name": "cm4"}}]}],
                "initContainers": [{"name": "i", "envFrom": [{"secretRef": {"name": "s5"}}]}]
            })),
        );
        use VertexKind::*;
        assert!(g.has_path("n1", Pod, "dev", "p"));
        for (kind, name) in [
            (ServiceAccount, "sa"),
            (Secret, "pull"),
            (Secret, "s1"),
            (Secret, "s2"),
            (Secret, "s3"),
            (Secret, "s4"),
            (Secret, "s5"),
            (ConfigMap, "cm1"),
            (ConfigMap, "cm2"),
            (ConfigMap, "cm3"),
            (ConfigMap, "cm4"),
            (PersistentVolumeClaim, "data"),
        ] {
            assert!(g.has_path("n1", kind, "dev", name), "{kind:?} {name}");
            assert!(
                !g.has_path("n2", kind, "dev", name),
                "{kind:?} {name} from n2"
            );
            assert!(
                !g.has_path("n1", kind, "other", name),
                "{kind:?} {name} elsewhere"
            );
        }
        assert!(!g.has_path("n1", Secret, "dev", "unreferenced"));
        assert!(!g.has_path("n2", Pod, "dev", "p"));
    }

    #[test]
    fn an_unbound_pod_links_nothing() {
        let mut g = Graph::default();
        g.apply_pod(
            "dev",
            "p",
            &pod(json!({"volumes": [{"name": "v", "secret": {"secretName": "s"}}]})),
        );
        assert!(!g.knows_pod("dev", "p"));
        assert!(!g.has_path("n1", VertexKind::Secret, "dev", "s"));
    }

    #[test]
    fn an_object_stays_reachable_while_any_pod_of_the_node_references_it() {
        let mut g = Graph::default();
        let mounts = pod(
            json!({"nodeName": "n1", "volumes": [{"name": "v", "secret": {"secretName": "s"}}]}),
        );
        g.apply_pod("dev", "a", &mounts);
        g.apply_pod("dev", "b", &mounts);
        g.remove_pod("dev", "a");
        assert!(g.has_path("n1", VertexKind::Secret, "dev", "s"));
        g.remove_pod("dev", "b");
        assert!(!g.has_path("n1", VertexKind::Secret, "dev", "s"));
        assert!(g.referenced_by.is_empty());
        assert!(!g.knows_pod("dev", "b"));
    }

    #[test]
    fn a_pod_applied_again_keeps_one_set_of_edges() {
        let mut g = Graph::default();
        let mounts =
            pod(json!({"nodeName": "n1", "volumes": [{"name": "v", "configMap": {"name": "cm"}}]}));
        g.apply_pod("dev", "a", &mounts);
        g.apply_pod("dev", "a", &mounts);
        g.remove_pod("dev", "a");
        assert!(!g.has_path("n1", VertexKind::ConfigMap, "dev", "cm"));
    }
}
