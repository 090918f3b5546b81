"""What kubectl learns about the server: version, discovery, nodes."""

import json

import requests


def test_version_reports_kubernetes_1_32(berth):
    out = berth.kubectl("version").stdout
    assert "Server Version: v1.32" in out


def test_get_raw_version(berth):
    v = json.loads(berth.kubectl("get", "--raw", "/version").stdout)
    assert (v["major"], v["minor"]) == ("1", "32")
    assert v["gitVersion"].startswith("v1.32")


def test_api_resources_lists_the_served_kinds(berth):
    out = berth.kubectl("api-resources").stdout
    # A name served by several groups (pods and nodes also by metrics.k8s.io) keeps its first
    # row: kubectl lists the core group first.
    rows = {}
    for line in out.splitlines()[1:]:
        if line.strip():
            rows.setdefault(line.split()[0], line)
    for name in ["pods", "nodes", "namespaces", "events", "bindings", "priorityclasses",
                 "poddisruptionbudgets", "leases"]:
        assert name in rows, f"{name} missing from:\n{out}"
    assert "po" in rows["pods"].split() and "Pod" in rows["pods"]
    assert "scheduling.k8s.io/v1" in rows["priorityclasses"]
    assert "false" in rows["nodes"].split()  # nodes are cluster-scoped


def test_get_nodes_shows_the_simulated_nodes_ready(berth):
    out = berth.kubectl("get", "nodes").stdout
    lines = out.splitlines()
    assert lines[0].split()[:5] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert sorted(rows) == ["node-1", "node-2", "node-3"]
    for cols in rows.values():
        assert cols[1] == "Ready"
        assert cols[2] == "worker"
        assert cols[4] == "v1.32.0-berth"


def test_get_nodes_wide_shows_internal_ips(berth):
    out = berth.kubectl("get", "nodes", "-o", "wide").stdout
    header = out.splitlines()[0]
    assert "INTERNAL-IP" in header and "CONTAINER-RUNTIME" in header
    node1 = next(line for line in out.splitlines() if line.startswith("node-1 "))
    assert "10.0.0.2" in node1


def test_unknown_resource_is_a_kubectl_error(berth):
    r = berth.kubectl("get", "frobnicators", check=False)
    assert r.returncode != 0
    assert 'the server doesn\'t have a resource type "frobnicators"' in r.stderr


def test_request_without_token_is_anonymous_and_forbidden(berth):
    r = requests.get(f"{berth.url}/api/v1/namespaces/default/pods", verify=berth.ca_file(),
                     timeout=30)
    assert r.status_code == 403
    status = r.json()
    assert status["kind"] == "Status" and status["reason"] == "Forbidden"
    assert status["code"] == 403
    assert 'User "system:anonymous" cannot list resource "pods"' in status["message"]


def test_without_anonymous_auth_a_request_without_token_is_unauthorized(berth_factory):
    b = berth_factory(args=("--anonymous-auth=false",))
    for path in ("/api/v1/namespaces/default/pods", "/healthz"):
        r = requests.get(f"{b.url}{path}", verify=b.ca_file(), timeout=30)
        assert r.status_code == 401, path
        status = r.json()
        assert status["reason"] == "Unauthorized" and status["code"] == 401


def test_request_with_wrong_token_is_unauthorized(berth):
    r = requests.get(f"{berth.url}/api/v1/nodes", verify=berth.ca_file(), timeout=30,
                     headers={"Authorization": "Bearer not-the-token"})
    assert r.status_code == 401


def test_request_with_token_is_served(berth):
    r = requests.get(f"{berth.url}/api/v1/nodes", verify=berth.ca_file(), timeout=30,
                     headers={"Authorization": f"Bearer {berth.token()}"})
    assert r.status_code == 200
    assert r.json()["kind"] == "NodeList"
