//! A pod as the endpoints controllers read it: identity, labels, IP, node, readiness and named
//! container ports. Decoded straight off the wire; the rest of the pod is skipped.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::collections::BTreeMap;

/// One named (or numbered) container port of a pod.
#[derive(Clone, Debug, PartialEq)]
pub struct ContainerPort {
    pub name: String,
    pub container_port: i32,
    pub protocol: String,
}

/// What an endpoint address is made of.
#[derive(Clone, Debug, Default)]
pub struct EndpointPod {
    /// Kept for the informer's key and the store's lookups.
    pub metadata: ObjectMeta,
    pub namespace: Option<String>,
    pub name: String,
    pub uid: String,
    pub labels: BTreeMap<String, String>,
    pub ip: String,
    pub node_name: Option<String>,
    pub hostname: Option<String>,
    pub subdomain: Option<String>,
    pub phase: String,
    /// The `Ready` condition is `True`.
    pub ready: bool,
    /// A deletion timestamp is set.
    pub terminating: bool,
    pub ports: Vec<ContainerPort>,
}

impl k8s_openapi::Resource for EndpointPod {
    const API_VERSION: &'static str = "v1";
    const GROUP: &'static str = "";
    const KIND: &'static str = "Pod";
    const VERSION: &'static str = "v1";
    const URL_PATH_SEGMENT: &'static str = "pods";
    type Scope = k8s_openapi::NamespaceResourceScope;
}

impl k8s_openapi::Metadata for EndpointPod {
    type Ty = ObjectMeta;
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl<'de> serde::Deserialize<'de> for EndpointPod {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<EndpointPod, D::Error> {
        #[derive(serde::Deserialize)]
        struct Wire {
            #[serde(default)]
            metadata: ObjectMeta,
            #[serde(default)]
            spec: Option<Spec>,
            #[serde(default)]
            status: Option<Status>,
        }
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Spec {
            #[serde(default)]
            node_name: Option<String>,
            #[serde(default)]
            hostname: Option<String>,
            #[serde(default)]
            subdomain: Option<String>,
            #[serde(default)]
            containers: Vec<Container>,
        }
        #[derive(serde::Deserialize)]
        struct Container {
            #[serde(default)]
            ports: Option<Vec<Port>>,
        }
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Port {
            #[serde(default)]
            name: Option<String>,
            #[serde(default)]
            container_port: i32,
            #[serde(default)]
            protocol: Option<String>,
        }
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Status {
            #[serde(default)]
            phase: Option<String>,
            #[serde(default, rename = "podIP")]
            pod_ip: Option<String>,
            #[serde(default)]
            conditions: Option<Vec<Condition>>,
        }
        #[derive(serde::Deserialize)]
        struct Condition {
            #[serde(default, rename = "type")]
            type_: String,
            #[serde(default)]
            status: String,
        }
        let wire = Wire::deserialize(d)?;
        let spec = wire.spec;
        let status = wire.status;
        let meta = wire.metadata;
        Ok(EndpointPod {
            namespace: meta.namespace.clone(),
            name: meta.name.clone().unwrap_or_default(),
            uid: meta.uid.clone().unwrap_or_default(),
            labels: meta.labels.clone().unwrap_or_default(),
            terminating: meta.deletion_timestamp.is_some(),
            ip: status
                .as_ref()
                .and_then(|s| s.pod_ip.clone())
                .unwrap_or_default(),
            phase: status
                .as_ref()
                .and_then(|s| s.phase.clone())
                .unwrap_or_default(),
            ready: status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True")),
            ports: spec
                .as_ref()
                .map(|s| {
                    s.containers
                        .iter()
                        .flat_map(|c| c.ports.iter().flatten())
                        .map(|p| ContainerPort {
                            name: p.name.clone().unwrap_or_default(),
                            container_port: p.container_port,
                            protocol: p.protocol.clone().unwrap_or_else(|| "TCP".into()),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            node_name: spec.as_ref().and_then(|s| s.node_name.clone()),
            hostname: spec.as_ref().and_then(|s| s.hostname.clone()),
            subdomain: spec.as_ref().and_then(|s| s.subdomain.clone()),
            // Only what the informer's store keys and lookups read.
            metadata: ObjectMeta {
                name: meta.name,
                namespace: meta.namespace,
                uid: meta.uid,
                resource_version: meta.resource_version,
                ..ObjectMeta::default()
            },
        })
    }
}
