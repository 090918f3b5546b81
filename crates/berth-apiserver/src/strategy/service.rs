//! Services (upstream `registry/core/service`): defaults, an allocated cluster IP and node
//! ports that an update keeps, the cluster IP immutable, and validation of type and ports.
//! Allocation needs the store, so it runs after admission ([`allocate`]), where upstream's
//! service storage allocates before the object is written.

pub use crate::service_allocation::{IpRange, PortRange, Reservation, ServiceAllocator};

use super::{causes, Strategy};
use crate::codec::meta_str;
use crate::error::{ApiError, ApiResult, Cause};
use crate::path;
use crate::service_allocation::{needs_cluster_ip, needs_node_ports};
use berth_api::registry::ResourceType;
use serde_json::{json, Value};

pub struct Service;

/// The flags' defaults, as kubeadm and kube-apiserver set them.
pub const DEFAULT_CLUSTER_IP_RANGE: &str = "10.96.0.0/12";
pub const DEFAULT_NODE_PORT_RANGE: &str = "30000-32767";

const TYPES: [&str; 4] = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];

impl Strategy for Service {
    fn prepare_for_create(&self, svc: &mut Value) {
        default_service(svc);
        svc["status"] = json!({"loadBalancer": {}});
    }

    fn prepare_for_update(&self, old: &Value, new: &mut Value) -> ApiResult<()> {
        keep_allocated(old, new);
        default_service(new);
        let (before, after) = (
            old["spec"]["clusterIP"].as_str().unwrap_or(""),
            new["spec"]["clusterIP"].as_str().unwrap_or(""),
        );
        if needs_cluster_ip(old) && needs_cluster_ip(new) && before != after {
            return Err(ApiError::Invalid {
                kind: "Service".into(),
                name: meta_str(old, "name").into(),
                causes: vec![Cause {
                    reason: "FieldValueInvalid".into(),
                    message: format!(
                        "Invalid value: []string{{\"{after}\"}}: may not change once set"
                    ),
                    field: "spec.clusterIPs[0]".into(),
                }],
            });
        }
        Ok(())
    }

    fn validate(&self, rt: &ResourceType, svc: &Value, _old: Option<&Value>) -> Vec<Cause> {
        let mut out = causes(berth_core::validation::validate_generic(svc, rt.namespaced));
        out.extend(validate_service(svc));
        out
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }
}

/// Allocates what a Service about to be written lacks (no-op for other kinds); the reservation
/// must live until the write is done.
pub fn allocate(
    services: &std::sync::Arc<ServiceAllocator>,
    store: &berth_store::Store,
    rt: &ResourceType,
    obj: &mut Value,
    old: Option<&Value>,
) -> ApiResult<Option<Reservation>> {
    if !(rt.group.is_empty() && rt.kind == "Service") {
        return Ok(None);
    }
    let key = path::key(rt, Some(meta_str(obj, "namespace")), meta_str(obj, "name"));
    services.allocate(store, &key, obj, old).map(Some)
}

/// Upstream's defaults of a Service spec.
fn default_service(svc: &mut Value) {
    if !svc["spec"].is_object() {
        svc["spec"] = json!({});
    }
    let spec = &mut svc["spec"];
    let unset = |spec: &Value, field: &str| spec.get(field).is_none_or(Value::is_null);
    if unset(spec, "type") {
        spec["type"] = json!("ClusterIP");
    }
    if unset(spec, "sessionAffinity") {
        spec["sessionAffinity"] = json!("None");
    }
    if unset(spec, "clusterIP") {
        if let Some(first) = spec["clusterIPs"][0].as_str() {
            spec["clusterIP"] = json!(first);
        }
    }
    let ty = spec["type"].as_str().unwrap_or("").to_string();
    if ty == "ExternalName" {
        if let Some(s) = spec.as_object_mut() {
            for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
                s.remove(field);
            }
        }
    } else {
        if unset(spec, "internalTrafficPolicy") {
            spec["internalTrafficPolicy"] = json!("Cluster");
        }
        if unset(spec, "ipFamilies") {
            spec["ipFamilies"] = json!(["IPv4"]);
        }
        if unset(spec, "ipFamilyPolicy") {
            let headless_without_selector = spec["clusterIP"] == "None"
                && spec["selector"].as_object().is_none_or(|s| s.is_empty());
            spec["ipFamilyPolicy"] = json!(if headless_without_selector {
                "RequireDualStack"
            } else {
                "SingleStack"
            });
        }
    }
    if (ty == "NodePort" || ty == "LoadBalancer") && unset(spec, "externalTrafficPolicy") {
        spec["externalTrafficPolicy"] = json!("Cluster");
    }
    if ty == "LoadBalancer" && unset(spec, "allocateLoadBalancerNodePorts") {
        spec["allocateLoadBalancerNodePorts"] = json!(true);
    }
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports {
            if unset(p, "protocol") {
                p["protocol"] = json!("TCP");
            }
            if unset(p, "targetPort") {
                p["targetPort"] = p["port"].clone();
            }
        }
    }
}

