//! ClusterIP and NodePort allocation for Services, as upstream's service REST storage does it
//! before a Service is stored.
//!
//! What is in use is what the stored Services hold, plus what requests in flight have reserved.
//! So a deleted Service frees its IP and ports with nothing to release, and a restart rebuilds
//! nothing: the store is the allocation table (upstream keeps a separate bitmap for the same
//! facts). A [`Reservation`] lasts until the write that needed it has been acknowledged (or
//! failed); the lock taken to pick a value also covers reading the store, so two creates never
//! pick the same value. This holds within one API server process.

mod ranges;

use crate::codec::{decode, meta_str};
use crate::error::{ApiError, ApiResult, Cause};
use crate::path::{self, Target};
use berth_store::{Revision, Store};
pub use ranges::{IpRange, PortRange};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};

/// The service IP and node port ranges and what requests in flight have reserved.
pub struct ServiceAllocator {
    pub ips: IpRange,
    pub ports: PortRange,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    pending_ips: HashSet<Ipv4Addr>,
    pending_ports: HashSet<u16>,
    /// Stored Service key → (mod revision, its IP, its node ports), decoded once per revision.
    stored: HashMap<String, (Revision, Option<Ipv4Addr>, Vec<u16>)>,
}

/// Values picked for one write; given back to the pool of candidates when dropped (by then the
/// write is in the store, or failed).
pub struct Reservation {
    allocator: Arc<ServiceAllocator>,
    ips: Vec<Ipv4Addr>,
    ports: Vec<u16>,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut state = self.allocator.lock();
        for ip in &self.ips {
            state.pending_ips.remove(ip);
        }
        for port in &self.ports {
            state.pending_ports.remove(port);
        }
    }
}

/// Whether a Service of this spec has a cluster IP (every type but ExternalName).
pub fn needs_cluster_ip(svc: &Value) -> bool {
    svc["spec"]["type"].as_str().unwrap_or("ClusterIP") != "ExternalName"
}

/// Whether a Service of this spec has node ports.
pub fn needs_node_ports(svc: &Value) -> bool {
    matches!(
        svc["spec"]["type"].as_str(),
        Some("NodePort") | Some("LoadBalancer")
    ) && svc["spec"]["allocateLoadBalancerNodePorts"] != false
}

fn invalid(svc: &Value, field: String, message: String) -> ApiError {
    ApiError::Invalid {
        kind: "Service".into(),
        name: meta_str(svc, "name").into(),
        causes: vec![Cause {
            reason: "FieldValueInvalid".into(),
            message,
            field,
        }],
    }
}

