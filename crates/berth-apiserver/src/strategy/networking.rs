//! `networking.k8s.io/v1`: Ingresses (paths with a known `pathType`, absolute where it is
//! `Exact` or `Prefix`, backends naming a service and a port), IngressClasses (a
//! `controller`), and NetworkPolicies (upstream's defaults: `policyTypes` from the rules
//! given, port protocol TCP).

use super::{causes, Strategy};
use crate::error::{ApiResult, Cause};
use berth_api::registry::ResourceType;
use berth_core::validation::{self as v, FieldError};
use serde_json::{json, Value};

const PATH_TYPES: &[&str] = &["Exact", "ImplementationSpecific", "Prefix"];

pub struct Ingress;

impl Strategy for Ingress {
    fn prepare_for_create(&self, ing: &mut Value) {
        if let Some(o) = ing.as_object_mut() {
            o.remove("status");
        }
    }

    fn validate(&self, rt: &ResourceType, ing: &Value, _old: Option<&Value>) -> Vec<Cause> {
        let mut errors = v::validate_generic(ing, rt.namespaced);
        let spec = &ing["spec"];
        let rules = spec["rules"].as_array().map_or(&[][..], Vec::as_slice);
        if rules.is_empty() && !spec["defaultBackend"].is_object() {
            errors.push(FieldError::invalid_rendered(
                "spec",
                "field: spec",
                "either `defaultBackend` or `rules` must be specified",
            ));
        }
        if spec["defaultBackend"].is_object() {
            errors.extend(backend(&spec["defaultBackend"], "spec.defaultBackend"));
        }
        for (i, rule) in rules.iter().enumerate() {
            let paths = rule["http"]["paths"]
                .as_array()
                .map_or(&[][..], Vec::as_slice);
            if rule["http"].is_object() && paths.is_empty() {
                errors.push(FieldError::required(
                    format!("spec.rules[{i}].http.paths"),
                    "",
                ));
            }
            for (j, p) in paths.iter().enumerate() {
                let at = format!("spec.rules[{i}].http.paths[{j}]");
                let path = p["path"].as_str().unwrap_or("");
                match p["pathType"].as_str() {
                    None => errors.push(FieldError::required(
                        format!("{at}.pathType"),
                        "pathType must be specified",
                    )),
                    Some(t) if !PATH_TYPES.contains(&t) => errors.push(FieldError::not_supported(
                        format!("{at}.pathType"),
                        t,
                        PATH_TYPES,
                    )),
                    Some("Exact" | "Prefix") if !path.starts_with('/') => errors.push(
                        FieldError::invalid(format!("{at}.path"), path, "must be an absolute path"),
                    ),
                    Some(_) => {}
                }
                errors.extend(backend(&p["backend"], &format!("{at}.backend")));
            }
        }
        causes(errors)
    }
}

fn backend(b: &Value, at: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    match (b["service"].is_object(), b["resource"].is_object()) {
        (true, true) => errors.push(FieldError::invalid_rendered(
            at,
            "",
            "cannot set both resource and service backends",
        )),
        (false, false) => errors.push(FieldError::invalid_rendered(
            at,
            "",
            "resource or service backend is required",
        )),
        (true, false) => {
            if b["service"]["name"].as_str().unwrap_or("").is_empty() {
                errors.push(FieldError::required(format!("{at}.service.name"), ""));
            }
            let port = &b["service"]["port"];
            if port["name"].as_str().unwrap_or("").is_empty() && port["number"].is_null() {
                errors.push(FieldError::required(
                    format!("{at}.service.port"),
                    "port name or number is required",
                ));
            }
        }
        (false, true) => {}
    }
    errors
}

pub struct IngressClass;

impl Strategy for IngressClass {
    fn validate(&self, rt: &ResourceType, class: &Value, _old: Option<&Value>) -> Vec<Cause> {
        let mut errors = v::validate_generic(class, rt.namespaced);
        if class["spec"]["controller"]
            .as_str()
            .unwrap_or("")
            .is_empty()
        {
            errors.push(FieldError::required("spec.controller", ""));
        }
        causes(errors)
    }
}

pub struct NetworkPolicy;

impl Strategy for NetworkPolicy {
    fn prepare_for_create(&self, np: &mut Value) {
        default_network_policy(np);
    }

    fn prepare_for_update(&self, _old: &Value, new: &mut Value) -> ApiResult<()> {
        default_network_policy(new);
        Ok(())
    }
}

/// `SetDefaults_NetworkPolicy`: `policyTypes` is `Ingress`, plus `Egress` when egress rules
/// are given; every port's protocol defaults to TCP.
fn default_network_policy(np: &mut Value) {
    let spec = &mut np["spec"];
    if !spec.is_object() {
        return;
    }
    if spec["policyTypes"].as_array().is_none_or(Vec::is_empty) {
        let mut types = vec![json!("Ingress")];
        if spec["egress"].as_array().is_some_and(|e| !e.is_empty()) {
            types.push(json!("Egress"));
        }
        spec["policyTypes"] = Value::Array(types);
    }
    for direction in ["ingress", "egress"] {
        for rule in spec[direction].as_array_mut().into_iter().flatten() {
            for port in rule["ports"].as_array_mut().into_iter().flatten() {
                if port.is_object() && port.get("protocol").is_none_or(Value::is_null) {
                    port["protocol"] = json!("TCP");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_api::registry::find;

    fn messages(strategy: &dyn Strategy, plural: &str, obj: &Value) -> Vec<String> {
        let rt = find("networking.k8s.io", "v1", plural).unwrap();
        strategy
            .validate(rt, obj, None)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn an_ingress_path_needs_a_type_and_a_backend_port() {
        let ing = json!({"metadata": {"name": "i", "namespace": "d"}, "spec": {"rules": [{"http": {"paths": [
            {"path": "/", "backend": {"service": {"name": "s", "port": {}}}},
            {"path": "x", "pathType": "Prefix", "backend": {"service": {"name": "s", "port": {"number": 80}}}}]}}]}});
        assert_eq!(
            messages(&Ingress, "ingresses", &ing),
            vec![
                "spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified",
                "spec.rules[0].http.paths[0].backend.service.port: Required value: port name or number is required",
                "spec.rules[0].http.paths[1].path: Invalid value: \"x\": must be an absolute path",
            ]
        );
    }

    #[test]
    fn what_kubectl_create_ingress_sends_is_valid() {
        let ing = json!({"metadata": {"name": "i", "namespace": "d"}, "spec": {"rules": [{"host": "foo.com",
            "http": {"paths": [{"path": "/bar", "pathType": "Exact",
            "backend": {"service": {"name": "svc1", "port": {"number": 8080}}}}]}}]}});
        assert!(messages(&Ingress, "ingresses", &ing).is_empty());
    }

    #[test]
    fn an_ingress_class_names_its_controller() {
        let c = json!({"metadata": {"name": "c"}, "spec": {}});
        assert_eq!(
            messages(&IngressClass, "ingressclasses", &c),
            vec!["spec.controller: Required value"]
        );
    }

    #[test]
    fn a_network_policy_with_egress_rules_polices_both_directions() {
        let mut np = json!({"spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53}]}]}});
        NetworkPolicy.prepare_for_create(&mut np);
        assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        assert_eq!(np["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");
        let mut only = json!({"spec": {"podSelector": {}}});
        NetworkPolicy.prepare_for_create(&mut only);
        assert_eq!(only["spec"]["policyTypes"], json!(["Ingress"]));
    }
}
