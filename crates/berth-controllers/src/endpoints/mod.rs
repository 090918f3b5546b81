//! The Endpoints and EndpointSlice controllers (upstream `pkg/controller/endpoint` and
//! `endpointslice`): for each Service with a selector, the pods it selects, as addresses
//! (ready and not ready) with the Service's ports resolved against each pod's containers.
//!
//! The engine is pure: a Service and the pods of its namespace in, the desired `subsets` and
//! slice contents out ([`endpoint_subsets`], [`slice_groups`]). The driver ([`run`]) watches
//! Services, pods, Endpoints and EndpointSlices and writes the differences.

mod driver;
mod pod;

pub use driver::{run, Writers};
pub use pod::EndpointPod;

use k8s_openapi::api::core::v1::{
    EndpointAddress, EndpointPort, EndpointSubset, ObjectReference, Service, ServicePort,
};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;

/// The `endpointslice.kubernetes.io/managed-by` value of the slices this controller owns.
pub const MANAGED_BY: &str = "endpointslice-controller.k8s.io";
pub const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
pub const HEADLESS_LABEL: &str = "service.kubernetes.io/headless";
/// Upstream's `maxEndpointsPerSlice` default.
pub const MAX_ENDPOINTS_PER_SLICE: usize = 100;

/// Whether the controllers manage this Service's endpoints: only Services with a selector
/// (without one, the user writes them), and not ExternalName ones.
pub fn managed(svc: &Service) -> bool {
    let Some(spec) = &svc.spec else { return false };
    spec.type_.as_deref() != Some("ExternalName") && spec.selector.is_some()
}

/// Whether `pod` is one of the pods `svc` selects (same namespace, every selector label).
pub fn selects(svc: &Service, pod: &EndpointPod) -> bool {
    let Some(selector) = svc.spec.as_ref().and_then(|s| s.selector.as_ref()) else {
        return false;
    };
    svc.metadata.namespace == pod.namespace
        && selector.iter().all(|(k, v)| pod.labels.get(k) == Some(v))
}

fn headless(svc: &Service) -> bool {
    svc.spec.as_ref().and_then(|s| s.cluster_ip.as_deref()) == Some("None")
}

fn publish_not_ready(svc: &Service) -> bool {
    svc.spec
        .as_ref()
        .and_then(|s| s.publish_not_ready_addresses)
        .unwrap_or(false)
}

fn service_ports(svc: &Service) -> &[ServicePort] {
    svc.spec
        .as_ref()
        .and_then(|s| s.ports.as_deref())
        .unwrap_or(&[])
}

/// The container port a Service port sends to on `pod` (upstream's `FindPort`): a number as
/// is, a name looked up among the containers' ports of the same protocol; `None` when the pod
/// has no port of that name.
pub fn target_port(port: &ServicePort, pod: &EndpointPod) -> Option<i32> {
    let protocol = port.protocol.as_deref().unwrap_or("TCP");
    match &port.target_port {
        None => Some(port.port),
        Some(IntOrString::Int(n)) if *n == 0 => Some(port.port),
        Some(IntOrString::Int(n)) => Some(*n),
        Some(IntOrString::String(name)) => match name.parse::<i32>() {
            Ok(n) => Some(n),
            Err(_) => pod
                .ports
                .iter()
                .find(|p| p.name == *name && p.protocol == protocol)
                .map(|p| p.container_port),
        },
    }
}

/// A pod's endpoint ports for the Service: the resolved port of each Service port the pod has.
fn resolved_ports(svc: &Service, pod: &EndpointPod) -> Vec<EndpointPort> {
    service_ports(svc)
        .iter()
        .filter_map(|sp| {
            Some(EndpointPort {
                name: sp.name.clone().filter(|n| !n.is_empty()),
                port: target_port(sp, pod)?,
                protocol: Some(sp.protocol.clone().unwrap_or_else(|| "TCP".into())),
                app_protocol: sp.app_protocol.clone(),
            })
        })
        .collect()
}

/// Pods that can be endpoints at all: with an IP, not finished (upstream's
/// `ShouldPodBeInEndpoints` without terminal pods).
fn has_address(pod: &EndpointPod) -> bool {
    !pod.ip.is_empty() && pod.phase != "Succeeded" && pod.phase != "Failed"
}

fn target_ref(pod: &EndpointPod) -> ObjectReference {
    ObjectReference {
        kind: Some("Pod".into()),
        namespace: Some(pod.namespace.clone().unwrap_or_default()),
        name: Some(pod.name.clone()),
        uid: Some(pod.uid.clone()),
        ..ObjectReference::default()
    }
}

/// The hostname a pod publishes under a headless Service: its `spec.hostname` when its
/// `spec.subdomain` names the Service.
fn hostname(svc: &Service, pod: &EndpointPod) -> Option<String> {
    let name = svc.metadata.name.as_deref()?;
    (pod.subdomain.as_deref() == Some(name))
        .then(|| pod.hostname.clone())
        .flatten()
}

