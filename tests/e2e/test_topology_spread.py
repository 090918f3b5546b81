"""Pod fields the 1.35 scheduler honours, under berth's default (Policy) configuration, through
kubectl against `berth serve`: `topologySpreadConstraints` (filter and score) and
`schedulingGates`.

Tests that label nodes run on a server of their own; the gate test shares the session's server.
"""

import collections
import json
import time

from conftest import eventually
from scheduler_support import label_node, node_of, pod, wait_bound, wait_failed_scheduling

ZONE = "topology.kubernetes.io/zone"


def zone_spread(max_skew, app, **extra):
    return {"maxSkew": max_skew, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": app}}, **extra}


def test_a_deployment_of_6_with_max_skew_1_spreads_2_2_2_over_3_zones(berth_factory):
    b = berth_factory(nodes=3)
    for i, zone in enumerate(["zone-a", "zone-b", "zone-c"], start=1):
        label_node(b, f"node-{i}", f"{ZONE}={zone}")
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 6,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "topologySpreadConstraints": [zone_spread(1, "web")],
                    "containers": [{"name": "c", "image": "nginx"}],
                },
            },
        },
    }
    b.kubectl("create", "-f", "-", stdin=deployment)

    def placements():
        pods = b.kubectl_json("get", "pods", "-n", "default", "-l", "app=web")["items"]
        nodes = [p["spec"].get("nodeName", "") for p in pods]
        return nodes if len(nodes) == 6 and all(nodes) else None

    nodes = eventually(placements, what="6 pods of web to be bound")
    assert sorted(collections.Counter(nodes).values()) == [2, 2, 2], nodes


def test_a_do_not_schedule_skew_that_cannot_be_met_leaves_the_pod_pending(berth_factory):
    b = berth_factory(nodes=3)
    # one zone only, while the constraint asks for at least 2 domains: the global minimum is
    # taken as 0, so a second matching pod would make the skew 2 anywhere
    for i in (1, 2, 3):
        label_node(b, f"node-{i}", f"{ZONE}=zone-a")
    b.kubectl("create", "-f", "-", stdin=pod("first", "default", labels={"app": "db"},
                                             nodeName="node-1"))
    b.kubectl("create", "-f", "-", stdin=pod(
        "second", "default", labels={"app": "db"},
        topologySpreadConstraints=[zone_spread(1, "db", minDomains=2)]))
    out = wait_failed_scheduling(b, "default", "second")
    reason = "0/3 nodes are available: 3 node(s) didn't match pod topology spread constraints."
    assert reason in out, out
    assert node_of(b, "default", "second") == ""
    cond = b.kubectl("get", "pod", "second", "-n", "default", "-o",
                     "jsonpath={.status.conditions[?(@.type=='PodScheduled')].message}").stdout
    assert cond == reason, cond
    # a node without the topology key fails unresolvably, with its own reason
    b.kubectl("label", "node", "node-3", f"{ZONE}-")
    b.kubectl("create", "-f", "-", stdin=pod(
        "third", "default", labels={"app": "db"},
        topologySpreadConstraints=[zone_spread(1, "db", minDomains=2)]))

    def third_reason():
        out = b.kubectl("describe", "pod", "third", "-n", "default").stdout
        return out if "(missing required label)" in out else None

    out = eventually(third_reason, what="the missing-label reason for third")
    assert ("1 node(s) didn't match pod topology spread constraints (missing required label)"
            in out), out


def test_a_gated_pod_stays_scheduling_gated_and_binds_when_its_gate_is_removed(berth, ns):
    b = berth
    b.kubectl("create", "-f", "-", stdin=pod(
        "gated", ns, schedulingGates=[{"name": "example.com/hold"}]))
    status = b.kubectl("get", "pod", "gated", "-n", ns).stdout
    assert "SchedulingGated" in status, status
    # Give the scheduler time to (wrongly) act; nothing asserts on how long it takes.
    time.sleep(2)
    assert node_of(b, ns, "gated") == ""
    assert "SchedulingGated" in b.kubectl("get", "pod", "gated", "-n", ns).stdout
    events = b.kubectl_json("get", "events", "-n", ns)["items"]
    failed = [e for e in events if e.get("reason") == "FailedScheduling"
              and e.get("involvedObject", {}).get("name") == "gated"]
    assert not failed, failed
    b.kubectl("patch", "pod", "gated", "-n", ns, "--type=json",
              "-p", json.dumps([{"op": "remove", "path": "/spec/schedulingGates"}]))
    assert wait_bound(b, ns, "gated")
