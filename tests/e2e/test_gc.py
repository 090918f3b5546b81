"""Garbage collection in `berth serve`, driven with kubectl: `delete --cascade=background|
foreground|orphan` of Deployments and ReplicaSets, a DaemonSet's pods going with it, and pods of
a deleted node removed by pod GC (past its 40s quarantine: the one test that waits that long).

Timeouts only keep a broken server from hanging the suite; nothing asserts on durations.
"""

import time

import pytest

from conftest import Berth, eventually, pod


def names(b, kind, ns, selector):
    items = b.kubectl_json("get", kind, "-n", ns, "-l", selector)["items"]
    return {i["metadata"]["name"] for i in items}


def live(b, kind, ns, selector):
    items = b.kubectl_json("get", kind, "-n", ns, "-l", selector)["items"]
    return {i["metadata"]["name"] for i in items if not i["metadata"].get("deletionTimestamp")}


def uids_of(b, kind, ns, selector):
    items = b.kubectl_json("get", kind, "-n", ns, "-l", selector)["items"]
    return {i["metadata"]["uid"] for i in items}


def ready_deployment(b, ns, name, replicas=2):
    b.kubectl("create", "deployment", name, "--image=nginx", f"--replicas={replicas}", "-n", ns)
    b.kubectl("rollout", "status", f"deploy/{name}", "-n", ns, "--timeout=60s")


def test_deleting_a_replica_set_deletes_its_pods(berth, ns):
    b = berth
    ready_deployment(b, ns, "bg")
    rs = names(b, "rs", ns, "app=bg")
    b.kubectl("delete", "deploy", "bg", "-n", ns)
    eventually(lambda: not names(b, "rs", ns, "app=bg"), what="the replicasets gone")
    eventually(lambda: not names(b, "pods", ns, "app=bg"), what="the pods gone")
    assert rs


def test_cascade_foreground_removes_replica_sets_and_pods_before_the_deployment(berth, ns):
    b = berth
    ready_deployment(b, ns, "fg")
    # A finalizer of our own holds the Deployment, so the order can be watched however fast
    # the collector is.
    b.kubectl("patch", "deploy", "fg", "-n", ns, "--type=merge",
              "-p", '{"metadata":{"finalizers":["example.com/hold"]}}')
    b.kubectl("delete", "deploy", "fg", "-n", ns, "--cascade=foreground", "--wait=false")
    d = b.kubectl_json("get", "deploy", "fg", "-n", ns)
    assert d["metadata"].get("deletionTimestamp")
    assert "example.com/hold" in d["metadata"]["finalizers"]
    # The collector takes its foregroundDeletion finalizer off only once the dependents went.
    def dependents_first():
        d = b.kubectl_json("get", "deploy", "fg", "-n", ns)
        waiting = "foregroundDeletion" in d["metadata"].get("finalizers", [])
        dependents = names(b, "rs", ns, "app=fg") | names(b, "pods", ns, "app=fg")
        assert waiting or not dependents, "foregroundDeletion went before the dependents"
        return not waiting
    eventually(dependents_first, what="the dependents deleted, then foregroundDeletion removed")
    assert not names(b, "rs", ns, "app=fg")
    assert not names(b, "pods", ns, "app=fg")
    b.kubectl("patch", "deploy", "fg", "-n", ns, "--type=merge",
              "-p", '{"metadata":{"finalizers":null}}')
    eventually(lambda: b.kubectl("get", "deploy", "fg", "-n", ns, check=False).returncode != 0,
               what="the deployment deleted once released")


def test_cascade_orphan_keeps_the_pods(berth, ns):
    b = berth
    ready_deployment(b, ns, "orph")
    rs = names(b, "rs", ns, "app=orph")
    uids = uids_of(b, "rs", ns, "app=orph")
    pods = live(b, "pods", ns, "app=orph")
    b.kubectl("delete", "rs", *rs, "-n", ns, "--cascade=orphan")
    # The Deployment's next ReplicaSet has the same name (the same template hash): tell by uid.
    eventually(lambda: not (uids_of(b, "rs", ns, "app=orph") & uids), what="the old replicaset gone")
    # The Deployment makes a new ReplicaSet, which adopts the orphans: no new pods.
    eventually(lambda: live(b, "pods", ns, "app=orph") == pods
               and all(p["metadata"].get("ownerReferences")
                       for p in b.kubectl_json("get", "pods", "-n", ns, "-l", "app=orph")["items"]),
               what="the same pods adopted")
    b.kubectl("delete", "deploy", "orph", "-n", ns, "--cascade=orphan")
    eventually(lambda: b.kubectl("get", "deploy", "orph", "-n", ns, check=False).returncode != 0,
               what="the deployment gone")
    assert live(b, "pods", ns, "app=orph") == pods