/// An update that leaves out the allocated cluster IP or a node port keeps it (upstream's
/// `patchAllocatedValues`), so `kubectl apply` of a manifest without them changes nothing.
fn keep_allocated(old: &Value, new: &mut Value) {
    if !new["spec"].is_object() {
        return;
    }
    if needs_cluster_ip(old) && needs_cluster_ip(new) {
        let unset = new["spec"]["clusterIP"].as_str().unwrap_or("").is_empty()
            && new["spec"]["clusterIPs"]
                .as_array()
                .is_none_or(|a| a.is_empty());
        if unset {
            new["spec"]["clusterIP"] = old["spec"]["clusterIP"].clone();
            new["spec"]["clusterIPs"] = old["spec"]["clusterIPs"].clone();
        }
    }
    if needs_node_ports(old) && needs_node_ports(new) {
        let old_ports = old["spec"]["ports"].as_array().cloned().unwrap_or_default();
        if let Some(ports) = new["spec"]["ports"].as_array_mut() {
            for p in ports {
                if p["nodePort"].as_i64().unwrap_or(0) != 0 {
                    continue;
                }
                let same = old_ports.iter().find(|o| {
                    o["port"] == p["port"]
                        && o["protocol"].as_str().unwrap_or("TCP")
                            == p["protocol"].as_str().unwrap_or("TCP")
                });
                if let Some(np) = same.and_then(|o| o.get("nodePort")) {
                    p["nodePort"] = np.clone();
                }
            }
        }
    }
}

fn cause(reason: &str, field: String, message: String) -> Cause {
    Cause {
        reason: reason.into(),
        message,
        field,
    }
}

