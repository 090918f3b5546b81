//! Services, Endpoints and EndpointSlices, as upstream's printers show them.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{age, arr_at, col, str_at, wide, Column, AGE, NAME};

pub(super) const SERVICE_COLUMNS: &[Column] = &[
    NAME,
    col("Type", "string", "The type of the service."),
    col("Cluster-IP", "string", "The cluster IP of the service."),
    col("External-IP", "string", "The external IP of the service."),
    col("Port(s)", "string", "The ports of the service."),
    AGE,
    wide(
        "Selector",
        "string",
        "Route service traffic to pods with label keys and values matching this selector.",
    ),
];

pub(super) const ENDPOINTS_COLUMNS: &[Column] = &[
    NAME,
    col("Endpoints", "string", "Endpoints of the endpoints."),
    AGE,
];

pub(super) const ENDPOINT_SLICE_COLUMNS: &[Column] = &[
    NAME,
    col(
        "AddressType",
        "string",
        "The type of addresses in this EndpointSlice.",
    ),
    col("Ports", "string", "Ports present in this EndpointSlice."),
    col(
        "Endpoints",
        "string",
        "Endpoints present in this EndpointSlice.",
    ),
    AGE,
];

/// Shows the first three of `items`, then how many more there are (upstream's
/// `listWithMoreString`); `empty` when there are none.
fn first_three(items: Vec<String>, empty: &str) -> String {
    if items.is_empty() {
        return empty.to_string();
    }
    let shown = items.iter().take(3).cloned().collect::<Vec<_>>().join(",");
    match items.len() {
        n if n > 3 => format!("{shown} + {} more...", n - 3),
        _ => shown,
    }
}

fn external_ip(svc: &Value) -> String {
    let mut ips: Vec<String> = arr_at(svc, "/spec/externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    match str_at(svc, "/spec/type") {
        "ExternalName" => str_at(svc, "/spec/externalName").to_string(),
        "LoadBalancer" => {
            let ingress: Vec<String> = arr_at(svc, "/status/loadBalancer/ingress")
                .iter()
                .filter_map(|i| i["ip"].as_str().or(i["hostname"].as_str()))
                .map(str::to_string)
                .collect();
            ips.splice(0..0, ingress);
            if ips.is_empty() {
                "<pending>".into()
            } else {
                ips.join(",")
            }
        }
        _ if ips.is_empty() => "<none>".into(),
        _ => ips.join(","),
    }
}

fn service_ports(svc: &Value) -> String {
    let ports: Vec<String> = arr_at(svc, "/spec/ports")
        .iter()
        .map(|p| {
            let proto = p["protocol"].as_str().unwrap_or("TCP");
            let port = p["port"].as_i64().unwrap_or(0);
            match p["nodePort"].as_i64().unwrap_or(0) {
                0 => format!("{port}/{proto}"),
                np => format!("{port}:{np}/{proto}"),
            }
        })
        .collect();
    if ports.is_empty() {
        "<none>".into()
    } else {
        ports.join(",")
    }
}

fn selector(svc: &Value) -> String {
    match svc["spec"]["selector"].as_object() {
        Some(m) if !m.is_empty() => {
            let mut pairs: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect();
            pairs.sort();
            pairs.join(",")
        }
        _ => "<none>".into(),
    }
}

pub(super) fn service_cells(svc: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let cluster_ip = match str_at(svc, "/spec/clusterIP") {
        "" => "<none>",
        ip => ip,
    };
    vec![
        json!(str_at(svc, "/metadata/name")),
        json!(match str_at(svc, "/spec/type") {
            "" => "ClusterIP",
            t => t,
        }),
        json!(cluster_ip),
        json!(external_ip(svc)),
        json!(service_ports(svc)),
        json!(age(svc, now)),
        json!(selector(svc)),
    ]
}

pub(super) fn endpoints_cells(ep: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let mut list = Vec::new();
    for subset in arr_at(ep, "/subsets") {
        let addresses = subset["addresses"].as_array().cloned().unwrap_or_default();
        let ports = subset["ports"].as_array().cloned().unwrap_or_default();
        if ports.is_empty() {
            list.extend(addresses.iter().map(|a| str_at(a, "/ip").to_string()));
            continue;
        }
        for port in &ports {
            for a in &addresses {
                list.push(format!(
                    "{}:{}",
                    str_at(a, "/ip"),
                    port["port"].as_i64().unwrap_or(0)
                ));
            }
        }
    }
    vec![
        json!(str_at(ep, "/metadata/name")),
        json!(first_three(list, "<none>")),
        json!(age(ep, now)),
    ]
}

pub(super) fn endpoint_slice_cells(slice: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let ports = arr_at(slice, "/ports")
        .iter()
        .map(|p| match (p["port"].as_i64(), p["name"].as_str()) {
            (Some(n), _) => n.to_string(),
            (None, Some(name)) => name.to_string(),
            (None, None) => "*".to_string(),
        })
        .collect();
    let addresses = arr_at(slice, "/endpoints")
        .iter()
        .flat_map(|e| arr_at(e, "/addresses").iter())
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    vec![
        json!(str_at(slice, "/metadata/name")),
        json!(str_at(slice, "/addressType")),
        json!(first_three(ports, "<unset>")),
        json!(first_three(addresses, "<unset>")),
        json!(age(slice, now)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::tests::{ago, now};

    #[test]
    fn service_rows_as_kubectl_get_svc_prints_them() {
        let svc = json!({"metadata": {"name": "web", "creationTimestamp": ago(60)},
            "spec": {"type": "NodePort", "clusterIP": "10.96.0.12", "selector": {"app": "web"},
                "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30080}, {"port": 53, "protocol": "UDP"}]}});
        let cells = service_cells(&svc, now());
        assert_eq!(
            cells,
            vec![
                json!("web"),
                json!("NodePort"),
                json!("10.96.0.12"),
                json!("<none>"),
                json!("80:30080/TCP,53/UDP"),
                json!("60s"),
                json!("app=web")
            ]
        );
        let lb = json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "clusterIP": "10.96.0.2"}});
        assert_eq!(service_cells(&lb, now())[3], "<pending>");
        let headless = json!({"metadata": {"name": "h"}, "spec": {"clusterIP": "None"}});
        assert_eq!(service_cells(&headless, now())[2], "None");
        assert_eq!(service_cells(&headless, now())[4], "<none>");
    }

    #[test]
    fn endpoints_show_three_addresses_then_how_many_more() {
        let addrs: Vec<Value> = (1..=5)
            .map(|i| json!({"ip": format!("10.0.0.{i}")}))
            .collect();
        let ep = json!({"metadata": {"name": "web"}, "subsets": [{"addresses": addrs, "ports": [{"port": 80}]}]});
        assert_eq!(
            endpoints_cells(&ep, now())[1],
            "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 2 more..."
        );
        assert_eq!(
            endpoints_cells(&json!({"metadata": {"name": "e"}}), now())[1],
            "<none>"
        );
        let slice = json!({"metadata": {"name": "web-abc"}, "addressType": "IPv4", "ports": [{"port": 8080}],
            "endpoints": [{"addresses": ["10.0.0.1"]}]});
        let cells = endpoint_slice_cells(&slice, now());
        assert_eq!(
            cells[1..4],
            [json!("IPv4"), json!("8080"), json!("10.0.0.1")]
        );
    }
}
