"""Kubelets that answer like kubelets (issue 14): the simulated nodes serve `/stats/summary`,
`/metrics/resource`, `/healthz` and `/containerLogs` on one listener, published in each Node's
status; the API server's node proxy and `pods/NAME/log` forward there; no stats ConfigMaps.
"""

import json
import urllib.request

from conftest import eventually, pod


def running(berth, ns, name):
    p = berth.kubectl_json("get", "pod", name, "-n", ns)
    return p["status"].get("phase") == "Running"


def with_usage(name, ns, usage):
    p = pod(name, namespace=ns, node="node-1")
    p["metadata"].setdefault("annotations", {})["berth.io/usage"] = usage
    return p


def test_nodes_publish_their_kubelet_endpoint(berth):
    node = berth.kubectl_json("get", "node", "node-1")
    port = node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
    addresses = {a["type"]: a["address"] for a in node["status"]["addresses"]}
    assert addresses["Hostname"] == "node-1"
    assert addresses["InternalIP"].startswith("10.0.")
    # The endpoint really answers, for the node the Host header names.
    req = urllib.request.Request(f"http://{addresses['InternalDNS']}:{port}/healthz",
                                 headers={"Host": "node-1"})
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.read() == b"ok"


def test_summary_and_resource_metrics_through_the_proxy(berth, ns):
    berth.kubectl("apply", "-f", "-", stdin=[with_usage("s", ns, "cpu=200m,memory=300Mi")])
    eventually(lambda: running(berth, ns, "s"), what="s running")

    def pod_stats():
        summary = json.loads(
            berth.kubectl("get", "--raw", "/api/v1/nodes/node-1/proxy/stats/summary").stdout)
        return next((p for p in summary["pods"] if p["podRef"]["name"] == "s"), None)

    p = eventually(pod_stats, what="pod in summary")
    assert p["memory"]["workingSetBytes"] == 300 * 2**20
    metrics = berth.kubectl("get", "--raw", "/api/v1/nodes/node-1/proxy/metrics/resource").stdout
    assert (f'container_memory_working_set_bytes{{container="c",namespace="{ns}",pod="s"}} '
            f"{300 * 2**20} ") in metrics
    assert "node_memory_working_set_bytes " in metrics
    assert berth.kubectl("get", "--raw", "/api/v1/nodes/node-1/proxy/healthz").stdout == "ok"
    # Nothing of the summary is written into the API.
    cms = berth.kubectl_json("get", "configmaps", "-A")["items"]
    assert [c["metadata"]["name"] for c in cms if c["metadata"]["name"].startswith("berth-stats-")] == []


def test_unknown_node_and_path(berth):
    r = berth.kubectl("get", "--raw", "/api/v1/nodes/nope/proxy/stats/summary", check=False)
    assert r.returncode != 0 and "not found" in r.stderr.lower()
    r = berth.kubectl("get", "--raw", "/api/v1/nodes/node-1/proxy/nothing-here", check=False)
    assert r.returncode != 0


def test_kubectl_logs(berth, ns):
    berth.kubectl("apply", "-f", "-", stdin=[with_usage("l", ns, "cpu=100m,memory=64Mi")])
    eventually(lambda: running(berth, ns, "l"), what="l running")
    out = berth.kubectl("logs", "l", "-n", ns).stdout
    assert "container c (image nginx:1.27) started on node node-1" in out
    assert "using cpu=100m memory=67108864" in out
    stamped = berth.kubectl("logs", "l", "-n", ns, "--timestamps", "--tail", "1").stdout
    assert stamped.count("\n") == 1 and stamped[:4].isdigit()
    r = berth.kubectl("logs", "l", "-n", ns, "--previous", check=False)
    # Refused; the kubelet's reason is not yet carried into the Status (kubectl shows NotFound).
    assert r.returncode != 0


def test_kubectl_exec_says_it_is_not_supported(berth, ns):
    berth.kubectl("apply", "-f", "-", stdin=[pod("x", namespace=ns, node="node-1")])
    eventually(lambda: running(berth, ns, "x"), what="x running")
    r = berth.kubectl("exec", "x", "-n", ns, "--", "true", check=False)
    assert r.returncode != 0
    assert "not supported on simulated nodes" in r.stderr
