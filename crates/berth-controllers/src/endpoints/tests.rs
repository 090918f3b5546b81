use super::pod::ContainerPort;
use super::*;
use k8s_openapi::api::core::v1::ServiceSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

fn service(selector: &[(&str, &str)], ports: Vec<ServicePort>) -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            selector: Some(
                selector
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ports: Some(ports),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

fn port(name: &str, port: i32, target: Option<IntOrString>) -> ServicePort {
    ServicePort {
        name: Some(name.into()),
        port,
        target_port: target,
        protocol: Some("TCP".into()),
        ..ServicePort::default()
    }
}

fn pod(name: &str, ip: &str, ready: bool) -> EndpointPod {
    EndpointPod {
        namespace: Some("default".into()),
        name: name.into(),
        uid: format!("uid-{name}"),
        labels: [("app".to_string(), "web".to_string())].into(),
        ip: ip.into(),
        node_name: Some("node-1".into()),
        phase: "Running".into(),
        ready,
        ports: vec![ContainerPort {
            name: "http".into(),
            container_port: 8080,
            protocol: "TCP".into(),
        }],
        ..EndpointPod::default()
    }
}

fn ips(addresses: &Option<Vec<EndpointAddress>>) -> Vec<String> {
    addresses.iter().flatten().map(|a| a.ip.clone()).collect()
}

#[test]
fn ready_pods_are_addresses_and_the_others_not_ready_addresses() {
    let svc = service(&[("app", "web")], vec![port("", 80, None)]);
    let (a, b, c) = (
        pod("a", "10.244.0.3", true),
        pod("b", "10.244.0.2", true),
        pod("c", "10.244.0.4", false),
    );
    let subsets = endpoint_subsets(&svc, &[&a, &b, &c]);
    assert_eq!(subsets.len(), 1);
    assert_eq!(
        ips(&subsets[0].addresses),
        ["10.244.0.2", "10.244.0.3"],
        "sorted by IP"
    );
    assert_eq!(ips(&subsets[0].not_ready_addresses), ["10.244.0.4"]);
    let first = &subsets[0].addresses.as_ref().unwrap()[0];
    assert_eq!(first.node_name.as_deref(), Some("node-1"));
    let target = first.target_ref.as_ref().unwrap();
    assert_eq!(
        (target.kind.as_deref(), target.name.as_deref()),
        (Some("Pod"), Some("b"))
    );
    assert_eq!(
        subsets[0].ports.as_ref().unwrap()[0].port,
        80,
        "targetPort defaults to port"
    );
}

#[test]
fn pods_outside_the_selector_without_an_ip_or_finished_are_not_endpoints() {
    let svc = service(&[("app", "web")], vec![port("", 80, None)]);
    let mut other = pod("other", "10.244.0.9", true);
    other.labels.insert("app".into(), "db".into());
    let no_ip = pod("pending", "", false);
    let mut done = pod("done", "10.244.0.8", false);
    done.phase = "Succeeded".into();
    let mut elsewhere = pod("elsewhere", "10.244.0.7", true);
    elsewhere.namespace = Some("other".into());
    assert!(endpoint_subsets(&svc, &[&other, &no_ip, &done, &elsewhere]).is_empty());
    assert!(slice_groups(&svc, &[&other, &no_ip, &done, &elsewhere]).is_empty());
}

#[test]
fn a_named_target_port_resolves_to_the_containers_port_and_pods_without_it_are_left_out() {
    let svc = service(
        &[("app", "web")],
        vec![port("web", 80, Some(IntOrString::String("http".into())))],
    );
    let with = pod("with", "10.244.0.2", true);
    let mut without = pod("without", "10.244.0.3", true);
    without.ports.clear();
    let subsets = endpoint_subsets(&svc, &[&with, &without]);
    assert_eq!(subsets.len(), 1);
    assert_eq!(ips(&subsets[0].addresses), ["10.244.0.2"]);
    let p = &subsets[0].ports.as_ref().unwrap()[0];
    assert_eq!((p.name.as_deref(), p.port), (Some("web"), 8080));
    let numbered = port("n", 80, Some(IntOrString::Int(9090)));
    assert_eq!(target_port(&numbered, &with), Some(9090));
}

#[test]
fn pods_resolving_ports_differently_are_separate_subsets_and_slices() {
    let svc = service(
        &[("app", "web")],
        vec![port("web", 80, Some(IntOrString::String("http".into())))],
    );
    let a = pod("a", "10.244.0.2", true);
    let mut b = pod("b", "10.244.0.3", true);
    b.ports[0].container_port = 9000;
    assert_eq!(endpoint_subsets(&svc, &[&a, &b]).len(), 2);
    assert_eq!(slice_groups(&svc, &[&a, &b]).len(), 2);
}

#[test]
fn terminating_pods_leave_endpoints_but_stay_in_slices_as_terminating() {
    let svc = service(&[("app", "web")], vec![port("", 80, None)]);
    let mut going = pod("going", "10.244.0.2", true);
    going.terminating = true;
    assert!(endpoint_subsets(&svc, &[&going]).is_empty());
    let slices = slice_groups(&svc, &[&going]);
    let c = slices[0].endpoints[0].conditions.clone().unwrap();
    assert_eq!(
        (c.ready, c.serving, c.terminating),
        (Some(false), Some(true), Some(true))
    );
}

#[test]
fn slice_conditions_follow_readiness_and_publish_not_ready_addresses() {
    let mut svc = service(&[("app", "web")], vec![port("", 80, None)]);
    let (up, down) = (
        pod("up", "10.244.0.2", true),
        pod("down", "10.244.0.3", false),
    );
    let slices = slice_groups(&svc, &[&up, &down]);
    let conds: Vec<_> = slices[0]
        .endpoints
        .iter()
        .map(|e| e.conditions.clone().unwrap().ready)
        .collect();
    assert_eq!(conds, [Some(true), Some(false)]);
    assert_eq!(slices[0].ports[0].port, Some(80));
    if let Some(spec) = svc.spec.as_mut() {
        spec.publish_not_ready_addresses = Some(true);
    }
    assert_eq!(
        ips(&endpoint_subsets(&svc, &[&up, &down])[0].addresses),
        ["10.244.0.2", "10.244.0.3"]
    );
}

#[test]
fn slices_hold_at_most_a_hundred_endpoints() {
    let svc = service(&[("app", "web")], vec![port("", 80, None)]);
    let pods: Vec<EndpointPod> = (0..250)
        .map(|i| {
            pod(
                &format!("p{i}"),
                &format!("10.244.{}.{}", i / 200, i % 200 + 1),
                true,
            )
        })
        .collect();
    let refs: Vec<&EndpointPod> = pods.iter().collect();
    let sizes: Vec<usize> = slice_groups(&svc, &refs)
        .iter()
        .map(|s| s.endpoints.len())
        .collect();
    assert_eq!(sizes, [100, 100, 50]);
}

#[test]
fn headless_services_without_ports_list_addresses_with_hostnames() {
    let mut svc = service(&[("app", "web")], vec![]);
    if let Some(spec) = svc.spec.as_mut() {
        spec.cluster_ip = Some("None".into());
    }
    let mut a = pod("a", "10.244.0.2", true);
    a.hostname = Some("web-0".into());
    a.subdomain = Some("web".into());
    let subsets = endpoint_subsets(&svc, &[&a]);
    assert!(subsets[0].ports.is_none());
    assert_eq!(
        subsets[0].addresses.as_ref().unwrap()[0]
            .hostname
            .as_deref(),
        Some("web-0")
    );
}

#[test]
fn services_without_a_selector_are_not_managed() {
    let mut svc = service(&[], vec![port("", 80, None)]);
    assert!(managed(&svc));
    if let Some(spec) = svc.spec.as_mut() {
        spec.selector = None;
    }
    assert!(!managed(&svc));
}
