"""The controllers of `berth serve`, driven with kubectl: disruption budgets (status, drain),
taints by condition (cordon), the NoExecute taint manager and node lifecycle.

Timeouts below only keep a broken server from hanging the suite; nothing asserts on durations.
"""

import json
import uuid

import pytest

from conftest import eventually, pod


def node_taints(berth, name):
    return berth.kubectl_json("get", "node", name)["spec"].get("taints") or []


def taint_keys(berth, name):
    return {(t["key"], t["effect"]) for t in node_taints(berth, name)}


def pod_gone_or_deleting(berth, ns, name):
    r = berth.kubectl("get", "pod", name, "-n", ns, "-o", "json", check=False)
    if r.returncode != 0:
        return "NotFound" in r.stderr
    return bool(json.loads(r.stdout)["metadata"].get("deletionTimestamp"))


def running(berth, ns, name):
    r = berth.kubectl("get", "pod", name, "-n", ns, "-o", "json", check=False)
    if r.returncode != 0:
        return False
    p = json.loads(r.stdout)
    return p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")


def budget(name, ns, labels, **spec):
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": {"matchLabels": labels}, **spec}}


def pdb_status(berth, ns, name):
    return berth.kubectl_json("get", "pdb", name, "-n", ns).get("status") or {}


def test_pdb_status_and_allowed_disruptions_column(berth, ns):
    labels = {"app": "web"}
    berth.kubectl("apply", "-f", "-", stdin=[
        pod(f"web-{i}", namespace=ns, node=f"node-{i}", labels=labels) for i in (1, 2, 3)])
    berth.kubectl("apply", "-f", "-", stdin=[
        budget("web-min", ns, labels, minAvailable=2),
        budget("web-pct", ns, labels, minAvailable="50%"),
        budget("web-max", ns, labels, maxUnavailable=1),
    ])

    def settled():
        s = pdb_status(berth, ns, "web-min")
        return s if s.get("currentHealthy") == 3 and s.get("observedGeneration") else None

    s = eventually(settled, what="web-min status")
    assert (s["disruptionsAllowed"], s["desiredHealthy"], s["expectedPods"]) == (1, 2, 3)
    cond = next(c for c in s["conditions"] if c["type"] == "DisruptionAllowed")
    assert (cond["status"], cond["reason"]) == ("True", "SufficientPods")

    pct = eventually(lambda: pdb_status(berth, ns, "web-pct").get("currentHealthy") == 3
                     and pdb_status(berth, ns, "web-pct"), what="web-pct status")
    assert (pct["desiredHealthy"], pct["disruptionsAllowed"]) == (2, 1)
    mx = eventually(lambda: pdb_status(berth, ns, "web-max").get("currentHealthy") == 3
                    and pdb_status(berth, ns, "web-max"), what="web-max status")
    assert (mx["expectedPods"], mx["desiredHealthy"], mx["disruptionsAllowed"]) == (3, 2, 1)

    table = berth.kubectl("get", "pdb", "-n", ns).stdout.splitlines()
    assert table[0].split() == ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE",
                                "ALLOWED", "DISRUPTIONS", "AGE"]
    row = next(line.split() for line in table if line.startswith("web-min "))
    assert row[1:4] == ["2", "N/A", "1"]

    # One pod fewer: no disruption is allowed any more.
    berth.kubectl("delete", "pod", "web-3", "-n", ns, "--wait=false")
    s = eventually(lambda: pdb_status(berth, ns, "web-min").get("currentHealthy") == 2
                   and pdb_status(berth, ns, "web-min"), what="web-min after a deletion")
    assert s["disruptionsAllowed"] == 0
    cond = next(c for c in s["conditions"] if c["type"] == "DisruptionAllowed")
    assert (cond["status"], cond["reason"]) == ("False", "InsufficientPods")


def test_drain_is_blocked_by_a_budget_until_it_allows_a_disruption(berth, ns):
    tag = f"t{uuid.uuid4().hex[:6]}"  # never all digits, which YAML reads as a number
    labels = {"app": "guarded", "e2e-drain": tag}
    berth.kubectl("apply", "-f", "-", stdin=[
        pod("guarded-2", namespace=ns, node="node-2", labels=labels),
        pod("guarded-3", namespace=ns, node="node-3", labels=labels),
        budget("guard", ns, labels, minAvailable=2),
    ])
    eventually(lambda: pdb_status(berth, ns, "guard").get("currentHealthy") == 2,
               what="budget sees both pods ready")
    assert pdb_status(berth, ns, "guard")["disruptionsAllowed"] == 0
    drain = ("drain", "node-2", "--ignore-daemonsets", "--force", "--timeout=10s",
             "--pod-selector", f"e2e-drain={tag}")
    try:
        r = berth.kubectl(*drain, check=False)
        assert r.returncode != 0, r.stdout
        assert "Cannot evict pod as it would violate the pod's disruption budget." in r.stderr
        assert running(berth, ns, "guarded-2")

        # The budget relaxed: one disruption allowed, the drain goes through.
        berth.kubectl("patch", "pdb", "guard", "-n", ns, "--type", "merge",
                      "-p", '{"spec":{"minAvailable":1}}')
        eventually(lambda: pdb_status(berth, ns, "guard").get("disruptionsAllowed") == 1,
                   what="budget allows one disruption")
        r = berth.kubectl(*drain)
        assert "evicted" in r.stdout
        eventually(lambda: pod_gone_or_deleting(berth, ns, "guarded-2"), what="guarded-2 evicted")
        # The eviction used the disruption up.
        eventually(lambda: pdb_status(berth, ns, "guard").get("disruptionsAllowed") == 0,
                   what="budget exhausted")
        assert running(berth, ns, "guarded-3")
    finally:
        berth.kubectl("uncordon", "node-2")


