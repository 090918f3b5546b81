"""Pod priority and preemption end to end (seed 002 §16.6, seed 003, scheduler.md §7).

Victims carry `berth.io/termination-seconds` so the simulated kubelet takes a while to stop them,
which leaves time to see the preemptor's NOMINATED NODE. No timing assertions: only generous
waits for conditions.
"""
import json
import time

import pytest

WAIT = 90


def wait_until(fn, timeout=WAIT, interval=0.5):
    end = time.time() + timeout
    last = None
    while time.time() < end:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s (last: {last!r})")


def apply(berth, obj):
    berth.kubectl("apply", "-f", "-", stdin=json.dumps(obj))


def priority_class(berth, name, value):
    apply(berth, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                  "metadata": {"name": name}, "value": value})


def cpu_pod(ns, name, cpu, cls=None, node=None, labels=None, seconds=None, grace=None):
    spec = {"containers": [{"name": "c", "image": "nginx",
                            "resources": {"requests": {"cpu": cpu}}}]}
    if cls:
        spec["priorityClassName"] = cls
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    meta = {"name": name, "namespace": ns, "labels": labels or {"app": name}}
    if seconds is not None:
        meta["annotations"] = {"berth.io/termination-seconds": str(seconds)}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def pod(berth, ns, name):
    return berth.kubectl_json("get", "pod", name, "-n", ns)


def node_cpu(berth):
    nodes = berth.kubectl_json("get", "nodes")["items"]
    out = {}
    for n in nodes:
        q = n["status"]["allocatable"]["cpu"]
        out[n["metadata"]["name"]] = int(q[:-1]) if q.endswith("m") else int(float(q) * 1000)
    return out


def fill_nodes(berth, ns, cls, seconds=3, grace=None, per_node=2):
    """Fills every node with `per_node` low-priority pods pinned to it; returns {node: [pods]}."""
    filled = {}
    for node, milli in sorted(node_cpu(berth).items()):
        names = []
        for i in range(per_node):
            name = f"low-{node}-{i}"
            apply(berth, cpu_pod(ns, name, f"{milli // per_node - 50}m", cls, node,
                                 labels={"app": "low", "slot": name}, seconds=seconds,
                                 grace=grace))
            names.append(name)
        filled[node] = names
    for names in filled.values():
        for name in names:
            wait_until(lambda n=name: pod(berth, ns, n)["status"].get("phase") == "Running")
    return filled


def events_for(berth, ns, name):
    items = berth.kubectl_json("get", "events", "-n", ns)["items"]
    return [e for e in items if e["involvedObject"].get("name") == name]


def seed_sample(berth, ns, version):
    apply(berth, {"apiVersion": f"scheduling.k8s.io/{version}", "kind": "PriorityClass",
                  "metadata": {"name": "high-priority"}, "value": 1000000,
                  "globalDefault": False,
                  "description": "This priority class should be used for XYZ service pods only."})
    apply(berth, {"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": "nginx", "namespace": ns, "labels": {"env": "test"}},
                  "spec": {"containers": [{"name": "nginx", "image": "nginx",
                                           "imagePullPolicy": "IfNotPresent"}],
                           "priorityClassName": "high-priority"}})
    assert pod(berth, ns, "nginx")["spec"]["priority"] == 1000000


def test_seed_sample_priority_class_and_pod(berth, ns):
    seed_sample(berth, ns, "v1")


def test_seed_sample_priority_class_v1beta1(berth_factory):
    seed_sample(berth_factory(nodes=1), "default", "v1beta1")


def test_typical_preemption_nominates_then_runs(berth_factory):
    berth, ns = berth_factory(nodes=3), "default"  # a cluster of its own: exact free room
    priority_class(berth, "low", 10)
    priority_class(berth, "high", 100000)
    filled = fill_nodes(berth, ns, "low", seconds=3)
    milli = max(node_cpu(berth).values())
    apply(berth, cpu_pod(ns, "important", f"{milli // 2}m", "high", seconds=0))

    def nominated():
        out = berth.kubectl("get", "pods", "-n", ns, "-o", "wide").stdout
        line = next(l for l in out.splitlines() if l.startswith("important "))
        node = pod(berth, ns, "important")["status"].get("nominatedNodeName")
        return node if node and node in line else None

    node = wait_until(nominated)
    wait_until(lambda: pod(berth, ns, "important")["spec"].get("nodeName") == node)
    gone = [p for p in filled[node]
            if berth.kubectl("get", "pod", p, "-n", ns, check=False).returncode != 0]
    assert gone, "a victim on the nominated node was deleted"
    for v in gone:
        msgs = [e for e in events_for(berth, ns, v) if e["reason"] == "Preempted"]
        assert msgs and msgs[0]["message"] == f"by {ns}/important on node {node}"
    # pods on the other nodes were left alone
    for other, names in filled.items():
        if other != node:
            for p in names:
                assert pod(berth, ns, p)["metadata"].get("deletionTimestamp") is None


