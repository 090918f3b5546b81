"""`DisruptionTarget` on pods berth deletes for a disruption, written before the delete (as
upstream orders it): the scheduler's preemption victims and the taint manager's evictions.

Each victim carries `berth.io/termination-seconds`, so it stays Terminating for a while; a watch
on it records every version the API served, and the test reads the order from them.
"""
import threading

from kubernetes import client as k8s
from kubernetes import watch as k8s_watch

from conftest import eventually
from test_preemption import apply, cpu_pod, fill_nodes, node_cpu, pod, priority_class


def follow(berth, ns, selector):
    """Starts a watch on the pods matching `selector`; returns (versions seen, stop)."""
    core = k8s.CoreV1Api(berth.api_client)
    seen, w = [], k8s_watch.Watch()

    def run():
        try:
            for ev in w.stream(core.list_namespaced_pod, ns, label_selector=selector,
                               timeout_seconds=120):
                seen.append(berth.api_client.sanitize_for_serialization(ev["object"]))
        except Exception:  # noqa: BLE001 - the server stops at the end of the test
            pass

    threading.Thread(target=run, daemon=True).start()
    return seen, w.stop


def disruption(p):
    return next((c for c in p.get("status", {}).get("conditions") or []
                 if c["type"] == "DisruptionTarget"), None)


def assert_marked_before_deleted(seen, name, reason, message):
    versions = [p for p in seen if p["metadata"]["name"] == name]
    deleting = [p for p in versions if p["metadata"].get("deletionTimestamp")]
    assert deleting, f"{name} was deleted"
    # The condition came in a status write of its own, before the delete.
    marked = [p for p in versions if disruption(p) and not p["metadata"].get("deletionTimestamp")]
    assert marked, [disruption(p) for p in versions]
    for p in [marked[0]] + deleting:
        c = disruption(p)
        assert c and c["status"] == "True", c
        assert c["reason"] == reason and c["message"] == message, c


def test_a_preempted_pod_is_marked_disruption_target_before_it_is_deleted(berth_factory):
    berth, ns = berth_factory(nodes=1), "default"
    priority_class(berth, "low", 10)
    priority_class(berth, "high", 100000)
    seen, stop = follow(berth, ns, "app=low")
    filled = fill_nodes(berth, ns, "low", seconds=5, per_node=1)
    victim = next(iter(filled.values()))[0]
    milli = max(node_cpu(berth).values())
    apply(berth, cpu_pod(ns, "important", f"{milli // 2}m", "high", seconds=0))
    eventually(lambda: any(p["metadata"].get("deletionTimestamp") for p in seen),
               timeout=90, what="the victim's deletion")
    stop()
    assert_marked_before_deleted(
        seen, victim, "PreemptionByScheduler",
        "default-scheduler: preempting to accommodate a higher priority pod")


def test_a_pod_evicted_by_a_noexecute_taint_is_marked_disruption_target(berth_factory):
    berth, ns = berth_factory(nodes=1), "default"
    node = berth.kubectl_json("get", "nodes")["items"][0]["metadata"]["name"]
    seen, stop = follow(berth, ns, "app=tainted")
    apply(berth, cpu_pod(ns, "tainted", "100m", labels={"app": "tainted"}, seconds=5))
    eventually(lambda: pod(berth, ns, "tainted")["status"].get("phase") == "Running",
               timeout=60, what="the pod running")
    berth.kubectl("taint", "node", node, "maintenance=now:NoExecute")
    eventually(lambda: any(p["metadata"].get("deletionTimestamp") for p in seen),
               timeout=90, what="the pod's deletion")
    stop()
    assert_marked_before_deleted(seen, "tainted", "DeletionByTaintManager",
                                 "Taint manager: deleting due to NoExecute taint")