/// Upstream's `ValidateService`, the parts a user meets first: type, ports, names, node ports.
fn validate_service(svc: &Value) -> Vec<Cause> {
    let spec = &svc["spec"];
    let mut out = Vec::new();
    let ty = spec["type"].as_str().unwrap_or("ClusterIP");
    if !TYPES.contains(&ty) {
        out.push(cause(
            "FieldValueNotSupported",
            "spec.type".into(),
            format!("Unsupported value: \"{ty}\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\""),
        ));
    }
    match spec["sessionAffinity"].as_str() {
        None | Some("None") | Some("ClientIP") => {}
        Some(other) => out.push(cause(
            "FieldValueNotSupported",
            "spec.sessionAffinity".into(),
            format!("Unsupported value: \"{other}\": supported values: \"ClientIP\", \"None\""),
        )),
    }
    if ty == "ExternalName" && spec["externalName"].as_str().unwrap_or("").is_empty() {
        out.push(cause(
            "FieldValueRequired",
            "spec.externalName".into(),
            "Required value".into(),
        ));
    }
    let ports = spec["ports"].as_array().cloned().unwrap_or_default();
    let headless = spec["clusterIP"] == "None";
    if ports.is_empty() && !headless && ty != "ExternalName" {
        out.push(cause(
            "FieldValueRequired",
            "spec.ports".into(),
            "Required value".into(),
        ));
    }
    let mut names = Vec::new();
    for (i, p) in ports.iter().enumerate() {
        let at = |f: &str| format!("spec.ports[{i}].{f}");
        let name = p["name"].as_str().unwrap_or("");
        if ports.len() > 1 && name.is_empty() {
            out.push(cause(
                "FieldValueRequired",
                at("name"),
                "Required value".into(),
            ));
        } else if !name.is_empty() && names.contains(&name) {
            out.push(cause(
                "FieldValueDuplicate",
                at("name"),
                format!("Duplicate value: \"{name}\""),
            ));
        }
        names.push(name);
        match p["port"].as_i64() {
            Some(port) if (1..=65535).contains(&port) => {}
            Some(port) => out.push(cause(
                "FieldValueInvalid",
                at("port"),
                format!("Invalid value: {port}: must be between 1 and 65535, inclusive"),
            )),
            None => out.push(cause(
                "FieldValueRequired",
                at("port"),
                "Required value".into(),
            )),
        }
        match p["protocol"].as_str() {
            None | Some("TCP") | Some("UDP") | Some("SCTP") => {}
            Some(other) => out.push(cause(
                "FieldValueNotSupported",
                at("protocol"),
                format!(
                    "Unsupported value: \"{other}\": supported values: \"SCTP\", \"TCP\", \"UDP\""
                ),
            )),
        }
        if ty == "ClusterIP" && p["nodePort"].as_i64().unwrap_or(0) != 0 {
            out.push(cause(
                "FieldValueForbidden",
                at("nodePort"),
                "Forbidden: may not be used when `type` is 'ClusterIP'".into(),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(spec: Value) -> Value {
        json!({"metadata": {"name": "web", "namespace": "default"}, "spec": spec})
    }

    #[test]
    fn a_new_service_gets_upstreams_defaults() {
        let mut s = svc(json!({"selector": {"app": "web"}, "ports": [{"port": 80}]}));
        Service.prepare_for_create(&mut s);
        assert_eq!(s["spec"]["type"], "ClusterIP");
        assert_eq!(s["spec"]["sessionAffinity"], "None");
        assert_eq!(s["spec"]["internalTrafficPolicy"], "Cluster");
        assert_eq!(s["spec"]["ipFamilies"], json!(["IPv4"]));
        assert_eq!(s["spec"]["ipFamilyPolicy"], "SingleStack");
        assert_eq!(s["spec"]["ports"][0]["protocol"], "TCP");
        assert_eq!(s["spec"]["ports"][0]["targetPort"], 80);
        assert_eq!(s["status"], json!({"loadBalancer": {}}));
        assert!(validate_service(&s).is_empty());
    }

    #[test]
    fn an_update_keeps_the_allocated_ip_and_node_ports_and_may_not_change_the_ip() {
        let old = svc(
            json!({"type": "NodePort", "clusterIP": "10.96.0.9", "clusterIPs": ["10.96.0.9"],
            "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30080}]}),
        );
        let mut new = svc(json!({"type": "NodePort", "ports": [{"port": 80}]}));
        Service.prepare_for_update(&old, &mut new).unwrap();
        assert_eq!(new["spec"]["clusterIP"], "10.96.0.9");
        assert_eq!(new["spec"]["ports"][0]["nodePort"], 30080);
        let mut changed = svc(json!({"clusterIP": "10.96.0.10", "ports": [{"port": 80}]}));
        let err = Service.prepare_for_update(&old, &mut changed).unwrap_err();
        assert!(
            err.message().contains("may not change once set"),
            "{}",
            err.message()
        );
    }

    #[test]
    fn validation_names_the_field() {
        let fields = |spec: Value| -> Vec<String> {
            let mut s = svc(spec);
            default_service(&mut s);
            validate_service(&s).into_iter().map(|c| c.field).collect()
        };
        assert_eq!(
            fields(json!({"type": "Foo", "ports": [{"port": 80}]})),
            ["spec.type"]
        );
        assert_eq!(
            fields(json!({"ports": [{"port": 0}]})),
            ["spec.ports[0].port"]
        );
        assert_eq!(
            fields(json!({"ports": [{"port": 80}, {"port": 81}]})),
            ["spec.ports[0].name", "spec.ports[1].name"]
        );
        assert_eq!(
            fields(json!({"ports": [{"port": 80, "nodePort": 30000}]})),
            ["spec.ports[0].nodePort"]
        );
        assert_eq!(fields(json!({})), ["spec.ports"]);
        assert!(
            fields(json!({"clusterIP": "None"})).is_empty(),
            "headless needs no ports"
        );
        assert_eq!(
            fields(json!({"type": "ExternalName"})),
            ["spec.externalName"]
        );
    }

    #[test]
    fn external_name_services_have_no_cluster_ip() {
        let mut s =
            svc(json!({"type": "ExternalName", "externalName": "example.com", "clusterIP": ""}));
        default_service(&mut s);
        assert!(s["spec"].get("clusterIP").is_none());
        assert!(!needs_cluster_ip(&s));
    }
}
