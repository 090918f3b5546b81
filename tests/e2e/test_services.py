"""Services, Endpoints, EndpointSlices and ServiceAccounts, as a kubectl user meets them:
ClusterIPs and NodePorts allocated from their ranges, the `kubernetes` Service, endpoints that
list exactly the selected ready pods, a `default` ServiceAccount in every namespace and the
ServiceAccount admission of pods.

Timeouts below only keep a broken server from hanging the suite; nothing asserts on durations.
"""

import ipaddress
import json

from conftest import eventually, pod

SERVICE_RANGE = ipaddress.ip_network("10.96.0.0/12")


def service(name, ns, selector=None, ports=({"port": 80, "targetPort": "http"},), **spec):
    body = {"ports": list(ports), **spec}
    if selector is not None:
        body["selector"] = selector
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
            "spec": body}


def web_pod(name, ns, node, labels):
    p = pod(name, namespace=ns, node=node, labels=labels)
    p["spec"]["containers"][0]["ports"] = [{"name": "http", "containerPort": 8080}]
    return p


def running(berth, ns, name):
    p = berth.kubectl_json("get", "pod", name, "-n", ns)
    return p["status"].get("phase") == "Running" and p["status"].get("podIP")


def test_a_service_gets_a_cluster_ip_and_endpoints_of_exactly_its_ready_pods(berth, ns):
    labels = {"app": "web"}
    berth.kubectl("apply", "-f", "-", stdin=[
        web_pod("web-1", ns, "node-1", labels), web_pod("web-2", ns, "node-2", labels),
        web_pod("web-3", ns, "node-3", labels),
        web_pod("other", ns, "node-1", {"app": "db"}),
        service("web", ns, selector=labels),
    ])
    svc = berth.kubectl_json("get", "svc", "web", "-n", ns)
    ip = svc["spec"]["clusterIP"]
    assert ipaddress.ip_address(ip) in SERVICE_RANGE
    assert svc["spec"]["clusterIPs"] == [ip]
    assert svc["spec"]["ipFamilies"] == ["IPv4"]
    assert svc["spec"]["ipFamilyPolicy"] == "SingleStack"
    assert svc["spec"]["sessionAffinity"] == "None"
    assert svc["spec"]["internalTrafficPolicy"] == "Cluster"
    for name in ("web-1", "web-2", "web-3"):
        eventually(lambda: running(berth, ns, name), what=f"{name} running")
    pod_ips = {name: berth.kubectl_json("get", "pod", name, "-n", ns)["status"]["podIP"]
               for name in ("web-1", "web-2", "web-3")}

    # web-3 stops being ready: it moves to notReadyAddresses (and its slice endpoint is not ready).
    status = berth.kubectl_json("get", "pod", "web-3", "-n", ns)["status"]
    conditions = [dict(c, status="False") if c["type"] == "Ready" else c
                  for c in status["conditions"]]
    berth.kubectl("patch", "pod", "web-3", "-n", ns, "--subresource=status", "--type=merge",
                  "-p", json.dumps({"status": {"conditions": conditions}}))

    def endpoints():
        ep = berth.kubectl_json("get", "endpoints", "web", "-n", ns)
        subsets = ep.get("subsets") or []
        if len(subsets) != 1:
            return None
        ready = {a["targetRef"]["name"]: a for a in subsets[0].get("addresses", [])}
        not_ready = {a["targetRef"]["name"] for a in subsets[0].get("notReadyAddresses", [])}
        return (ready, not_ready, subsets[0]["ports"]) if set(ready) == {"web-1", "web-2"} \
            and not_ready == {"web-3"} else None

    ready, _, ports = eventually(endpoints, what="endpoints of web-1 and web-2, web-3 not ready")
    assert ready["web-1"]["ip"] == pod_ips["web-1"]
    assert ready["web-1"]["nodeName"] == "node-1"
    assert ports == [{"port": 8080, "protocol": "TCP"}], "the named targetPort resolved"

    def slice_():
        slices = berth.kubectl_json("get", "endpointslices", "-n", ns,
                                    "-l", "kubernetes.io/service-name=web")["items"]
        if len(slices) != 1:
            return None
        by_pod = {e["targetRef"]["name"]: e for e in slices[0]["endpoints"]}
        return slices[0] if set(by_pod) == {"web-1", "web-2", "web-3"} \
            and by_pod["web-3"]["conditions"]["ready"] is False else None

    s = eventually(slice_, what="an EndpointSlice of the three pods")
    assert s["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == \
        "endpointslice-controller.k8s.io"
    assert s["addressType"] == "IPv4"
    assert s["ports"] == [{"name": "", "port": 8080, "protocol": "TCP"}]

    out = berth.kubectl("get", "endpoints", "web", "-n", ns).stdout
    assert out.split("\n")[0].split() == ["NAME", "ENDPOINTS", "AGE"]
    out = berth.kubectl("get", "endpointslices", "-n", ns).stdout
    assert out.split("\n")[0].split() == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]

    # Deleting a pod removes it; deleting the Service removes its endpoints.
    berth.kubectl("delete", "pod", "web-1", "-n", ns, "--grace-period=0", "--force")
    eventually(lambda: {a["targetRef"]["name"] for a in (berth.kubectl_json(
        "get", "endpoints", "web", "-n", ns).get("subsets") or [{}])[0].get("addresses", [])}
        == {"web-2"}, what="web-1 gone from the endpoints")
    berth.kubectl("delete", "svc", "web", "-n", ns)
    eventually(lambda: berth.kubectl("get", "endpoints", "web", "-n", ns, check=False)
               .returncode != 0, what="the endpoints deleted with their service")


