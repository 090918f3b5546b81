"""The seed's scheduling walkthroughs (node affinity, pod affinity, node selectors, taints and
tolerations), through kubectl against `berth serve`, asserting on what kubectl prints.

Walkthroughs that label or taint nodes run on a server of their own; the others share the
session's server in a namespace of their own.
"""

import pytest

from scheduler_support import (explain, explain_json, label_node, node_of, pod, wait_bound,
                               wait_failed_scheduling)


@pytest.fixture
def own(berth_factory):
    """A server of this test's own, so that node labels and taints touch no other test."""
    return berth_factory


def node_affinity(key, *values):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": key, "operator": "In", "values": list(values)}]}]}}}


# 16.8.3.1 -----------------------------------------------------------------------------------

def test_node_affinity_with_matching_labels(own):
    b = own()
    label_node(b, "node-2", "zone=us")
    b.kubectl("create", "-f", "-", stdin=pod("pod-s1", "default", affinity=node_affinity("zone", "us")))
    assert wait_bound(b, "default", "pod-s1") == "node-2"
    wide = b.kubectl("get", "pod", "pod-s1", "-o", "wide").stdout
    assert "node-2" in wide.splitlines()[1]


# 16.8.3.2 -----------------------------------------------------------------------------------

def test_node_affinity_with_no_matching_labels_stays_pending(own):
    b = own()
    label_node(b, "node-1", "zone=emea")
    b.kubectl("create", "-f", "-", stdin=pod("pod-s1", "default", affinity=node_affinity("zone", "us")))
    described = wait_failed_scheduling(b, "default", "pod-s1")
    assert "default-scheduler" in described
    assert "0/3 nodes are available" in described
    assert "node(s) didn't match node selector" in described
    assert node_of(b, "default", "pod-s1") == ""
    row = b.kubectl("get", "pod", "pod-s1").stdout.splitlines()[1]
    assert "Pending" in row
    # The pod's condition says the same.
    cond = b.kubectl("get", "pod", "pod-s1", "-o",
                     "jsonpath={.status.conditions[?(@.type=='PodScheduled')].reason}").stdout
    assert cond == "Unschedulable"

    # berth explain: every node fails the node selector.
    r = explain(b, "default", "pod-s1")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    for node in ("node-1", "node-2", "node-3"):
        row = next(line for line in lines if line.startswith(node))
        assert "didn't match node selector" in row
    assert "0/3 nodes are available: 3 node(s) didn't match node selector." in r.stdout

    # Labelling a node to match is a cluster event that lets the pod in.
    label_node(b, "node-1", "zone=us")
    assert wait_bound(b, "default", "pod-s1") == "node-1"


# 16.8.2.2 -----------------------------------------------------------------------------------

def test_preferred_node_affinity_moves_the_pod_to_the_labelled_node(own):
    b = own()
    label_node(b, "node-3", "e2e-az-name=e2e-az3")
    preferred = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [
            {"key": "e2e-az-name", "operator": "In", "values": ["e2e-az3"]}]}}]}}
    b.kubectl("create", "-f", "-", stdin=pod("e2e-az3", "default", affinity=preferred))
    assert wait_bound(b, "default", "e2e-az3") == "node-3"

    # explain shows why: NodeAffinityPriority scores node-3 alone, and it has the highest total.
    ex = explain_json(b, "default", "e2e-az3")
    by_node = {n["node"]: n for n in ex["nodes"]}
    assert set(by_node) == {"node-1", "node-2", "node-3"}
    affinity = {name: next(p["score"] for p in n["priorities"]
                           if p["name"] == "NodeAffinityPriority")
                for name, n in by_node.items()}
    assert affinity["node-3"] == 10 and affinity["node-1"] == 0
    assert by_node["node-3"]["total"] > by_node["node-1"]["total"]
    table = explain(b, "default", "e2e-az3").stdout
    assert "bound to node-3" in table and "NodeAffinityPriority" in table


# 16.9.3.1 / 16.9.3.2 / 16.9.3.3 --------------------------------------------------------------

def pod_affinity(kind, key, value):
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchExpressions": [
            {"key": key, "operator": "In", "values": [value]}]},
        "topologyKey": "kubernetes.io/hostname"}]}}


def test_pod_affinity_lands_next_to_team4(berth, ns):
    berth.kubectl("create", "-f", "-", stdin=pod("team4", ns, labels={"team": "4"}))
    team4_node = wait_bound(berth, ns, "team4")
    berth.kubectl("create", "-f", "-",
                  stdin=pod("team4a", ns, affinity=pod_affinity("podAffinity", "team", "4")))
    assert wait_bound(berth, ns, "team4a") == team4_node
    wide = berth.kubectl("get", "pods", "-n", ns, "-o", "wide").stdout
    rows = {line.split()[0]: line for line in wide.splitlines()[1:]}
    assert team4_node in rows["team4"] and team4_node in rows["team4a"]