/// The `subsets` of `svc`'s Endpoints: addresses grouped by their resolved ports, ready ones in
/// `addresses` and the others in `notReadyAddresses`, each sorted by IP (upstream repacks the
/// same way). Terminating pods are left out unless the Service publishes not-ready addresses.
/// The resolved ports of a pod (name, number, protocol): pods with the same ones share a subset.
type PortKey = Vec<(Option<String>, i32, Option<String>)>;

/// A subset's ready addresses, not-ready addresses and ports.
type SubsetContent = (
    Vec<EndpointAddress>,
    Vec<EndpointAddress>,
    Vec<EndpointPort>,
);

pub fn endpoint_subsets(svc: &Service, pods: &[&EndpointPod]) -> Vec<EndpointSubset> {
    let publish = publish_not_ready(svc);
    let mut groups: BTreeMap<PortKey, SubsetContent> = BTreeMap::new();
    for pod in pods.iter().filter(|p| selects(svc, p) && has_address(p)) {
        if pod.terminating && !publish {
            continue;
        }
        let ports = resolved_ports(svc, pod);
        if ports.is_empty() && !(service_ports(svc).is_empty() && headless(svc)) {
            continue;
        }
        let address = EndpointAddress {
            ip: pod.ip.clone(),
            node_name: pod.node_name.clone(),
            hostname: hostname(svc, pod),
            target_ref: Some(target_ref(pod)),
        };
        let key = ports
            .iter()
            .map(|p| (p.name.clone(), p.port, p.protocol.clone()))
            .collect();
        let group = groups
            .entry(key)
            .or_insert_with(|| (Vec::new(), Vec::new(), ports));
        if publish || pod.ready {
            group.0.push(address);
        } else {
            group.1.push(address);
        }
    }
    groups
        .into_values()
        .map(|(mut ready, mut not_ready, ports)| {
            let by_ip = |a: &EndpointAddress, b: &EndpointAddress| {
                (&a.ip, a.target_ref.as_ref().and_then(|r| r.name.as_ref()))
                    .cmp(&(&b.ip, b.target_ref.as_ref().and_then(|r| r.name.as_ref())))
            };
            ready.sort_by(by_ip);
            not_ready.sort_by(by_ip);
            EndpointSubset {
                addresses: (!ready.is_empty()).then_some(ready),
                not_ready_addresses: (!not_ready.is_empty()).then_some(not_ready),
                ports: (!ports.is_empty()).then_some(ports),
            }
        })
        .collect()
}

/// One EndpointSlice's contents: its ports and endpoints.
#[derive(Debug, Clone, PartialEq)]
pub struct SliceContent {
    pub ports: Vec<k8s_openapi::api::discovery::v1::EndpointPort>,
    pub endpoints: Vec<Endpoint>,
}

/// The EndpointSlices `svc` should have: endpoints grouped by their resolved ports, at most
/// [`MAX_ENDPOINTS_PER_SLICE`] each, with the `ready`, `serving` and `terminating` conditions
/// (terminating pods stay, not ready, while they serve).
pub fn slice_groups(svc: &Service, pods: &[&EndpointPod]) -> Vec<SliceContent> {
    let publish = publish_not_ready(svc);
    let mut groups: BTreeMap<PortKey, SliceContent> = BTreeMap::new();
    let mut selected: Vec<&&EndpointPod> = pods
        .iter()
        .filter(|p| selects(svc, p) && has_address(p))
        .collect();
    selected.sort_by(|a, b| (&a.ip, &a.name).cmp(&(&b.ip, &b.name)));
    for pod in selected {
        let ports = resolved_ports(svc, pod);
        if ports.is_empty() && !service_ports(svc).is_empty() {
            continue;
        }
        let key = ports
            .iter()
            .map(|p| (p.name.clone(), p.port, p.protocol.clone()))
            .collect();
        let group = groups.entry(key).or_insert_with(|| SliceContent {
            ports: ports
                .iter()
                .map(|p| k8s_openapi::api::discovery::v1::EndpointPort {
                    name: Some(p.name.clone().unwrap_or_default()),
                    port: Some(p.port),
                    protocol: p.protocol.clone(),
                    app_protocol: p.app_protocol.clone(),
                })
                .collect(),
            endpoints: Vec::new(),
        });
        let serving = publish || pod.ready;
        group.endpoints.push(Endpoint {
            addresses: vec![pod.ip.clone()],
            conditions: Some(EndpointConditions {
                ready: Some(serving && (publish || !pod.terminating)),
                serving: Some(serving),
                terminating: Some(pod.terminating),
            }),
            node_name: pod.node_name.clone(),
            hostname: hostname(svc, pod),
            target_ref: Some(target_ref(pod)),
            ..Endpoint::default()
        });
    }
    groups
        .into_values()
        .flat_map(|g| {
            g.endpoints
                .chunks(MAX_ENDPOINTS_PER_SLICE)
                .map(|chunk| SliceContent {
                    ports: g.ports.clone(),
                    endpoints: chunk.to_vec(),
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

#[cfg(test)]
mod tests;