def test_kubectl_get_svc_columns_headless_and_requested_ips(berth, ns):
    berth.kubectl("create", "service", "clusterip", "plain", "--tcp=80:8080", "-n", ns)
    berth.kubectl("create", "service", "clusterip", "headless", "--clusterip=None", "-n", ns)
    out = berth.kubectl("get", "svc", "-n", ns).stdout.strip().split("\n")
    assert out[0].split() == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    rows = {line.split()[0]: line.split() for line in out[1:]}
    assert rows["headless"][1:5] == ["ClusterIP", "None", "<none>", "<none>"]
    assert rows["plain"][1] == "ClusterIP"
    assert ipaddress.ip_address(rows["plain"][2]) in SERVICE_RANGE
    assert rows["plain"][3:5] == ["<none>", "80/TCP"]

    # A requested IP is honoured when free and in range; taken or outside, 422 as upstream.
    taken = rows["plain"][2]
    free = str(ipaddress.ip_address(taken) + 1000)
    r = berth.kubectl("create", "service", "clusterip", "asked", f"--clusterip={free}",
                      "--tcp=80", "-n", ns, check=False)
    if r.returncode == 0:
        assert berth.kubectl_json("get", "svc", "asked", "-n", ns)["spec"]["clusterIP"] == free
    else:
        assert "already allocated" in r.stderr, r.stderr  # a random pick took it first
    r = berth.kubectl("create", "service", "clusterip", "dup", f"--clusterip={taken}",
                      "--tcp=80", "-n", ns, check=False)
    assert r.returncode != 0
    assert f"failed to allocate IP {taken}: provided IP is already allocated" in r.stderr
    r = berth.kubectl("create", "service", "clusterip", "far", "--clusterip=192.168.0.1",
                      "--tcp=80", "-n", ns, check=False)
    assert r.returncode != 0
    assert "The range of valid IPs is 10.96.0.0/12" in r.stderr, r.stderr

    # The cluster IP is immutable; an apply that leaves it out keeps it.
    r = berth.kubectl("patch", "svc", "plain", "-n", ns, "--type=merge",
                      "-p", json.dumps({"spec": {"clusterIP": free}}), check=False)
    assert r.returncode != 0 and "may not change once set" in r.stderr, r.stderr
    berth.kubectl("label", "svc", "plain", "-n", ns, "tier=front")
    assert berth.kubectl_json("get", "svc", "plain", "-n", ns)["spec"]["clusterIP"] == taken


