"""The DaemonSet controller of `berth serve`, driven with kubectl: one daemon per node, the
tolerations seed 000 lists, cordons and NoExecute taints, evicted daemons recreated.

One server of this module's own (its nodes get cordoned and tainted). Timeouts only keep a
broken server from hanging the suite; nothing asserts on durations.
"""

import json

import pytest

from conftest import Berth, eventually


@pytest.fixture(scope="module")
def ds_berth(tmp_path_factory):
    b = Berth.start(tmp_path_factory.mktemp("berth-daemonsets"), nodes=3)
    yield b
    b.stop()


def daemonset(name, ns, **spec):
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "agent:1",
                                                           "resources": {"requests": {"cpu": "10m"}}}],
                                           **spec}}}}


def daemons(b, ns, app):
    """Live (not deleting) daemon pods by node."""
    pods = b.kubectl_json("get", "pods", "-n", ns, "-l", f"app={app}")["items"]
    return {p["spec"].get("nodeName"): p for p in pods if not p["metadata"].get("deletionTimestamp")}


def running_on(b, ns, app):
    return sorted(n for n, p in daemons(b, ns, app).items()
                  if n and p["status"].get("phase") == "Running")


def test_one_daemon_per_node_with_the_seed_tolerations(ds_berth):
    b = ds_berth
    b.create_namespace("agents")
    b.kubectl("apply", "-f", "-", stdin=daemonset("agent", "agents"))
    eventually(lambda: running_on(b, "agents", "agent") == ["node-1", "node-2", "node-3"],
               what="a running daemon on each node")
    ds = eventually(lambda: (d := b.kubectl_json("get", "ds", "agent", "-n", "agents"))
                    ["status"].get("numberReady") == 3 and d, what="status numberReady 3")
    assert ds["status"]["desiredNumberScheduled"] == 3
    assert ds["status"]["currentNumberScheduled"] == 3
    row = b.kubectl("get", "ds", "agent", "-n", "agents", "--no-headers").stdout.split()
    assert row[1:4] == ["3", "3", "3"]  # DESIRED CURRENT READY
    p = daemons(b, "agents", "agent")["node-2"]
    tolerations = {(t["key"], t["effect"]) for t in p["spec"]["tolerations"]}
    for key, effect in [("node.kubernetes.io/not-ready", "NoExecute"),
                        ("node.kubernetes.io/unreachable", "NoExecute"),
                        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
                        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
                        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
                        ("node.kubernetes.io/unschedulable", "NoSchedule")]:
        assert (key, effect) in tolerations
    # Daemons are never evicted for node problems: no tolerationSeconds on them.
    assert all("tolerationSeconds" not in t for t in p["spec"]["tolerations"]
               if t["key"] in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"))
    # The controller places daemons itself (Kubernetes 1.11, the seed's release).
    events = b.kubectl_json("get", "events", "-n", "agents")["items"]
    assert not any(e["reason"] == "Scheduled" for e in events)
    assert p["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"


def test_cordoned_nodes_keep_and_get_daemons_noexecute_taints_remove_them(ds_berth):
    b = ds_berth
    b.create_namespace("cordon")
    b.kubectl("cordon", "node-3")
    try:
        b.kubectl("apply", "-f", "-", stdin=daemonset("logs", "cordon"))
        # A cordon does not keep daemons off: the cordoned node gets its daemon too.
        eventually(lambda: running_on(b, "cordon", "logs") == ["node-1", "node-2", "node-3"],
                   what="daemons on every node, the cordoned one included")
    finally:
        b.kubectl("uncordon", "node-3")
    b.kubectl("taint", "node", "node-1", "dedicated=db:NoExecute")
    try:
        eventually(lambda: running_on(b, "cordon", "logs") == ["node-2", "node-3"],
                   what="the daemon leaves the NoExecute-tainted node")
        eventually(lambda: b.kubectl_json("get", "ds", "logs", "-n", "cordon")["status"]
                   .get("desiredNumberScheduled") == 2, what="desired 2")
    finally:
        b.kubectl("taint", "node", "node-1", "dedicated=db:NoExecute-")
    eventually(lambda: running_on(b, "cordon", "logs") == ["node-1", "node-2", "node-3"],
               what="the daemon back once the taint is gone")


def test_an_evicted_daemon_is_recreated(ds_berth):
    b = ds_berth
    b.create_namespace("evict")
    b.kubectl("apply", "-f", "-", stdin=daemonset("mon", "evict"))
    eventually(lambda: len(running_on(b, "evict", "mon")) == 3, what="3 daemons")
    old = daemons(b, "evict", "mon")["node-1"]["metadata"]["name"]
    # What the kubelet's eviction manager writes (seed 001: the pod is recreated at once).
    b.kubectl("patch", "pod", old, "-n", "evict", "--subresource=status", "--type=merge", "-p",
              json.dumps({"status": {"phase": "Failed", "reason": "Evicted",
                                     "message": "The node was low on resource: memory. "}}))
    eventually(lambda: (p := daemons(b, "evict", "mon").get("node-1")) is not None
               and p["metadata"]["name"] != old and p["status"].get("phase") == "Running",
               what="a new daemon on node-1")


def test_a_node_without_room_gets_no_daemon_but_a_failed_placement(ds_berth):
    """As the 1.11 controller: no pod is created where it would not fit; a FailedPlacement
    event says why; once room is made the daemon comes."""
    b = ds_berth
    ns = "roomy"
    b.create_namespace(ns)
    cpu = b.kubectl_json("get", "node", "node-1")["status"]["allocatable"]["cpu"]
    milli = int(cpu[:-1]) if cpu.endswith("m") else int(cpu) * 1000
    b.kubectl("apply", "-f", "-", stdin={
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hog", "namespace": ns},
        "spec": {"nodeName": "node-1", "containers": [
            {"name": "c", "image": "nginx:1.27",
             "resources": {"requests": {"cpu": f"{milli - 300}m"}}}]}})
    eventually(lambda: b.kubectl_json("get", "pod", "hog", "-n", ns)["status"].get("phase")
               == "Running", what="hog running on node-1")
    ds = daemonset("wide", ns)
    ds["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "500m"
    b.kubectl("apply", "-f", "-", stdin=ds)
    eventually(lambda: running_on(b, ns, "wide") == ["node-2", "node-3"],
               what="daemons on the nodes with room")

    def placements():
        events = b.kubectl_json("get", "events", "-n", ns)["items"]
        return [e for e in events if e.get("reason") == "FailedPlacement"]

    ev = eventually(lambda: placements(), what="a FailedPlacement event")[0]
    assert ev["type"] == "Warning"
    assert ev["involvedObject"]["kind"] == "DaemonSet"
    assert ev["involvedObject"]["name"] == "wide"
    msg = ev["message"]
    assert msg.startswith('failed to place pod on "node-1": Node didn\'t have enough resource: '
                          "cpu, requested: 500, used: "), msg
    assert msg.endswith(f", capacity: {milli}"), msg
    assert "node-1" not in daemons(b, ns, "wide")
    d = b.kubectl_json("get", "ds", "wide", "-n", ns)
    assert d["status"]["desiredNumberScheduled"] == 3
    # Room made: the daemon is placed.
    b.kubectl("delete", "pod", "hog", "-n", ns, "--grace-period=0", "--force")
    eventually(lambda: running_on(b, ns, "wide") == ["node-1", "node-2", "node-3"],
               what="a daemon on node-1 once the hog is gone")