def test_pod_anti_affinity_keeps_pod_s2_off_pod_s1s_node(berth, ns):
    berth.kubectl("create", "-f", "-", stdin=pod("pod-s1", ns, labels={"security": "s1"}))
    s1_node = wait_bound(berth, ns, "pod-s1")
    berth.kubectl("create", "-f", "-", stdin=pod(
        "pod-s2", ns, affinity=pod_affinity("podAntiAffinity", "security", "s1")))
    s2_node = wait_bound(berth, ns, "pod-s2")
    assert s2_node != s1_node


def test_pod_affinity_with_no_matching_labels_stays_pending(berth, ns):
    berth.kubectl("create", "-f", "-", stdin=pod("pod-s1", ns, labels={"security": "s1"}))
    wait_bound(berth, ns, "pod-s1")
    berth.kubectl("create", "-f", "-", stdin=pod(
        "pod-s2", ns, affinity=pod_affinity("podAffinity", "security", "s2")))
    described = wait_failed_scheduling(berth, ns, "pod-s2")
    assert "affinity" in described
    row = berth.kubectl("get", "pod", "pod-s2", "-n", ns, "-o", "wide").stdout.splitlines()[1]
    assert "Pending" in row and "<none>" in row


# 16.10 --------------------------------------------------------------------------------------

def test_node_selector_places_the_pod_on_the_labelled_node(own):
    b = own()
    label_node(b, "node-3", "disktype=ssd")
    b.kubectl("create", "-f", "-", stdin=pod("ssd", "default", nodeSelector={"disktype": "ssd"}))
    assert wait_bound(b, "default", "ssd") == "node-3"
    b.kubectl("create", "-f", "-", stdin=pod("nvme", "default", nodeSelector={"disktype": "nvme"}))
    described = wait_failed_scheduling(b, "default", "nvme")
    assert "node(s) didn't match node selector" in described


# 16.11.2.1 ----------------------------------------------------------------------------------

TWO_TOLERATIONS = [
    {"key": "key1", "operator": "Equal", "value": "value1", "effect": "NoSchedule"},
    {"key": "key1", "operator": "Equal", "value": "value1", "effect": "NoExecute"},
]


def test_three_taints_two_tolerations_not_scheduled_then_third_toleration_scheduled(own):
    b = own(nodes=1)
    b.kubectl("taint", "nodes", "node-1", "key1=value1:NoSchedule")
    b.kubectl("taint", "nodes", "node-1", "key1=value1:NoExecute")
    b.kubectl("taint", "nodes", "node-1", "key2=value2:NoSchedule")
    taints = b.kubectl("describe", "node", "node-1").stdout
    assert "key2=value2:NoSchedule" in taints

    b.kubectl("create", "-f", "-", stdin=pod("two", "default", tolerations=TWO_TOLERATIONS))
    described = wait_failed_scheduling(b, "default", "two")
    assert "0/1 nodes are available" in described
    assert "taint" in described
    assert node_of(b, "default", "two") == ""

    third = {"key": "key2", "operator": "Equal", "value": "value2", "effect": "NoSchedule"}
    b.kubectl("create", "-f", "-",
              stdin=pod("three", "default", tolerations=TWO_TOLERATIONS + [third]))
    assert wait_bound(b, "default", "three") == "node-1"
    events = b.kubectl("describe", "pod", "three").stdout
    assert "Successfully assigned default/three to node-1" in events
    assert node_of(b, "default", "two") == ""


def test_prefer_no_schedule_is_avoided_when_another_node_fits(own):
    b = own(nodes=2)
    b.kubectl("taint", "nodes", "node-1", "dedicated=batch:PreferNoSchedule")
    for i in range(3):
        b.kubectl("create", "-f", "-", stdin=pod(f"web-{i}", "default"))
        assert wait_bound(b, "default", f"web-{i}") == "node-2"
    # PreferNoSchedule only steers: a pod that can go nowhere else still lands there.
    b.kubectl("create", "-f", "-",
              stdin=pod("pinned", "default", nodeSelector={"kubernetes.io/hostname": "node-1"}))
    assert wait_bound(b, "default", "pinned") == "node-1"


def test_explain_output_formats(own):
    b = own()
    b.kubectl("create", "-f", "-", stdin=pod("p", "default"))
    wait_bound(b, "default", "p")
    ex = explain_json(b, "default", "p")
    assert ex["pod"] == "default/p"
    assert all(n["result"] == "Fit" and n["total"] is not None for n in ex["nodes"])
    table = explain(b, "default", "p").stdout.splitlines()
    header = table[1].split()
    assert header[:3] == ["NODE", "FITS", "TOTAL"]
    assert any(h.startswith("LeastRequestedPriority") for h in header)
    missing = explain(b, "default", "nope")
    assert missing.returncode != 0 and "not found" in missing.stderr