def test_node_ports_are_allocated_and_conflicts_refused(berth, ns):
    berth.kubectl("create", "service", "nodeport", "np", "--tcp=80:8080", "-n", ns)
    svc = berth.kubectl_json("get", "svc", "np", "-n", ns)
    port = svc["spec"]["ports"][0]["nodePort"]
    assert 30000 <= port <= 32767
    assert svc["spec"]["externalTrafficPolicy"] == "Cluster"
    out = berth.kubectl("get", "svc", "np", "-n", ns).stdout
    assert f"80:{port}/TCP" in out and "NodePort" in out
    r = berth.kubectl("apply", "-f", "-", check=False, stdin=service(
        "np2", ns, ports=[{"port": 80, "nodePort": port}], type="NodePort"))
    assert r.returncode != 0
    assert f"spec.ports[0].nodePort: Invalid value: {port}: provided port is already allocated" \
        in r.stderr, r.stderr
    r = berth.kubectl("apply", "-f", "-", check=False, stdin=service(
        "np3", ns, ports=[{"port": 80, "nodePort": 80}], type="NodePort"))
    assert r.returncode != 0 and "30000-32767" in r.stderr, r.stderr
    # Deleting the service frees its port.
    berth.kubectl("delete", "svc", "np", "-n", ns)
    berth.kubectl("apply", "-f", "-", stdin=service(
        "np2", ns, ports=[{"port": 80, "nodePort": port}], type="NodePort"))


def test_the_kubernetes_service_and_its_endpoints(berth):
    svc = berth.kubectl_json("get", "svc", "kubernetes", "-n", "default")
    assert svc["spec"]["clusterIP"] == "10.96.0.1"
    assert svc["spec"]["ports"][0]["name"] == "https"
    assert svc["spec"]["ports"][0]["port"] == 443
    port = int(berth.url.rsplit(":", 1)[1])
    ep = berth.kubectl_json("get", "endpoints", "kubernetes", "-n", "default")
    assert ep["subsets"][0]["ports"][0]["port"] == port


def test_expose_a_pod(berth, ns):
    berth.kubectl("apply", "-f", "-", stdin=web_pod("solo", ns, "node-1", {"app": "solo"}))
    berth.kubectl("expose", "pod", "solo", "--port=80", "--target-port=8080", "-n", ns)
    eventually(lambda: running(berth, ns, "solo"), what="solo running")
    eventually(lambda: (berth.kubectl_json("get", "endpoints", "solo", "-n", ns).get("subsets")
                        or [{}])[0].get("addresses"), what="the exposed pod's endpoints")


def test_every_namespace_has_a_default_service_account_and_pods_run_as_it(berth, ns):
    for namespace in ("default", "kube-system", ns):
        eventually(lambda: berth.kubectl("get", "sa", "default", "-n", namespace, check=False)
                   .returncode == 0, what=f"the default service account in {namespace}")
    berth.kubectl("delete", "sa", "default", "-n", ns)
    eventually(lambda: berth.kubectl("get", "sa", "default", "-n", ns, check=False)
               .returncode == 0, what="the default service account recreated")
    berth.kubectl("apply", "-f", "-", stdin=pod("plain", namespace=ns))
    spec = berth.kubectl_json("get", "pod", "plain", "-n", ns)["spec"]
    assert spec["serviceAccountName"] == "default"
    volume = next(v for v in spec["volumes"] if v["name"].startswith("kube-api-access-"))
    assert spec["containers"][0]["volumeMounts"][0]["name"] == volume["name"]
    r = berth.kubectl("apply", "-f", "-", check=False,
                      stdin=pod("ghost", namespace=ns, serviceAccountName="builder"))
    assert r.returncode != 0
    assert (f"error looking up service account {ns}/builder: "
            'serviceaccount "builder" not found') in r.stderr, r.stderr