def test_deleting_a_daemon_set_deletes_its_pods(berth, ns):
    b = berth
    b.kubectl("apply", "-n", ns, "-f", "-", stdin={
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
                 "template": {"metadata": {"labels": {"app": "agent"}},
                              "spec": {"containers": [{"name": "c", "image": "agent"}]}}}})
    eventually(lambda: len(live(b, "pods", ns, "app=agent")) == 3, what="3 daemons")
    b.kubectl("delete", "ds", "agent", "-n", ns)
    eventually(lambda: not names(b, "pods", ns, "app=agent"), what="the daemons gone")


def stateful_set(name, ns):
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"serviceName": name, "replicas": 1,
                     "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def revisions(b, ns):
    items = b.kubectl_json("get", "controllerrevisions", "-n", ns)["items"]
    return {i["metadata"]["name"]: i["metadata"].get("ownerReferences", []) for i in items}


def test_controller_revisions_go_with_their_set_unless_orphaned(berth, ns):
    b = berth
    for name in ("gone", "kept"):
        b.kubectl("apply", "-f", "-", stdin=stateful_set(name, ns))
    eventually(lambda: {n.rsplit("-", 1)[0] for n in revisions(b, ns)} == {"gone", "kept"},
               what="a revision per StatefulSet")
    b.kubectl("delete", "statefulset", "gone", "-n", ns)
    b.kubectl("delete", "statefulset", "kept", "-n", ns, "--cascade=orphan")
    eventually(lambda: [n.rsplit("-", 1)[0] for n in revisions(b, ns)] == ["kept"],
               what="the deleted set's revision collected")
    # The orphaned revision stays, without its reference to the deleted set.
    eventually(lambda: list(revisions(b, ns).values()) == [[]],
               what="the orphaned revision released")


@pytest.fixture(scope="module")
def fast_berth(tmp_path_factory):
    b = Berth.start(tmp_path_factory.mktemp("berth-gc"), nodes=3)
    yield b
    b.stop()


def test_pods_of_a_deleted_node_are_removed(fast_berth):
    b = fast_berth
    b.create_namespace("gc")
    b.kubectl("create", "deployment", "spread", "--image=nginx", "--replicas=6", "-n", "gc")
    b.kubectl("rollout", "status", "deploy/spread", "-n", "gc", "--timeout=60s")
    pods = b.kubectl_json("get", "pods", "-n", "gc")["items"]
    on_node = {p["metadata"]["name"] for p in pods if p["spec"].get("nodeName") == "node-3"}
    assert on_node
    b.kubectl("delete", "node", "node-3")
    eventually(lambda: not (names(b, "pods", "gc", "app=spread") & on_node), timeout=120,
               what="the pods of node-3 deleted")
    b.kubectl("rollout", "status", "deploy/spread", "-n", "gc", "--timeout=60s")


def test_terminated_pods_over_the_threshold_are_removed_oldest_first(berth_factory):
    b = berth_factory(nodes=1, args=["--terminated-pod-gc-threshold", "2"])
    b.create_namespace("done")
    for i in range(4):
        p = pod(f"done-{i}", node="node-1")
        p["metadata"]["annotations"] = {"berth.io/run-seconds": "0"}
        p["spec"]["restartPolicy"] = "Never"
        b.kubectl("create", "-f", "-", "-n", "done", stdin=p)
        # Distinct creation seconds, so "oldest" is well defined.
        eventually(lambda i=i: b.kubectl_json("get", "pod", f"done-{i}", "-n", "done")
                   ["status"].get("phase") == "Succeeded", what=f"done-{i} finished")
        time.sleep(1.1)
    eventually(lambda: {p["metadata"]["name"] for p in
                        b.kubectl_json("get", "pods", "-n", "done")["items"]}
               == {"done-2", "done-3"}, what="the two oldest terminated pods removed")