def test_preemptor_lands_where_room_appears_first(berth_factory):
    berth, ns = berth_factory(nodes=3), "default"  # a cluster of its own: exact free room
    priority_class(berth, "low", 10)
    priority_class(berth, "high", 100000)
    filled = fill_nodes(berth, ns, "low", seconds=60, grace=60)
    milli = max(node_cpu(berth).values())
    apply(berth, cpu_pod(ns, "important", f"{milli // 2}m", "high", seconds=0))
    node = wait_until(lambda: pod(berth, ns, "important")["status"].get("nominatedNodeName"))
    other = next(n for n in sorted(filled) if n != node)
    for p in filled[other]:
        berth.kubectl("delete", "pod", p, "-n", ns, "--grace-period=0", "--force", "--wait=false")
    wait_until(lambda: pod(berth, ns, "important")["spec"].get("nodeName") == other)


def test_budget_steers_preemption_to_unprotected_node(berth_factory):
    berth, ns = berth_factory(nodes=3), "default"  # a cluster of its own: exact free room
    priority_class(berth, "low", 10)
    priority_class(berth, "high", 100000)
    filled = fill_nodes(berth, ns, "low", seconds=3, per_node=1)
    protected_nodes = sorted(filled)[:-1]
    for n in protected_nodes:
        berth.kubectl("label", "pod", filled[n][0], "-n", ns, "guard=yes")
    apply(berth, {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                  "metadata": {"name": "guard", "namespace": ns},
                  "spec": {"minAvailable": len(protected_nodes),
                           "selector": {"matchLabels": {"guard": "yes"}}}})
    wait_until(lambda: berth.kubectl_json("get", "pdb", "guard", "-n", ns)
               .get("status", {}).get("currentHealthy") == len(protected_nodes))
    milli = max(node_cpu(berth).values())
    apply(berth, cpu_pod(ns, "important", f"{milli // 2}m", "high", seconds=0))
    free = sorted(filled)[-1]
    wait_until(lambda: pod(berth, ns, "important")["status"].get("nominatedNodeName") == free
               or pod(berth, ns, "important")["spec"].get("nodeName") == free)
    for n in protected_nodes:
        assert pod(berth, ns, filled[n][0])["metadata"].get("deletionTimestamp") is None


def start_with(berth, berth_factory, tmp_path, monkeypatch, *extra):
    """A server of the test's own with extra `berth serve` flags (through a wrapper binary)."""
    launch_globals = type(berth).launch.__globals__
    real = launch_globals["BERTH_BIN"]
    wrapper = tmp_path / "berth-wrapped"
    args = " ".join(f"'{a}'" for a in extra)
    wrapper.write_text(f'#!/bin/sh\nexec "{real}" "$@" {args}\n')
    wrapper.chmod(0o755)
    monkeypatch.setitem(launch_globals, "BERTH_BIN", wrapper)
    try:
        return berth_factory(nodes=2)
    finally:
        monkeypatch.setitem(launch_globals, "BERTH_BIN", real)


def test_preemption_disabled_leaves_the_pod_pending(berth, berth_factory, tmp_path, monkeypatch):
    b = start_with(berth, berth_factory, tmp_path, monkeypatch, "--disable-preemption")
    ns = "default"
    priority_class(b, "low", 10)
    priority_class(b, "high", 100000)
    filled = fill_nodes(b, ns, "low", seconds=0)
    milli = max(node_cpu(b).values())
    apply(b, cpu_pod(ns, "important", f"{milli // 2}m", "high"))
    wait_until(lambda: any(e["reason"] == "FailedScheduling"
                           for e in events_for(b, ns, "important")))
    time.sleep(3)  # room for a (wrong) preemption to show; not a timing assertion
    p = pod(b, ns, "important")
    assert p["status"].get("phase") == "Pending"
    assert not p["spec"].get("nodeName") and not p["status"].get("nominatedNodeName")
    for names in filled.values():
        for name in names:
            assert pod(b, ns, name)["metadata"].get("deletionTimestamp") is None


def test_master_config_turns_pod_priority_off(berth, berth_factory, tmp_path, monkeypatch):
    mc = tmp_path / "master-config.yaml"
    mc.write_text("kubernetesMasterConfig:\n  schedulerArgs:\n    disablePreemption:\n    - \"true\"\n")
    b = start_with(berth, berth_factory, tmp_path, monkeypatch, "--master-config", str(mc))
    priority_class(b, "high", 100000)
    r = b.kubectl("apply", "-f", "-", check=False,
                  stdin=json.dumps(cpu_pod("default", "named", "10m", "high")))
    assert r.returncode != 0 and "priority" in r.stderr
    apply(b, cpu_pod("default", "plain", "10m"))
    wait_until(lambda: pod(b, "default", "plain")["spec"].get("nodeName"))
