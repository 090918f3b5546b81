//! Rows of `networking.k8s.io` kinds and RuntimeClasses: ingresses, ingress classes and
//! network policies.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::workloads::format_label_selector;
use super::{age, arr_at, col, str_at, Column, AGE, NAME};

/// Hosts shown before `+ N more...` (upstream's `formatHosts`).
const SHOWN_HOSTS: usize = 3;

/// Address cells longer than this are cut to `...` (upstream's `loadBalancerWidth`).
const LOAD_BALANCER_WIDTH: usize = 16;

pub(super) const INGRESS_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Class",
        "string",
        "The name of the IngressClass resource that should be used for ingress",
    ),
    col(
        "Hosts",
        "string",
        "Hosts that incoming requests are matched against before the ingress rule",
    ),
    col(
        "Address",
        "string",
        "Address is a list containing ingress points for the load-balancer",
    ),
    col("Ports", "string", "Ports of TLS configurations that open"),
    AGE,
];

pub(super) fn ingress_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let class = match str_at(obj, "/spec/ingressClassName") {
        "" => "<none>",
        c => c,
    };
    let hosts: Vec<&str> = arr_at(obj, "/spec/rules")
        .iter()
        .map(|r| str_at(r, "/host"))
        .filter(|h| !h.is_empty())
        .collect();
    let hosts = match hosts.len() {
        0 => "*".to_string(),
        n if n > SHOWN_HOSTS => format!(
            "{} + {} more...",
            hosts[..SHOWN_HOSTS].join(","),
            n - SHOWN_HOSTS
        ),
        _ => hosts.join(","),
    };
    let mut address: Vec<&str> = Vec::new();
    for lb in arr_at(obj, "/status/loadBalancer/ingress") {
        for field in ["/ip", "/hostname"] {
            if !str_at(lb, field).is_empty() {
                address.push(str_at(lb, field));
            }
        }
    }
    let mut address = address.join(",");
    if address.len() > LOAD_BALANCER_WIDTH {
        address.truncate(LOAD_BALANCER_WIDTH - 3);
        address.push_str("...");
    }
    let ports = if arr_at(obj, "/spec/tls").is_empty() {
        "80"
    } else {
        "80, 443"
    };
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(class),
        json!(hosts),
        json!(address),
        json!(ports),
        json!(age(obj, now)),
    ]
}

pub(super) const INGRESS_CLASS_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Controller",
        "string",
        "Controller that is responsible for handling this class",
    ),
    col(
        "Parameters",
        "string",
        "A reference to a resource with additional parameters",
    ),
    AGE,
];

pub(super) fn ingress_class_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let parameters = match obj.pointer("/spec/parameters") {
        Some(p) if p.is_object() => {
            let group = match str_at(p, "/apiGroup") {
                "" => String::new(),
                g => format!(".{g}"),
            };
            format!("{}{group}/{}", str_at(p, "/kind"), str_at(p, "/name"))
        }
        _ => "<none>".to_string(),
    };
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(str_at(obj, "/spec/controller")),
        json!(parameters),
        json!(age(obj, now)),
    ]
}

pub(super) const NETWORK_POLICY_COLUMNS: &[Column] = &[
    NAME,
    col("Pod-Selector", "string", "podSelector selects the pods to which this NetworkPolicy object applies. The array of rules is applied to any pods selected by this field. An empty selector matches all pods in this namespace."),
    AGE,
];

pub(super) fn network_policy_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(format_label_selector(obj.pointer("/spec/podSelector"))),
        json!(age(obj, now)),
    ]
}

pub(super) const RUNTIME_CLASS_COLUMNS: &[Column] = &[
    NAME,
    col("Handler", "string", "handler specifies the underlying runtime and configuration that the CRI implementation will use to handle pods of this class."),
    AGE,
];

pub(super) fn runtime_class_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(str_at(obj, "/handler")),
        json!(age(obj, now)),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::tests::now;
    use super::*;

    #[test]
    fn an_ingress_row_shows_class_hosts_and_ports() {
        let ing = json!({"metadata": {"name": "i"}, "spec": {"ingressClassName": "nginx",
            "rules": [{"host": "a.com"}, {"host": "b.com"}, {"host": "c.com"}, {"host": "d.com"}, {}],
            "tls": [{"hosts": ["a.com"]}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.1"}]}}});
        let cells = ingress_cells(&ing, now());
        assert_eq!(
            cells[1..5],
            [
                json!("nginx"),
                json!("a.com,b.com,c.com + 1 more..."),
                json!("10.0.0.1"),
                json!("80, 443")
            ]
        );
    }

    #[test]
    fn an_ingress_without_rules_or_class_matches_every_host() {
        let cells = ingress_cells(&json!({"metadata": {"name": "i"}}), now());
        assert_eq!(
            cells[1..5],
            [json!("<none>"), json!("*"), json!(""), json!("80")]
        );
    }

    #[test]
    fn an_ingress_class_names_its_parameters() {
        let c = json!({"spec": {"controller": "k8s.io/ingress-nginx",
            "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "p"}}});
        assert_eq!(
            ingress_class_cells(&c, now())[2],
            "IngressParameters.k8s.example.com/p"
        );
        assert_eq!(ingress_class_cells(&json!({}), now())[2], "<none>");
    }

    #[test]
    fn a_network_policy_prints_its_pod_selector() {
        let p = json!({"spec": {"podSelector": {"matchLabels": {"app": "db"}}}});
        assert_eq!(network_policy_cells(&p, now())[1], "app=db");
        let all = json!({"spec": {"podSelector": {}}});
        assert_eq!(network_policy_cells(&all, now())[1], "<none>");
    }
}