impl ServiceAllocator {
    pub fn new(ips: IpRange, ports: PortRange) -> ServiceAllocator {
        ServiceAllocator {
            ips,
            ports,
            state: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Fills in the cluster IP and node ports `svc` (stored at `key`; `old` on update) lacks,
    /// and checks those it asks for: in range, and not another Service's.
    pub fn allocate(
        self: &Arc<Self>,
        store: &Store,
        key: &str,
        svc: &mut Value,
        old: Option<&Value>,
    ) -> ApiResult<Reservation> {
        let mut reservation = Reservation {
            allocator: self.clone(),
            ips: Vec::new(),
            ports: Vec::new(),
        };
        let mut state = self.lock();
        let (used_ips, mut used_ports) = in_use(&mut state, store, key)?;
        if needs_cluster_ip(svc) {
            let old_ip = old
                .filter(|o| needs_cluster_ip(o))
                .and_then(|o| o["spec"]["clusterIP"].as_str());
            let requested = svc["spec"]["clusterIP"].as_str().unwrap_or("").to_string();
            let ip = match requested.as_str() {
                "None" => None,
                "" => {
                    let start = rand::random::<u32>();
                    let ip = self.ips.pick(&used_ips, start).ok_or_else(|| {
                        ApiError::Internal(format!(
                            "failed to allocate a serviceIP: range is full ({})",
                            self.ips
                        ))
                    })?;
                    Some(ip)
                }
                r if Some(r) == old_ip => None,
                r => {
                    let failed = |why: String| {
                        invalid(
                            svc,
                            "spec.clusterIPs".into(),
                            format!("Invalid value: []string{{\"{r}\"}}: failed to allocate IP {r}: {why}"),
                        )
                    };
                    let ip: Ipv4Addr = r.parse().map_err(|_| {
                        invalid(
                            svc,
                            "spec.clusterIPs[0]".into(),
                            format!("Invalid value: \"{r}\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"),
                        )
                    })?;
                    if !self.ips.contains(ip) {
                        return Err(failed(format!(
                            "the provided IP ({ip}) is not in the valid range. The range of valid IPs is {}",
                            self.ips
                        )));
                    }
                    if used_ips.contains(&ip) {
                        return Err(failed("provided IP is already allocated".into()));
                    }
                    Some(ip)
                }
            };
            if let Some(ip) = ip {
                svc["spec"]["clusterIP"] = json!(ip.to_string());
                state.pending_ips.insert(ip);
                reservation.ips.push(ip);
            }
            let ip = svc["spec"]["clusterIP"].clone();
            svc["spec"]["clusterIPs"] = json!([ip]);
        }
        if needs_node_ports(svc) {
            let kept: HashSet<i64> = old
                .filter(|o| needs_node_ports(o))
                .map(|o| node_ports(o).into_iter().map(i64::from).collect())
                .unwrap_or_default();
            let count = svc["spec"]["ports"].as_array().map_or(0, Vec::len);
            for i in 0..count {
                let requested = svc["spec"]["ports"][i]["nodePort"].as_i64().unwrap_or(0);
                let port = if requested == 0 {
                    self.ports
                        .pick(&used_ports, rand::random::<u32>())
                        .ok_or_else(|| {
                            ApiError::Internal(format!(
                                "failed to allocate a nodePort: range is full ({})",
                                self.ports
                            ))
                        })?
                } else if kept.contains(&requested) {
                    continue;
                } else {
                    let field = format!("spec.ports[{i}].nodePort");
                    if !self.ports.contains(requested) {
                        return Err(invalid(svc, field, format!(
                            "Invalid value: {requested}: provided port is not in the valid range. The range of valid ports is {}",
                            self.ports
                        )));
                    }
                    let port = requested as u16;
                    if used_ports.contains(&port) {
                        return Err(invalid(
                            svc,
                            field,
                            format!(
                                "Invalid value: {requested}: provided port is already allocated"
                            ),
                        ));
                    }
                    port
                };
                svc["spec"]["ports"][i]["nodePort"] = json!(port);
                used_ports.insert(port);
                state.pending_ports.insert(port);
                reservation.ports.push(port);
            }
        }
        Ok(reservation)
    }
}

/// The IPs and node ports of every stored Service but the one at `key`, and of pending writes.
fn in_use(
    state: &mut State,
    store: &Store,
    key: &str,
) -> ApiResult<(HashSet<Ipv4Addr>, HashSet<u16>)> {
    let Some(rt) = berth_api::registry::find("", "v1", "services") else {
        return Ok(Default::default());
    };
    let r = store
        .range(&path::collection_prefix(rt, None), None, 0, None)
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let target = Target {
        rt,
        namespace: None,
        name: None,
        subresource: None,
    };
    let mut seen = HashSet::new();
    for kv in &r.kvs {
        seen.insert(kv.key.as_str());
        if state
            .stored
            .get(&kv.key)
            .is_some_and(|(rev, _, _)| *rev == kv.mod_revision)
        {
            continue;
        }
        let svc = decode(kv, &target)?;
        let ip = svc["spec"]["clusterIP"]
            .as_str()
            .and_then(|s| s.parse().ok());
        let ports = if needs_node_ports(&svc) {
            node_ports(&svc)
        } else {
            Vec::new()
        };
        state
            .stored
            .insert(kv.key.clone(), (kv.mod_revision, ip, ports));
    }
    state.stored.retain(|k, _| seen.contains(k.as_str()));
    let mut ips = state.pending_ips.clone();
    let mut ports = state.pending_ports.clone();
    for (k, (_, ip, node_ports)) in &state.stored {
        if k == key {
            continue;
        }
        ips.extend(ip);
        ports.extend(node_ports);
    }
    Ok((ips, ports))
}

fn node_ports(svc: &Value) -> Vec<u16> {
    svc["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["nodePort"].as_u64())
        .filter_map(|p| u16::try_from(p).ok())
        .collect()
}