def test_cordon_adds_the_unschedulable_taint_and_keeps_user_taints(berth):
    key = f"e2e-user-{uuid.uuid4().hex[:6]}"
    berth.kubectl("taint", "nodes", "node-2", f"{key}=v:PreferNoSchedule")
    try:
        berth.kubectl("cordon", "node-2")
        eventually(lambda: ("node.kubernetes.io/unschedulable", "NoSchedule")
                   in taint_keys(berth, "node-2"), what="unschedulable taint")
        assert (key, "PreferNoSchedule") in taint_keys(berth, "node-2")
        berth.kubectl("uncordon", "node-2")
        eventually(lambda: ("node.kubernetes.io/unschedulable", "NoSchedule")
                   not in taint_keys(berth, "node-2"), what="unschedulable taint removed")
        assert (key, "PreferNoSchedule") in taint_keys(berth, "node-2")
    finally:
        berth.kubectl("uncordon", "node-2")
        berth.kubectl("taint", "nodes", "node-2", f"{key}-", check=False)


def test_no_execute_taint_evicts_by_toleration(berth, ns):
    key = f"e2e-noexec-{uuid.uuid4().hex[:6]}"
    tolerate = lambda seconds=None: [{  # noqa: E731
        "key": key, "operator": "Equal", "value": "v", "effect": "NoExecute",
        **({"tolerationSeconds": seconds} if seconds is not None else {})}]
    berth.kubectl("apply", "-f", "-", stdin=[
        pod("plain", namespace=ns, node="node-1"),
        pod("five", namespace=ns, node="node-1", tolerations=tolerate(5)),
        pod("forever", namespace=ns, node="node-1", tolerations=tolerate()),
    ])
    for name in ("plain", "five", "forever"):
        eventually(lambda: running(berth, ns, name), what=f"{name} running")
    berth.kubectl("taint", "nodes", "node-1", f"{key}=v:NoExecute")
    try:
        eventually(lambda: pod_gone_or_deleting(berth, ns, "plain"), what="plain evicted")
        eventually(lambda: pod_gone_or_deleting(berth, ns, "five"), what="five evicted")
        assert running(berth, ns, "forever")

        def evictions():
            # Only deletions: a slow machine can see node-1 briefly unreachable, whose
            # taint 'forever' tolerates for 300s; its removal then cancels that deletion with
            # a "Cancelling deletion" event of the same reason, as upstream's would.
            events = berth.kubectl_json("get", "events", "-n", ns)["items"]
            return {e["involvedObject"]["name"]: e["message"] for e in events
                    if e.get("reason") == "TaintManagerEviction"
                    and e["message"].startswith("Marking for deletion")}

        seen = eventually(lambda: len(evictions()) >= 2 and evictions(), what="eviction events")
        assert seen["plain"] == f"Marking for deletion Pod {ns}/plain"
        assert seen["five"] == f"Marking for deletion Pod {ns}/five"
        assert "forever" not in seen
    finally:
        berth.kubectl("taint", "nodes", "node-1", f"{key}-", check=False)
    assert running(berth, ns, "forever")


def test_node_without_a_kubelet_goes_unknown_and_is_tainted(berth, ns):
    """A node nobody renews: after the grace period its conditions go Unknown and it gets the
    unreachable taints; a pod that does not tolerate them for long is deleted."""
    name = f"e2e-lost-{uuid.uuid4().hex[:6]}"
    berth.kubectl("apply", "-f", "-", stdin={
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name},
        # Cordoned, so that the scheduler never places other tests' pods here.
        "spec": {"unschedulable": True}})
    try:
        berth.kubectl("patch", "node", name, "--subresource=status", "--type", "merge", "-p",
                      json.dumps({"status": {"conditions": [
                          {"type": "Ready", "status": "True", "reason": "KubeletReady",
                           "message": "kubelet is posting ready status"}]}}))
        berth.kubectl("apply", "-f", "-", stdin=pod(
            "stranded", namespace=ns, node=name, tolerations=[
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 0},
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 0}]))

        def ready_condition():
            conds = berth.kubectl_json("get", "node", name)["status"].get("conditions") or []
            return next((c for c in conds if c["type"] == "Ready"), None)

        cond = eventually(lambda: (ready_condition() or {}).get("status") == "Unknown"
                          and ready_condition(), timeout=180, what="Ready=Unknown")
        assert cond["reason"] == "NodeStatusUnknown"
        assert cond["message"] == "Kubelet stopped posting node status."
        eventually(lambda: {("node.kubernetes.io/unreachable", "NoExecute"),
                            ("node.kubernetes.io/unreachable", "NoSchedule")}
                   <= taint_keys(berth, name), timeout=60, what="unreachable taints")
        no_execute = next(t for t in node_taints(berth, name)
                          if t["key"] == "node.kubernetes.io/unreachable"
                          and t["effect"] == "NoExecute")
        assert no_execute.get("timeAdded")
        eventually(lambda: pod_gone_or_deleting(berth, ns, "stranded"), what="stranded evicted")
    finally:
        berth.kubectl("delete", "pod", "stranded", "-n", ns, "--grace-period=0", "--force",
                      check=False)
        berth.kubectl("delete", "node", name, "--wait=false", check=False)
